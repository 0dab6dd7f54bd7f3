"""The one timing protocol: warm-up steps, then timed steps until both a minimum count AND a minimum duration
are reached (analysis.timing.latency runs it). Plain data: planning a run needs no torch."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional


@dataclass(frozen=True)
class TimingProtocol:
    """How long a timing runs: `warmup` untimed steps, then at least `min_iters` timed steps AND at
    least `min_seconds` of them; `max_iters` caps the count whatever the duration."""
    warmup: int = 3
    min_iters: int = 10
    min_seconds: float = 1.0     # pytest-benchmark's max_time is 1 s; the cv noise flag marks what is too short
    max_iters: Optional[int] = None

    def __post_init__(self):
        if self.min_iters < 1:
            raise ValueError(f"min_iters must be >= 1, got {self.min_iters}")
        if self.warmup < 0 or self.min_seconds < 0:
            raise ValueError("warmup and min_seconds must not be negative")


DEFAULT_PROTOCOL = TimingProtocol()                                   # every measurement, unless --quick
QUICK_PROTOCOL = TimingProtocol(warmup=1, min_iters=3, min_seconds=0.3)
