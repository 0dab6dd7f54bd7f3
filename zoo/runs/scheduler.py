"""The one scheduler: count first, hand the counted MACs to timing, and skip what the store already holds
under the same key. Every executor (local, subprocess, Ray), the batch sweep and zoo.select run from one.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Iterable, Optional

from .parallel import count_rows
from .peaks import PeakCache
from ..store.schema import is_measured, row_key
from .tasks import OnRow, Task, task_key

RunOne = Callable[[Task, Optional[int], Optional[dict]], dict]   # run_task's shape: task, MACs, peak -> row


@dataclass
class Schedule:
    """Tasks in the order they run, the stored rows that answer the others, and the MACs counted so far."""
    cost: list[Task]                      # counted first (meta device)
    timed: list[Task]                     # then timed, with the MACs of their cost row when there is one
    answered: dict[Task, dict] = field(default_factory=dict)   # task -> stored row with its key: not run again
    # Request.per_image -> MACs: what fixes MACs per image is the module measured and its input size
    macs: dict = field(default_factory=dict)

    @property
    def tasks(self) -> list[Task]:
        return self.cost + self.timed

    @property
    def reused(self) -> list[dict]:
        """The stored rows that answer tasks (--resume): not run again."""
        return list(self.answered.values())

    def record(self, task: Task, row: dict) -> None:
        """Keep a cost row's MACs for the timings of the same model and size."""
        if task.kind == "cost" and row.get("macs") is not None:
            self.macs[task.request.per_image] = row["macs"]

    def macs_for(self, task: Task) -> Optional[int]:
        return self.macs.get(task.request.per_image)


def schedule(tasks: Iterable[Task], stored: Iterable[dict] = (), reuse: Optional[Callable[[dict], bool]] = None,
             counted: Optional[Schedule] = None) -> Schedule:
    """Order `tasks` (cost first) and drop those a measured row of `stored` already answers (same row_key:
    model, size, batch, settings, software, and for timed rows the machine; the last such row, unless
    `reuse(row)` refuses it). `counted`: an earlier schedule whose MACs the timed tasks here take."""
    previous = {row_key(r): r for r in stored if is_measured(r)}
    plan = Schedule([], [], macs=dict(counted.macs) if counted else {})
    for task in tasks:
        found = previous.get(task_key(task))
        if found is not None and (reuse is None or reuse(found)):
            plan.answered[task] = found
            plan.record(task, found)
        else:
            (plan.cost if task.kind == "cost" else plan.timed).append(task)
    return plan


def run_in_order(plan: Schedule, run: RunOne, on_row: OnRow, peaks: Optional[PeakCache] = None,
                 pooled: bool = False) -> None:
    """Run each task one after another through `run` (in this process, or one process each); when `pooled`,
    the cost tasks the user cache lacks are counted on the machine's cores (zoo.runs.parallel), rows in order."""
    cost_rows = count_rows(plan.cost) if pooled else (run(task, None, None) for task in plan.cost)
    for task, row in zip(plan.cost, cost_rows):
        plan.record(task, row)
        on_row(row)
    for task in plan.timed:
        on_row(run(task, plan.macs_for(task), peaks.get(task) if peaks else None))
