"""Turning result rows into the comparison people read: merged records, a table, JSON, CSV."""
from __future__ import annotations

import csv
import io
import json

from .cards import card

# (header, record field, formatter) for the printed comparison
COLUMNS = [
    ("model", "model", str),
    ("res", "img_size", str),
    ("batch", "batch_size", str),
    ("tokens", "tokens", str),
    ("params (M)", "params", lambda v: f"{v / 1e6:.1f}"),
    ("GMACs", "macs_per_image", lambda v: f"{v / 1e9:.2f}"),
    ("attn %", "attn_share", lambda v: f"{100 * v:.1f}"),
    ("act mem (MB)", "act_peak_bytes", lambda v: f"{v / 2**20:.0f}"),
    ("img/s", "imgs_per_s", lambda v: f"{v:.1f}"),
    ("p50 (ms)", "latency_ms_p50", lambda v: f"{v:.1f}"),
    ("MFU", "mfu", lambda v: f"{100 * v:.0f}%"),
    ("top-1 (paper)", "top1", lambda v: f"{v:g}"),
    ("pretrained on", "pretraining", str),
]


def merge(rows: list[dict]) -> list[dict]:
    """One record per model x resolution x batch: its cost row, its (inference) throughput row, its card."""
    merged: dict[tuple, dict] = {}
    for row in rows:
        key = (row["model"], row["img_size"], row.get("batch_size"))
        record = merged.setdefault(key, {"model": row["model"], "img_size": row["img_size"],
                                         "batch_size": row.get("batch_size")})
        if row.get("kind") == "throughput" and row["settings"].get("train"):
            record.update({f"train_{k}": row.get(k) for k in ("imgs_per_s", "latency_ms_p50", "mfu")})
            continue
        record.update({k: v for k, v in row.items() if k not in ("kind", "settings", "software", "traceback")})
        if "failed" in row:
            record.setdefault("failures", []).append(f"{row['kind']}: {row['failed']}")
            record.pop("failed")
    for record in merged.values():
        found = card(record["model"])
        record.update({"top1": found["top1"], "top1_resolution": found["resolution"],
                       "pretraining": found["pretraining"], "top1_source": found["source"]} if found else
                      {"top1": None, "pretraining": None})
    return list(merged.values())


def cells(record: dict) -> list[str]:
    if "skipped" in record:
        return [record["model"], str(record["img_size"]), "", "", "", "", "", "", "", "", "",
                f"skipped: {record['skipped']}", ""]
    out = []
    for _, field, fmt in COLUMNS:
        value = record.get(field)
        out.append("-" if value is None else fmt(value))
    if record.get("failures"):
        out[-1] = f"{out[-1]} (failed: {'; '.join(record['failures'])})"
    return out


def to_rich(records: list[dict]):
    from rich.table import Table

    table = Table(title="archzoo comparison (MACs per image; FLOPs = 2 x MACs)", title_justify="left")
    for header, *_ in COLUMNS:
        table.add_column(header, justify="left" if header in ("model", "pretrained on") else "right")
    for record in records:
        table.add_row(*cells(record))
    return table


def to_markdown(records: list[dict]) -> str:
    lines = ["| " + " | ".join(h for h, *_ in COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
    lines += ["| " + " | ".join(cells(r)) + " |" for r in records]
    return "\n".join(lines) + "\n"


def to_csv(records: list[dict]) -> str:
    fields = sorted({k for r in records for k, v in r.items() if not isinstance(v, (dict, list))})
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=fields, extrasaction="ignore")
    writer.writeheader()
    writer.writerows(records)
    return buffer.getvalue()


def to_json(records: list[dict]) -> str:
    return json.dumps(records, indent=2, default=str)
