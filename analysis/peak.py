"""Device dense-compute peak (measured, per dtype and thread count) and model FLOP utilisation (MFU).

Definition (also in the README):
  peak_flops is the best sustained dense rate, in FLOP/s (FLOPs = 2 x MACs), that this software
  stack reaches on this device for the dtype and thread count, measured by a short calibrated loop
  over a few sizes of its own dense kernels, best of `repeats`: torch.mm (BLAS / cuBLAS), and on CPU
  also a 3x3 convolution, because oneDNN's direct convolution beats MKL's GEMM on some CPUs (on the
  2-core EPYC dev box, ~220 vs ~188 GFLOP/s fp32) and ResNet-50 would otherwise exceed "100%".
  It is an achieved peak, not a datasheet peak. MFU = 2 x macs x imgs_per_s / peak_flops for
  inference (x3 for training: forward + backward ~ 3 forwards), following the PaLM paper (Chowdhery
  et al. 2022, appendix B) and nanoGPT's `estimate_mfu`. MFU is never clipped: a value above 1
  (a kernel faster than those probed, or an algorithm doing fewer multiplies than the nominal MAC
  count, e.g. Winograd) is reported as measured and flagged with `mfu_above_peak`.
"""

from __future__ import annotations

import math
import time
from typing import Callable, Optional

import torch
import torch.nn.functional as F

from analysis.contention import ForeignCpuMeter
from analysis.latency import synchronize

PEAK_DTYPES = {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}
CPU_GEMM_SIZES = (512, 1024, 2048)
CUDA_GEMM_SIZES = (4096, 8192)
# (batch, channels, spatial) of 3x3 convolutions, stride 1, padding 1: ResNet stage shapes.
CPU_CONV_SHAPES = ((8, 128, 28), (8, 256, 14))
TRAINING_FLOPS_FACTOR = 3  # backward costs ~2 forwards


def _seconds_per_call(fn: Callable[[], object], device: torch.device, target_seconds: float, repeats: int) -> float:
    """Best-of-`repeats` seconds per call; each repeat runs enough calls to last ~target_seconds."""
    fn()  # warm-up: allocation, kernel selection
    synchronize(device)
    start = time.perf_counter()
    fn()
    synchronize(device)
    one_call = max(time.perf_counter() - start, 1e-6)
    calls = max(1, math.ceil(target_seconds / one_call))
    best = math.inf
    for _ in range(repeats):
        start = time.perf_counter()
        for _ in range(calls):
            fn()
        synchronize(device)
        best = min(best, (time.perf_counter() - start) / calls)
    return best


def _gemm_probe(n: int, device: torch.device, dtype: torch.dtype):
    a = torch.randn(n, n, device=device, dtype=dtype)
    b = torch.randn(n, n, device=device, dtype=dtype)
    return (lambda: torch.mm(a, b)), 2 * n**3


def _conv_probe(batch: int, channels: int, spatial: int, device: torch.device, dtype: torch.dtype):
    images = torch.randn(batch, channels, spatial, spatial, device=device, dtype=dtype)
    weight = torch.randn(channels, channels, 3, 3, device=device, dtype=dtype)
    macs = batch * channels * channels * 9 * spatial * spatial
    return (lambda: F.conv2d(images, weight, padding=1)), 2 * macs


def _probes(device: torch.device, dtype: torch.dtype):
    """(kernel label, callable, FLOPs per call) for every probe on this device."""
    sizes = CUDA_GEMM_SIZES if device.type == "cuda" else CPU_GEMM_SIZES
    for n in sizes:
        fn, flops = _gemm_probe(n, device, dtype)
        yield f"mm_{n}", fn, flops
    if device.type == "cpu":
        for batch, channels, spatial in CPU_CONV_SHAPES:
            fn, flops = _conv_probe(batch, channels, spatial, device, dtype)
            yield f"conv3x3_{channels}x{spatial}", fn, flops


_BEST_PEAKS: dict[tuple, dict] = {}


def measure_peak_flops(
    device: str = "cpu",
    dtype: str = "fp32",
    threads: Optional[int] = None,
    target_seconds: float = 0.1,
    repeats: int = 5,
    refresh: bool = False,
) -> dict:
    """Measured dense peak for (device, dtype, threads), kept per process as the best seen so far.

    The first call probes; later calls return the kept result unless refresh=True, which probes again
    and keeps whichever peak is higher (other load on the machine can only lower a probe).
    Returns {"peak_flops", "peak_kernel", "peak_dtype", "peak_threads", "probe_flops": {label: FLOP/s},
    "peak_foreign_cpu_share": share of the machine's CPU other processes used during the last probe}.
    """
    torch_device = torch.device(device)
    if dtype not in PEAK_DTYPES:
        raise ValueError(f"dtype must be one of {sorted(PEAK_DTYPES)}, got {dtype!r}")
    key = (str(torch_device), dtype, threads if threads is not None else torch.get_num_threads())
    if key in _BEST_PEAKS and not refresh:
        return _BEST_PEAKS[key]
    previous_threads = torch.get_num_threads()
    if threads is not None:
        torch.set_num_threads(threads)
    try:
        probe_flops = {}
        with torch.inference_mode(), ForeignCpuMeter() as foreign_cpu:
            for label, fn, flops in _probes(torch_device, PEAK_DTYPES[dtype]):
                probe_flops[label] = flops / _seconds_per_call(fn, torch_device, target_seconds, repeats)
        used_threads = torch.get_num_threads()
    finally:
        torch.set_num_threads(previous_threads)
    kept = _BEST_PEAKS.get(key, {}).get("probe_flops", {})
    probe_flops = {label: max(rate, kept.get(label, 0.0)) for label, rate in probe_flops.items()}
    peak_kernel = max(probe_flops, key=probe_flops.get)
    _BEST_PEAKS[key] = {
        "peak_flops": probe_flops[peak_kernel],
        "peak_kernel": peak_kernel,
        "peak_dtype": dtype,
        "peak_threads": used_threads,
        "probe_flops": probe_flops,
        "peak_foreign_cpu_share": foreign_cpu.share,
    }
    return _BEST_PEAKS[key]


def flops_per_image(macs: float, mode: str) -> float:
    """FLOPs per image of one timed step: 2 x MACs forward, x3 for a training step."""
    return 2 * macs * (TRAINING_FLOPS_FACTOR if mode == "train" else 1)


def model_flops_utilisation(macs: float, imgs_per_s: float, peak_flops: float, mode: str = "inference") -> float:
    """MFU = flops_per_image x imgs_per_s / peak_flops; deliberately not clipped to 1."""
    return flops_per_image(macs, mode) * imgs_per_s / peak_flops
