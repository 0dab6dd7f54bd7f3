"""Executors run a schedule (zoo.runs.scheduler) and hand each finished row to a callback, as soon as it exists.

`local` counts cost tasks on the machine's cores (zoo.runs.parallel) and times the rest one after
another in this process; `subprocess` runs each in a fresh Python process (zoo.runs.isolated), so
allocator, thread-pool and compile caches of one model cannot leak into the next; `ray` runs each as a
Ray task (zoo.runs.ray_executor). All produce rows through `run_task`.
"""
from __future__ import annotations

from typing import Callable, Optional

from .peaks import PeakCache
from .scheduler import Schedule, run_in_order
from .tasks import OnRow, run_task

EXECUTORS = ("local", "subprocess", "ray")
Executor = Callable[[Schedule, OnRow, Optional[PeakCache]], None]


def run_local(plan: Schedule, on_row: OnRow, peaks: Optional[PeakCache] = None) -> None:
    run_in_order(plan, run_task, on_row, peaks, pooled=True)


def run_subprocesses(plan: Schedule, on_row: OnRow, peaks: Optional[PeakCache] = None) -> None:
    from .isolated import run_isolated

    run_in_order(plan, run_isolated, on_row, peaks)


def executor(name: str, address: str | None = None) -> Executor:
    if name == "local":
        return run_local
    if name == "subprocess":
        return run_subprocesses
    if name == "ray":
        from .ray_executor import run_ray

        return lambda plan, on_row, peaks=None: run_ray(plan, on_row, address=address)
    raise ValueError(f"unknown executor {name!r}; expected one of {', '.join(EXECUTORS)}")
