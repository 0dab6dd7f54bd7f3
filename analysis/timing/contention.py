"""How much of the machine's CPU other processes used while we measured (Linux), and waiting for quiet.

foreign_cpu_share = (all CPUs' busy time - this process's CPU time) / all CPUs' time, over the timed
loop, from /proc/stat and os.times(). On a shared box a share well above 0 explains a slow number.
"""
from __future__ import annotations

import os
import time
from typing import Optional

CLOCK_TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
# A timing is noisy above either threshold (zoo.runs.timed marks its row, zoo.select does not decide on it, a GEMM
# peak so probed is not kept): step latencies spread by more than a fifth of their mean, or other processes using
# more than 15% of the cores we timed on (their use of the cores we did not ask for is not noise).
NOISY_CV = 0.2
NOISY_FOREIGN_CPU_SHARE = 0.15


def share_of_ours(foreign_cpu_share: Optional[float], threads: Optional[int], cores: Optional[int] = None) -> float:
    """The fraction of the cores we timed on (`threads`; None: all) that others used, from foreign_cpu_share, their
    share of all `cores` (/proc/stat's): their use of the cores left free is not ours. Not clipped."""
    cores = cores or os.cpu_count() or 1
    ours = min(threads or cores, cores)
    return ((foreign_cpu_share or 0.0) * cores - (cores - ours)) / ours


def _machine_cpu_seconds() -> Optional[tuple[float, float]]:
    """(busy, total) CPU seconds of all cores since boot, or None where /proc/stat is missing."""
    try:
        with open("/proc/stat", encoding="ascii") as stat:
            fields = [int(value) for value in stat.readline().split()[1:]]
    except (OSError, ValueError):
        return None
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)  # idle + iowait
    total = sum(fields[:8])  # user nice system idle iowait irq softirq steal (guest is inside user)
    return (total - idle) / CLOCK_TICKS, total / CLOCK_TICKS


def _own_cpu_seconds() -> float:
    times = os.times()
    return times.user + times.system


class ForeignCpuMeter:
    """Context manager: after exit, `.share` is the fraction of machine CPU others used (None if unknown)."""

    def __init__(self):
        self.share: Optional[float] = None

    def __enter__(self) -> "ForeignCpuMeter":
        self._machine_start, self._own_start = _machine_cpu_seconds(), _own_cpu_seconds()
        return self

    def __exit__(self, *exc_info) -> None:
        machine_end, own_end = _machine_cpu_seconds(), _own_cpu_seconds()
        if self._machine_start is None or machine_end is None:
            return
        busy = machine_end[0] - self._machine_start[0]
        total = machine_end[1] - self._machine_start[1]
        if total > 0:
            # NB: jiffy granularity (10 ms) makes very short loops imprecise; clamp the rounding noise.
            self.share = min(1.0, max(0.0, (busy - (own_end - self._own_start)) / total))


def wait_for_quiet(max_busy_share: float = 0.15, quiet_seconds: float = 3.0, timeout_s: float = 300.0,
                   poll_seconds: float = 1.0) -> bool:
    """Block until the machine's CPUs were under `max_busy_share` busy for `quiet_seconds` in a row.

    Returns False (and stops waiting) after timeout_s. Call it before timing, not during.
    """
    deadline, quiet_since = time.monotonic() + timeout_s, None
    previous = _machine_cpu_seconds()
    if previous is None:
        return True
    while time.monotonic() < deadline:
        time.sleep(poll_seconds)
        current = _machine_cpu_seconds()
        total = current[1] - previous[1]
        busy_share = (current[0] - previous[0]) / total if total > 0 else 0.0
        previous = current
        if busy_share <= max_busy_share:
            quiet_since = quiet_since or time.monotonic() - poll_seconds
            if time.monotonic() - quiet_since >= quiet_seconds:
                return True
        else:
            quiet_since = None
    return False
