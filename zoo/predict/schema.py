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
                      "band_from": str}
# an fp32 row's band_from ends with this (zoo.predict.inference); its table says it (predicted)
FP32_CAVEAT = ("; NOT validated for fp32/TF32: timm publishes no fp32 GPU table to fit, and on the fp32 and TF32 tables "
               "kept aside the expectation was off by up to about 2x and this band covered far less than 80% "
               "(docs/prediction.md)")


def check_predicted(row: Any, where: str = "a predicted row") -> dict:
    """`row` if it is a predicted row (PREDICTED_REQUIRED, marked predicted: true), else SchemaError (one line)."""
    if not isinstance(row, dict):
        raise SchemaError(f"{where} is not an object")
    for key, kind in PREDICTED_REQUIRED.items():
        value = row.get(key)
        if isinstance(value, bool) != (kind is bool) or not isinstance(value, (int, float) if kind is float else kind):
            raise SchemaError(f"{where}: {key} is not {kind.__name__}")
    if row["predicted"] is not True:
        raise SchemaError(f"{where}: not marked predicted")
    return row
