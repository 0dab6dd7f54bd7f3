"""Turning result rows into the comparison people read: merged records, a table, JSON, CSV.

Every header states its unit (the columns and their formatters: zoo.console.columns): MACs per image, memory in
MiB per batch, latency in ms per step of the batch, img/s from the mean rate and from the median step. A top-1 is shown only at the resolution it
was measured at, beside the checkpoint it is for (its timm tag) and that checkpoint's pretraining group.
Skipped and failed rows are listed under the table, not inside it.
"""
from __future__ import annotations

import csv
import io
import json

from ..console import columns as table
from ..console.columns import Column, figure
from ..console.markdown import machine_name, markdown_table, mfu_cell
from ..models.accuracy import accuracy_fields, entry_fields  # noqa: F401 - accuracy_fields: imported from here by callers
from ..models.segmenters.published import published_cells
from ..store.safe_io import strict_dumps
from ..store.schema import row_size

LOADED_PROBE = "probed under load"    # how zoo.runs.peaks' peak_probe names a probe that ran under load and is in use


def peak_under_load(record: dict, prefix: str = "") -> bool:
    """Whether a timed record's GEMM peak or memory bandwidth (its `prefix`peak_probe) is a probe that ran under
    load: it reads low, so the MFU reads high and the roofline long. A quiet kept peak used instead says "kept"."""
    probe = record.get(f"{prefix}peak_probe") or ""
    return probe.startswith(LOADED_PROBE) or f"; memory bandwidth {LOADED_PROBE}" in probe


def _mfu(record: dict, prefix: str = "") -> str | None:
    cell = mfu_cell(record, prefix, digits=0, unit="%")
    return cell + " (peak under load)" if cell and record.get(f"{prefix}mfu") is not None and \
        peak_under_load(record, prefix) else cell


TIMED = ("imgs_per_s", "imgs_per_s_p50", "latency_ms_p50", "latency_ms_p99", "cv", "mfu", "mfu_above_peak",
         "noisy", "peak_flops", "peak_fast_gemm", "peak_probe", "foreign_cpu_share",
         "ran_batch_size", "iters")
P99_MIN_STEPS = 100    # a p99 of fewer steps is the slowest step or close to it: the table says so


def _p99(record: dict, prefix: str = "") -> str | None:
    p99, steps = record.get(f"{prefix}latency_ms_p99"), record.get(f"{prefix}iters")
    if p99 is None:
        return None
    return f"{p99:.1f}" + (f" (n={steps})" if steps is not None and steps < P99_MIN_STEPS else "")


def _noisy(record: dict, prefix: str = "") -> str:
    if not record.get(f"{prefix}noisy"):
        return ""
    share = record.get(f"{prefix}foreign_cpu_share")
    return f"cv {record[f'{prefix}cv']:.2f}" + (f", others {100 * share:.0f}%" if share is not None else "")


def _roofline(record: dict) -> str | None:
    value = record.get("roofline_ms")
    return None if value is None else figure("roofline_ms", 1)(value) + \
        (" (peak under load)" if peak_under_load(record) else "")


def loaded_peak_lines(records: list[dict]) -> list[str]:
    """Under the table: each record whose MFU and roofline stand on a probe that ran under load, and why."""
    return [f"{r['model']} {r['size']} px batch {r['batch_size']}{' (training step)' if p else ''}: MFU"
            f"{'' if p else ' and roofline'} against {r[f'{p}peak_flops'] / 1e9:.1f} GFLOP/s, "
            f"{r[f'{p}peak_probe']}: a low peak, so MFU reads high; probe on a quiet "
            f"machine (--reprobe-peak) for a kept one"
            for r in _measured(records) for p in ("", "train_") if peak_under_load(r, p)]


# the cells that read more of the record than their own field
RECORD_CELLS = {"mfu": _mfu, "train_mfu": lambda r: _mfu(r, "train_"), "latency_ms_p99": _p99, "noisy": _noisy,
                "roofline_ms": _roofline, "task_recipe": lambda r: r.get("task_recipe") or r.get("task_unmatched"),
                "seg_recipe": lambda r: r.get("seg_recipe") or r.get("seg_unmatched")}


def task_checkpoint(record: dict) -> dict:
    """A detector's or segmenter's weights and pretraining are its published recipe's (the backbone checkpoint
    that recipe fine-tuned), not timm's classifier checkpoint: no classifier top-1 beside a task metric."""
    published = record.get("task_published") or record.get("seg_published") or {}
    group = published.get("pretraining_group")
    return {**entry_fields(None), "pretraining": group, "accuracy": []}


def timed_on(record: dict) -> str:
    """Where a timed record ran: its device and the machine the reports name it by ("cpu: AMD EPYC (2 threads)")."""
    device = (record.get("timing_settings") or {}).get("device") or record.get("device") or "?"
    return f"{device}: {machine_name(record)}"


def merge(rows: list[dict], weights: str = "default", pretraining=None) -> list[dict]:
    """One record per model x resolution x batch (x timing backend): its cost row, its timed rows (training
    prefixed train_), and the accuracy of the checkpoint `weights` picks at exactly that resolution. Where one
    run timed eager and ONNX Runtime, each backend is a record, and the ONNX Runtime one has vs_eager."""
    merged: dict[tuple, dict] = {}
    not_measured = []
    for row in rows:
        if row.get("skipped") or row.get("failed"):
            not_measured.append(row)
            continue
        backend = row["settings"].get("backend") if row["kind"] == "throughput" else None
        key = (row["model"], row["img_h"], row["img_w"], row["batch_size"], backend)
        record = merged.setdefault(key, _head(row))
        if row["kind"] == "throughput" and row["settings"].get("train"):
            record.update({f"train_{k}": row.get(k) for k in TIMED})
            continue
        record.update({k: v for k, v in row.items() if k not in ("kind", "settings", "software", "schema")})
        record["settings" if row["kind"] == "cost" else "timing_settings"] = row["settings"]
        for task in ("detector", "segmenter"):
            if row["settings"].get(task):
                record[task] = row["settings"][task]
    for key in [k for k in merged if k[4] is None]:      # a cost record joins each backend's timed record
        timed = [k for k in merged if k[:4] == key[:4] and k[4] is not None]
        for other in timed:
            merged[other] = {**merged[key], **merged[other]}
        if timed:
            del merged[key]
    for key, record in merged.items():
        eager = merged.get((*key[:4], "eager"))
        if key[4] not in (None, "eager") and eager and eager.get("imgs_per_s") and record.get("imgs_per_s"):
            record["vs_eager"] = record["imgs_per_s"] / eager["imgs_per_s"]
    for record in merged.values():
        if record.get("imgs_per_s") is not None or record.get("train_imgs_per_s") is not None:
            record["timed_on"] = timed_on(record)
        record.update(accuracy_fields(record["model"], record["img_size"], weights, pretraining))
        if record.get("detector") and pretraining:     # the published AP of those pretraining groups instead
            from ..models.detectors.published import task_fields

            record.update(task_fields(record["model"], record["detector"], list(pretraining)))
        if record.get("segmenter") and (pretraining or weights != "default"):     # the row those pick instead
            from ..models.segmenters.published import task_fields as segmenter_fields

            record.update(segmenter_fields(record["model"], record["segmenter"], (record["img_h"], record["img_w"]),
                                           list(pretraining) if pretraining else None, weights))
        record.update(published_cells(record))          # segmenter rows: the published ADE20K figures
        if record.get("detector") or record.get("segmenter"):
            record.update(task_checkpoint(record))
    return [*merged.values(), *({**_head(row), "kind": row["kind"], "settings": row["settings"],
                                 "skipped": row.get("skipped"), "failed": row.get("failed")} for row in not_measured)]


def _head(row: dict) -> dict:
    """What a record of `row`'s model, size and batch starts with."""
    return {"model": row["model"], "size": row_size(row).label, "img_size": row["img_size"], "img_h": row["img_h"],
            "img_w": row["img_w"], "batch_size": row["batch_size"]}


def _measured(records: list[dict]) -> list[dict]:
    return [r for r in records if not r.get("skipped") and not r.get("failed")]


def _columns(records: list[dict]) -> list[Column]:
    """The shared table's columns (zoo.console.columns) some record has a value in; model and size always."""
    def shown(record: dict, field: str) -> bool:
        cell = RECORD_CELLS[field] if field in ("mfu", "train_mfu", "task_recipe", "seg_recipe") else None
        return (cell(record) if cell else record.get(field)) is not None

    return [c for c in table.COLUMNS if any(shown(r, c.field) for r in records) or c.field in ("model", "size")]


def cells(record: dict, columns: list[Column]) -> list[str]:
    def text(column: Column) -> str | None:
        if column.format is None:     # a RECORD_CELLS cell
            return RECORD_CELLS[column.field](record)
        value = record.get(column.field)
        return None if value is None else column.format(value)      # a formatter may give None too (no maps: [])

    return ["-" if t is None else t for t in map(text, columns)]


def not_measured_lines(records: list[dict]) -> list[str]:
    return [f"{r['model']} {r['size']} px batch {r['batch_size']} ({r['kind']}): "
            f"{'skipped: ' + r['skipped'] if r.get('skipped') else 'failed: ' + r['failed']}"
            for r in records if r.get("skipped") or r.get("failed")]


TITLE = "archzoo comparison (MACs per image; FLOPs = 2 x MACs; MiB = 2^20 bytes)"


# said once when every record shares it
SETTING_FIELDS = ("size", "batch_size", "detector", "segmenter", "backend", "dtype", "timed_on")


def fold_constant(headers: list[str], rows: list[list[str]], settings: set[int]) -> tuple[list[str], list[list[str]], list[str]]:
    """Setting columns (indices `settings`) every row shares move out of the table into "header: value" notes,
    and columns with no value in any row go, so that the table shows what differs (one row keeps its columns)."""
    keep, notes = [], []
    for i, header in enumerate(headers):
        values = {row[i] for row in rows}
        if i > 0 and values <= {"", "-"}:
            continue
        if i in settings and len(rows) > 1 and len(values) == 1:
            notes.append(f"{header}: {values.pop()}")
            continue
        keep.append(i)
    return [headers[i] for i in keep], [[row[i] for i in keep] for row in rows], notes


TRANSPOSE_UP_TO = 12     # records; more than that stay one row each however wide the table gets


def to_rich(records: list[dict], width: int = 160):
    """The console table. Settings every row shares are stated under the title; a table wider than `width`
    with few records is turned on its side (one column per record, one row per metric) rather than squeezed."""
    from rich.console import Group
    from rich.table import Table
    from rich.text import Text

    measured = _measured(records)
    columns = _columns(measured)
    headers, rows, notes = fold_constant([c.header for c in columns], [cells(record, columns) for record in measured],
                                         {i for i, c in enumerate(columns) if c.field in SETTING_FIELDS})
    fields = {c.header: c.field for c in columns}
    table = Table()
    # one line per row needs each column as wide as its widest header or cell, plus borders
    natural = 1 + sum(3 + max([len(h), *(len(row[i]) for row in rows)]) for i, h in enumerate(headers))
    if rows and natural > width and len(rows) <= TRANSPOSE_UP_TO:
        names = [row[0] for row in rows]
        labels = names if len(set(names)) == len(names) else [f"{row[0]} ({i + 1})" for i, row in enumerate(rows)]
        table.add_column("", justify="left", no_wrap=True)
        for label in labels:
            table.add_column(label, justify="right", overflow="fold")
        for i, header in enumerate(headers[1:], start=1):
            table.add_row(header, *(row[i] for row in rows))
    else:
        for i, header in enumerate(headers):
            # long cells wrap between words (map shapes, one per word), never inside one, and are never cut
            widest = max((len(word) for row in rows for word in str(row[i]).split()), default=None)
            table.add_column(header, no_wrap=i == 0, min_width=widest, overflow="fold",
                             justify="left" if fields[header] in ("model", "weights_label", "pretraining") else "right")
        for row in rows:
            table.add_row(*row)
    lines = not_measured_lines(records)
    shared = [Text("same for all: " + " · ".join(notes))] if notes else []
    loaded = [Text(f"peak under load: {line}") for line in loaded_peak_lines(records)]
    return Group(Text(TITLE), table, *shared, *loaded, *(Text(f"not measured: {line}") for line in lines))


def to_markdown(records: list[dict]) -> str:
    measured = _measured(records)
    columns = _columns(measured)
    text = markdown_table([c.header for c in columns], [cells(r, columns) for r in measured])
    loaded = loaded_peak_lines(records)
    text += "\nPeak under load:\n" + "".join(f"- {line}\n" for line in loaded) if loaded else ""
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
