"""The predicted rows' shape: PredictedRow (one forward, zoo.predict.inference) and the identity fields a training
row shares with it (zoo.predict.train), the best batch under a latency target, and the row as
results/predicted.jsonl keeps it (saved). Their tables: zoo.predict.text."""
from __future__ import annotations

import contextlib
import dataclasses
from dataclasses import dataclass
from typing import Optional

from analysis.batch_search import largest_batch_where, powers_of_two

MAX_SWEEP_BATCH = 4096


class TooLarge(Exception):
    """A request past what torch can count: one tensor of its forward (or training step) would hold more elements
    than int64 sizes can say (a ViT's (batch, heads, N, N) scores at a large size and batch). Nothing is predicted;
    the request is skipped, naming why, and the others go on."""


@contextlib.contextmanager
def countable(request):
    """Turns torch's size overflow while counting the request into TooLarge, naming the request."""
    try:
        yield
    except (RuntimeError, OverflowError) as e:
        if "overflow" not in str(e).lower():
            raise
        h, w = request.img_size.hw
        raise TooLarge(f"{request.model} at {h}x{w} px, batch {request.batch_size}: too large to count (a tensor "
                       f"of the {'training step' if request.train else 'forward'} overflows int64 sizes: "
                       f"{str(e).splitlines()[0][:100]})") from None


@dataclass(frozen=True)
class PredictedRow:
    """One predicted forward (zoo.predict.inference.predict: per batch, latencies and memory per batch, img/s
    counting images); never a measured row. The fields after calibration_source are there only when they apply."""
    predicted: bool
    device: str
    part: str                         # which part the datasheet is (SXM or PCIe, its memory): DeviceSheet.part
    model: str
    img_h: int
    img_w: int
    img_size: Optional[int]
    batch_size: int
    dtype: str
    features: bool
    memory_format: str                # contiguous (NCHW) or channels_last
    conv_precision: str               # what cuDNN's convolutions run in (fp32 under TF32: tf32), and cuBLAS's matmuls
    matmul_precision: str
    peak_flops: float                 # the datasheet's dense peak of the matmuls' precision, FLOP/s
    conv_peak_flops: float            # and of the convolutions' precision
    mem_bandwidth: float              # bytes/s
    launch_us: float
    roofline_ms: float
    roofline_compute_share: float
    roofline_memory_share: float
    roofline_launch_share: float
    imgs_per_s: float                 # the calibrated expectation, and its held-out band
    imgs_per_s_p10: float
    imgs_per_s_p90: float
    band_from: str
    latency_ms: float
    roofline_imgs_per_s: float
    serve_bytes: int
    device_memory_bytes: Optional[float]
    fits_memory: bool
    roofline_ms_by_op_class: dict
    source: str
    calibration_source: str
    price_per_hour_usd: Optional[float] = None     # --price-per-hour
    imgs_per_usd: Optional[float] = None
    sweep_note: Optional[str] = None               # --batch-sizes sweep
    sweep_latency_target_ms: Optional[float] = None
    reparam: Optional[str] = None                  # the form counted where a model has two (zoo.predict.inference)
    task: Optional[str] = None                     # --detector / --segmenter: the whole model on this backbone
    torch: Optional[str] = None                    # the torch release predicted (--torch; zoo.predict.versions)
    attention: Optional[str] = None                # fused (SDPA) or unfused (op by op), as counted
    architecture: Optional[str] = None             # the device's, whose factors the row took (or the shared ones)

    @classmethod
    def of(cls, fields: dict) -> PredictedRow:
        """The row holding `fields`; ValueError (one line) for a field it has not or one it lacks."""
        try:
            return cls(**fields)
        except TypeError as e:
            raise ValueError(f"not a predicted row: {e}") from None

    def to_json(self) -> dict:
        """Its fields, those only asked for left out when not asked for."""
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self)
                if f.default is dataclasses.MISSING or getattr(self, f.name) is not None}


def best_batch(predict_at, target_ms: float) -> PredictedRow:
    """The row of the best batch under `target_ms`: the largest power of two whose expected ms per batch stays
    within it and which fits the device's memory (analysis.batch_search; why the largest is the best:
    zoo.predict.decision), marked with the target; batch 1's row, with a sweep_note, when even batch 1 misses the
    target or the memory. predict_at(batch) -> its PredictedRow."""
    rows: dict[int, PredictedRow] = {}

    def fits(batch: int) -> bool:
        try:
            rows[batch] = predict_at(batch)
        except TooLarge:
            if batch == 1:
                raise
            return False
        return rows[batch].latency_ms <= target_ms and rows[batch].fits_memory

    batch = largest_batch_where(fits, powers_of_two(MAX_SWEEP_BATCH))     # batch 1 is the first one tested
    note = None if batch else "batch 1 already misses the target or the memory"
    return dataclasses.replace(rows[batch or 1], sweep_note=note, sweep_latency_target_ms=target_ms)


def model_label(row: dict) -> str:
    """The backbone, and the detector or segmenter around it when the row is of the whole model."""
    return f"{row['model']} + {row['task']}" if row.get("task") else row["model"]


def saved(row: dict, by: str) -> dict:
    """The row as results/predicted.jsonl keeps it: every predicted field, who saved it (the command), archzoo's
    version."""
    from .._version import __version__

    return {**row, "saved_by": by, "archzoo_version": __version__}


def identity(request, sheet) -> dict:
    """The fields every predicted row starts with, inference or training: what was predicted, on which device
    (a zoo.runs.request.Request; an analysis.predict.devices.DeviceSheet)."""
    h, w = request.img_size.hw
    task = request.detector or request.segmenter
    return {"predicted": True, "device": sheet.name, "part": sheet.part, "model": request.model, "img_h": h, "img_w": w,
            "batch_size": request.batch_size, "dtype": request.dtype, **({"task": task} if task else {})}
