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
from dataclasses import dataclass, field
from pathlib import Path

from analysis.size import Size

from ..store.safe_io import strict_loads
from ..errors import UsageError
from ..store.store import BadLine, warn_skipped

PREDICTED_FILE = "predicted.jsonl"
DEVICES = ("H100", "A100", "L4", "RTX 4090", "V100")     # as --predict takes them ("V100": SXM2): fixed_sheets()
BATCHES = (1, 64)
SIZE = 224
DTYPE = "bf16"               # torch.autocast over fp32 weights, as timm's benchmark --amp runs
OTHER_DTYPE = {"V100": "fp16"}    # Volta has no bf16 tensor cores: AMP there is fp16 autocast
TORCH = (2, 9)               # the release predicted, named so the committed rows are the same whatever torch runs them
# what each committed row keeps of predict()'s (its per-op-class split stays with zoo.compare --predict)
KEPT = ("predicted", "device", "part", "model", "img_h", "img_w", "img_size", "batch_size", "dtype", "peak_flops",
        "mem_bandwidth", "imgs_per_s", "imgs_per_s_p10", "imgs_per_s_p90", "band_from", "latency_ms",
        "roofline_imgs_per_s", "roofline_ms", "serve_bytes", "device_memory_bytes", "fits_memory", "source",
        "calibration_source", "torch", "attention", "architecture")
MAX_BYTES = 16 << 20


class PredictionsError(UsageError):
    """results/predicted.jsonl cannot be read whole, so --refresh cannot keep the rows users saved in it."""


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
                row = predict(request, sheets[device], counted=counted[request.dtype], torch=TORCH)
                per_device[device].append({k: rounded(getattr(row, k)) for k in KEPT})
    return [row for device in DEVICES for row in per_device[device]]


def predictions_path(results_dir: str | Path) -> Path:
    return Path(results_dir) / "results" / PREDICTED_FILE


def text_of(rows: list[dict]) -> str:
    return "".join(json.dumps(r, sort_keys=True, allow_nan=False) + "\n" for r in rows)


def write_predictions(results_dir: str | Path, models: list[str]) -> Path:
    """Replace the fixed set in results/predicted.jsonl atomically with fresh predictions of `models`; every other
    line is kept as it was after it: the rows users saved, and any line that is no usable row (a user's damaged
    row is never dropped: the report goes on naming it). PredictionsError when the file cannot be read whole
    (nothing written); returns its path."""
    from ..store.safe_io import write_atomic

    found = read_predicted_file(results_dir)
    if found.problem:
        raise PredictionsError(f"{found.problem}: move it aside, then refresh again")
    path = predictions_path(results_dir)
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(path, text_of(fresh_predictions(models)).encode("utf-8") + b"".join(found.kept_lines))
    return path


def fixed_rows(rows: list[dict]) -> list[dict]:
    """The fixed set zoo.report --refresh writes (no saved_by)."""
    return [r for r in rows if not r.get("saved_by")]


@dataclass
class PredictedFile:
    """results/predicted.jsonl as read, line by line: the usable rows; each line that is none, named (file, line,
    why); why the file as a whole cannot be read (a link, a FIFO, larger than MAX_BYTES), if so; and the lines
    --refresh keeps after the fixed set (every line but the fixed set's, as it was)."""
    rows: list[dict] = field(default_factory=list)
    bad_lines: list[BadLine] = field(default_factory=list)
    problem: str | None = None
    kept_lines: list[bytes] = field(default_factory=list)


def _of_the_fixed_set(line: bytes) -> bool:
    """A line --refresh rewrites: a JSON object without saved_by (anything else may be a user's)."""
    try:
        row = strict_loads(line.decode("utf-8"))
    except ValueError:          # UnicodeDecodeError and every JSON error are ValueErrors
        return False
    return isinstance(row, dict) and not row.get("saved_by")


def _judged(line: bytes, number: int) -> tuple[dict | None, str | None]:
    """(the usable predicted row on this line, None), or (None, why it is none)."""
    from ..predict.schema import check_predicted

    try:
        return check_predicted(strict_loads(line.decode("utf-8")), f"line {number}"), None
    except UnicodeDecodeError:
        return None, "not UTF-8 text"
    except json.JSONDecodeError as e:
        return None, f"not JSON ({e.msg} at column {e.colno})"
    except ValueError as e:          # not strict JSON (NaN, too deep), or no usable predicted row
        return None, (str(e).splitlines() or [type(e).__name__])[0].removeprefix(f"line {number}: ")


def read_predicted_file(results_dir: str | Path) -> PredictedFile:
    """Every line of results/predicted.jsonl judged alone (strict JSON, zoo.predict.schema.check_predicted):
    one line that is no usable row hides no other. A link or FIFO is never opened; no file: nothing read."""
    from ..store.safe_io import kind_of, read_regular

    path, label = predictions_path(results_dir), f"results/{PREDICTED_FILE}"
    in_the_way = kind_of(path)
    if in_the_way:
        return PredictedFile(problem=f"{label} is {in_the_way}, not a regular file")
    if not path.exists():
        return PredictedFile()
    try:
        data = read_regular(path, MAX_BYTES, label)
    except UsageError as e:
        return PredictedFile(problem=f"{label} is not usable ({e})")
    found = PredictedFile()
    for number, line in enumerate(data.split(b"\n"), 1):
        if not line.strip():
            continue
        row, why = _judged(line, number)
        if row is not None:
            found.rows.append(row)
        else:
            found.bad_lines.append(BadLine(path, number, why))
        if (row is not None and row.get("saved_by")) or (row is None and not _of_the_fixed_set(line)):
            found.kept_lines.append(line + b"\n")          # a user's: --refresh writes it back as it was
    warn_skipped(path, found.bad_lines, "are no usable predicted row")
    return found


def read_predictions(results_dir: str | Path) -> tuple[list[dict], str | None]:
    """(usable rows, None); ([], None) without a file; ([], why) for a file that cannot be read whole. Lines that
    are no usable row are skipped (read_predicted_file names them)."""
    found = read_predicted_file(results_dir)
    return found.rows, found.problem


def _key(row: dict) -> tuple:
    return row["device"], row["model"], row["batch_size"]


def stale_predictions(results_dir: str | Path, models: list[str]) -> list[str]:
    """Problems: the committed predictions missing, unusable, or different from fresh ones (by row, named)."""
    found = read_predicted_file(results_dir)
    if found.problem:
        return [found.problem]
    rows = found.rows
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
    return [f"results/{PREDICTED_FILE} line {b.number} is no usable predicted row: {b.reason}"
            for b in found.bad_lines] + sorted(problems)
