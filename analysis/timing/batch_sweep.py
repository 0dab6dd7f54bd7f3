"""Batch sweep under a latency target: double the batch until a latency statistic passes the target
or memory runs out, and mark the largest batch that stayed within it (the serving batch)."""
from __future__ import annotations

from typing import Callable

from .backends import is_out_of_memory


def sweep_batches(measure: Callable[[int], dict], latency_target_ms: float, stat: str = "latency_ms_p99",
                  max_batch: int = 1 << 16) -> list[dict]:
    """Measure batches 1, 2, 4, ... (powers of two up to max_batch) and return every point measured.

    Rule: `measure(batch)` returns a harness record. A point is within the target when it ran at the
    batch asked for and its `stat` (ms per batch) is <= latency_target_ms. The sweep stops after
      - the first point over the target (kept, marked not within),
      - a point that did not run at the batch asked for: `ran_batch_size` None or smaller (the
        harness halved it after out-of-memory; kept, marked not within),
      - out-of-memory raised by `measure` (analysis.timing.harness.is_out_of_memory; that batch
        gives no point),
      - the largest power of two <= max_batch.
    Each returned record is a copy with `sweep_within_target` (bool) and `serving_batch` (bool): True
    on exactly one point, the largest batch within the target, and on none when batch 1 misses it.
    Since the sweep stops at the first miss, the serving batch is the last point within the target.
    NB: one noisy slow step at batch B ends the sweep even if 2B would have fitted; p99 needs enough
    iterations (the protocol's min_iters) to mean anything. Other exceptions from `measure` propagate.
    """
    if not latency_target_ms > 0:
        raise ValueError(f"latency_target_ms must be positive, got {latency_target_ms!r}")
    if max_batch < 1:
        raise ValueError(f"max_batch must be >= 1, got {max_batch!r}")
    points: list[dict] = []
    batch = 1
    while batch <= max_batch:
        try:
            record = measure(batch)
        except Exception as exc:  # noqa: BLE001 -- only out-of-memory ends the sweep quietly
            if not is_out_of_memory(exc):
                raise
            break
        ran = record.get("ran_batch_size")
        ran_full = ran is not None and ran >= batch
        if ran_full and stat not in record:
            raise ValueError(f"measure's record has no {stat!r}")
        value = record.get(stat)
        within = bool(ran_full and value is not None and value <= latency_target_ms)
        points.append({**record, "sweep_within_target": within, "serving_batch": False})
        if not within:
            break
        batch *= 2
    within_points = [point for point in points if point["sweep_within_target"]]
    if within_points:
        within_points[-1]["serving_batch"] = True
    return points
