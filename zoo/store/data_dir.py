"""Where a user's measured rows go by default: a per-user data folder, never the folder a command runs in.

$ARCHZOO_DATA_DIR, else platformdirs' user data folder (~/.local/share/archzoo, or $XDG_DATA_HOME/archzoo;
~/Library/Application Support/archzoo on macOS). `zoo.compare` and `zoo.select` append their rows to
<data dir>/results/ and `zoo.report` builds <data dir>/reports/ from them, so a run inside a checkout leaves
the repository's committed results/ and reports/ (its reference data) alone; `--out .` (compare, select)
and `--results .` (report) are how maintainers regenerate those on purpose.
"""
from __future__ import annotations

import os
from pathlib import Path

DATA_DIR_ENV = "ARCHZOO_DATA_DIR"


def data_dir() -> Path:
    """The folder (not created here): $ARCHZOO_DATA_DIR, else the platform's user data folder for archzoo. A
    UsageError naming the variable for a path no folder can have (zoo.store.safe_io.usable_path)."""
    override = os.environ.get(DATA_DIR_ENV)
    if override:
        from .safe_io import usable_path

        usable_path(override, f"${DATA_DIR_ENV}")
        return Path(override).expanduser()
    import platformdirs

    return Path(platformdirs.user_data_dir("archzoo", appauthor=False))


def out_or_default(out: str | os.PathLike | None) -> str:
    """The --out/--results a user gave, else the user data folder (as text, as options arrive)."""
    return str(data_dir()) if out is None else str(out)
