"""Files archzoo writes and reads, safely: regular files only, never through a symlink, whole or not at all.

Writes: appends open with O_NOFOLLOW and write unbuffered on the descriptor (a failed write is cut back
to the length before it); whole files are written to a temporary file beside them and renamed into place
(a symlink or stale file at the path is replaced, never followed). Reads: strict JSON (no NaN or
Infinity, nesting bounded) so one crafted line cannot stop a reader.
"""
from __future__ import annotations

import contextlib
import json
import math
import os
import stat
import tempfile
from pathlib import Path

from ..errors import UsageError

MAX_DEPTH = 32          # rows nest 3 levels deep (settings, features); a line nested deeper is refused
MAX_LINE_BYTES = 1 << 24


class StrictJSONError(ValueError):
    """Not strict JSON: NaN/Infinity, nested too deep, or too long."""


def kind_of(path: Path) -> str | None:
    """None for a missing path or a regular file; else what is in the way ("a symlink", "a folder", ...)."""
    try:
        mode = os.lstat(path).st_mode
    except (FileNotFoundError, NotADirectoryError):
        return None
    if stat.S_ISREG(mode):
        return None
    return ("a symlink" if stat.S_ISLNK(mode) else "a folder" if stat.S_ISDIR(mode) else
            "a FIFO" if stat.S_ISFIFO(mode) else "a socket" if stat.S_ISSOCK(mode) else "a device file")


def refuse_unless_regular(*paths: Path, option: str = "--out") -> None:
    """A UsageError (exit 2, one line) for the first path that exists and is not a regular file."""
    for path in paths:
        found = kind_of(path)
        if found:
            raise UsageError(f"{option}: {path} is {found}, not a regular file; archzoo writes only regular "
                             f"files inside its folder (remove it)")


def refuse_symlinked_folder(path: Path, option: str = "--out") -> None:
    """A results/ or reports/ folder that is a symlink would carry writes outside --out."""
    if path.is_symlink():
        raise UsageError(f"{option}: {path} is a symlink; archzoo writes only inside its folder (remove it)")


def open_append(path: Path) -> int:
    """An O_APPEND descriptor on a regular file at `path` (created if missing), never through a symlink."""
    flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
    fd = os.open(path, flags, 0o644)
    if not stat.S_ISREG(os.fstat(fd).st_mode):      # a FIFO or device: O_NONBLOCK kept the open from hanging
        os.close(fd)
        raise OSError(f"{path} is not a regular file")
    os.set_blocking(fd, True)
    return fd


def append_whole(fd: int, data: bytes) -> None:
    """Write all of `data` at the end of `fd`, unbuffered, then fsync. A failed write (a full disk) cuts the
    file back to its length before it and re-raises; so does a signal that lands between two partial writes.
    A signal after the whole row is written keeps the row (it is finished)."""
    start = os.fstat(fd).st_size
    view = memoryview(data)
    try:
        while view:
            view = view[os.write(fd, view):]
        os.fsync(fd)
    except BaseException as e:
        if view or isinstance(e, OSError):
            with contextlib.suppress(OSError):
                os.ftruncate(fd, start)
        raise


def write_atomic(path: Path, data: bytes | str) -> None:
    """Write `path` whole: a temporary file beside it, fsync'd, then renamed over it (a symlink at `path` is
    replaced, not followed)."""
    path = Path(path)
    if kind_of(path) == "a folder":
        raise IsADirectoryError(f"{path} is a folder")
    raw = data.encode("utf-8") if isinstance(data, str) else data
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(raw)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def _no_constant(name: str):
    raise StrictJSONError(f"{name} is not a number JSON allows")


def _depth(text: str | bytes) -> int:
    """Deepest bracket nesting outside strings (a cheap scan, so json never recurses past MAX_DEPTH)."""
    if isinstance(text, bytes):
        text = text.decode("utf-8")
    depth = deepest = 0
    in_string = escaped = False
    for ch in text:
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif ch in "[{":
            depth += 1
            if depth > deepest:
                deepest = depth
                if deepest > MAX_DEPTH:
                    return deepest
        elif ch in "]}":
            depth -= 1
    return deepest


def _bounded_int(text: str) -> int:
    if len(text.lstrip("-")) > 19:       # beyond int64: no count archzoo makes
        raise StrictJSONError(f"integer {text[:20]}... is out of bound")
    return int(text)


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise StrictJSONError(f"{text[:20]} is out of a float's range")
    return value


def _unique_keys(pairs: list) -> dict:
    keys = [k for k, _ in pairs]
    twice = next((k for k in keys if keys.count(k) > 1), None)
    if twice is not None:
        raise StrictJSONError(f"key {twice!r} appears twice in one object")
    return dict(pairs)


def strict_loads(text: str | bytes, unique_keys: bool = False):
    """json.loads, refusing NaN/Infinity, numbers out of int64/float range, and nesting past MAX_DEPTH;
    unique_keys: an object with a key twice too (json keeps the last one silently)."""
    if len(text) > MAX_LINE_BYTES:
        raise StrictJSONError(f"longer than {MAX_LINE_BYTES:,} bytes")
    if _depth(text) > MAX_DEPTH:
        raise StrictJSONError(f"nested deeper than {MAX_DEPTH} levels")
    return json.loads(text, parse_constant=_no_constant, parse_int=_bounded_int, parse_float=_finite_float,
                      object_pairs_hook=_unique_keys if unique_keys else None)


def read_regular(path: Path, max_bytes: int, option: str) -> bytes:
    """The bytes of `path`, a regular file (through a link is fine) of at most `max_bytes`; UsageError for a
    FIFO, a device (/dev/zero), a folder or anything larger, found without blocking or reading past the cap."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except OSError as e:
        raise UsageError(f"{option}: cannot read {str(path)!r}: {e.strerror or e}") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise UsageError(f"{option}: {str(path)!r} is not a regular file")
        if info.st_size > max_bytes:
            raise UsageError(f"{option}: {str(path)!r} is {info.st_size:,} bytes, over {max_bytes:,}")
        os.set_blocking(fd, True)
        data = os.read(fd, max_bytes + 1)
        if len(data) > max_bytes:
            raise UsageError(f"{option}: {str(path)!r} is over {max_bytes:,} bytes")
        return data
    except OSError as e:
        raise UsageError(f"{option}: cannot read {str(path)!r}: {e.strerror or e}") from None
    finally:
        os.close(fd)


def read_stored(path: Path, label: str, max_bytes: int) -> tuple[str | None, str | None]:
    """A file archzoo wrote, read as a reader of results/ must: (text, None); (None, None) when it is missing;
    (None, why) when it is not a regular file (never opened through a link, never blocking on a FIFO), cannot
    be read, is larger than `max_bytes` or is not UTF-8. `label` names the file in `why`."""
    found = kind_of(path)
    if found:
        return None, f"{label} is {found}, not a regular file"
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0))
    except FileNotFoundError:
        return None, None
    except OSError as e:
        return None, f"{label} cannot be read ({e.strerror or e})"
    try:
        with os.fdopen(fd, "rb") as f:
            raw = f.read(max_bytes + 1)
    except OSError as e:
        return None, f"{label} cannot be read ({e.strerror or e})"
    if len(raw) > max_bytes:
        return None, f"{label} is not usable (larger than {max_bytes:,} bytes)"
    try:
        return raw.decode("utf-8"), None
    except UnicodeDecodeError:
        return None, f"{label} is not usable (not UTF-8)"


def finite(value):
    """`value` with every non-finite float (NaN, Infinity) turned into None, so json.dumps of it is strict JSON."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [finite(v) for v in value]
    return value


def strict_dumps(value, **options) -> str:
    """JSON text that every strict parser accepts (non-finite floats become null)."""
    return json.dumps(finite(value), allow_nan=False, **options)


NAME_MAX = 255     # bytes in one name (a path's part) on Linux's and macOS's file systems, where pathconf cannot say


def usable_path(text: str | os.PathLike, option: str) -> Path:
    """`text` resolved, as a path archzoo can make and open, or a UsageError (exit 2, one line) naming `option` (an
    option or an environment variable), before anything is written: no empty path, no name longer than its file
    system takes (NAME_MAX bytes), no symlink loop, nothing else the OS refuses to look up (a path too long)."""
    if not str(text).strip():
        raise UsageError(f"{option}: an empty path; name a folder (. for the current one)")
    shown = str(text) if len(str(text)) <= 120 else f"{str(text)[:60]}...{str(text)[-40:]}"
    path = Path(text).expanduser()
    nearest = next((p for p in (path, *path.parents) if os.path.lexists(p)), Path("."))
    try:
        name_max = os.pathconf(nearest if nearest.is_dir() else nearest.parent, "PC_NAME_MAX")
    except (OSError, ValueError):
        name_max = NAME_MAX
    for name in path.parts:
        if len(os.fsencode(name)) > name_max:
            raise UsageError(f"{option}: the name {name[:24]}... is {len(os.fsencode(name))} bytes; the file system "
                             f"takes at most {name_max} bytes per name")
    try:
        resolved = path.resolve()
        os.stat(resolved)
    except (FileNotFoundError, NotADirectoryError):
        return resolved                     # missing: made (or refused as not a folder) by the caller
    except RuntimeError:                    # Path.resolve's symlink loop (Python < 3.13)
        raise UsageError(f"{option}: {shown} goes round a symlink loop") from None
    except OSError as e:                    # ELOOP (a loop), ENAMETOOLONG (the whole path), EACCES
        raise UsageError(f"{option}: cannot use {shown}: {e.strerror or e}") from None
    return resolved


def check_out_dir(out: str, option: str = "--out") -> Path:
    """`out` (made if missing) must take results/<kind>.jsonl: probed by creating and removing a file in
    its nearest existing folder, so /proc, read-only mounts and files in the way are found before any
    work; nothing is left behind. `option`: what the user named it by (--out, $ARCHZOO_DATA_DIR)."""
    path = usable_path(out, option)
    for blocker in (path, path / "results"):
        if blocker.exists() and not blocker.is_dir():
            raise UsageError(f"--out: {blocker} is a file, not a folder")
    for name in ("cost.jsonl", "throughput.jsonl", "predicted.jsonl"):
        if (path / "results" / name).is_dir():
            raise UsageError(f"--out: {path / 'results' / name} is a folder, not a results file")
    refuse_symlinked_folder(path / "results")     # writes never follow links out of --out
    refuse_symlinked_folder(path / "results" / "logs")
    refuse_unless_regular(*(path / "results" / n for n in ("cost.jsonl", "throughput.jsonl", "predicted.jsonl", ".lock")))
    probe_dir = next(p for p in (path / "results", path, *path.parents) if p.exists())
    if not probe_dir.is_dir():
        raise UsageError(f"--out: cannot write under {out!r} ({probe_dir} is not a folder)")
    try:
        with tempfile.NamedTemporaryFile(dir=probe_dir, prefix=".archzoo-probe-"):
            pass
    except OSError as e:
        raise UsageError(f"--out: cannot write under {out!r} ({probe_dir}: {e.strerror or e})") from None
    for existing in (path / "results" / n for n in ("cost.jsonl", "throughput.jsonl", "predicted.jsonl")):
        if existing.exists() and not os.access(existing, os.W_OK):
            raise UsageError(f"--out: {existing} is not writable")
    return path
