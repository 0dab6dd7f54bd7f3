"""Executors run a list of tasks and hand each finished row to a callback, as soon as it exists.

`local` runs them one after another in this process (cost rows first, so throughput rows can
reuse their MAC counts for MFU). The Ray executor (zoo/ray_executor.py) has the same signature.
"""
from __future__ import annotations

from typing import Callable, Iterable

from .tasks import Task, run_task

OnRow = Callable[[dict], None]


def run_local(tasks: Iterable[Task], on_row: OnRow) -> None:
    macs: dict[tuple[str, int], int] = {}
    for task in sorted(tasks, key=lambda t: t.kind != "cost"):
        row = run_task(task, macs=macs.get((task.model, task.img_size)) if task.kind == "throughput" else None)
        if task.kind == "cost" and "macs_per_image" in row:
            macs[(task.model, task.img_size)] = row["macs_per_image"]
        on_row(row)


def executor(name: str, address: str | None = None) -> Callable[[list[Task], OnRow], None]:
    if name == "local":
        return run_local
    if name == "ray":
        from .ray_executor import run_ray

        return lambda tasks, on_row: run_ray(tasks, on_row, address=address)
    raise ValueError(f"unknown executor {name!r}")
