"""timm's published GPU inference benchmarks as calibration samples: the rows archzoo ships, their counted
kernels (cached), and the datasheet figures of each table's GPU.

Shared by benchmarks/fit_gpu_calibration.py (which writes the subset, the cache and the factors) and
benchmarks/predict_vs_published.py (which reads them). Counting is archzoo's own, on meta: each row's
model `timm:<name>` at its size and batch, under fp16 autocast over fp32 weights as timm's benchmark.py
--amp runs it (its default --amp-dtype float16), with CUDA's fused attention (analysis.count.autocast).
"""
from __future__ import annotations

import csv
import gzip
import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

SUBSET = ROOT / "analysis" / "predict" / "data" / "timm_benchmark_gpu.csv"
COUNTS = ROOT / "benchmarks" / "data" / "gpu_op_counts.json.gz"
FACTORS = ROOT / "analysis" / "predict" / "data" / "gpu_calibration.json"
DTYPE = "fp16"

# 16 families, chosen before fitting (and one added after) to span plain CNNs, mobile CNNs, ViTs, windowed and hybrid attention
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


def read_subset(path: Path = SUBSET) -> list[dict]:
    with open(path, newline="", encoding="utf-8") as f:
        return [{**r, "img_size": int(r["img_size"]), "batch_size": int(r["batch_size"]),
                 "imgs_per_s": float(r["imgs_per_s"]), "gmacs": float(r["gmacs"])} for r in csv.DictReader(f)]


def count_key(row: dict, dtype: str = DTYPE) -> str:
    """model@size@batch (timm's AMP tables, fp16), with @dtype for any other dtype."""
    return f"{row['model']}@{row['img_size']}@{row['batch_size']}" + ("" if dtype == DTYPE else f"@{dtype}")


def read_counts(path: Path = COUNTS) -> dict:
    if not path.exists():
        return {}
    with gzip.open(path, "rt", encoding="utf-8") as f:
        return json.load(f)


def write_counts(counts: dict, path: Path = COUNTS) -> None:
    """Sorted, and gzip without a timestamp: the same counts give the same bytes."""
    path.parent.mkdir(parents=True, exist_ok=True)
    text = json.dumps(dict(sorted(counts.items())), separators=(",", ":")).encode("utf-8")
    with open(path, "wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", mtime=0) as f:
        f.write(text)


def count_row(row: dict, dtype: str = DTYPE) -> list:
    from zoo.runs.request import Request
    from zoo.predict.inference import gpu_forward

    request = Request("timm:" + row["model"], row["img_size"], row["batch_size"], dtype)
    return [list(op) for op in gpu_forward(request)["ops"]]


def samples(rows: list[dict], counts: dict, dtype: str = DTYPE, tf32: str | None = None) -> list[dict]:
    """Calibration samples (analysis.predict.calibration_fit) of the rows that were counted, each op class at the
    precision PyTorch runs it in on the row's GPU (analysis.predict.calibration.op_precisions; tf32 None: its defaults)."""
    from analysis.predict.calibration import class_peaks, in_memory_format, op_precisions
    from zoo.options import datasheet

    out = []
    for r in rows:
        ops = counts.get(count_key(r, dtype))
        if not isinstance(ops, list):
            continue
        sheet = datasheet(r["device"])
        precisions = op_precisions(dtype, "tf32" in sheet.peak_flops, tf32)
        nhwc = r.get("memory_format") == "nhwc"
        out.append({"ops": in_memory_format([tuple(o) for o in ops], nhwc),
                    "peaks": class_peaks(sheet.peak_flops, precisions), "memory_format": "nhwc" if nhwc else "nchw",
                    "bandwidth": sheet.mem_bandwidth, "dtype": dtype, "precisions": precisions,
                    "seconds": r["batch_size"] / r["imgs_per_s"], "group": r["family"], "device": r["device"],
                    "model": r["model"], "img_size": r["img_size"], "batch_size": r["batch_size"],
                    "imgs_per_s": r["imgs_per_s"], "gmacs": r["gmacs"]})
    return out
