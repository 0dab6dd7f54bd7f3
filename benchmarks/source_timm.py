"""timm's published GPU benchmark tables (huggingface/pytorch-image-models, results/), every row cited.

Which files: every CSV that ever existed under results/ in the pinned commit's history whose name starts
`benchmark-` or `model_benchmark_`, less the CPU runs (`-cpu-` in the name). Of each file name its last version
(the commit before it was deleted, or the pin); an earlier version only where it was measured with another
torch (EARLIER_OTHER_TORCH: none is, see below). The recipe comes from the file name, as timm's
benchmark.py wrote it (read at 90cae8c5): `infer`/`train`; `amp` = torch.autocast float16 over fp32 weights
(benchmark.py --amp, its default --amp-dtype float16), `amp_bf16` = autocast bfloat16, `bf16` = weights and
inputs in bfloat16 without autocast (--precision bfloat16); `nchw`/`nhwc` (--channels-last); `-dynamo` =
torch.compile (inductor), else eager; `ptXYZ` = torch X.YZ, `cuNNN` = CUDA NN.N; the GPU as the name gives it.

Columns as timm wrote them: samples/s = batch x 40 timed steps / their wall time (after 10 warm-up steps);
step_time_ms = mean per-step time in ms (one batch; for training: forward, loss, backward and SGD step);
GMACs per image (fvcore or DeepSpeed, profiled at batch 1; left empty where timm left it); params in
millions. Values are copied as the file writes them, never re-rounded.

NB: the two `model_benchmark_amp_*_rtx3090.csv` files (Oct 2021 - Jan 2022) have no torch in their name; they
were renamed unchanged to `benchmark-infer-amp-*-pt110-cu113-rtx3090.csv` in 1331c145, so they are torch
1.10 / CUDA 11.3 runs, superseded by the pt110 files' re-run "for latest code" (eac2df3d): their rows say
`latest_for_recipe=no`. Their first version (13178ba7, Oct 2021, batch 256) names no torch and is not taken.
"""
from __future__ import annotations

import csv
import io
import re

from source_git import Mirror

REPO = "huggingface/pytorch-image-models"
PIN = "aa4b5850c1543fa488abf260f18390eda46cf85d"

NAME = re.compile(r"^results/benchmark-(?P<mode>infer|train)-(?P<precision>amp_bf16|amp|bf16|fp32)-"
                  r"(?P<layout>nchw|nhwc)-pt(?P<torch>\d+)-(?P<backend>cu\d+|cpu)-(?P<device>[a-z0-9_]+?)"
                  r"(?P<dynamo>-dynamo)?\.csv$")
OLD_NAME = re.compile(r"^results/model_benchmark_(?P<precision>amp)_(?P<layout>nchw|nhwc)_(?P<device>[a-z0-9]+)\.csv$")
# the renames that state an old name's torch and CUDA: old file -> (new name, commit that renamed it)
RENAMED_TO = {
    "results/model_benchmark_amp_nchw_rtx3090.csv": ("results/benchmark-infer-amp-nchw-pt110-cu113-rtx3090.csv",
                                                      "1331c145a353959a4b0d7b7e119a55ae0f4a98a6"),
    "results/model_benchmark_amp_nhwc_rtx3090.csv": ("results/benchmark-infer-amp-nhwc-pt110-cu113-rtx3090.csv",
                                                      "1331c145a353959a4b0d7b7e119a55ae0f4a98a6"),
}
# earlier versions measured with another torch than the file's last version: none. Every later version of a
# file re-ran the torch its name states (pt112: 5e7d47ca, d7b55a94 added GMACs, c865028c added models; pt210:
# 4d0737d5, 79548b54 added the profile; pt240 rtx4090: b3f3a005, 5c33776a; pt110: 1331c145, eac2df3d).
EARLIER_OTHER_TORCH: dict[str, list[str]] = {}

PRECISION = {"amp": "amp_fp16", "amp_bf16": "amp_bf16", "bf16": "bf16", "fp32": "fp32"}
COLUMNS = ["repo", "commit", "commit_date", "file", "line", "device", "torch", "cuda", "torch_source",
           "mode", "precision", "memory_format", "compiled", "model", "img_size", "batch_size", "samples_per_s",
           "step_time_ms", "gmacs", "macts_m", "params_m", "latest_for_recipe", "superseded_by"]


def torch_version(digits: str) -> str:
    """timm's `ptXYZ`: pt110 = 1.10, pt113 = 1.13, pt240 = 2.4.0, pt291 = 2.9.1 (torch 1 had two-digit minors)."""
    return f"1.{digits[1:]}" if digits[0] == "1" else ".".join(digits)


def cuda_version(digits: str) -> str:
    """timm's `cuNNN`: cu113 = 11.3, cu128 = 12.8, cu130 = 13.0."""
    return f"{digits[:-1]}.{digits[-1]}"


def recipe(path: str) -> dict | None:
    """The recipe the file name states, or None for a file that is no GPU benchmark."""
    m = NAME.match(path)
    if m:
        if m["backend"] == "cpu":
            return None
        return {"device": m["device"], "torch": torch_version(m["torch"]),
                "cuda": cuda_version(m["backend"][2:]),
                "torch_source": "file name", "mode": m["mode"], "precision": PRECISION[m["precision"]],
                "memory_format": m["layout"], "compiled": "dynamo" if m["dynamo"] else "eager"}
    m = OLD_NAME.match(path)
    if m and path in RENAMED_TO:
        new_name, commit = RENAMED_TO[path]
        stated = recipe(new_name)
        return {**stated, "torch_source": f"renamed unchanged to {new_name} in {commit[:8]}"}
    return None


def _field(row: dict, *names: str) -> str:
    return next((row[n] for n in names if n in row and row[n] is not None), "").strip()


def file_rows(mirror: Mirror, commit: str, date: str, path: str, stated: dict) -> tuple[list[dict], list[str]]:
    """The file's measured rows, and the lines left out (a model timm profiled but whose run gave no rate)."""
    text = mirror.show(commit, path)
    reader = csv.DictReader(io.StringIO(text))
    mode = stated["mode"]
    out, left_out = [], []
    for line, row in enumerate(reader, start=2):     # line 1 is the header
        if not _field(row, f"{mode}_samples_per_sec"):
            left_out.append(f"line {line} ({_field(row, 'model')})")
            continue
        out.append({"repo": REPO, "commit": commit, "commit_date": date, "file": path,
                    "line": str(line), **stated, "model": _field(row, "model"),
                    "img_size": _field(row, f"{mode}_img_size"), "batch_size": _field(row, f"{mode}_batch_size"),
                    "samples_per_s": _field(row, f"{mode}_samples_per_sec"),
                    "step_time_ms": _field(row, f"{mode}_step_time"), "gmacs": _field(row, f"{mode}_gmacs"),
                    "macts_m": _field(row, f"{mode}_macts"),
                    "params_m": _field(row, "param_count", f"{mode}_param_count")})
    return out, left_out


def gpu_files(mirror: Mirror) -> list[str]:
    return [p for p in mirror.paths_ever("results/") if recipe(p) is not None]


def rows(mirror: Mirror) -> tuple[list[dict], list[str]]:
    """All rows, sorted by file, commit and line; and one line per file saying which version was taken."""
    out, taken = [], []
    for path in gpu_files(mirror):
        stated = recipe(path)
        versions = mirror.versions(path)
        chosen = [versions[0]] + [v for v in versions[1:] if v[0] in EARLIER_OTHER_TORCH.get(path, [])]
        for commit, date in chosen:
            got, left_out = file_rows(mirror, commit, date, path, stated)
            superseded = ""
            if path in RENAMED_TO:
                new_name = RENAMED_TO[path][0]
                superseded = f"{new_name}@{mirror.versions(new_name)[0][0][:8]}"
            for r in got:
                r["latest_for_recipe"] = "no" if superseded else "yes"
                r["superseded_by"] = superseded
            out.extend(got)
            skipped = f"; left out, no samples/s: {', '.join(left_out)}" if left_out else ""
            taken.append(f"{path} @{commit[:8]} ({date}): {len(got)} rows; {len(versions)} version(s) in "
                         f"history{skipped}")
    out.sort(key=lambda r: (r["file"], r["commit"], int(r["line"])))
    return out, taken
