"""A calibrated GPU time per batch: the roofline (analysis.roofline) with achieved fractions of the datasheet
peak and bandwidth per kernel class, a per-kernel cost, and a band from held-out error.

Each kernel i of class c (analysis.count.traffic; grouped convolutions are `depthwise_conv`) takes
    count_i x ( max( flops_i / (e_c(flops_i) x P_c),  bytes_i / (m_c x B) ) + launch )
with P_c the tensor-core peak of the dtype for matmul_conv, depthwise_conv and attention and the
non-tensor fp32 peak for the rest, B the datasheet bandwidth, m_c the achieved fraction of it, and for
GEMMs and convolutions e(f) = e_max x f / (f + f_half): a small GEMM fills the GPU less (one size term,
not a table). The factors are fitted once on published measured tables (benchmarks/fit_gpu_calibration.py),
never per model, by least squares on log(expected / measured); the band is the 10th and 90th percentile
of measured / expected images per second over leave-one-family-out predictions. Fitting needs torch; predicting does not.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

KERNEL_CLASSES = ("matmul_conv", "depthwise_conv", "attention", "norm", "elementwise", "data_movement")
TENSOR_CORE_CLASSES = ("matmul_conv", "depthwise_conv", "attention")


@dataclass(frozen=True)
class Calibration:
    compute_efficiency: dict[str, float]      # fraction of the peak, per tensor-core class (e_max for GEMMs)
    memory_efficiency: dict[str, float]       # fraction of the datasheet bandwidth, per class
    gemm_half_flops: float                    # FLOPs per kernel at which a GEMM reaches half of e_max
    launch_seconds: float                     # per kernel, beside its time (launch gaps, tails)
    band: tuple[float, float] = (1.0, 1.0)    # p10, p90 of measured / expected images per second, held out
    source: str = ""
    extra: dict = field(default_factory=dict)  # provenance and held-out statistics, as shipped

    def to_json(self) -> dict:
        return {"compute_efficiency": self.compute_efficiency, "memory_efficiency": self.memory_efficiency,
                "gemm_half_flops": self.gemm_half_flops, "launch_seconds": self.launch_seconds,
                "band": list(self.band), "source": self.source, **self.extra}

    @classmethod
    def from_json(cls, data: dict) -> "Calibration":
        known = ("compute_efficiency", "memory_efficiency", "gemm_half_flops", "launch_seconds", "band", "source")
        return cls(data["compute_efficiency"], data["memory_efficiency"], data["gemm_half_flops"],
                   data["launch_seconds"], tuple(data["band"]), data.get("source", ""),
                   {k: v for k, v in data.items() if k not in known})


def kernel_seconds(op_class: str, flops: int, nbytes: int, tensor_peak: float, vector_peak: float,
                   bandwidth: float, cal: Calibration) -> float:
    """One kernel's expected time (without the launch term)."""
    peak = tensor_peak if op_class in TENSOR_CORE_CLASSES else vector_peak
    efficiency = cal.compute_efficiency.get(op_class, 1.0)
    if op_class == "matmul_conv" and flops:
        efficiency *= flops / (flops + cal.gemm_half_flops)
    compute = flops / (efficiency * peak) if flops else 0.0
    return max(compute, nbytes / (cal.memory_efficiency.get(op_class, 1.0) * bandwidth))


def expected_seconds(ops, tensor_peak: float, vector_peak: float, bandwidth: float, cal: Calibration) -> float:
    """ops: (op_class, flops, bytes, count) of one batch -> expected seconds per batch."""
    return sum(count * (kernel_seconds(c, f, b, tensor_peak, vector_peak, bandwidth, cal) + cal.launch_seconds)
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
