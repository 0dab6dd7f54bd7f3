"""The user's archzoo cache: keyed JSON entries with their provenance, in the XDG cache folder.

Where: $ARCHZOO_CACHE_DIR, else platformdirs' user cache folder (~/.cache/archzoo, or $XDG_CACHE_HOME/archzoo).
$ARCHZOO_NO_CACHE=1 (`--no-cache`) turns it off: nothing is read or written. One file per entry,
<namespace>/<sha256 of the key>.json, holding the key, the value, where it came from, and a checksum.
Safe by construction: an entry that is damaged, of another format, stored under another key, or not a
regular file (a symlink) is ignored, so the caller measures again; writes go to a temporary file that is
renamed over the entry (readers see the old entry or the new one, never half), and a cache folder
that cannot be written only costs the speed-up.
"""
from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import stat
from pathlib import Path

from .safe_io import strict_loads, write_atomic

CACHE_DIR_ENV = "ARCHZOO_CACHE_DIR"
NO_CACHE_ENV = "ARCHZOO_NO_CACHE"
FORMAT = 1
MAX_ENTRY_BYTES = 16 << 20      # far above any entry; a bigger file is not ours
log = logging.getLogger("zoo.cache")


def cache_dir() -> Path:
    """The folder (not created here): $ARCHZOO_CACHE_DIR, else the platform's user cache folder."""
    override = os.environ.get(CACHE_DIR_ENV)
    if override:
        return Path(override).expanduser()
    import platformdirs

    return Path(platformdirs.user_cache_dir("archzoo", appauthor=False))


def enabled() -> bool:
    return os.environ.get(NO_CACHE_ENV, "").strip().lower() in ("", "0", "false", "no")


@contextlib.contextmanager
def disabled(off: bool = True):
    """Within the block (and in processes started from it) the cache is neither read nor written."""
    if not off:
        yield
        return
    before = os.environ.get(NO_CACHE_ENV)
    os.environ[NO_CACHE_ENV] = "1"
    try:
        yield
    finally:
        if before is None:
            os.environ.pop(NO_CACHE_ENV, None)
        else:
            os.environ[NO_CACHE_ENV] = before


def _canonical(obj) -> bytes:
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), allow_nan=False).encode("utf-8")


def _digest(obj) -> str:
    return hashlib.sha256(_canonical(obj)).hexdigest()


class UserCache:
    """Entries of one kind (`namespace`: "peak", "count", ...); keys and values are JSON-able."""

    def __init__(self, namespace: str, root: Path | None = None):
        if not namespace.isidentifier():
            raise ValueError(f"cache namespace {namespace!r}: letters, digits and underscores only")
        self.dir = (root if root is not None else cache_dir()) / namespace

    def path(self, key: dict) -> Path:
        return self.dir / f"{_digest(key)}.json"

    def get(self, key: dict):
        """The stored value of `key`, or None (off, missing, damaged, foreign or not a regular file)."""
        entry = self.entry(key)
        return None if entry is None else entry["value"]

    def entry(self, key: dict) -> dict | None:
        """{"key", "value", "provenance", ...} as stored, or None when it cannot be trusted."""
        if not enabled():
            return None
        path = self.path(key)
        try:
            raw = _read_regular_file(path)
        except FileNotFoundError:
            return None
        except OSError as e:   # a symlink (ELOOP), a folder, no permission: not an entry we trust
            log.debug("cache: ignored %s (%s)", path, e)
            return None
        try:
            entry = strict_loads(raw.decode("utf-8"))
            trusted = (isinstance(entry, dict) and entry.get("format") == FORMAT and entry.get("key") == key
                       and "value" in entry and entry.get("checksum") == _digest([entry["key"], entry["value"]]))
        except (UnicodeDecodeError, ValueError, TypeError):
            trusted = False
        if not trusted:
            log.debug("cache: ignored damaged or foreign entry %s", path)
            return None
        return entry

    def put(self, key: dict, value, provenance: dict | None = None) -> bool:
        """Store `value` under `key` atomically; False (and nothing raised) when the folder cannot take it."""
        if not enabled():
            return False
        try:
            entry = {"format": FORMAT, "key": key, "value": value, "provenance": provenance or {},
                     "checksum": _digest([key, value])}
            data = json.dumps(entry, sort_keys=True, indent=1, allow_nan=False).encode("utf-8")
        except (TypeError, ValueError) as e:   # not JSON (NaN, an object): not cached, not an error
            log.debug("cache: not stored (%s)", e)
            return False
        try:
            self.dir.mkdir(parents=True, exist_ok=True, mode=0o700)
            if self.dir.is_symlink() or not self.dir.is_dir():
                raise OSError(f"{self.dir} is not a plain folder")
            write_atomic(self.path(key), data)   # renamed over a symlink at the entry's name; never follows it
            return True
        except OSError as e:
            log.debug("cache: could not write %s (%s)", self.dir, e)
            return False


def _read_regular_file(path: Path) -> bytes:
    """The bytes of `path` if it is a regular file; a symlink is refused (O_NOFOLLOW), not followed."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0))
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_size > MAX_ENTRY_BYTES:
            raise OSError(f"{path} is not a regular file of a plausible size")
        with os.fdopen(fd, "rb", closefd=False) as f:
            return f.read(MAX_ENTRY_BYTES + 1)
    finally:
        os.close(fd)
