"""A calibrated GPU time per batch: the roofline (analysis.predict.roofline) with achieved fractions of the datasheet
peak and bandwidth per kernel class, each op at the precision PyTorch runs it in, a per-kernel cost, and a band
from held-out error.

Each kernel i of class c (analysis.count.traffic's kernel classes) takes
    count_i x ( max( flops_i / (e_c(i) x P_c),  bytes_i / (m_c x B) ) + launch )
with P_c the datasheet peak of the precision class c runs in (op_precisions: under fp32, cuDNN's convolutions
take TF32 on Ampere and later, torch.backends.cudnn.allow_tf32 = True, and cuBLAS's matmuls full fp32,
torch.backends.cuda.matmul.allow_tf32 = False since torch 1.12; under autocast both the low precision; depthwise
convolutions, norms, pointwise ops and copies the fp32 CUDA-core peak: class_peaks), B the datasheet bandwidth and
m_c the achieved fraction of it.
For GEMMs (matmul, conv) the compute efficiency is e(i) = x / (x + r_c), with x = (flops_i / bytes_i) / (P_c / B)
the kernel's arithmetic intensity over the device's ridge point at that precision and r_c (ridge_factor, per
class) the x at which a GEMM reaches half its peak; no other fraction: a GEMM far above the ridge runs at the peak.
x is a ratio of the kernel to the device, so the term carries over between precisions and devices (a GEMM size in
FLOPs or a fraction of the peak fitted on fp16 tensor cores does not: fp32's peak is 8 times lower, so the same
GEMM sits 8 times further above fp32's ridge). Depthwise convolutions (of the CUDA-core peak) and attention keep a
fitted fraction; a serial kernel (NCHW bilinear upsampling, whose threads each loop over batch x channels) takes its
steps x a fitted time per step, or its bytes, whichever is longer. The factors are fitted once on published measured
tables (benchmarks/fit_gpu_calibration.py), never per model, by least squares on log(expected / measured); the band
is the 10th and 90th percentile of measured / expected images per second over held-out predictions. Fitting needs
torch; predicting does not.
"""
from __future__ import annotations

import dataclasses
import functools
import json
import math
from dataclasses import dataclass, field
from importlib import resources

KERNEL_CLASSES = ("matmul", "conv", "depthwise_conv", "attention", "norm", "elementwise", "data_movement",
                  "conv_nhwc", "depthwise_conv_nhwc", "serial")
SERIAL = "serial"           # a kernel whose threads loop (analysis.count.traffic.serial_steps): steps, not FLOPs
COMPUTE_CLASSES = ("matmul", "conv", "depthwise_conv", "attention", "conv_nhwc", "depthwise_conv_nhwc")
GEMM_CLASSES = ("matmul", "conv", "conv_nhwc")                          # with the ridge-point term
LIBRARY = {"matmul": "matmul", "attention": "matmul", "conv": "conv", "depthwise_conv": "conv", "conv_nhwc": "conv",
           "depthwise_conv_nhwc": "conv"}
CHANNELS_LAST = {"conv": "conv_nhwc", "depthwise_conv": "depthwise_conv_nhwc"}   # cuDNN's kernels on NHWC tensors
# a calibration fitted before the split (one matmul_conv class, a GEMM size term in FLOPs: gemm_half_flops), as
# analysis/predict/data/gpu_train_calibration.json still is: each kernel class read as the class it was fitted as
LEGACY = {"matmul": "matmul_conv", "conv": "matmul_conv", "conv_nhwc": "matmul_conv",
          "depthwise_conv_nhwc": "depthwise_conv"}


def in_memory_format(ops, channels_last: bool) -> list:
    """The op list with convolutions in their channels-last classes (fitted apart, on timm's NHWC table) when
    `channels_last`. NB: the count itself is the NCHW one (bytes and FLOPs do not change with the layout; the
    permute copies a channels-first LayerNorm makes are counted as in NCHW)."""
    if not channels_last:
        return list(ops)
    return [(CHANNELS_LAST.get(c, c), f, b, n) for c, f, b, n in ops]
TF32_MODES = ("on", "off")


def op_precisions(dtype: str, has_tf32: bool, tf32: str | None = None) -> dict[str, str]:
    """{"conv": precision, "matmul": precision} as PyTorch runs `dtype`: under autocast (bf16/fp16) both the low
    precision; under fp32 PyTorch's own defaults (tf32 None: cuDNN TF32, cuBLAS fp32), or both TF32 ("on":
    torch.backends.cuda.matmul.allow_tf32 = True) or both fp32 ("off": torch.backends.cudnn.allow_tf32 = False).
    A device without TF32 tensor cores (V100, T4: has_tf32 False) runs fp32. NB: before torch 1.12 cuBLAS took
    TF32 too (matmul.allow_tf32 defaulted to True); that is --tf32 on."""
    if tf32 is not None and tf32 not in TF32_MODES:
        raise ValueError(f"tf32: {tf32!r}; one of {', '.join(TF32_MODES)}")
    if dtype != "fp32":
        return {"conv": dtype, "matmul": dtype}
    conv = "tf32" if has_tf32 and tf32 != "off" else "fp32"
    matmul = "tf32" if has_tf32 and tf32 == "on" else "fp32"
    return {"conv": conv, "matmul": matmul}


DEPTHWISE_CLASSES = ("depthwise_conv", "depthwise_conv_nhwc")


def class_peaks(peak_flops: dict[str, float], precisions: dict[str, str],
                depthwise_on_cuda_cores: bool = True) -> dict[str, float]:
    """Peak FLOP/s per kernel class: a GEMM or attention class at its library's precision, depthwise (grouped)
    convolutions and the rest at the fp32 CUDA-core (vector) peak. Depthwise convolutions run no tensor-core GEMM:
    PyTorch sends an NCHW one to its own conv_depthwise2d kernel (cuDNN only for fp16 with 1x1, 3x3 or 5x5 filters:
    Convolution.cpp, check_cudnn_depthwise_workload_with_filter), which multiplies and accumulates in
    at::acc_type, float for half and bfloat16 (pytorch/pytorch@989f69174ed19c7df1d429e7bcb665f316307bb0,
    aten/src/ATen/native/cuda/DepthwiseConv2d.cu line 50). depthwise_on_cuda_cores False: at the library's
    precision, as a legacy calibration (analysis/predict/data/gpu_train_calibration.json) was fitted.
    NB: a sheet without an fp32 figure (TPU v3 states bf16 only) times the vector classes by their bytes alone."""
    vector = peak_flops.get("fp32", math.inf)
    on_vector = DEPTHWISE_CLASSES if depthwise_on_cuda_cores else ()
    peaks = {c: peak_flops[precisions[LIBRARY[c]]] if c in LIBRARY and c not in on_vector else vector
             for c in KERNEL_CLASSES}
    return {**peaks, SERIAL: math.inf}          # its "flops" are steps: the roofline times it by its bytes


@dataclass(frozen=True)
class Calibration:
    compute_efficiency: dict[str, float]      # fraction of the peak, per compute class (1 for GEMMs: see ridge_factor)
    memory_efficiency: dict[str, float]       # fraction of the datasheet bandwidth, per class
    ridge_factor: dict[str, float] | None     # per GEMM class: at this multiple of the ridge point's intensity, half
                                              # (None: a legacy calibration, extra["gemm_half_flops"] instead)
    launch_seconds: float                     # per kernel, beside its time (launch gaps, tails)
    band: tuple[float, float] = (1.0, 1.0)    # p10, p90 of measured / expected images per second, held out
    source: str = ""
    extra: dict = field(default_factory=dict)  # provenance and held-out statistics, as shipped
    serial_step_seconds: float = 0.0          # per step of a serial-loop kernel (one dependent memory access)

    def to_json(self) -> dict:
        return {"compute_efficiency": self.compute_efficiency, "memory_efficiency": self.memory_efficiency,
                "ridge_factor": self.ridge_factor, "launch_seconds": self.launch_seconds,
                "serial_step_seconds": self.serial_step_seconds, "band": list(self.band), "source": self.source,
                **self.extra}

    @classmethod
    def from_json(cls, data: dict) -> "Calibration":
        known = ("compute_efficiency", "memory_efficiency", "ridge_factor", "launch_seconds", "band", "source",
                 "serial_step_seconds")
        return cls(data["compute_efficiency"], data["memory_efficiency"], data.get("ridge_factor"),
                   data["launch_seconds"], tuple(data["band"]), data.get("source", ""),
                   {k: v for k, v in data.items() if k not in known}, data.get("serial_step_seconds", 0.0))


# the factors shipped in analysis/predict/data/, per kind of prediction, and the benchmark that fits them
SHIPPED = {"inference": ("gpu_calibration.json", "benchmarks/fit_gpu_calibration.py"),
           "train": ("gpu_train_calibration.json", "benchmarks/fit_train_calibration.py")}


@functools.cache
def shipped(kind: str = "inference") -> Calibration:
    """The shipped factors of a kind (SHIPPED). The training table ran attention op by op (its q @ k^T and @ v are
    GEMMs, its softmax the attention class), so it says nothing about the fused SDPA kernels torch 2.x runs: "train"
    borrows their compute efficiency from "inference" (fitted on fused SDPA forwards). NB: that the fused backward
    runs as efficiently is unvalidated."""
    text = resources.files(__package__).joinpath("data", SHIPPED[kind][0]).read_text(encoding="utf-8")
    cal = Calibration.from_json(json.loads(text))
    if kind == "train":
        fused = shipped("inference").compute_efficiency["attention"]
        cal = dataclasses.replace(cal, compute_efficiency={**cal.compute_efficiency, "attention": fused})
    return cal


def kernel_seconds(op_class: str, flops: int, nbytes: int, peak: float, bandwidth: float, cal: Calibration) -> float:
    """One kernel's expected time (without the launch term), `peak` the FLOP/s of its class's precision; a serial
    kernel's `flops` are its steps per thread, each taking serial_step_seconds (a calibration without it: 0)."""
    if op_class == SERIAL:
        return max(flops * cal.serial_step_seconds, nbytes / (cal.memory_efficiency.get(op_class, 1.0) * bandwidth))
    if cal.ridge_factor is None:                  # legacy: matmul_conv with the size term in FLOPs
        fitted_as = LEGACY.get(op_class, op_class)
        efficiency = cal.compute_efficiency.get(fitted_as, 1.0) if op_class in COMPUTE_CLASSES else 1.0
        if fitted_as == "matmul_conv" and flops:
            efficiency *= flops / (flops + cal.extra["gemm_half_flops"])
        compute = flops / (efficiency * peak) if flops else 0.0
        return max(compute, nbytes / (cal.memory_efficiency.get(fitted_as, 1.0) * bandwidth))
    efficiency = cal.compute_efficiency.get(op_class, 1.0)
    if op_class in GEMM_CLASSES and flops and nbytes:
        x = (flops / nbytes) / (peak / bandwidth)
        efficiency *= x / (x + cal.ridge_factor[op_class])
    compute = flops / (efficiency * peak) if flops else 0.0
    return max(compute, nbytes / (cal.memory_efficiency.get(op_class, 1.0) * bandwidth))


def expected_seconds(ops, peaks: dict[str, float], bandwidth: float, cal: Calibration) -> float:
    """ops: (op_class, flops, bytes, count) of one batch; peaks: class_peaks -> expected seconds per batch."""
    return sum(count * (kernel_seconds(c, f, b, peaks[c], bandwidth, cal) + cal.launch_seconds)
               for c, f, b, count in ops)


def quantile(values: list[float], q: float) -> float:
    """Linear-interpolated quantile (numpy's default method) of a non-empty list."""
    ordered = sorted(values)
    pos = (len(ordered) - 1) * q
    lo, hi = math.floor(pos), math.ceil(pos)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (pos - lo)


def spearman(a: list[float], b: list[float]) -> float:
    """Spearman rank correlation (average ranks for ties)."""
    def ranks(x):
        order = sorted(range(len(x)), key=x.__getitem__)
        r = [0.0] * len(x)
        i = 0
        while i < len(order):
            j = i
            while j + 1 < len(order) and x[order[j + 1]] == x[order[i]]:
                j += 1
            for k in range(i, j + 1):
                r[order[k]] = (i + j) / 2
            i = j + 1
        return r
    ra, rb = ranks(a), ranks(b)
    ma, mb = sum(ra) / len(ra), sum(rb) / len(rb)
    cov = sum((x - ma) * (y - mb) for x, y in zip(ra, rb))
    return cov / math.sqrt(sum((x - ma) ** 2 for x in ra) * sum((y - mb) ** 2 for y in rb))
