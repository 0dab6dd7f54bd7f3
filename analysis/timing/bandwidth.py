"""Measured memory bandwidth: a STREAM-like triad (a = b + s x c) with torch, short and bounded.

STREAM's convention (McCalpin): a triad over n elements moves 3 x n x itemsize bytes (two reads, one
write; the write-allocate read is not counted). Arrays are sized well past the last-level cache
(CPU: 3 x 128 MiB, CUDA: 3 x 1 GiB in fp32) so the probe measures DRAM (HBM), not cache. Best of
`repeats` short calibrated loops, as the GEMM peak is (peak.py), so others' load can only lower it.
"""
from __future__ import annotations

from typing import Optional

import torch

from .contention import ForeignCpuMeter
from .peak import _seconds_per_call

CPU_TRIAD_ELEMENTS = 1 << 25       # 128 MiB per fp32 array
CUDA_TRIAD_ELEMENTS = 1 << 28      # 1 GiB per fp32 array


def measure_bandwidth(device: str = "cpu", threads: Optional[int] = None, elements: Optional[int] = None,
                      target_seconds: float = 0.1, repeats: int = 5) -> dict:
    """{"mem_bandwidth": bytes/s, "bandwidth_kernel": "triad_<n>", "bandwidth_threads",
    "bandwidth_foreign_cpu_share"} for the device, in fp32."""
    torch_device = torch.device(device)
    n = elements or (CUDA_TRIAD_ELEMENTS if torch_device.type == "cuda" else CPU_TRIAD_ELEMENTS)
    previous_threads = torch.get_num_threads()
    if threads is not None:
        torch.set_num_threads(threads)
    try:
        with torch.inference_mode(), ForeignCpuMeter() as foreign_cpu:
            a, b, c = (torch.ones(n, device=torch_device) for _ in range(3))
            seconds = _seconds_per_call(lambda: torch.add(b, c, alpha=3.0, out=a), torch_device,
                                        target_seconds, repeats)
        used_threads = torch.get_num_threads()
    finally:
        torch.set_num_threads(previous_threads)
    return {"mem_bandwidth": 3 * n * 4 / seconds, "bandwidth_kernel": f"triad_{n}",
            "bandwidth_threads": used_threads, "bandwidth_foreign_cpu_share": foreign_cpu.share}
