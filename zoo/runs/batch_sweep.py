"""`zoo.compare --batch-sizes sweep --latency-target-ms X`: each timed task's batch doubled from 1 until
its p99 latency passes X or memory runs out (analysis.timing.batch_sweep's rule), every point a row.

NB: a model's points are written once its sweep ends (which point is the serving batch is known only
then); an interrupted sweep keeps the models finished before it.
"""
from __future__ import annotations

import dataclasses
from typing import Optional

from analysis.timing.batch_sweep import sweep_batches

from .peaks import PeakCache
from .schema import validate
from .tasks import OnRow, Task, run_task


def run_sweeps(tasks: list[Task], on_row: OnRow, peaks: Optional[PeakCache], latency_target_ms: float) -> None:
    macs: dict = {}
    for task in sorted(tasks, key=lambda t: t.kind != "cost"):
        if task.kind == "cost":
            row = run_task(task)
            macs[(task.model, task.img_size)] = row.get("macs")
            on_row(row)
            continue
        peak = peaks.get(task) if peaks else None
        points = sweep_batches(
            lambda batch: run_task(dataclasses.replace(task, batch_size=batch), macs.get((task.model, task.img_size)),
                                   peak), latency_target_ms)
        for point in points:
            on_row(validate({**point, "latency_target_ms": latency_target_ms}))
