"""Device dense-compute peak (measured GEMM rate, per dtype and thread count; datasheet for known GPUs)
and model FLOP utilisation (MFU).

Definition (also in the README):
  peak_flops is the best sustained dense GEMM rate, in FLOP/s (FLOPs = 2 x MACs), that this software
  stack reaches on this device for the dtype and thread count: torch.mm (BLAS / cuBLAS) on square
  matrices of a few sizes, each timed by a short calibrated loop, best of `repeats`. Only GEMM: a
  3x3 convolution run by a Winograd kernel does ~2.25x fewer multiplies than its nominal MAC count,
  so its nominal rate is not a hardware peak (on the 2-core EPYC dev box it read 495 GFLOP/s fp32
  against 222 for torch.mm). It is an achieved peak, not a datasheet one; on GPUs whose datasheet we
  know, `datasheet_peak_flops` gives that one too and MFU is reported against both.
  MFU = 2 x macs x imgs_per_s / peak_flops for inference (x3 for training: forward + backward ~ 3
  forwards), following the PaLM paper (Chowdhery et al. 2022, appendix B) and nanoGPT's
  `estimate_mfu`. MFU is never clipped: a value above 1 (a kernel faster than the GEMM probe, or an
  algorithm doing fewer multiplies than the nominal MAC count, e.g. Winograd) is kept and flagged.
  The probe is bounded in time (PROBE_BUDGET_S: a size predicted to overrun it is left out), and a
  16-bit dtype whose GEMM runs at under half fp32's rate on the device (fp16 on most CPUs: ~3%) has no fast GEMM
  there: `fast_gemm` is False and no MFU is given against it (`peak_method` says so).
"""
from __future__ import annotations

import math
import time
from typing import Callable, Optional

import torch

from ..vocab import DTYPES
from .contention import ForeignCpuMeter
from .latency import synchronize

CPU_GEMM_SIZES = (512, 1024, 2048)
CUDA_GEMM_SIZES = (4096, 8192)
TRAINING_FLOPS_FACTOR = 3  # backward costs ~2 forwards
SLOW_GEMM_SHARE = 0.5     # a 16-bit GEMM under half fp32's rate (same size) is no fast path (well clear of noise)
PROBE_BUDGET_S = 5.0       # the whole probe: no GEMM size is started that its rate so far says would overrun it

def datasheet_peak_flops(gpu_name: Optional[str], dtype: str, tf32: bool = False) -> Optional[dict]:
    """{"peak_flops", "peak_source"} from the datasheet of the GPU the driver names (analysis.predict.devices: a
    sheet's cuda_names), else None. fp32 work runs on TF32 tensor cores when TF32 is allowed
    (torch.backends.cuda.matmul.allow_tf32)."""
    from ..predict.devices import device_sheet, sheet_peak

    try:
        sheet = device_sheet(gpu_name or "")
        column = "tf32" if dtype == "fp32" and tf32 and "tf32" in sheet.peak_flops else dtype
        return {"peak_flops": sheet_peak(sheet, dtype, tf32), "peak_source": f"datasheet {sheet.name} {column} dense"}
    except ValueError:        # not a GPU with a sheet, or no tensor-core path for the dtype
        return None


def _seconds_per_call(fn: Callable[[], object], device: torch.device, target_seconds: float, repeats: int,
                      deadline: float = math.inf) -> float:
    """Best-of-`repeats` seconds per call; each repeat runs enough calls to last ~target_seconds. No repeat
    after the first starts past `deadline` (time.perf_counter())."""
    fn()  # warm-up: allocation, kernel selection
    synchronize(device)
    start = time.perf_counter()
    fn()
    synchronize(device)
    one_call = max(time.perf_counter() - start, 1e-6)
    calls = max(1, math.ceil(target_seconds / one_call))
    best = math.inf
    for repeat in range(repeats):
        if repeat and time.perf_counter() + calls * one_call > deadline:
            break
        start = time.perf_counter()
        for _ in range(calls):
            fn()
        synchronize(device)
        best = min(best, (time.perf_counter() - start) / calls)
    return best


def _probe_sizes(sizes, device: torch.device, dtype: torch.dtype, target_seconds: float, repeats: int,
                 budget_s: float) -> tuple[dict, list[int]]:
    """{mm_<n>: FLOP/s} for the sizes that fit the budget (smallest first), and the sizes left out."""
    probe_flops, left_out = {}, []
    deadline = time.perf_counter() + budget_s
    for n in sizes:
        a, b = (torch.randn(n, n, device=device, dtype=dtype) for _ in range(2))
        fn, flops = (lambda: torch.mm(a, b)), 2 * n**3
        rate = max(probe_flops.values(), default=None)
        # warm-up, one timing call and at least one repeat: three calls at the best rate so far
        if rate and time.perf_counter() + 3 * flops / rate > deadline:
            left_out.append(n)
            continue
        probe_flops[f"mm_{n}"] = flops / _seconds_per_call(fn, device, target_seconds, repeats, deadline)
    return probe_flops, left_out


def measure_peak_flops(device: str = "cpu", dtype: str = "fp32", threads: Optional[int] = None,
                       target_seconds: float = 0.1, repeats: int = 5, budget_s: float = PROBE_BUDGET_S) -> dict:
    """Measured dense GEMM peak for (device, dtype, threads), probed within ~budget_s seconds.

    Returns {"peak_flops", "peak_kernel", "peak_dtype", "peak_threads", "probe_flops": {label: FLOP/s},
    "peak_foreign_cpu_share": share of the machine's CPU other processes used during the probes,
    "fast_gemm": False when a 16-bit GEMM runs at under SLOW_GEMM_SHARE of fp32's rate here,
    "peak_method": how it was found}.
    Callers keep it: the zoo caches one per machine in the results folder (zoo.runs.peaks).
    """
    torch_device = torch.device(device)
    if dtype not in DTYPES:
        raise ValueError(f"dtype must be one of {', '.join(DTYPES)}, got {dtype!r}")
    previous_threads = torch.get_num_threads()
    if threads is not None:
        torch.set_num_threads(threads)
    try:
        sizes = CUDA_GEMM_SIZES if torch_device.type == "cuda" else CPU_GEMM_SIZES
        started = time.perf_counter()
        with torch.inference_mode(), ForeignCpuMeter() as foreign_cpu:
            probe_flops, left_out = _probe_sizes(sizes, torch_device, DTYPES[dtype], target_seconds, repeats,
                                                 budget_s)
            fp32_flops = None
            if dtype != "fp32":     # the same smallest GEMM in fp32, briefly: is the 16-bit one any faster?
                fp32_flops, _ = _probe_sizes(sizes[:1], torch_device, torch.float32, target_seconds / 2, 2, budget_s)
        seconds = time.perf_counter() - started
        used_threads = torch.get_num_threads()
    finally:
        torch.set_num_threads(previous_threads)
    peak_kernel = max(probe_flops, key=probe_flops.get)
    first = f"mm_{sizes[0]}"
    fast_gemm = fp32_flops is None or probe_flops[first] >= SLOW_GEMM_SHARE * fp32_flops[first]
    method = (f"torch.mm {dtype} on {torch_device.type}, n = {', '.join(k[3:] for k in probe_flops)}"
              + (f" ({', '.join(map(str, left_out))} left out: over the {budget_s:g} s cap)" if left_out else "")
              + f", best of up to {repeats} loops of ~{target_seconds:g} s, {seconds:.1f} s in all")
    if not fast_gemm:
        method += (f"; no fast {dtype} GEMM here: {probe_flops[first] / 1e9:.2g} GFLOP/s against fp32's "
                   f"{fp32_flops[first] / 1e9:.3g} GFLOP/s at n = {sizes[0]}, so no MFU against it")
    return {"peak_flops": probe_flops[peak_kernel], "peak_kernel": peak_kernel, "peak_dtype": dtype,
            "peak_threads": used_threads, "probe_flops": probe_flops,
            "peak_foreign_cpu_share": foreign_cpu.share, "fast_gemm": fast_gemm, "peak_method": method}


def flops_per_image(macs: float, mode: str) -> float:
    """FLOPs per image of one timed step: 2 x MACs forward, x3 for a training step."""
    return 2 * macs * (TRAINING_FLOPS_FACTOR if mode == "train" else 1)


def model_flops_utilisation(macs: float, imgs_per_s: float, peak_flops: float, mode: str = "inference") -> float:
    """MFU = flops_per_image x imgs_per_s / peak_flops; deliberately not clipped to 1."""
    return flops_per_image(macs, mode) * imgs_per_s / peak_flops
