"""Throughput and latency harness: one record per (model, resolution, batch, device, dtype, mode).

Protocol: one random input reused; `warmup` untimed steps; timed steps until both `min_iters` and
`min_seconds` are reached (analysis.latency); imgs_per_s = batch x iters / span from the first
step's start to the last step's end. On out-of-memory the batch is halved and retried, as timm's
benchmark.py `_try_run` does, but the error and the batch that finally ran are recorded.
"""

from __future__ import annotations

import gc
import itertools
from typing import Iterable, Mapping, Optional, Union

import torch
import torch.nn as nn

from analysis.contention import ForeignCpuMeter, wait_for_quiet
from analysis.fingerprint import available_cores, environment_fingerprint
from analysis.latency import TimedRun, latency_stats, timed_loop
from analysis.peak import flops_per_image, measure_peak_flops, model_flops_utilisation
from analysis.progress import progress_tracker
from analysis.steps import AUTOCAST_DTYPES, make_inference_step, make_train_step, random_input

MODES = ("inference", "train")
DEFAULT_MIN_ITERS = 10
DEFAULT_MIN_SECONDS = 1.0
DEFAULT_WARMUP = 3


def resolve_device(device: str) -> torch.device:
    """'auto' is cuda when available, else cpu."""
    if device == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    resolved = torch.device(device)
    if resolved.type == "cuda" and not torch.cuda.is_available():
        raise RuntimeError("device='cuda' requested but CUDA is not available")
    return resolved


def build_model(name: str, img_size: int, model_kwargs: Optional[Mapping] = None) -> nn.Module:
    """Random-weight model from the registry (`zoo.create_model`; 'timm:<name>' for any timm model)."""
    import zoo

    return zoo.create_model(name, img_size=img_size, **dict(model_kwargs or {}))


def is_out_of_memory(exc: BaseException) -> bool:
    """torch.OutOfMemoryError (CUDA and, in recent torch, CPU) or the CPU allocator's RuntimeError."""
    if isinstance(exc, torch.OutOfMemoryError):
        return True
    message = str(exc).lower()
    return isinstance(exc, RuntimeError) and ("out of memory" in message or "can't allocate memory" in message)


def _release_memory(model: nn.Module, device: torch.device) -> None:
    """Drop gradients left by a failed step and return cached blocks, so the smaller batch gets them."""
    for param in model.parameters():
        param.grad = None
    gc.collect()
    if device.type == "cuda":
        torch.cuda.empty_cache()


def _time_once(model, img_size, batch_size, device, dtype, mode, channels_last, in_chans, loop_args) -> TimedRun:
    images = random_input(batch_size, img_size, device, channels_last, in_chans)
    if mode == "inference":
        step = make_inference_step(model, images, device, dtype)
    else:
        step = make_train_step(model, images, device, dtype)
    return timed_loop(step, device, **loop_args)


def _time_with_oom_retry(model, requested_batch_size, device, **time_args):
    """(TimedRun or None, batch that ran or None, error text or None, batches that ran out of memory)."""
    batch_size, errors, oom_batch_sizes = requested_batch_size, [], []
    while True:
        try:
            run = _time_once(model, batch_size=batch_size, device=device, **time_args)
            return run, batch_size, "; ".join(errors) or None, oom_batch_sizes
        except Exception as exc:  # noqa: BLE001 -- only out-of-memory is handled, the rest re-raised
            if not is_out_of_memory(exc):
                raise
            first_line = (str(exc).strip().splitlines() or [""])[0]
            errors.append(f"{type(exc).__name__} at batch_size={batch_size}: {first_line}")
            oom_batch_sizes.append(batch_size)
        # NB: released only here, after the except block: until then the traceback's frames hold the
        # failed attempt's input and activations.
        _release_memory(model, device)
        if batch_size == 1:
            return None, None, "; ".join(errors), oom_batch_sizes
        batch_size = max(1, batch_size // 2)


def _throughput_fields(run: Optional[TimedRun], batch_size: Optional[int]) -> dict:
    if run is None:
        return {"imgs_per_s": None, "latency_ms_p50": None, "latency_ms_p90": None, "latency_ms_p99": None,
                "cv": None, "iters": 0, "total_seconds": None, "latencies_ms": []}
    return {
        "imgs_per_s": batch_size * run.iters / run.total_seconds,
        **latency_stats(run.latencies_s),
        "iters": run.iters,
        "total_seconds": run.total_seconds,
        "warmup_seconds": run.warmup_seconds,
        "latencies_ms": [latency * 1e3 for latency in run.latencies_s],
    }


def _mfu_fields(macs, imgs_per_s, peak_flops, device, dtype, threads, mode) -> dict:
    """MFU needs macs (per image, from the cost analysis); peak is measured when not given."""
    fields = {"macs": macs, "flops_per_img": None, "peak_flops": peak_flops, "peak_kernel": None,
              "peak_measured": None, "mfu": None, "mfu_above_peak": None}
    if macs is None:
        return fields
    fields["flops_per_img"] = flops_per_image(macs, mode)
    if peak_flops is None:
        peak = measure_peak_flops(str(device), dtype, threads)
        fields.update(peak_flops=peak["peak_flops"], peak_kernel=peak["peak_kernel"])
    fields["peak_measured"] = peak_flops is None
    if imgs_per_s is not None:
        mfu = model_flops_utilisation(macs, imgs_per_s, fields["peak_flops"], mode)
        fields.update(mfu=mfu, mfu_above_peak=mfu > 1.0)
    return fields


def measure_throughput(
    model_or_name: Union[str, nn.Module],
    img_size: int = 224,
    batch_size: int = 1,
    device: str = "auto",
    dtype: str = "fp32",
    mode: str = "inference",
    channels_last: bool = False,
    compile: bool = False,
    threads: Optional[int] = None,
    min_iters: int = DEFAULT_MIN_ITERS,
    min_seconds: float = DEFAULT_MIN_SECONDS,
    warmup: int = DEFAULT_WARMUP,
    max_iters: Optional[int] = None,
    macs: Optional[float] = None,
    peak_flops: Optional[float] = None,
    isolate: bool = False,
    model_kwargs: Optional[Mapping] = None,
    in_chans: int = 3,
) -> dict:
    """Time `model_or_name` (a registry name or a module) and return one flat record.

    threads=None uses every available core. macs is per image (batch 1 forward); without it mfu
    stays None. isolate=True runs the whole measurement in a fresh subprocess (names only).
    NB: a module passed in is moved to `device`, switched to eval/train and, in train mode, updated.
    """
    if mode not in MODES:
        raise ValueError(f"mode must be one of {MODES}, got {mode!r}")
    if dtype not in AUTOCAST_DTYPES:
        raise ValueError(f"dtype must be one of {sorted(AUTOCAST_DTYPES)}, got {dtype!r}")
    settings = dict(img_size=img_size, batch_size=batch_size, device=device, dtype=dtype, mode=mode,
                    channels_last=channels_last, compile=compile, threads=threads, min_iters=min_iters,
                    min_seconds=min_seconds, warmup=warmup, max_iters=max_iters, macs=macs,
                    peak_flops=peak_flops, model_kwargs=dict(model_kwargs or {}), in_chans=in_chans)
    if isolate:
        if not isinstance(model_or_name, str):
            raise TypeError("isolate=True needs a model name: a module cannot be rebuilt in a subprocess")
        from analysis.isolation import run_isolated

        return run_isolated(model_or_name, settings)

    torch_device = resolve_device(device)
    threads = threads if threads is not None else available_cores()
    previous_threads = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        model = build_model(model_or_name, img_size, model_kwargs) if isinstance(model_or_name, str) else model_or_name
        model = model.to(torch_device)
        if channels_last:
            model = model.to(memory_format=torch.channels_last)
        timed_model = torch.compile(model) if compile else model
        loop_args = dict(warmup=warmup, min_iters=min_iters, min_seconds=min_seconds, max_iters=max_iters)
        with ForeignCpuMeter() as foreign_cpu:
            run, ran_batch_size, error, oom_batch_sizes = _time_with_oom_retry(
                timed_model, batch_size, torch_device, img_size=img_size, dtype=dtype, mode=mode,
                channels_last=channels_last, in_chans=in_chans, loop_args=loop_args)
        record = {
            "model": model_or_name if isinstance(model_or_name, str) else type(model_or_name).__name__,
            "img_size": img_size,
            "mode": mode,
            "requested_batch_size": batch_size,
            "batch_size": ran_batch_size,
            "error": error,
            "oom_batch_sizes": oom_batch_sizes,
            **_throughput_fields(run, ran_batch_size),
            "device": str(torch_device),
            "channels_last": channels_last,
            "compile": compile,
            "warmup": warmup,
            "min_iters": min_iters,
            "min_seconds": min_seconds,
            "foreign_cpu_share": foreign_cpu.share,  # CPU other processes used meanwhile (analysis.contention)
        }
        record.update(_mfu_fields(macs, record["imgs_per_s"], peak_flops, torch_device, dtype, threads, mode))
        record.update(environment_fingerprint(torch_device, dtype, threads, model))
        return record
    finally:
        torch.set_num_threads(previous_threads)


def sweep_throughput(
    models: Iterable[str],
    img_sizes: Iterable[int] = (224,),
    batch_sizes: Iterable[int] = (1,),
    dtypes: Iterable[str] = ("fp32",),
    modes: Iterable[str] = ("inference",),
    macs_per_model: Optional[Mapping[str, float]] = None,
    show_progress: Optional[bool] = None,
    quiet_timeout_s: Optional[float] = None,
    **measure_kwargs,
) -> list[dict]:
    """measure_throughput over the product of the lists, with a progress bar and ETA.

    `macs_per_model` maps (model name) or (model name, img_size) to per-image MACs for MFU.
    quiet_timeout_s: before each measurement wait up to this long for the machine to go quiet
    (analysis.contention.wait_for_quiet); the record's `waited_for_quiet` says whether it did.
    """
    macs_per_model = macs_per_model or {}
    jobs = list(itertools.product(models, img_sizes, batch_sizes, dtypes, modes))
    records = []
    with progress_tracker(total=len(jobs), description="throughput", enabled=show_progress) as advance:
        for name, img_size, batch_size, dtype, mode in jobs:
            macs = macs_per_model.get((name, img_size), macs_per_model.get(name))
            quiet = wait_for_quiet(timeout_s=quiet_timeout_s) if quiet_timeout_s else None
            record = measure_throughput(name, img_size=img_size, batch_size=batch_size, dtype=dtype, mode=mode,
                                        macs=macs, **measure_kwargs)
            records.append({**record, "waited_for_quiet": quiet})
            advance(f"{name} {img_size}px bs={batch_size} {dtype} {mode}")
    return apply_best_peak(records)


def apply_best_peak(records: list[dict]) -> list[dict]:
    """Re-probe the peak of every (device, dtype, threads) the records measured, and recompute their MFU
    with the best peak seen in this process.

    NB: a busy neighbour can only lower a peak probe, so the best probe of a run is the closest to
    the device's real peak; a peak given by the caller (peak_measured False) is left as it is.
    """
    refreshed = {}
    for record in records:
        if not record.get("peak_measured") or record.get("macs") is None:
            continue
        key = (record["device"], record["dtype"], record["threads"])
        if key not in refreshed:
            refreshed[key] = measure_peak_flops(*key, refresh=True)
        peak = refreshed[key]
        record.update(peak_flops=peak["peak_flops"], peak_kernel=peak["peak_kernel"])
        if record["imgs_per_s"] is not None:
            record["mfu"] = model_flops_utilisation(record["macs"], record["imgs_per_s"], peak["peak_flops"],
                                                    record["mode"])
            record["mfu_above_peak"] = record["mfu"] > 1.0
    return records
