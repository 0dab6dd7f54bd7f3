"""The rows archzoo's GPU calibration is fitted on, each in the setting it was measured in, and their counted kernels.

Sources (a source is one repository or paper, all its tables: the unit held out in leave-one-source-out):
- timm: huggingface/pytorch-image-models results/, every eager GPU table (inference and training, NCHW and NHWC,
  torch 1.10 to 2.9), the rows of the FAMILIES below (benchmarks/published_sources.py);
- nvidia: NVIDIA/DeepLearningExamples' PyTorch ConvNets READMEs, the models with a timm counterpart, the tables of
  the pytorch-20.12 and 21.03 containers (native autocast AMP, in NHWC; FP32 and TF32 in NCHW): inference mean
  latency at batch 1 to 256 and one-GPU training throughput at the configured batch;
- swin, pycls, convnext: the tables of benchmarks/published_tables.py (the Swin README, pycls' MODEL_ZOO.md, the
  ConvNeXt paper's V100 and A100 tables).
Every row carries its citation. Counting is archzoo's own, on meta, as the table's code ran each model: fp32, or
fp16 autocast over fp32 weights; fused SDPA from torch 2.0, attention op by op before; RepVGG fused only where the
table's GMACs say it was; a training step with timm's SGD (Nesterov momentum) stepped parameter by parameter, as
torch 1.x did. Counts are cached in benchmarks/data/fit_op_counts.json.gz (sorted, no timestamp; resumable).

    python benchmarks/fit_sources.py [--count] [--summary]
"""
from __future__ import annotations

import argparse
import gzip
import json
import re
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))

import published_sources  # noqa: E402

COUNTS = HERE / "data" / "fit_op_counts.json.gz"
# timm's rows of these 17 families: 16 chosen before the first fit (issue 23) to span plain CNNs, mobile CNNs, ViTs,
# windowed and hybrid attention, and one added after
FAMILIES = {
    "vit": r"^(vit_(tiny|small|base|large)_patch(16|32)_(224|384)|deit_(tiny|small|base)_(distilled_)?patch16_(224|384))$",
    "convnext": r"^convnext_(atto|femto|pico|nano|tiny|small|base|large)$",
    "swin": r"^swin_(tiny|small|base)_patch4_window(7_224|12_384)$",
    "swinv2": r"^swinv2_(tiny|small|base)_window(8|16)_256$",
    "efficientnet": r"^efficientnet_b[0-5]$",
    "resnet": r"^(resnet(18|34|50|101|152)|resnet50d)$",
    "regnet": r"^regnet[xy]_(002|004|008|016|032|040|080|160)$",
    "mobilenet": r"^mobilenetv3_(small|large)_(075|100)$",
    "maxvit": r"^maxvit_(tiny|small|base)_tf_(224|384)$",
    "twins": r"^twins_",
    "samvit": r"^samvit_base",
    "metaformer": r"^(caformer|convformer)_(s18|s36|m36)$",
    "repvgg": r"^repvgg_(a0|a1|a2|b0|b1|b2)$",
    "levit": r"^levit_(128|192|256|384)$",
    "edgenext": r"^edgenext_",
    "poolformer": r"^poolformer_",
    # added after the 16 (issue 39): the one family whose NCHW bilinear upsampling (a serial-loop kernel,
    # analysis.count.traffic.serial_steps) dominates its time; it alone gives the time per serial step
    "efficientformerv2": r"^efficientformerv2_(s0|s1|s2|l)$",
}


def family(model: str) -> str | None:
    return next((f for f, rx in FAMILIES.items() if re.match(rx, model)), None)


TIMM_DEVICES = {"rtx3090": "RTX 3090", "rtx4090": "RTX 4090", "4090": "RTX 4090", "5090": "RTX 5090",
                "pro6000maxq": "RTX PRO 6000 Max-Q"}
NVIDIA_DEVICES = {("V100", 16): "V100 SXM2", ("V100", 32): "V100 SXM2", ("A100", 80): "A100", ("A100", 40): "A100 40GB",
                  ("T4", None): "T4"}
NVIDIA_CONTAINERS = ("20.12", "21.03")     # native torch.cuda.amp; the 19.10/20.06 tables ran APEX AMP
TWO_FORMS = ("repvgg", "levit")            # families with a trained and a fused form (timm's reparameterize_model)
FUSED_GMACS = {"repvgg_a0": 1.36}   # a table run with --reparam gives RepVGG-A0 its fused GMACs (1.52 trained)


@dataclass(frozen=True)
class Row:
    source: str             # timm | nvidia | swin | pycls | convnext: what leave-one-source-out holds out
    table: str              # one published table: one device, precision, memory format, torch, mode
    device: str             # the datasheet (analysis.predict.devices) it ran on
    model: str              # as timm names it
    family: str
    img_size: int
    batch_size: int
    mode: str               # infer | train
    dtype: str              # fp32 | fp16 (autocast over fp32 weights)
    tf32: str | None        # on | off | None (that torch's defaults)
    channels_last: bool
    torch: str              # "1.10" ...; earlier releases as "<1.10"
    fused_attention: bool
    reparam: str            # fused | trained
    seconds: float          # measured per batch (the table's mean)
    cite: str

    @property
    def count_key(self) -> str:
        dtype = "fp32" if self.dtype == "fp32" else "half"
        return (f"{self.model}@{self.img_size}@{self.batch_size}@{dtype}@{self.mode}"
                f"{'' if self.fused_attention else '@unfused'}{'' if self.reparam == 'fused' else '@trained'}")


def _minor(version: str) -> str:
    return ".".join(version.split(".")[:2])


def version(text: str) -> tuple[int, int]:
    """"1.10" -> (1, 10); "<1.10" (a release before 1.10) -> (1, 9)."""
    major, minor = (int(x) for x in text.lstrip("<").split(".")[:2])
    return (major, minor - 1) if text.startswith("<") else (major, minor)


def timm_rows() -> list[Row]:
    rows = [r for r in published_sources.rows("timm") if r["compiled"] == "eager" and r["precision"] == "amp_fp16"
            and r["latest_for_recipe"] == "yes" and r["device"] in TIMM_DEVICES]
    fused_tables = {r["file"] for r in rows if FUSED_GMACS.get(r["model"]) == r["gmacs"]}
    out = []
    for r in rows:
        fam = family(r["model"])
        if fam is None or not r["samples_per_s"]:
            continue
        torch = _minor(r["torch"])
        fused = r["file"] in fused_tables or fam not in TWO_FORMS
        out.append(Row("timm", f"timm {TIMM_DEVICES[r['device']]} {r['mode']} AMP {r['memory_format'].upper()} "
                               f"torch {torch}", TIMM_DEVICES[r["device"]], r["model"], fam, r["img_size"],
                       r["batch_size"], r["mode"], "fp16", None, r["memory_format"] == "nhwc", torch,
                       version(torch) >= (2, 0), "fused" if fused else "trained", r["batch_size"] / r["samples_per_s"],
                       published_sources.citation(r)))
    return out


def nvidia_rows() -> list[Row]:
    out, seen = [], set()
    rows = sorted(published_sources.rows("nvidia_dle"), key=lambda r: r["container"] or "", reverse=True)
    for r in rows:
        if not r["timm_model"] or r["container"] not in NVIDIA_CONTAINERS or (r["n_gpus"] or 1) != 1:
            continue
        metric = "latency_avg" if r["mode"] == "infer" else "throughput"
        if r["metric"] != metric or not r["batch_size"]:
            continue
        device = NVIDIA_DEVICES.get((r["gpu"], r["gpu_memory_gb"] if r["gpu"] != "T4" else None))
        key = (r["timm_model"], device, r["precision"], r["mode"], r["batch_size"])
        if device is None or key in seen:          # the newer container's figure, once
            continue
        seen.add(key)
        amp = r["precision"] == "AMP"
        seconds = r["value"] / 1e3 if metric == "latency_avg" else r["batch_size"] / r["value"]
        size = r["img_size"]
        out.append(Row("nvidia", f"NVIDIA {device} {r['mode']} {r['precision']}", device, r["timm_model"],
                       family(r["timm_model"]) or r["timm_model"].split("_")[0], size, r["batch_size"], r["mode"],
                       "fp16" if amp else "fp32", "on" if r["precision"] == "TF32" else None, amp, "<1.10", False,
                       "fused", seconds, published_sources.citation(r)))
    return out


def paper_rows() -> list[Row]:
    from published_tables import TABLES

    names = {"pycls": "pycls", "Swin README": "swin", "ConvNeXt paper": "convnext"}
    torch = {"pycls": "<1.10", "swin": "<1.10", "convnext": "<1.10"}
    out = []
    for name, table in TABLES.items():
        source = next((v for k, v in names.items() if name.startswith(k)), None)
        if source is None:                   # timm's own tables come whole from published_sources
            continue
        version = "1.10" if "PyTorch 1.10" in table["recipe"] else torch[source]
        for model, size, batch, figure, line in table["rows"]:
            rate = figure if table["unit"] == "img/s" else batch / (figure / 1e3)
            where = line if isinstance(line, str) else f"line {line}"
            out.append(Row(source, name, {"V100": "V100 SXM2"}.get(table["device"], table["device"]), model,
                           family(model) or model, size, batch, "infer", table["dtype"], table["tf32"],
                           table["channels_last"], version, table["fused_attention"], "fused", batch / rate,
                           f"{table['source']} {where}"))
    return out


def rows() -> list[Row]:
    return timm_rows() + nvidia_rows() + paper_rows()


def samples(found: list[Row], counts: dict) -> list[dict]:
    """analysis.predict.fit samples of the counted rows, each table weighing alike (1 / its rows)."""
    from collections import Counter

    from analysis.predict.calibration import Setting
    from analysis.predict.devices import device_sheet

    counted = [r for r in found if isinstance(counts.get(r.count_key), list)]
    sizes = Counter(r.table for r in counted)
    return [{"ops": [tuple(op) for op in counts[r.count_key]], "weight": 1 / sizes[r.table], "row": r,
             "setting": Setting(device_sheet(r.device), r.dtype, r.tf32, r.channels_last, version(r.torch), r.source),
             **asdict(r)} for r in counted]


def read_counts(path: Path = COUNTS) -> dict:
    if not path.exists():
        return {}
    with gzip.open(path, "rt", encoding="utf-8") as f:
        return json.load(f)


def write_counts(counts: dict, path: Path = COUNTS) -> None:
    text = json.dumps(dict(sorted(counts.items())), separators=(",", ":")).encode("utf-8")
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    with open(tmp, "wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", mtime=0) as f:
        f.write(text)
    tmp.replace(path)


def count(row: Row) -> list:
    """The row's kernels, (op_class, FLOPs, bytes, count) of one batch, as its table's code ran the model."""
    from zoo.predict.inference import gpu_forward
    from zoo.predict.train import train_step_ops
    from zoo.runs.request import Request

    dtype = "fp32" if row.dtype == "fp32" else "fp16"
    if row.mode == "train":
        request = Request("timm:" + row.model, row.img_size, row.batch_size, dtype, train=True, optimizer="sgd")
        ops = train_step_ops(request, foreach=False, fused_attention=row.fused_attention)
    else:
        request = Request("timm:" + row.model, row.img_size, row.batch_size, dtype)
        ops = gpu_forward(request, reparam=row.reparam, fused_attention=row.fused_attention)["ops"]
    return [list(op) for op in ops]


def count_all(todo: list[Row], counts: dict) -> dict:
    keys = list({r.count_key: r for r in todo if r.count_key not in counts}.items())     # in the order given
    start = time.perf_counter()
    for i, (key, row) in enumerate(keys):
        try:
            counts[key] = count(row)
        except Exception as e:               # recorded, never silent: the row is left out of the fit
            counts[key] = f"error: {type(e).__name__}: {str(e).splitlines()[0][:200] if str(e) else ''}"
        print(f"[{i + 1}/{len(keys)}] {key} {time.perf_counter() - start:.0f}s", file=sys.stderr, flush=True)
        if i % 20 == 19:
            write_counts(counts)
    if keys:
        write_counts(counts)
    return counts


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", action="store_true", help="count the rows not counted yet")
    parser.add_argument("--summary", action="store_true", help="rows per source and table")
    args = parser.parse_args(argv)
    found = rows()
    if args.summary:
        from collections import Counter

        for (source, table), n in sorted(Counter((r.source, r.table) for r in found).items()):
            print(f"{source:9s} {n:5d}  {table}")
        print(f"{len(found)} rows, {len({r.count_key for r in found})} counts")
    if args.count:          # the small sources first: a partial cache already spans every source
        count_all(sorted(found, key=lambda r: (r.source == "timm", r.mode == "train", r.count_key)), read_counts())
    return 0


if __name__ == "__main__":
    sys.exit(main())
