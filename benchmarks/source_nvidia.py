"""NVIDIA DeepLearningExamples' PyTorch image-classification performance tables, every figure cited.

Which READMEs: every README.md ever under PyTorch/Classification/ in the pinned commit's history (master; the
mirror's pull-request refs are not walked), less the Triton ones (their figures are TensorRT / ONNX Runtime
servers, not PyTorch). Every version of each: a figure first published in an older version with another
container or GPU is a row of its own; one printed unchanged in several versions is cited at the newest; one
whose later version prints another value for the same recipe (container, GPU, precision, batch or GPU count)
is superseded and left out (`superseded` counts them).

Per row, read at the README's own commit: the heading and the results statement as printed, the container it
names, the Dockerfile's FROM line, the AMP implementation its training code imports, and, where configs.yml
exists (from 097c7ff9 on), the per-GPU batch of a training table, the memory format and the data backend that
launch.py's mode, model, platform and precision resolve to. The timm counterpart only where the architecture
is the same (COUNTERPARTS says how that was checked).
"""
from __future__ import annotations

import re

import yaml

from source_git import Mirror
from source_nvidia_tables import GPU, figures

REPO = "NVIDIA/DeepLearningExamples"
PIN = "729963dd47e7c8bd462ad10bfac7a7b0b604e6dd"
ROOT = "PyTorch/Classification/"

# NVIDIA model -> (timm counterpart or "", image size, why). Checked by building NVIDIA's
# image_classification/models at 5843f4e5 next to timm 1.0.31 on CPU: parameter count and every convolution's
# (in, out, kernel, stride, groups[, padding]) in order.
COUNTERPARTS = {
    "resnet50": ("resnet50", "224", "same 25,557,032 parameters and 53 convolutions in order; stride in the 3x3 "
                 "conv (ResNet v1.5: resnet.py Bottleneck conv2) as in timm's Bottleneck"),
    "resnext101-32x4d": ("resnext101_32x4d", "224", "same 44,177,704 parameters and 104 convolutions in order"),
    "se-resnext101-32x4d": ("", "224", "no counterpart: NVIDIA's SE hidden width is 16 in every block "
                            "(resnet.py se_squeeze=16), timm's seresnext101_32x4d uses channels/16; 45,251,128 "
                            "against 48,955,416 parameters"),
    "efficientnet-b0": ("efficientnet_b0", "224", "same 5,288,548 parameters, 49 convolutions (padding included) "
                        "and SE widths; image size configs.yml efficientnet_b0_params_4k"),
    "efficientnet-b4": ("efficientnet_b4", "380", "same 19,341,616 parameters, 96 convolutions (padding included) "
                        "and SE widths; image size 380 from configs.yml efficientnet_b4_params_4k (timm's own "
                        "default is 320)"),
    "efficientnet-widese-b0": ("", "224", "no counterpart: its SE squeezes the expanded width (efficientnet.py "
                               "widese_mbconv, squeeze_hidden=True), 8,423,848 parameters; timm has no such model"),
    "efficientnet-widese-b4": ("", "380", "no counterpart: SE on the expanded width, 34,927,246 parameters; timm "
                               "has no such model"),
}
# NGC container -> what a source that could be opened states of it. NB: NVIDIA's release notes for 20.06-21.03
# were not found in the search index (its 19.xx and 20.02/20.06 pages are held, their excerpts end before the
# PyTorch version line), so no container's PyTorch version is stated here.
CONTAINERS = {
    "19.10": "CUDA 10.1.243, cuDNN 7.6.4 "
             "(docs.nvidia.com/deeplearning/frameworks/pytorch-release-notes/rel_19-10.html); "
             "PyTorch version not stated in the excerpt held",
    "20.06": "CUDA 11.0.167 (docs.nvidia.com/deeplearning/frameworks/pytorch-release-notes/rel_20-06.html); "
             "PyTorch version not stated in the excerpt held",
}
COLUMNS = ["repo", "commit", "commit_date", "file", "line", "mode", "model", "timm_model", "img_size",
           "batch_size", "batch_size_source", "n_gpus", "n_gpus_source", "precision", "column", "metric", "value",
           "unit", "system", "system_line", "gpu", "gpu_memory_gb", "statement_gpu", "statement", "statement_line",
           "container", "dockerfile_from", "amp_implementation", "memory_format",
           "data_backend", "first_published", "first_container", "restates"]
PLATFORMS = (("A100", "DGXA100"), ("DGX-2", "DGX2V"), ("DGX2", "DGX2V"), ("T4", "T4"))


def readmes(mirror: Mirror) -> list[str]:
    return [p for p in mirror.paths_ever(ROOT) if p.endswith("/README.md") and "/triton/" not in p]


def _code_dir(path: str) -> str:
    parts = path.split("/")
    return "/".join(parts[:3])          # PyTorch/Classification/<ConvNets|RN50v1.5|GPUNet>


def _default_model(path: str) -> str:
    folder = path.split("/")[-2]
    return {"resnet50v1.5": "resnet50", "RN50v1.5": "resnet50"}.get(folder, folder)


def _container(statement: str) -> str:
    m = (re.search(r"pytorch-(\d\d\.\d\d)", statement, re.I) or re.search(r"(\d\d\.\d\d) PyTorch NGC", statement)
         or re.search(r"PyTorch (\d\d\.\d\d) NGC", statement))
    return m[1] if m else ""


def _gpu(text: str) -> tuple[str, str]:
    """(GPU, memory in GB) as a heading or statement names them; '' where it names none."""
    gpu = GPU.search(text)
    memory = re.search(r"(?:V100|A100)\s*(\d+)\s*GB?\b", text) or re.search(r"\b(\d+)\s*GB?\b\)?", text)
    return (gpu[1] if gpu else "", memory[1] if memory and gpu else "")


def _dockerfile_from(mirror: Mirror, commit: str, code_dir: str) -> str:
    text = mirror.show(commit, f"{code_dir}/Dockerfile") or ""
    m = re.search(r"FROM_IMAGE_NAME=(\S+)", text) or re.search(r"^FROM\s+(\S+)", text, re.M)
    return f"{code_dir}/Dockerfile: {m[1]}" if m else ""


def _amp_implementation(readme: str, code: str) -> str:
    if "--amp" in readme or "--precision AMP" in readme or "AMP" in readme and "torch.cuda.amp" in code:
        return ("native torch.cuda.amp (autocast, GradScaler)" if "torch.cuda.amp" in code
                else "APEX AMP (apex.amp)" if "apex import amp" in code else "")
    if "--fp16" in readme:
        return "APEX fp16 (--fp16: network_to_half, FP16_Optimizer with fp32 master weights)"
    return ""


def _node(mapping, key):
    """A YAML mapping's value node for key, merge keys (<<) followed; None where absent."""
    if mapping is None or not isinstance(mapping, yaml.MappingNode):
        return None
    merged = []
    for k, v in mapping.value:
        if k.value == key:
            return v
        if k.tag == "tag:yaml.org,2002:merge":
            merged += v.value if isinstance(v, yaml.SequenceNode) else [v]
    return next((found for m in merged if (found := _node(m, key)) is not None), None)


def _setting(config, model: str, platforms: list[str], precision: str, mode: str, key: str) -> tuple[str, int]:
    """launch.py's value of key (mode over model over platform over precision) and its line in configs.yml."""
    for platform in platforms:
        cfg = _node(_node(_node(_node(config, "models"), model), platform), precision)
        if cfg is None:
            continue
        for node in (_node(_node(config, "mode"), mode), cfg, _node(_node(config, "platform"), platform),
                     _node(_node(config, "precision"), precision)):
            found = _node(node, key)
            if found is not None:
                return found.value, found.start_mark.line + 1
        return "", 0
    return "", 0


def _platforms(system: str, gpu_memory: str) -> list[str]:
    named = next((p for word, p in PLATFORMS if word in system), None)
    if named:
        return [named]
    return [f"DGX1V-{gpu_memory}G", "DGX1V"] if gpu_memory else ["DGX1V"]


def _platform_batches(text: str) -> dict:
    """The 2020 READMEs' 'Platform | Precision | Batch Size' table under the training benchmark heading."""
    from source_nvidia_tables import tables
    found = {}
    for table in tables(text):
        if [h.lower() for h in table.header] == ["platform", "precision", "batch size"] and any(
                "Training" in h[1] for h in table.headings[-1:]):
            for line, cells in table.rows:
                found[(cells[0], cells[1])] = (cells[2], line)
    return found


def _main_default(main_py: str, option: str) -> str:
    m = re.search(rf"['\"]{option}['\"][^)]*?default=['\"]([\w-]+)['\"]", main_py, re.S)
    return m[1] if m else ""


def _recipe(f: dict, gpu_memory: str, config, platform_batches: dict, main_py: str, code_dir: str) -> tuple:
    """(batch, its source, memory format, data backend) a row ran with, as far as the commit states them."""
    mode = "benchmark_training" if f["mode"] == "train" else "benchmark_inference"
    platforms = _platforms(f["system"], gpu_memory)
    batch, batch_source = f["batch_size"], "table" if f["batch_size"] else ""
    if config is None:           # before configs.yml: main.py's default backend (the commands pass none)
        backend = _main_default(main_py, "--data-backend")
        if not batch and platform_batches:
            key = ("DGXA100" if "A100" in f["system"] else "DGX-1", f["precision"])
            if key in platform_batches:
                batch, line = platform_batches[key]
                batch_source = f"README line {line} (training benchmark batch table)"
        return batch, batch_source, "", f"{backend} (main.py default)" if backend else ""
    if not batch:
        value, line = _setting(config, f["model"], platforms, f["precision"], mode, "batch_size")
        batch, batch_source = value, f"{code_dir}/configs.yml line {line}" if value else ""
    memory_format, _ = _setting(config, f["model"], platforms, f["precision"], mode, "memory_format")
    backend, line = _setting(config, f["model"], platforms, f["precision"], mode, "data_backend")
    return (batch, batch_source, memory_format or "nchw (main.py default)",
            f"{backend} (configs.yml line {line})" if backend else "")


def version_rows(mirror: Mirror, path: str, commit: str, date: str) -> tuple[list[dict], object]:
    text = mirror.show(commit, path)
    parsed = figures(text, _default_model(path))
    code_dir = _code_dir(path)
    main_py = mirror.show(commit, f"{code_dir}/main.py") or ""
    code = "".join(mirror.show(commit, f"{code_dir}/{f}") or ""
                   for f in ("image_classification/training.py", "train.py"))
    configs_text = mirror.show(commit, f"{code_dir}/configs.yml")
    config = yaml.compose(configs_text) if configs_text else None
    platform_batches = _platform_batches(text)
    dockerfile = _dockerfile_from(mirror, commit, code_dir)
    out = []
    for f in parsed.figures:
        gpu, memory = _gpu(f["system"])
        timm_model, img_size, _ = COUNTERPARTS.get(f["model"], ("", "", ""))
        container = _container(f["statement"])
        batch, batch_source, memory_format, data_backend = _recipe(f, memory, config, platform_batches, main_py,
                                                                   code_dir)
        statement_gpu = " ".join(x for x in _gpu(f["statement"]) if x)
        out.append({"repo": REPO, "commit": commit, "commit_date": date, "file": path,
                    "line": str(f["line"]), "mode": f["mode"], "model": f["model"], "timm_model": timm_model,
                    "img_size": img_size, "batch_size": batch, "batch_size_source": batch_source,
                    "n_gpus": f["n_gpus"], "n_gpus_source": f["n_gpus_source"], "precision": f["precision"],
                    "column": f["column"], "metric": f["metric"], "value": f["value"], "unit": f["unit"],
                    "system": f["system"], "system_line": str(f["system_line"] or ""), "gpu": gpu,
                    "gpu_memory_gb": memory, "statement_gpu": statement_gpu, "statement": f["statement"],
                    "statement_line": str(f["statement_line"] or ""), "container": container,
                    "dockerfile_from": dockerfile,
                    "amp_implementation": _amp_implementation(text, code + main_py) if f["precision"] == "AMP" else "",
                    "memory_format": memory_format, "data_backend": data_backend})
    return out, parsed


def _recipe_key(r: dict) -> tuple:
    return (r["model"], r["mode"], r["precision"], r["metric"], r["batch_size"], r["n_gpus"], r["gpu"],
            r["gpu_memory_gb"], r["container"], r["file"].split("/")[-2])


def _figure_key(r: dict) -> tuple:
    """What makes an older version's cell the same figure as a newer one's: recipe and value; the GPU, its
    memory and the container may be unstated or relabelled in the older version."""
    name = re.sub(r"[^a-z0-9]", "", r["model"].lower())        # GPUNet0 (May 2022) is GPUNet-0 later
    return (name, r["mode"], r["precision"], r["metric"], r["batch_size"], r["n_gpus"], r["value"],
            r["file"].split("/")[-2])


def _reprint_of(r: dict, newer: dict[tuple, list[dict]]) -> dict | None:
    for k in newer.get(_figure_key(r), []):
        if r["gpu"] in ("", k["gpu"]) and r["gpu_memory_gb"] in ("", k["gpu_memory_gb"]):
            return k
    return None


def _mark_restatements(out: list[dict]) -> None:
    """A summary README figure equal to one in the model's own README (same recipe, container and value)."""
    def key(r):
        return _recipe_key(r)[:-1] + (r["value"],)
    own = {key(r): r for r in out if not r["file"].endswith("ConvNets/README.md")}
    for r in out:
        match = own.get(key(r)) if r["file"].endswith("ConvNets/README.md") else None
        r["restates"] = f"{match['file']}@{match['commit'][:8]} line {match['line']}" if match else ""


def rows(mirror: Mirror) -> tuple[list[dict], list[str]]:
    """All kept rows, sorted; and one line per README version saying what was read, skipped and kept.

    Versions are walked newest first. An older version's cell with the recipe and value of one a newer version
    printed (its GPU or container unstated or relabelled) is the same figure: cited at the newest, with the
    oldest version that printed it and the container that version named in first_published and
    first_container. An older value for a recipe (GPU and container included) that a newer version prints
    differently is superseded and left out."""
    kept: dict[tuple, dict] = {}
    by_figure: dict[tuple, list[dict]] = {}
    notes = []
    for path in readmes(mirror):
        for commit, date in mirror.versions(path):           # newest first
            got, parsed = version_rows(mirror, path, commit, date)
            new = reprinted = superseded = 0
            fresh = []
            for r in got:
                earlier = _reprint_of(r, by_figure)
                if earlier is not None:
                    earlier["first_published"] = f"{commit[:8]} ({date})"
                    earlier["first_container"] = r["container"] or "not stated"
                    reprinted += 1
                elif _recipe_key(r) in kept:
                    superseded += 1
                else:
                    r["first_published"] = f"{commit[:8]} ({date})"
                    r["first_container"] = r["container"] or "not stated"
                    kept[_recipe_key(r)] = r
                    fresh.append(r)
                    new += 1
            for r in fresh:          # matched only against older versions, never within its own
                by_figure.setdefault(_figure_key(r), []).append(r)
            skipped = "; ".join(parsed.skipped_tables)
            notes.append(f"{path} @{commit[:8]} ({date}): {len(got)} figures read: {new} kept, {reprinted} "
                         f"printed again by a later version, {superseded} superseded by a later value; "
                         f"{parsed.not_available} N/A cells" + (f"; tables not read: {skipped}" if skipped else ""))
    out = sorted(kept.values(), key=lambda r: (r["file"], r["commit_date"], r["commit"], int(r["line"]), r["column"]))
    _mark_restatements(out)
    notes += [f"counterpart {m} -> {t or '(none)'} at {size} px: {why}" for m, (t, size, why) in COUNTERPARTS.items()]
    named = sorted({r["container"] for r in out if r["container"]})
    notes += [f"container {c}: {CONTAINERS.get(c, 'no release note opened; PyTorch version not stated')}"
              for c in named]
    return out, notes
