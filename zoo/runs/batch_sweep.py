"""`zoo.compare --batch-sizes sweep --latency-target-ms X`: each timed task's batch doubled from 1 until
its p99 latency passes X or memory runs out (analysis.timing.batch_sweep's rule), every point a row.

NB: a model's points are written once its sweep ends (which point is the serving batch is known only
then); an interrupted sweep keeps the models finished before it.
"""
from __future__ import annotations

from typing import Optional

from analysis.timing.batch_sweep import sweep_batches

from ..options.values import MAX_BATCH
from .peaks import PeakCache
from .scheduler import Schedule, run_in_order
from ..store.schema import ThroughputRow
from .tasks import OnRow, Task, run_task


def run_sweeps(plan: Schedule, on_row: OnRow, peaks: Optional[PeakCache], latency_target_ms: float) -> None:
    def sweep(task: Task, macs: Optional[int], peak: Optional[dict]) -> list[dict]:
        def at(batch: int) -> dict:
            return run_task(task.replace(request=task.request.replace(batch_size=batch)), macs, peak)

        points = sweep_batches(at, latency_target_ms, max_batch=MAX_BATCH)   # --batch-sizes' bound, not 2^16
        return [ThroughputRow(**{**point, "latency_target_ms": latency_target_ms}).to_json() for point in points]

    def on_result(result) -> None:   # a cost row, or a timed task's points
        for row in result if isinstance(result, list) else [result]:
            on_row(row)

    run_in_order(plan, lambda task, macs, peak: run_task(task) if task.kind == "cost" else sweep(task, macs, peak),
                 on_result, peaks)
