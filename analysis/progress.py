"""Progress display with elapsed time and an estimate of the time left, for long measurement runs.

Usage:
    with progress_tracker(total=len(jobs), description="throughput") as advance:
        for job in jobs:
            run(job)
            advance(f"{job.model} bs={job.batch_size}")
"""

from __future__ import annotations

import contextlib
import sys
from typing import Callable, Iterator, Optional

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)


@contextlib.contextmanager
def progress_tracker(
    total: int,
    description: str = "measuring",
    enabled: Optional[bool] = None,
    console: Optional[Console] = None,
) -> Iterator[Callable[[str], None]]:
    """Yield `advance(label)`: marks one item done and shows `label` as the latest finished item.

    `enabled=None` shows the bar only when stderr is a terminal, so logs and tests stay clean.
    The display goes to stderr so that stdout (tables, JSON) stays machine-readable.
    """
    if enabled is None:
        enabled = sys.stderr.isatty()
    if not enabled:
        yield lambda label="": None
        return
    progress = Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TextColumn("ETA"),
        TimeRemainingColumn(),
        TextColumn("{task.fields[latest]}"),
        console=console or Console(stderr=True),
        transient=False,
    )
    with progress:
        task = progress.add_task(description, total=total, latest="")

        def advance(label: str = "") -> None:
            progress.update(task, advance=1, latest=label)

        yield advance
