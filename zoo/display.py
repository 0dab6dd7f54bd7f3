"""Turning result rows into the comparison people read: merged records, a table, JSON, CSV.

Every header states its unit: MACs per image, memory in MiB per batch, latency in ms per step of the
batch, img/s from the mean rate and from the median step. A top-1 is shown only at the resolution it
was measured at, beside the checkpoint it is for (its timm tag) and that checkpoint's pretraining group.
Skipped and failed rows are listed under the table, not inside it.
"""
from __future__ import annotations

import csv
import io
import json

from .markdown import markdown_table
from .models.accuracy import accuracy_at, checkpoint_at
from .runs.safe_io import strict_dumps
from .runs.schema import row_size


def _mib(v) -> str:
    return f"{v / 2**20:,.1f}"


def _mfu(record: dict, prefix: str = "") -> str | None:
    mfu = record.get(f"{prefix}mfu")
    if mfu is None:
        return "no fast GEMM" if record.get(f"{prefix}peak_fast_gemm") is False else None
    return f"{100 * mfu:.0f}%{' (above peak)' if record.get(f'{prefix}mfu_above_peak') else ''}"


# (header, record field, formatter); a column shows only when some record has its field
COLUMNS = [
    ("model", "model", str),
    ("res (px)", "size", str),
    ("batch", "batch_size", str),
    ("tokens", "tokens", str),
    ("params (M)", "params", lambda v: f"{v / 1e6:.1f}"),
    ("GMACs / image", "macs", lambda v: f"{v / 1e9:.2f}"),
    ("attn % of MACs", "attn_share", lambda v: f"{100 * v:.1f}"),
    ("backbone % of MACs", "backbone_share", lambda v: f"{100 * v:.1f}"),
    ("act peak (MiB / batch)", "act_peak_bytes", _mib),
    ("train GMACs / image", "train_macs", lambda v: f"{v / 1e9:.2f}"),
    ("train act peak (MiB / batch)", "train_act_peak_bytes", _mib),
    ("serve (MiB / batch)", "serve_bytes", _mib),
    ("MB moved / batch", "bytes_moved", lambda v: f"{v / 1e6:,.0f}"),
    ("FLOP / byte", "arithmetic_intensity", lambda v: f"{v:.1f}"),
    ("feature maps [C, H, W]", "features", lambda v: " ".join(f"[{c},{h},{w}]" for c, h, w in v)),
    ("strides", "feature_strides", lambda v: ",".join(map(str, v))),
    ("img/s (mean)", "imgs_per_s", lambda v: f"{v:.1f}"),
    ("img/s (at p50)", "imgs_per_s_p50", lambda v: f"{v:.1f}"),
    ("p50 (ms / batch)", "latency_ms_p50", lambda v: f"{v:.1f}"),
    ("MFU", "mfu", None),
    ("roofline (ms / batch)", "roofline_ms", lambda v: f"{v:.1f}"),
    ("train img/s (mean)", "train_imgs_per_s", lambda v: f"{v:.1f}"),
    ("train p50 (ms / batch)", "train_latency_ms_p50", lambda v: f"{v:.1f}"),
    ("train MFU", "train_mfu", None),
    ("noisy", "noisy", lambda v: "noisy" if v else ""),
    ("top-1 % (at this res)", "top1", lambda v: f"{v:.2f}"),
    ("weights", "weights_label", str),
    ("pretraining", "pretraining", str),
]
TIMED = ("imgs_per_s", "imgs_per_s_p50", "latency_ms_p50", "latency_ms_p99", "cv", "mfu", "mfu_above_peak",
         "noisy", "peak_flops", "peak_fast_gemm", "foreign_cpu_share", "ran_batch_size")


def weights_label(entry: dict) -> str:
    """The checkpoint of a shown accuracy, short: its timm tag, or 'not in timm'; a card entry names its source."""
    return entry["weights_short"] + ("" if entry["source"] == "timm" else f" ({entry['source']})")


def accuracy_fields(model: str, img_size: int | None, weights: str = "default", pretraining=None) -> dict:
    """The accuracy a record at img_size shows under the --weights policy, its checkpoint, and `accuracy`:
    every entry at that size (card and timm)."""
    entry = checkpoint_at(model, img_size, weights, pretraining) if img_size else None
    return {"top1": entry["top1"] if entry else None, "top1_resolution": entry["img_size"] if entry else None,
            "pretraining": entry["pretraining"] if entry else None,
            "top1_source": f"{entry['source']}: {entry['citation']}" if entry else None,
            "weights": entry["weights"] if entry else None, "weights_label": weights_label(entry) if entry else None,
            "weights_policy": entry["policy"] if entry else None,
            "accuracy": accuracy_at(model, img_size) if img_size else []}


def merge(rows: list[dict], weights: str = "default", pretraining=None) -> list[dict]:
    """One record per model x resolution x batch: its cost row, its timed rows (training prefixed
    train_), and the accuracy of the checkpoint `weights` picks at exactly that resolution."""
    merged: dict[tuple, dict] = {}
    not_measured = []
    for row in rows:
        if row.get("skipped") or row.get("failed"):
            not_measured.append(row)
            continue
        key = (row["model"], row["img_h"], row["img_w"], row["batch_size"])
        record = merged.setdefault(key, {"model": row["model"], "size": row_size(row).label, "img_size": row["img_size"],
                                         "img_h": row["img_h"], "img_w": row["img_w"],
                                         "batch_size": row["batch_size"]})
        if row["kind"] == "throughput" and row["settings"].get("train"):
            record.update({f"train_{k}": row.get(k) for k in TIMED})
            continue
        record.update({k: v for k, v in row.items() if k not in ("kind", "settings", "software", "schema")})
    for record in merged.values():
        record.update(accuracy_fields(record["model"], record["img_size"], weights, pretraining))
    records = list(merged.values())
    for row in not_measured:
        records.append({"model": row["model"], "size": row_size(row).label, "img_size": row["img_size"],
                        "img_h": row["img_h"], "img_w": row["img_w"], "batch_size": row["batch_size"],
                        "kind": row["kind"], "skipped": row.get("skipped"), "failed": row.get("failed")})
    return records


def _measured(records: list[dict]) -> list[dict]:
    return [r for r in records if not r.get("skipped") and not r.get("failed")]


def _columns(records: list[dict]) -> list[tuple]:
    def shown(record: dict, field: str, fmt) -> bool:
        return (_mfu(record, "train_" if field.startswith("train_") else "") if fmt is None
                else record.get(field)) is not None
    return [c for c in COLUMNS if any(shown(r, c[1], c[2]) for r in records) or c[1] in ("model", "size")]


def cells(record: dict, columns: list[tuple]) -> list[str]:
    out = []
    for _, field, fmt in columns:
        if fmt is None:     # MFU columns
            out.append(_mfu(record, "train_" if field.startswith("train_") else "") or "-")
            continue
        value = record.get(field)
        out.append("-" if value is None else fmt(value))
    return out


def not_measured_lines(records: list[dict]) -> list[str]:
    return [f"{r['model']} {r['size']} px batch {r['batch_size']} ({r['kind']}): "
            f"{'skipped: ' + r['skipped'] if r.get('skipped') else 'failed: ' + r['failed']}"
            for r in records if r.get("skipped") or r.get("failed")]


TITLE = "archzoo comparison (MACs per image; FLOPs = 2 x MACs; MiB = 2^20 bytes)"


def to_rich(records: list[dict]):
    from rich.console import Group
    from rich.table import Table
    from rich.text import Text

    measured = _measured(records)
    columns = _columns(measured)
    table = Table(title=TITLE, title_justify="left")
    for header, field, _ in columns:
        table.add_column(header, justify="left" if field in ("model", "weights_label", "pretraining") else "right",
                         no_wrap=field == "model", min_width=max((len(r["model"]) for r in measured), default=5)
                         if field == "model" else None)
    for record in measured:
        table.add_row(*cells(record, columns))
    lines = not_measured_lines(records)
    return Group(table, *(Text(f"not measured: {line}") for line in lines))


def to_markdown(records: list[dict]) -> str:
    measured = _measured(records)
    columns = _columns(measured)
    text = markdown_table([h for h, *_ in columns], [cells(r, columns) for r in measured])
    lines = not_measured_lines(records)
    return text + ("\nNot measured:\n" + "".join(f"- {line}\n" for line in lines) if lines else "")


def to_csv(records: list[dict]) -> str:
    """One column per scalar or list field; lists (feature-map shapes, latencies) as JSON text in their cell."""
    fields = sorted({k for r in records for k, v in r.items() if not isinstance(v, dict)})
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=fields, extrasaction="ignore")
    writer.writeheader()
    writer.writerows({k: strict_dumps(v) if isinstance(v, list) else v for k, v in r.items()} for r in records)
    return buffer.getvalue()


def to_json(records: list[dict]) -> str:
    """Strict JSON (a non-finite number becomes null), whatever the rows hold."""
    return strict_dumps(json.loads(json.dumps(records, default=str)), indent=2)
