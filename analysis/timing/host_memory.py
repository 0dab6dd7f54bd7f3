"""Host memory before a CPU run: how much is available, and the largest batch (halving) whose counted
need fits, so a batch that cannot fit is halved up front instead of being left to the kernel's OOM killer.

Available = the least of /proc/meminfo's MemAvailable and the cgroup's limit minus its usage (v2 or v1);
ARCHZOO_AVAILABLE_MEMORY_BYTES overrides it (tests, or to leave room for other work).
"""
from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import Callable, Optional

from ..batch_search import halvings, largest_batch_where

OVERRIDE_ENV = "ARCHZOO_AVAILABLE_MEMORY_BYTES"
# the allocator, the timing loop's second live output and attention workspaces come on top of the counted
# peak: a batch is kept only while its counted need is under this share of what is available
HEADROOM = 0.8
_CGROUP_FILES = [("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory.current"),
                 ("/sys/fs/cgroup/memory/memory.limit_in_bytes", "/sys/fs/cgroup/memory/memory.usage_in_bytes")]


def _read_int(path: str) -> Optional[int]:
    try:
        text = Path(path).read_text().strip()
    except OSError:
        return None
    return int(text) if text.isdigit() else None      # "max": no limit


def _meminfo_available() -> Optional[int]:
    with contextlib.suppress(OSError, ValueError, IndexError):
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    return None


def override_bytes(text: str) -> int:
    """$ARCHZOO_AVAILABLE_MEMORY_BYTES as a number of bytes; a ValueError naming the variable otherwise."""
    value = text.strip()
    if not value.isdigit() or not value.isascii():
        raise ValueError(f"{OVERRIDE_ENV}={text!r} is not a whole number of bytes (0 or more)")
    return int(value)


def available_bytes() -> Optional[int]:
    """Bytes this process can still allocate, or None where nothing says (then nothing is halved)."""
    override = os.environ.get(OVERRIDE_ENV)
    if override is not None and override.strip():
        return override_bytes(override)
    found = [_meminfo_available()]
    for limit_file, usage_file in _CGROUP_FILES:
        limit, usage = _read_int(limit_file), _read_int(usage_file)
        if limit is not None and usage is not None and limit < 1 << 60:
            found.append(max(0, limit - usage))
    found = [f for f in found if f is not None]
    return min(found) if found else None


def halve_to_fit(batch: int, need_at: Callable[[int], int], available: Optional[int]) -> tuple[int, list[int], Optional[str]]:
    """(batch to run, batches halved away, why) for the largest batch/2^k whose need_at(b) bytes fit under
    HEADROOM x available; batch 1 is kept even when it does not fit (the caller refuses it: zoo.runs.host_fit)."""
    if available is None:
        return batch, [], None
    first_need, tried = need_at(batch), halvings(batch)
    batch = largest_batch_where(lambda b: need_at(b) <= HEADROOM * available, tried, start=len(tried) - 1) or 1
    halved = [b for b in reversed(tried) if b > batch]
    if not halved:
        return batch, [], None
    return batch, halved, f"{need_text(halved[0], first_need, available)}; halved up front to {batch}"


def need_text(batch: int, need: int, available: int) -> str:
    """What a batch needs of the host's memory against what is available, in MiB (2^20 bytes)."""
    from ..units import MIB

    return (f"host memory: batch {batch} needs {need / MIB:,.0f} MiB (counted on meta), {available / MIB:,.0f} MiB "
            f"available (at most {HEADROOM:.0%} used)")
