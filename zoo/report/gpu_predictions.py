"""Predicted GPU throughput committed beside the results: results/predicted.jsonl, one row per (device, model,
batch), every one marked `predicted: true` (never a measurement, never in cost.jsonl or throughput.jsonl). The same
file in a user's folder also holds the rows zoo.compare/zoo.select --predict saved (`saved_by`), which --refresh
keeps and --check leaves alone.

What is predicted: each classifier among the deterministic rows (a registry model with an ImageNet accuracy
entry, counted at 224 px) at batch 1 and 64 under bf16 autocast (fp16 on V100, which lacks bf16), on five datasheet devices
(analysis.predict.devices), by zoo.predict.inference.predict. Counted on meta with the shipped calibration, so
the rows are the same on any machine: `zoo.report --refresh` rewrites the file whole, `--check` recomputes it.
Each forward is counted once per (model, batch) and reused for the five devices.
"""
from __future__ import annotations

import json
from pathlib import Path

from analysis.size import Size

PREDICTED_FILE = "predicted.jsonl"
DEVICES = ("H100", "A100", "L4", "RTX 4090", "V100")     # as --predict takes them ("V100": SXM2): fixed_sheets()
BATCHES = (1, 64)
SIZE = 224
DTYPE = "bf16"               # torch.autocast over fp32 weights, as timm's benchmark --amp runs
OTHER_DTYPE = {"V100": "fp16"}    # Volta has no bf16 tensor cores: AMP there is fp16 autocast
# what each committed row keeps of predict()'s (its per-op-class split stays with zoo.compare --predict)
KEPT = ("predicted", "device", "model", "img_h", "img_w", "img_size", "batch_size", "dtype", "peak_flops",
        "mem_bandwidth", "imgs_per_s", "imgs_per_s_p10", "imgs_per_s_p90", "band_from", "latency_ms",
        "roofline_imgs_per_s", "roofline_ms", "serve_bytes", "device_memory_bytes", "fits_memory", "source",
        "calibration_source")
MAX_BYTES = 16 << 20


class PredictionsError(ValueError):
    """results/predicted.jsonl is not a list of rows this module could have written."""


def predicted_models(tasks) -> list[str]:
    """The classifiers among the deterministic tasks (zoo.report.deterministic) counted at SIZE px: models with
    an ImageNet accuracy entry (ViTDet's backbones have none), in task order."""
    from ..models.accuracy import accuracy_entries

    square = Size(SIZE, SIZE)
    requests = [t.request for t in tasks]
    found = [r.model for r in requests if r.img_size == square and not r.detector and not r.segmenter
             and accuracy_entries(r.model)]
    return list(dict.fromkeys(found))


def rounded(value):
    """Floats to 9 significant digits: the same file on any machine despite last-bit differences of libm."""
    return float(f"{value:.9g}") if isinstance(value, float) else value


def fixed_sheets() -> dict:
    """DEVICES' DeviceSheets, by the name DEVICES gives each (resolved as the command line resolves --predict)."""
    from ..options import predict_devices

    return dict(zip(DEVICES, predict_devices(",".join(DEVICES))))


def fresh_predictions(models: list[str]) -> list[dict]:
    """Every (model, batch, device) row, device by device in DEVICES order, then model and batch; one count
    per (model, batch, dtype), reused across the devices of that dtype."""
    from ..predict.inference import gpu_forward, predict
    from ..runs.request import Request

    sheets = fixed_sheets()
    per_device: dict[str, list[dict]] = {device: [] for device in DEVICES}
    for model in models:
        for batch in BATCHES:
            counted: dict[str, dict] = {}       # dtype -> the counted forward, shared by the devices
            for device in DEVICES:
                request = Request(model, Size(SIZE, SIZE), batch, OTHER_DTYPE.get(device, DTYPE))
                if request.dtype not in counted:
                    counted[request.dtype] = gpu_forward(request)
                row = predict(request, sheets[device], counted=counted[request.dtype])
                per_device[device].append({k: rounded(getattr(row, k)) for k in KEPT})
    return [row for device in DEVICES for row in per_device[device]]


def predictions_path(results_dir: str | Path) -> Path:
    return Path(results_dir) / "results" / PREDICTED_FILE


def text_of(rows: list[dict]) -> str:
    return "".join(json.dumps(r, sort_keys=True, allow_nan=False) + "\n" for r in rows)


def write_predictions(results_dir: str | Path, models: list[str]) -> Path:
    """Replace the fixed set in results/predicted.jsonl atomically with fresh predictions of `models`, the rows
    users saved kept after it (a file that is not usable is replaced whole); returns its path."""
    from ..store.safe_io import write_atomic

    path = predictions_path(results_dir)
    path.parent.mkdir(parents=True, exist_ok=True)
    kept, _ = read_predictions(results_dir)
    write_atomic(path, text_of(fresh_predictions(models) + saved_rows(kept)))
    return path


def _check_row(row, number: int) -> dict:
    from ..predict.schema import check_predicted
    from ..store.schema import SchemaError

    try:
        return check_predicted(row, f"line {number}")
    except SchemaError as e:
        raise PredictionsError(str(e)) from None


def saved_rows(rows: list[dict]) -> list[dict]:
    """The rows a user saved (zoo.compare/zoo.select --predict: they carry saved_by), not the fixed set."""
    return [r for r in rows if r.get("saved_by")]


def fixed_rows(rows: list[dict]) -> list[dict]:
    """The fixed set zoo.report --refresh writes (no saved_by)."""
    return [r for r in rows if not r.get("saved_by")]


def read_predictions(results_dir: str | Path) -> tuple[list[dict], str | None]:
    """(rows, None); ([], None) without a file; ([], why) for a file that is not usable (a link or FIFO is not
    opened; strict JSON, each row with the fields the report reads)."""
    from ..store.safe_io import read_stored, strict_loads

    label = f"results/{PREDICTED_FILE}"
    text, why = read_stored(predictions_path(results_dir), label, MAX_BYTES)
    if text is None:
        return [], why
    try:
        return [_check_row(strict_loads(line), n) for n, line in enumerate(text.splitlines(), 1) if line.strip()], None
    except ValueError as e:
        return [], f"{label} is not usable ({str(e).splitlines()[0] if str(e) else type(e).__name__})"


def _key(row: dict) -> tuple:
    return row["device"], row["model"], row["batch_size"]


def stale_predictions(results_dir: str | Path, models: list[str]) -> list[str]:
    """Problems: the committed predictions missing, unusable, or different from fresh ones (by row, named)."""
    rows, why = read_predictions(results_dir)
    if why:
        return [why]
    if not predictions_path(results_dir).exists():
        return [f"results/{PREDICTED_FILE} is missing: run `python -m zoo.report --refresh`"] if models else []
    old, new = {_key(r): r for r in fixed_rows(rows)}, {_key(r): r for r in fresh_predictions(models)}
    problems = [f"results/{PREDICTED_FILE} lacks {m} batch {b} on {d}" for d, m, b in new if (d, m, b) not in old]
    problems += [f"results/{PREDICTED_FILE} holds {m} batch {b} on {d}, which is no longer predicted"
                 for d, m, b in old if (d, m, b) not in new]
    for key in new.keys() & old.keys():
        fields = sorted(k for k in set(new[key]) | set(old[key]) if new[key].get(k) != old[key].get(k))
        if fields:
            problems.append(f"results/{PREDICTED_FILE}: {key[1]} batch {key[2]} on {key[0]}: committed "
                            f"{', '.join(fields)} differ from a fresh prediction")
    return sorted(problems)
