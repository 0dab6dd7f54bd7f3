"""The one harness: times any backend (analysis.timing.backends) with one protocol, the contention meter and
out-of-memory halving, and returns a typed TimingResult (analysis.timing.result).

Protocol: one random input reused; `warmup` untimed steps; timed steps until both `min_iters` and
`min_seconds` are reached (analysis.timing.latency); imgs_per_s = batch x iters / span from the first
step's start to the last step's end. On out-of-memory the batch is halved and retried, as timm's
benchmark.py `_try_run` does, but the error and the batch that finally ran are recorded.
MACs and MFU are the run layer's (zoo.runs): they need the cost row and the peak cache; it reads the attention
path with `watch`, an observer around the first (untimed) warm-up step.
"""
from __future__ import annotations

import gc
from typing import Callable, ContextManager, Optional

import torch
import torch.nn as nn

from ..size import Size, SizeLike
from ..vocab import resolve_device
from .backends import EagerBackend, TimingBackend, TimingSetting, is_out_of_memory
from .contention import ForeignCpuMeter
from .fingerprint import available_cores, environment_fingerprint
from .latency import DEFAULT_PROTOCOL, TimedRun, TimingProtocol, latency_stats, timed_loop
from .result import TimingResult
from .steps import random_input


def _release_memory(model: nn.Module, device: torch.device) -> None:
    """Drop gradients left by a failed step and return cached blocks, so the smaller batch gets them."""
    for param in model.parameters():
        param.grad = None
    gc.collect()
    if device.type == "cuda":
        torch.cuda.empty_cache()


def _time_halving(model, backend, img_size: Size, batch_size: int, setting, protocol, in_chans, watch):
    """(TimedRun or None, PreparedStep or None, batch that ran or None, errors, batches that ran out of memory)."""
    device = resolve_device(setting.device)
    errors, oom_batch_sizes = [], []
    while True:
        try:
            images = random_input(batch_size, img_size, device, setting.channels_last, in_chans)
            prepared = backend.prepare(model, images, setting)
            run = timed_loop(prepared.step, prepared.clock, protocol, watch=watch if prepared.observable else None)
            return run, prepared, batch_size, errors, oom_batch_sizes
        except Exception as exc:  # noqa: BLE001 -- only out-of-memory is handled, the rest re-raised
            if not is_out_of_memory(exc):
                raise
            first_line = (str(exc).strip().splitlines() or [""])[0]
            errors.append(f"{type(exc).__name__} at batch_size={batch_size}: {first_line}")
            oom_batch_sizes.append(batch_size)
        # NB: released only here, after the except block: until then the traceback's frames hold the
        # failed attempt's input and activations.
        images = None
        _release_memory(model, device)
        if batch_size == 1:
            return None, None, None, errors, oom_batch_sizes
        batch_size = max(1, batch_size // 2)


def _speed(run: Optional[TimedRun], batch_size: Optional[int]) -> dict:
    if run is None:
        return {}
    stats = latency_stats(run.latencies_s)
    return {"imgs_per_s": batch_size * run.iters / run.total_seconds,
            "imgs_per_s_p50": batch_size / (stats["latency_ms_p50"] / 1e3), **stats, "iters": run.iters,
            "total_seconds": run.total_seconds, "warmup_seconds": run.warmup_seconds,
            "latencies_ms": [latency * 1e3 for latency in run.latencies_s]}


def backend_named(name: str) -> TimingBackend:
    """"eager" or "onnxruntime" (imported only when asked for)."""
    if name == "eager":
        return EagerBackend()
    if name == "onnxruntime":
        from .onnx_runtime import OnnxRuntimeBackend

        return OnnxRuntimeBackend()
    raise ValueError(f"unknown timing backend {name!r}; expected eager or onnxruntime")


def time_model(model: nn.Module, backend: TimingBackend, img_size: SizeLike, batch_size: int = 1,
               setting: TimingSetting = TimingSetting(), protocol: TimingProtocol = DEFAULT_PROTOCOL,
               in_chans: int = 3, watch: Optional[Callable[[], ContextManager]] = None) -> TimingResult:
    """Time `model` under `backend`; ValueError when the backend cannot time `setting` (it says why).

    watch: run around the first warm-up step when the backend's step is observable (PreparedStep.observable:
    an eager inference forward), e.g. analysis.count.counter.AttentionPathWatch; a batch retried after
    out-of-memory has its first step watched again.
    threads None uses every available core. NB: the backend may move the module, switch it to eval or
    train and, in train mode, update its weights.
    """
    why = backend.unsupported(setting)
    if why:
        raise ValueError(f"the {backend.name} backend {why}")
    threads = setting.threads or available_cores()
    previous_threads = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        with ForeignCpuMeter() as foreign_cpu:
            run, prepared, ran_batch_size, errors, oom_batch_sizes = _time_halving(
                model, backend, Size.of(img_size), batch_size, setting, protocol, in_chans, watch)
        device = prepared.device if prepared else resolve_device(setting.device)
        return TimingResult(
            backend=backend.name, mode=setting.mode, requested_batch_size=batch_size, ran_batch_size=ran_batch_size,
            error="; ".join(errors) or None, oom_batch_sizes=oom_batch_sizes, **_speed(run, ran_batch_size),
            device=device.type, dtype=setting.dtype, threads=threads, channels_last=setting.channels_last,
            compile=setting.compile or False, warmup=protocol.warmup, min_iters=protocol.min_iters,
            min_seconds=protocol.min_seconds, foreign_cpu_share=foreign_cpu.share,
            env=environment_fingerprint(device), details=prepared.details if prepared else {})
    finally:
        torch.set_num_threads(previous_threads)
