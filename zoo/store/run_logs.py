"""Where captured library logs go: a file per row under <out>/results/logs/ (ARCHZOO_LOG_DIR, set by
zoo.compare), or stderr itself with --verbose (ARCHZOO_VERBOSE=1). Environment variables, so a
measurement in a subprocess follows the same choice."""
from __future__ import annotations

import contextlib
import os
import re
from pathlib import Path

from .safe_io import write_atomic

LOG_DIR_ENV, VERBOSE_ENV = "ARCHZOO_LOG_DIR", "ARCHZOO_VERBOSE"


def verbose() -> bool:
    return os.environ.get(VERBOSE_ENV) == "1"


def keep_log(label: str, text: str) -> Path | None:
    """Write `text` to <ARCHZOO_LOG_DIR>/<label>.log (replaced, never followed); None when nothing is kept."""
    folder = os.environ.get(LOG_DIR_ENV)
    if not text or not folder:
        return None
    path = Path(folder) / (re.sub(r"[^A-Za-z0-9_.-]+", "_", label) + ".log")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(path, text)
    except OSError:
        return None          # a log is a convenience: never a reason to lose the row
    return path


@contextlib.contextmanager
def environment(values: dict[str, str | None]):
    """Set (or, for None, unset) environment variables for the block, then restore them."""
    saved = {k: os.environ.get(k) for k in values}
    try:
        _set(values)
        yield
    finally:
        _set(saved)


def _set(values: dict[str, str | None]) -> None:
    for key, value in values.items():
        if value is None:
            os.environ.pop(key, None)
        else:
            os.environ[key] = value
