"""The predicted row as results/predicted.jsonl holds it (zoo.predict.rows.PredictedRow's fields): never a
measurement, so of none of zoo.store.schema's KINDS; the fields every reader needs and their types, checked on
every write (zoo.store.store.append_predicted) and read (zoo.report.gpu_predictions). saved_by names the
--predict command that saved a row; the repository's fixed set (zoo.report --refresh) has none."""
from __future__ import annotations

from typing import Any

from ..store.schema import SchemaError

PREDICTED_REQUIRED = {"predicted": bool, "device": str, "model": str, "batch_size": int, "imgs_per_s": float,
                      "imgs_per_s_p10": float, "imgs_per_s_p90": float, "roofline_imgs_per_s": float,
                      "latency_ms": float, "serve_bytes": int, "fits_memory": bool, "calibration_source": str,
                      "band_from": str, "source": str, "dtype": str}
# what the values must be, beyond their types: a rate or latency of 0 or below is no prediction (and divides by 0)
POSITIVE = ("batch_size", "imgs_per_s", "imgs_per_s_p10", "imgs_per_s_p90", "roofline_imgs_per_s", "latency_ms")


def check_predicted(row: Any, where: str = "a predicted row") -> dict:
    """`row` if it is a predicted row (PREDICTED_REQUIRED of their types, text not empty, POSITIVE above 0, the
    device's memory known, marked predicted: true), else SchemaError (one line)."""
    if not isinstance(row, dict):
        raise SchemaError(f"{where} is not an object")
    for key, kind in PREDICTED_REQUIRED.items():
        if key not in row:
            raise SchemaError(f"{where}: lacks {key}")
        value = row[key]
        if isinstance(value, bool) != (kind is bool) or not isinstance(value, (int, float) if kind is float else kind):
            raise SchemaError(f"{where}: {key} is not {kind.__name__}")
        if kind is str and not value.strip():          # a device, model, source or dtype must say something
            raise SchemaError(f"{where}: {key} is empty")
    if row["predicted"] is not True:
        raise SchemaError(f"{where}: not marked predicted")
    low = next((key for key in POSITIVE if not row[key] > 0), None)
    if low:
        raise SchemaError(f"{where}: {low} is {row[low]!r}, not above 0")
    if row["serve_bytes"] < 0:
        raise SchemaError(f"{where}: serve_bytes is {row['serve_bytes']!r}, below 0")
    memory = row.get("device_memory_bytes", "absent")     # None: a datasheet without it, so the row must fit
    if not (memory is None and row["fits_memory"]) and \
            (isinstance(memory, bool) or not isinstance(memory, (int, float)) or not memory > 0):
        raise SchemaError(f"{where}: device_memory_bytes is {memory if memory == 'absent' else repr(memory)}, "
                          "not a number of bytes above 0")
    return row
