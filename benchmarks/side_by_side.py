"""Side-by-side speed ratio of two steps, interleaved so that machine load affects both alike.

Each round times both steps back to back, alternating which goes first (A B, B A, ...); the ratio
is the median over rounds of reference_seconds / candidate_seconds, so > 1 means the candidate is
faster. On a shared machine this is far steadier than two separate timing runs.
"""

from __future__ import annotations

import statistics
import time
from typing import Callable

import torch

from analysis.timing.contention import ForeignCpuMeter
from analysis.timing.latency import synchronize


def _seconds(step: Callable[[], object], device: torch.device) -> float:
    synchronize(device)
    start = time.perf_counter()
    step()
    synchronize(device)
    return time.perf_counter() - start


def interleaved_speed_ratio(
    candidate: Callable[[], object],
    reference: Callable[[], object],
    device: torch.device,
    rounds: int = 6,
    warmup: int = 1,
) -> dict:
    """{"speed_ratio": median(reference/candidate), "candidate_s": [...], "reference_s": [...],
    "foreign_cpu_share": share of the machine's CPU other processes used meanwhile}."""
    for _ in range(warmup):
        candidate()
        reference()
    candidate_s, reference_s = [], []
    with ForeignCpuMeter() as foreign_cpu:
        for round_index in range(rounds):
            if round_index % 2 == 0:
                candidate_s.append(_seconds(candidate, device))
                reference_s.append(_seconds(reference, device))
            else:
                reference_s.append(_seconds(reference, device))
                candidate_s.append(_seconds(candidate, device))
    ratios = [ref / cand for ref, cand in zip(reference_s, candidate_s)]
    return {
        "speed_ratio": statistics.median(ratios),
        "speed_ratio_min": min(ratios),
        "speed_ratio_max": max(ratios),
        "candidate_s": candidate_s,
        "reference_s": reference_s,
        "foreign_cpu_share": foreign_cpu.share,
    }
