"""A roofline latency estimate from counted work: the sum over operators of the larger of compute time
and memory time, plus a launch cost per kernel.

Each op i (analysis.count.traffic: FLOPs = 2 x MACs + non-MAC FLOPs, bytes = read + written, unfused)
takes max(flops_i / peak_flops, bytes_i / mem_bandwidth) + launch_seconds. One peak for every op (the
GEMM peak of the dtype): elementwise ops are memory-bound by far either way. The launch cost is a
stated constant, 5 us per kernel on GPUs (DeviceSheet.launch_seconds), 0 on CPUs. The shares say which
bound each op's time came from, weighted by time.
"""
from __future__ import annotations

from typing import Iterable

GPU_LAUNCH_SECONDS = 5e-6
CPU_LAUNCH_SECONDS = 0.0
ROOFLINE_FIELDS = ("roofline_ms", "roofline_compute_share", "roofline_memory_share", "roofline_launch_share")


def roofline(ops: Iterable[tuple[str, int, int, int]], peak_flops: float, mem_bandwidth: float,
             launch_seconds: float = 0.0, peaks: dict[str, float] | None = None) -> dict:
    """ops: (op_class, flops, bytes, count) per kind of op of one batch. Returns roofline_ms (per batch)
    and the shares of that time that are compute-bound, memory-bound and launch overhead. `peaks`: a peak per
    op class where the classes run at different precisions (analysis.predict.calibration.class_peaks), else peak_flops."""
    compute = memory = launch = 0.0
    by_class: dict[str, float] = {}
    for op_class, flops, nbytes, count in ops:
        c, m = flops / (peaks[op_class] if peaks else peak_flops), nbytes / mem_bandwidth
        compute += count * c if c >= m else 0.0
        memory += count * m if m > c else 0.0
        launch += count * launch_seconds
        by_class[op_class] = by_class.get(op_class, 0.0) + count * (max(c, m) + launch_seconds)
    total = compute + memory + launch
    share = (lambda x: x / total) if total else (lambda x: 0.0)
    return {"roofline_ms": total * 1e3, "roofline_compute_share": share(compute),
            "roofline_memory_share": share(memory), "roofline_launch_share": share(launch),
            "roofline_ms_by_op_class": {k: v * 1e3 for k, v in sorted(by_class.items())}}
