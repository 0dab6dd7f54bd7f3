"""A timed row: the task's model timed by the one harness under its backend, then what needs the run layer's
knowledge: MFU from the cost row's MACs and the peak cache, the roofline estimate beside it (this machine's
measured peak and bandwidth, analysis.predict.roofline), the attention path, the noise mark.

The attention path is read off the dispatcher during the first warm-up step (the timed batch, as timed): no forward
of its own. A step that is not one eager forward (a training step, a compiled one) gets one batch-1 eval forward
after the timing instead.
"""
from __future__ import annotations

import contextlib
from typing import Optional

import torch
from torch import nn

from analysis.count.counter import AttentionPathWatch
from analysis.predict.roofline import CPU_LAUNCH_SECONDS, GPU_LAUNCH_SECONDS, ROOFLINE_FIELDS, roofline
from analysis.size import Size
from analysis.timing.backends import TimingSetting
from analysis.timing.contention import NOISY_CV, NOISY_FOREIGN_CPU_SHARE, share_of_ours
from analysis.timing.fingerprint import gpu_name
from analysis.timing.harness import backend_named, time_model
from analysis.timing.log_capture import captured_logging
from analysis.timing.peak import datasheet_peak_flops, flops_per_image, measure_peak_flops, model_flops_utilisation
from analysis.timing.steps import autocast_context, random_input
from analysis.vocab import resolve_device

from ..models.meta_init import TiledRandomInit
from .counted import build, counted
from .host_fit import fit_to_host, record_halving
from ..store.run_logs import keep_log, verbose


def is_noisy(cv: float, foreign_cpu_share: float | None, threads: int | None, cores: int | None = None) -> bool:
    """The row's noise mark (left out of fitted exponents): cv above NOISY_CV, or others' share of our cores
    (analysis.timing.contention.share_of_ours) above NOISY_FOREIGN_CPU_SHARE."""
    return bool(cv > NOISY_CV or share_of_ours(foreign_cpu_share, threads, cores) > NOISY_FOREIGN_CPU_SHARE)


def import_onnxruntime() -> None:
    """ONNX Runtime writes a device id under $XDG_CACHE_HOME/Microsoft/DeveloperTools when imported: imported
    with that pointed at the user cache, so nothing lands outside --out and the user cache."""
    import sys

    from ..store.user_cache import library_cache_home

    if "onnxruntime" not in sys.modules:
        with library_cache_home("onnxruntime"), contextlib.suppress(ImportError):
            import onnxruntime  # noqa: F401


def measure_timed(task, macs: Optional[int], peak: Optional[dict]) -> dict:
    """The timed fields of a throughput Task's row (zoo.runs.tasks). macs: per image (counted here when None);
    peak: probed when None."""
    request, timing = task.request, task.timing
    macs = macs if macs is not None else counted(request.per_image)["macs"]
    batch, halved, why = fit_to_host(task)     # CPU: halve up front what the host's memory cannot hold
    with TiledRandomInit():     # random weights at memory speed: timing needs their magnitudes, not their values
        model = build(request, "cpu", "fp32")
    if timing.backend == "onnxruntime":
        import_onnxruntime()
    backend = backend_named(timing.backend)
    setting = TimingSetting(device=timing.device, dtype=request.dtype, mode="train" if request.train else "inference",
                            threads=timing.threads, channels_last=timing.channels_last, compile=timing.compile)
    watch = AttentionPathWatch(model) if backend.sees_dispatcher else None
    with captured_logging(verbose()) as library_log:     # ~300 lines of exporter and optimizer chatter
        try:
            result = time_model(model, backend, request.img_size, batch, setting, timing.protocol, watch=watch)
        finally:
            keep_log(f"{request.model}-{request.img_size.label}-b{request.batch_size}-{timing.backend}",
                     library_log.getvalue())
    if result.imgs_per_s is None:   # out of memory at every batch down to 1
        raise MemoryError(result.error)
    device = torch.device(result.device)
    fields = record_halving(result.as_fields(), request.batch_size, halved, why)
    fields["attn_path"] = None if watch is None else \
        watch.path or attention_path_on(model, request.img_size, device, request.dtype)
    peak = peak or measure_peak_flops(str(device), request.dtype, timing.threads)
    fields.update(mfu_fields(macs, result.imgs_per_s, peak, device, setting))
    fields.update(measured_roofline(task, fields, peak))
    fields["noisy"] = is_noisy(result.cv, result.foreign_cpu_share, fields.get("threads", timing.threads))
    fields["peak_probe"] = peak.get("peak_probe") if fields.get("peak_flops") else None
    return fields


def measured_roofline(task, record: dict, peak: dict | None) -> dict:
    """Roofline fields of a timed eager inference row from this machine's peak and bandwidth (in `peak`,
    zoo.runs.peaks); none for training steps, ONNX Runtime, or a peak without a bandwidth."""
    if not peak or "mem_bandwidth" not in peak or task.request.train or task.timing.backend != "eager":
        return {}
    batch = record.get("ran_batch_size") or task.request.batch_size
    launch = GPU_LAUNCH_SECONDS if resolve_device(task.timing.device).type == "cuda" else CPU_LAUNCH_SECONDS
    from .counted import count_of      # the cost row's count when it is at this batch: no build

    estimate = roofline(count_of(task.request.replace(batch_size=batch)).ops, peak["peak_flops"],
                        peak["mem_bandwidth"], launch)
    return {"mem_bandwidth": peak["mem_bandwidth"], **{k: estimate[k] for k in ROOFLINE_FIELDS}}


def mfu_fields(macs: int, imgs_per_s: float, peak: dict, device: torch.device, setting: TimingSetting) -> dict:
    """MFU against the measured GEMM peak and, on GPUs with a known datasheet, against that one too. A dtype
    whose GEMM is a slow path (peak["fast_gemm"] False: a 16-bit GEMM on a CPU without one) gets no MFU."""
    fields = {"macs": macs, "flops_per_img": flops_per_image(macs, setting.mode), "peak_flops": peak["peak_flops"],
              "peak_kernel": peak["peak_kernel"], "peak_method": peak.get("peak_method"),
              "peak_fast_gemm": peak.get("fast_gemm"), "mfu": None, "mfu_above_peak": None,
              "datasheet_peak_flops": None, "mfu_datasheet": None}
    if peak.get("fast_gemm", True):
        mfu = model_flops_utilisation(macs, imgs_per_s, peak["peak_flops"], setting.mode)
        fields.update(mfu=mfu, mfu_above_peak=mfu > 1.0)
    sheet = datasheet_peak_flops(gpu_name(device), setting.dtype, tf32=torch.backends.cuda.matmul.allow_tf32)
    if sheet:
        fields.update(datasheet_peak_flops=sheet["peak_flops"],
                      mfu_datasheet=model_flops_utilisation(macs, imgs_per_s, sheet["peak_flops"], setting.mode))
    return fields


def attention_path_on(model: nn.Module, img_size: Size, device: torch.device, dtype: str) -> str:
    """What computed attention on this device: one batch-1 eval forward, watched (for steps no watch sees)."""
    was_training, watch = model.training, AttentionPathWatch(model)
    model.eval()
    try:
        with torch.no_grad(), autocast_context(device, dtype), watch():
            model(random_input(1, img_size, device, False))
    finally:
        model.train(was_training)
    return watch.path
