"""Executors run a list of tasks and hand each finished row to a callback, as soon as it exists.

`local` runs them one after another in this process; `subprocess` runs each in a fresh Python
process (zoo.runs.isolated), so allocator, thread-pool and compile caches of one model cannot leak
into the next; `ray` runs each as a Ray task (zoo.runs.ray_executor). All three run cost tasks first,
so timed tasks reuse their MAC counts for MFU, and all produce rows through `run_task`.
"""
from __future__ import annotations

from typing import Callable, Iterable, Optional

from .peaks import PeakCache
from .tasks import OnRow, Task, run_task

EXECUTORS = ("local", "subprocess", "ray")
Executor = Callable[[list[Task], OnRow, Optional[PeakCache]], None]


def _in_order(tasks: Iterable[Task]) -> list[Task]:
    return sorted(tasks, key=lambda t: t.kind != "cost")


def _run_each(tasks: Iterable[Task], on_row: OnRow, peaks: Optional[PeakCache], run) -> None:
    macs: dict[tuple[str, int], int] = {}
    for task in _in_order(tasks):
        if task.kind == "cost":
            row = run(task, None, None)
            if row.get("macs") is not None:
                macs[(task.model, task.img_size)] = row["macs"]
        else:
            row = run(task, macs.get((task.model, task.img_size)), peaks.get(task) if peaks else None)
        on_row(row)


def run_local(tasks: Iterable[Task], on_row: OnRow, peaks: Optional[PeakCache] = None) -> None:
    _run_each(tasks, on_row, peaks, run_task)


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
