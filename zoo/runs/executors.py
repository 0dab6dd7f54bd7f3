"""Executors run a list of tasks and hand each finished row to a callback, as soon as it exists.

`local` counts cost tasks on the machine's cores (zoo.runs.parallel) and times the rest one after
another in this process; `subprocess` runs each in a fresh Python process (zoo.runs.isolated), so
allocator, thread-pool and compile caches of one model cannot leak into the next; `ray` runs each as a Ray task (zoo.runs.ray_executor). All three run cost tasks first,
so timed tasks reuse their MAC counts for MFU, and all produce rows through `run_task`.
"""
from __future__ import annotations

from typing import Callable, Iterable, Optional

from .parallel import count_rows
from .peaks import PeakCache
from .tasks import OnRow, Task, run_task

EXECUTORS = ("local", "subprocess", "ray")
Executor = Callable[[list[Task], OnRow, Optional[PeakCache]], None]


def _in_order(tasks: Iterable[Task]) -> list[Task]:
    return sorted(tasks, key=lambda t: t.kind != "cost")


def _run_each(tasks: Iterable[Task], on_row: OnRow, peaks: Optional[PeakCache], run, pooled: bool = False) -> None:
    """Cost tasks first (on the machine's cores when `pooled`), then timed ones one at a time, in order."""
    macs: dict[tuple[str, int], int] = {}
    ordered = _in_order(tasks)
    cost = [t for t in ordered if t.kind == "cost"]
    cost_rows = count_rows(cost) if pooled else (run(t, None, None) for t in cost)
    for task, row in zip(cost, cost_rows):
        if row.get("macs") is not None:
            macs[(task.model, task.img_size)] = row["macs"]
        on_row(row)
    for task in ordered[len(cost):]:
        on_row(run(task, macs.get((task.model, task.img_size)), peaks.get(task) if peaks else None))


def run_local(tasks: Iterable[Task], on_row: OnRow, peaks: Optional[PeakCache] = None) -> None:
    _run_each(tasks, on_row, peaks, run_task, pooled=True)


def run_subprocesses(tasks: Iterable[Task], on_row: OnRow, peaks: Optional[PeakCache] = None) -> None:
    from .isolated import run_isolated

    _run_each(tasks, on_row, peaks, run_isolated)


def executor(name: str, address: str | None = None) -> Executor:
    if name == "local":
        return run_local
    if name == "subprocess":
        return run_subprocesses
    if name == "ray":
        from .ray_executor import run_ray

        return lambda tasks, on_row, peaks=None: run_ray(tasks, on_row, address=address)
    raise ValueError(f"unknown executor {name!r}; expected one of {', '.join(EXECUTORS)}")
