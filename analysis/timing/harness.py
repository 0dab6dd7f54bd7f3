"""Throughput and latency of one module: one record per (input size, batch, device, dtype, mode).

Protocol: one random input reused; `warmup` untimed steps; timed steps until both `min_iters` and
`min_seconds` are reached (analysis.timing.latency); imgs_per_s = batch x iters / span from the first
step's start to the last step's end. On out-of-memory the batch is halved and retried, as timm's
benchmark.py `_try_run` does, but the error and the batch that finally ran are recorded.
Turning model names into modules, and running a measurement in another process, is the zoo's job.
"""
from __future__ import annotations

import gc
from typing import Optional

import torch
import torch.nn as nn

from ..count.cost import run_forward
from ..vocab import DTYPES, attention_path, resolve_device
from .contention import ForeignCpuMeter
from .fingerprint import available_cores, environment_fingerprint, gpu_name
from .latency import DEFAULT_PROTOCOL, TimedRun, TimingProtocol, latency_stats, timed_loop
from .peak import datasheet_peak_flops, flops_per_image, measure_peak_flops, model_flops_utilisation
from .steps import autocast_context, make_inference_step, make_train_step, random_input

MODES = ("inference", "train")


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


def _time_once(model, img_size, batch_size, device, dtype, mode, channels_last, in_chans, protocol) -> TimedRun:
    images = random_input(batch_size, img_size, device, channels_last, in_chans)
    step = (make_inference_step if mode == "inference" else make_train_step)(model, images, device, dtype)
    return timed_loop(step, device, protocol)


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


def throughput_fields(run: Optional[TimedRun], batch_size: Optional[int]) -> dict:
    if run is None:
        return {"imgs_per_s": None, "imgs_per_s_p50": None, "latency_ms_mean": None, "latency_ms_p50": None, "latency_ms_p90": None,
                "latency_ms_p99": None, "latency_ms_min": None, "latency_ms_max": None, "cv": None, "iters": 0,
                "total_seconds": None, "warmup_seconds": None, "latencies_ms": []}
    stats = latency_stats(run.latencies_s)
    return {
        "imgs_per_s": batch_size * run.iters / run.total_seconds,
        "imgs_per_s_p50": batch_size / (stats["latency_ms_p50"] / 1e3),
        **stats,
        "iters": run.iters,
        "total_seconds": run.total_seconds,
        "warmup_seconds": run.warmup_seconds,
        "latencies_ms": [latency * 1e3 for latency in run.latencies_s],
    }


def mfu_fields(macs, imgs_per_s, peak: Optional[dict], device, dtype, threads, mode) -> dict:
    """MFU needs macs (per image, from the cost analysis); the peak is probed when not given."""
    fields = {"macs": macs, "flops_per_img": None, "peak_flops": None, "peak_kernel": None, "peak_method": None,
              "peak_fast_gemm": None, "mfu": None, "mfu_above_peak": None, "datasheet_peak_flops": None,
              "mfu_datasheet": None}
    if macs is None:
        return fields
    peak = peak or measure_peak_flops(str(device), dtype, threads)
    fields.update(flops_per_img=flops_per_image(macs, mode), peak_flops=peak["peak_flops"],
                  peak_kernel=peak["peak_kernel"], peak_method=peak.get("peak_method"),
                  peak_fast_gemm=peak.get("fast_gemm"))
    sheet = datasheet_peak_flops(gpu_name(device), dtype, tf32=torch.backends.cuda.matmul.allow_tf32)
    if sheet:
        fields["datasheet_peak_flops"] = sheet["peak_flops"]
    if imgs_per_s is not None and peak.get("fast_gemm", True):     # no MFU against a slow-path GEMM
        mfu = model_flops_utilisation(macs, imgs_per_s, peak["peak_flops"], mode)
        fields.update(mfu=mfu, mfu_above_peak=mfu > 1.0)
        if sheet:
            fields["mfu_datasheet"] = model_flops_utilisation(macs, imgs_per_s, sheet["peak_flops"], mode)
    return fields


def measure_throughput(
    model: nn.Module,
    img_size: int | tuple[int, int] = 224,
    batch_size: int = 1,
    device: str = "auto",
    dtype: str = "fp32",
    mode: str = "inference",
    protocol: TimingProtocol = DEFAULT_PROTOCOL,
    channels_last: bool = False,
    compile: bool | str = False,
    threads: Optional[int] = None,
    macs: Optional[int] = None,
    peak: Optional[dict] = None,
    in_chans: int = 3,
) -> dict:
    """Time `model` and return one flat record; its `env` is the machine's fingerprint.

    threads=None uses every available core. macs is per image (batch 1 forward); without it mfu
    stays None. peak: a `measure_peak_flops` result to compute MFU against (probed when None).
    compile: False, True or a torch.compile mode ("default", "reduce-overhead", "max-autotune").
    NB: the module is moved to `device`, switched to eval/train and, in train mode, updated.
    """
    if mode not in MODES:
        raise ValueError(f"mode must be one of {MODES}, got {mode!r}")
    if dtype not in DTYPES:
        raise ValueError(f"dtype must be one of {', '.join(DTYPES)}, got {dtype!r}")
    torch_device = resolve_device(device)
    threads = threads if threads is not None else available_cores()
    previous_threads = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        model = model.to(torch_device)
        if channels_last:
            model = model.to(memory_format=torch.channels_last)
        timed_model = model
        if compile:
            timed_model = torch.compile(model, mode=None if compile is True else compile)
        with ForeignCpuMeter() as foreign_cpu:
            run, ran_batch_size, error, oom_batch_sizes = _time_with_oom_retry(
                timed_model, batch_size, torch_device, img_size=img_size, dtype=dtype, mode=mode,
                channels_last=channels_last, in_chans=in_chans, protocol=protocol)
        record = {
            "backend": "eager",  # analysis.timing.onnx_runtime writes "onnxruntime"
            "mode": mode,
            "requested_batch_size": batch_size,
            "ran_batch_size": ran_batch_size,
            "error": error,
            "oom_batch_sizes": oom_batch_sizes,
            **throughput_fields(run, ran_batch_size),
            "device": str(torch_device),
            "dtype": dtype,
            "threads": torch.get_num_threads(),
            "channels_last": channels_last,
            "compile": compile,
            "warmup": protocol.warmup,
            "min_iters": protocol.min_iters,
            "min_seconds": protocol.min_seconds,
            "foreign_cpu_share": foreign_cpu.share,  # CPU other processes used meanwhile (timing.contention)
            "attn_path": _attention_path(model, torch_device, img_size, in_chans, dtype) if run else None,
        }
        record.update(mfu_fields(macs, record["imgs_per_s"], peak, torch_device, dtype, threads, mode))
        record["env"] = environment_fingerprint(torch_device)
        return record
    finally:
        torch.set_num_threads(previous_threads)


def _attention_path(model: nn.Module, device: torch.device, img_size, in_chans: int, dtype: str) -> str:
    """What computed attention on this device: one batch-1 forward under the MAC counter."""
    was_training = model.training
    model.eval()
    try:
        with autocast_context(device, dtype):
            counter, _, _ = run_forward(model, random_input(1, img_size, device, False, in_chans))
    finally:
        model.train(was_training)
    return attention_path(counter.fused_attention_ops, counter.math_attention_ops)
