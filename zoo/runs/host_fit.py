"""A CPU batch that cannot fit the host's memory is halved before anything is allocated (the row says why).

The need is counted on the meta device (no weights, no activations allocated): the activation peak of
the step (a training step's includes its backward) plus the input batch, plus for a training step one
gradient and one momentum buffer per parameter. Activation memory is affine in the batch, so it is
counted at batches 1 and 2 and extrapolated. A need past what is available even at batch 1 is refused
(MemoryError: a failed row naming the need and the limit).
"""
from __future__ import annotations

from analysis.timing.host_memory import HEADROOM, available_bytes, halve_to_fit, need_text
from analysis.vocab import DTYPES, resolve_device


def fit_to_host(task) -> tuple[int, list[int], str | None]:
    """(batch to run, batches halved away, why) for a timed task; GPU and ONNX Runtime tasks unchanged."""
    if task.timing.backend != "eager" or resolve_device(task.timing.device).type != "cpu":
        return task.request.batch_size, [], None
    available = available_bytes()
    if available is None:
        return task.request.batch_size, [], None
    unit = task.request.replace(batch_size=1)      # one count per measured module and setting, whatever the batch
    one = _counted(unit, 1)
    two = _counted(unit, 2) if task.request.batch_size > 1 else one
    h, w = task.request.img_size.hw
    itemsize = DTYPES["fp32"].itemsize       # timing keeps fp32 weights and input (autocast inside)

    def need_at(batch: int) -> int:
        return max(one, one + (batch - 1) * (two - one)) + batch * 3 * h * w * itemsize

    batch, halved, why = halve_to_fit(task.request.batch_size, need_at, available)
    if need_at(batch) > HEADROOM * available:      # batch 1 too: refused, not left to the kernel's OOM killer
        raise MemoryError(f"{need_text(batch, need_at(batch), available)}; not run")
    return batch, halved, why


def _counted(request, batch: int) -> int:
    """Bytes the timed step of `request` (zoo.runs.request) needs at `batch` beyond its input: the count of the
    module the timing builds (zoo.runs.counted.count_of, fp32 as timed; a whole detector or segmenter included),
    the cost row's own count when that is fp32 at this batch."""
    from .counted import count_of

    counted = count_of(request.replace(batch_size=batch, dtype="fp32", optimizer=None))
    if not request.train:
        return counted.act_peak_bytes
    return counted.train_act_peak_bytes + 2 * counted.record["params"] * DTYPES["fp32"].itemsize


def record_halving(record: dict, requested: int, halved: list[int], why: str | None) -> dict:
    """The row says which batch was asked for, which were halved away up front, and why."""
    if halved:
        record.update(requested_batch_size=requested, oom_batch_sizes=halved + list(record.get("oom_batch_sizes") or []),
                      error="; ".join(filter(None, [why, record.get("error")])))
    return record
