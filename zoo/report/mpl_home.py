"""Where matplotlib writes: its font cache (fontlist-*.json) and config go under $MPLCONFIGDIR, else under
~/.cache/matplotlib and ~/.config/matplotlib, outside --out and archzoo's user cache. Imported before matplotlib
by every report module that draws: an unset MPLCONFIGDIR is pointed at <user cache>/matplotlib, or at a temporary
folder removed at exit when the cache is off (--no-cache, --check). One the user set is left as it is."""
from __future__ import annotations

import atexit
import os
import shutil
import tempfile

from ..store.user_cache import cache_dir, enabled


def _home() -> str:
    if enabled():
        folder = cache_dir() / "matplotlib"
        try:
            folder.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
            folder.mkdir(exist_ok=True, mode=0o700)
            return str(folder)
        except OSError:
            pass
    folder = tempfile.mkdtemp(prefix="archzoo-matplotlib-")
    atexit.register(shutil.rmtree, folder, True)
    return folder


if not os.environ.get("MPLCONFIGDIR"):
    os.environ["MPLCONFIGDIR"] = _home()
