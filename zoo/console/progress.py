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
import time
from typing import Callable, Iterator, Optional

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn


@contextlib.contextmanager
def progress_tracker(total: int, description: str = "measuring", enabled: Optional[bool] = None,
                     console: Optional[Console] = None) -> Iterator[Callable[[str], None]]:
    """Yield `advance(label)`: marks one item done and shows `label` as the latest finished item.

    enabled=True: a rich bar; False: nothing; None: the bar on a terminal, else one plain line per
    item (for logs). Output goes to stderr so that stdout (tables, JSON) stays machine-readable.
    """
    if enabled is False:
        yield lambda label="": None
        return
    if enabled is None and not sys.stderr.isatty():
        yield _plain_line_advance(total, description)
        return
    progress = Progress(TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                        TextColumn("ETA"), TimeRemainingColumn(), TextColumn("{task.fields[latest]}"),
                        console=console or Console(stderr=True), transient=False)
    with progress:
        task = progress.add_task(description, total=total, latest="")

        def advance(label: str = "") -> None:
            progress.update(task, advance=1, latest=label)

        yield advance


def _plain_line_advance(total: int, description: str) -> Callable[[str], None]:
    """One stderr line per finished item: count, elapsed and a linear estimate of the time left."""
    start, done = time.monotonic(), 0

    def advance(label: str = "") -> None:
        nonlocal done
        done += 1
        elapsed = time.monotonic() - start
        remaining = elapsed / done * (total - done)
        print(f"{description} [{done}/{total}] {elapsed:.0f}s elapsed, ETA {remaining:.0f}s  {label}",
              file=sys.stderr, flush=True)

    return advance
