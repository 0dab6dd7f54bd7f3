"""Per-iteration latency tracking and the timed loop (warm-up, then minimum iterations AND duration).

Follows optimum-benchmark's `trackers/latency.py`: CUDA events on GPU with one synchronisation at
the end, `time.perf_counter` on CPU; raw latencies are kept and the percentiles derived from them.
"""

from __future__ import annotations

import contextlib
import time
from dataclasses import dataclass
from typing import Callable, ContextManager, Optional, Sequence

import numpy as np
import torch

from .protocol import DEFAULT_PROTOCOL, QUICK_PROTOCOL, TimingProtocol  # noqa: F401  re-exported


@dataclass(frozen=True)
class TimedRun:
    """Raw result of a timed loop: per-iteration latencies and the span from first start to last end."""

    latencies_s: tuple[float, ...]
    total_seconds: float  # first iteration's start to last iteration's end (includes loop overhead)
    warmup_iters: int
    warmup_seconds: float  # wall time of warm-up, including any torch.compile compilation

    @property
    def iters(self) -> int:
        return len(self.latencies_s)


class CpuLatencyTracker:
    """Times each iteration with a host clock; CPU work is synchronous, so no sync is needed."""

    def __init__(self, clock: Callable[[], float] = time.perf_counter):
        self.clock = clock
        self.starts: list[float] = []
        self.ends: list[float] = []

    def start(self) -> None:
        self.starts.append(self.clock())

    def stop(self) -> None:
        self.ends.append(self.clock())

    def finish(self) -> tuple[list[float], float]:
        latencies_s = [end - start for start, end in zip(self.starts, self.ends)]
        return latencies_s, self.ends[-1] - self.starts[0]


class CudaLatencyTracker:
    """Times each iteration with CUDA events recorded on the current stream; one sync at the end."""

    def __init__(self, device: torch.device):
        self.device = device
        self.start_events: list[torch.cuda.Event] = []
        self.end_events: list[torch.cuda.Event] = []

    def start(self) -> None:
        event = torch.cuda.Event(enable_timing=True)
        event.record()
        self.start_events.append(event)

    def stop(self) -> None:
        event = torch.cuda.Event(enable_timing=True)
        event.record()
        self.end_events.append(event)

    def finish(self) -> tuple[list[float], float]:
        torch.cuda.synchronize(self.device)
        latencies_s = [s.elapsed_time(e) / 1e3 for s, e in zip(self.start_events, self.end_events)]
        total_seconds = self.start_events[0].elapsed_time(self.end_events[-1]) / 1e3
        return latencies_s, total_seconds


def make_tracker(device: torch.device, clock: Callable[[], float] = time.perf_counter):
    if device.type == "cuda":
        return CudaLatencyTracker(device)
    return CpuLatencyTracker(clock)


def synchronize(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def timed_loop(
    step: Callable[[], object],
    device: torch.device,
    protocol: TimingProtocol = DEFAULT_PROTOCOL,
    clock: Callable[[], float] = time.perf_counter,
    watch: Optional[Callable[[], ContextManager]] = None,
) -> TimedRun:
    """Run `warmup` untimed steps, then timed steps until >= min_iters AND >= min_seconds have passed.
    `watch`: the first warm-up step runs inside `watch()` (a dispatcher observer reading which kernels ran:
    untimed like every warm-up step, so what it costs lands in warmup_seconds, never in a latency).

    NB: the stopping rule reads the host clock; on CUDA that clock runs ahead of the GPU by at most
    the launch queue, so the measured span can slightly exceed min_seconds, never fall short of it
    by more than the queue depth. `max_iters` caps the loop regardless of duration.
    """
    warmup, min_iters, min_seconds, max_iters = (protocol.warmup, protocol.min_iters, protocol.min_seconds,
                                                 protocol.max_iters)
    warmup_start = clock()
    for done in range(warmup):
        with watch() if watch is not None and done == 0 else contextlib.nullcontext():
            step()
    synchronize(device)
    warmup_seconds = clock() - warmup_start

    tracker = make_tracker(device, clock)
    loop_start = clock()
    iters = 0
    while iters < min_iters or clock() - loop_start < min_seconds:
        if max_iters is not None and iters >= max_iters:
            break
        tracker.start()
        step()
        tracker.stop()
        iters += 1
    latencies_s, total_seconds = tracker.finish()
    return TimedRun(tuple(latencies_s), total_seconds, warmup, warmup_seconds)


def latency_stats(latencies_s: Sequence[float]) -> dict[str, float]:
    """p50/p90/p99 (linear interpolation between order statistics), mean and cv = std/mean (ddof=1)."""
    values_ms = np.asarray(latencies_s, dtype=np.float64) * 1e3
    if values_ms.size == 0:
        raise ValueError("no latencies to summarise")
    mean_ms = float(values_ms.mean())
    std_ms = float(values_ms.std(ddof=1)) if values_ms.size > 1 else 0.0
    return {
        "latency_ms_mean": mean_ms,
        "latency_ms_p50": float(np.percentile(values_ms, 50)),
        "latency_ms_p90": float(np.percentile(values_ms, 90)),
        "latency_ms_p99": float(np.percentile(values_ms, 99)),
        "latency_ms_min": float(values_ms.min()),
        "latency_ms_max": float(values_ms.max()),
        "cv": std_ms / mean_ms if mean_ms > 0 else 0.0,
    }
