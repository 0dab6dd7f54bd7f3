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


class LatencyTracker:
    """Times each iteration: on CUDA with events recorded on the current stream and one sync at the end, else
    with a host clock (CPU work is synchronous, so no sync is needed)."""

    def __init__(self, device: torch.device, clock: Callable[[], float] = time.perf_counter):
        self.device, self.clock, self.starts, self.ends = device, clock, [], []

    def _mark(self):
        if self.device.type != "cuda":
            return self.clock()
        event = torch.cuda.Event(enable_timing=True)
        event.record()
        return event

    def start(self) -> None:
        self.starts.append(self._mark())

    def stop(self) -> None:
        self.ends.append(self._mark())

    def finish(self) -> tuple[list[float], float]:
        """(each iteration's seconds, seconds from the first start to the last end)."""
        if self.device.type == "cuda":
            torch.cuda.synchronize(self.device)
            between = lambda start, end: start.elapsed_time(end) / 1e3      # noqa: E731 - events measure in ms
        else:
            between = lambda start, end: end - start                        # noqa: E731
        return [between(s, e) for s, e in zip(self.starts, self.ends)], between(self.starts[0], self.ends[-1])


def synchronize(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def timed_loop(step: Callable[[], object], device: torch.device, protocol: TimingProtocol = DEFAULT_PROTOCOL,
               clock: Callable[[], float] = time.perf_counter,
               watch: Optional[Callable[[], ContextManager]] = None) -> TimedRun:
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

    tracker = LatencyTracker(device, clock)
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
    percentiles = {f"latency_ms_p{q}": float(np.percentile(values_ms, q)) for q in (50, 90, 99)}
    return {"latency_ms_mean": mean_ms, **percentiles,
            "latency_ms_min": float(values_ms.min()), "latency_ms_max": float(values_ms.max()),
            "cv": std_ms / mean_ms if mean_ms > 0 else 0.0}
