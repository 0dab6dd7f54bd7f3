"""The report's section for detection-style rows: H x W inputs, feature extractors and whole detectors, per size
label, with each map's stride, the MACs, activation and training memory at the row's batch, and eager against
ONNX Runtime where both were timed at the same input."""
from __future__ import annotations

from ..console.markdown import feature_maps, markdown_table, mib
from ..store.schema import row_size

HEADERS = ["size (px)", "model", "batch", "dtype", "as", "maps [C,H,W] / stride", "GMACs / image",
           "act peak (MiB / batch)", "train act peak (MiB / batch)", "train memory (MiB / batch)",
           "eager img/s", "ONNX Runtime img/s", "ORT / eager"]


def _same_input(row: dict) -> tuple:
    s = row["settings"]
    return row["model"], row["img_h"], row["img_w"], row["batch_size"], s["dtype"], bool(s.get("features")), \
        s.get("detector")


def _as(row: dict) -> str:
    s = row["settings"]
    return f"detector: {s['detector']}" if s.get("detector") else "features" if s.get("features") else "classifier"


def detection_table(cost: list[dict], timed: list[dict]) -> str:
    """cost, timed: the latest measured rows at H x W sizes or of feature extractors."""
    speed: dict[tuple, dict[str, float]] = {}
    for r in timed:
        if not r["settings"].get("train"):
            speed.setdefault(_same_input(r), {})[r["settings"].get("backend", "eager")] = r["imgs_per_s"]
    rows = []
    for r in sorted(cost, key=lambda r: (r["img_h"] * r["img_w"], row_size(r).label, r["model"], r["batch_size"])):
        backends = speed.get(_same_input(r), {})
        eager, ort = backends.get("eager"), backends.get("onnxruntime")
        train = r.get("train_serve_bytes")
        rows.append([row_size(r).label, r["model"], r["batch_size"], r["settings"]["dtype"],
                     _as(r), feature_maps(r.get("features"), r["img_h"]),
                     f"{r['macs'] / 1e9:,.2f}", mib(r.get("act_peak_bytes")), mib(r.get("train_act_peak_bytes")),
                     None if train is None else f"{mib(train)} ({r.get('train_optimizer')})",
                     None if eager is None else f"{eager:.2f}", None if ort is None else f"{ort:.2f}",
                     f"{ort / eager:.2f}x" if eager and ort else None])
    return markdown_table(HEADERS, rows)
