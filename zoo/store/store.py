"""The results store: append-only JSON Lines under <out>/results/, one file per kind of row.

Writing: a run holds the folder's lock (filelock) from start to end, so two runs into one folder
cannot interleave; each row is validated against the schema, then written whole, unbuffered on a
descriptor opened without following symlinks (zoo.store.safe_io), and fsync'd, as soon as it is
measured. Before the first append a file that does not end with a newline (a torn write, a hand
edit) gets one, so the new row is never glued to it; a write that fails (disk full) is cut back to
the file's length before the row, so no partial row is left.

Reading: every line that is not valid UTF-8 strict JSON (no NaN, bounded nesting) of a known schema
is skipped, counted and named (file, line number, reason) and never treated as measured.
"""
from __future__ import annotations

import contextlib
import errno
import json
import os
import warnings
from dataclasses import dataclass
from pathlib import Path

from filelock import FileLock, Timeout

from ..errors import UsageError
from .safe_io import StrictJSONError, append_whole, open_append, refuse_unless_regular, strict_loads
from ..predict.schema import check_predicted
from .schema import KINDS, SchemaError, is_measured, measurement_key, sort_key, validate

LOCK_FILE = ".lock"
PREDICTED_FILE = "predicted.jsonl"    # predicted rows (zoo.compare/zoo.select --predict; zoo.report --refresh)


class StoreWriteError(UsageError):
    """The results folder cannot take a row (disk full, not writable): one line; zoo.compare exits 1."""


@dataclass(frozen=True)
class BadLine:
    path: Path
    number: int
    reason: str

    def __str__(self) -> str:
        return f"{self.path}:{self.number}: {self.reason}"


class ResultStore:
    def __init__(self, out_dir: str | os.PathLike):
        self.dir = Path(out_dir) / "results"
        self.bad_lines: list[BadLine] = []
        self._checked_ends: set[Path] = set()

    def path(self, kind: str) -> Path:
        if kind not in KINDS:
            raise ValueError(f"unknown row kind {kind!r}; expected one of {KINDS}")
        return self.dir / f"{kind}.jsonl"

    @contextlib.contextmanager
    def locked(self):
        """Hold the folder's lock for a whole run; another run into the same folder is a UsageError."""
        self.dir.mkdir(parents=True, exist_ok=True)
        refuse_unless_regular(self.dir / LOCK_FILE, *(self.path(k) for k in KINDS), self.dir / PREDICTED_FILE)
        lock = FileLock(str(self.dir / LOCK_FILE))
        try:
            lock.acquire(timeout=0)
        except Timeout:
            raise UsageError(f"{self.dir} is in use by another archzoo run; wait for it to finish or use "
                             f"another --out") from None
        try:
            yield self
        finally:
            lock.release()

    def append(self, row: dict) -> None:
        validate(row)
        self._append_line(self.path(row["kind"]), row)

    def append_predicted(self, row: dict) -> None:
        """A predicted row (schema.check_predicted) to results/predicted.jsonl, whole, as a measured row is."""
        self._append_line(self.dir / PREDICTED_FILE, check_predicted(row))

    def _append_line(self, path: Path, row: dict) -> None:
        line = (json.dumps(row, sort_keys=True, allow_nan=False) + "\n").encode("utf-8")
        self.dir.mkdir(parents=True, exist_ok=True)
        try:
            fd = open_append(path)
        except OSError as e:
            raise StoreWriteError(f"cannot write to {path}: {e.strerror or e}; rows written before are kept") from None
        try:
            if path not in self._checked_ends:
                if os.fstat(fd).st_size and _last_byte(path) != b"\n":
                    line = b"\n" + line       # end the torn line; it stays a bad line, the new row is whole
                self._checked_ends.add(path)
            append_whole(fd, line)        # cut back to the length before the row if it fails
        except OSError as e:
            self._checked_ends.discard(path)   # the newline written before the row went with it
            reason = "the disk is full" if e.errno == errno.ENOSPC else (e.strerror or str(e))
            raise StoreWriteError(f"cannot write to {path}: {reason}; rows written before are kept") from None
        finally:
            os.close(fd)

    def rows(self, kind: str | None = None, warn: bool = True) -> list[dict]:
        """The valid rows, in file order; bad lines go to `bad_lines` (and one warning per file)."""
        return [row for k in ([kind] if kind else KINDS) for _, row in self.numbered_rows(k, warn)]

    def numbered_rows(self, kind: str, warn: bool = True) -> list[tuple[int, dict]]:
        """(line number, row) of each valid row of one kind, in file order (a reader can name a row it cannot
        use); bad lines go to `bad_lines` (and one warning per file)."""
        path = self.path(kind)
        if not path.is_file() or path.is_symlink():
            return []
        found, bad = _read(path, kind)
        self.bad_lines += bad
        if warn:
            warn_skipped(path, bad, "are not valid rows", stacklevel=4)
        return found


def warn_skipped(path: Path, bad: list[BadLine], are_not: str, stacklevel: int = 3) -> None:
    """One warning naming the lines of `path` a reader skipped (the first three, with why), or none."""
    if bad:
        shown = "; ".join(f"line {b.number}: {b.reason}" for b in bad[:3])
        warnings.warn(f"{path}: skipped {len(bad)} line(s) that {are_not} ({shown}{'; ...' if len(bad) > 3 else ''})",
                      stacklevel=stacklevel)


def _last_byte(path: Path) -> bytes:
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    try:
        return os.pread(fd, 1, os.fstat(fd).st_size - 1)
    finally:
        os.close(fd)


def _read(path: Path, kind: str) -> tuple[list[tuple[int, dict]], list[BadLine]]:
    data = path.read_bytes()
    lines = data.split(b"\n")
    rows, bad = [], []
    for number, raw in enumerate(lines, 1):
        if not raw.strip():
            continue
        torn = number == len(lines)          # the last line has no newline after it
        try:
            if kind == "predicted":
                row = check_predicted(strict_loads(raw.decode("utf-8")))
            else:
                row = validate(strict_loads(raw.decode("utf-8")))
                if row["kind"] != kind:
                    raise SchemaError(f"a {row['kind']} row in the {kind} file")
        except UnicodeDecodeError:
            bad.append(BadLine(path, number, "not UTF-8 text"))
        except json.JSONDecodeError as e:
            bad.append(BadLine(path, number, "a torn last line (no newline: an interrupted write)" if torn
                               else f"not JSON ({e.msg} at column {e.colno})"))
        except (SchemaError, StrictJSONError) as e:
            bad.append(BadLine(path, number, str(e)))
        else:
            rows.append((number, row))
    return rows, bad


def latest(rows: list[dict]) -> list[dict]:
    """One row per measurement (schema.measurement_key): later rows replace earlier ones; failed and
    skipped rows are dropped."""
    kept: dict[tuple, dict] = {}
    for row in rows:
        if is_measured(row):
            kept[measurement_key(row)] = row
    return sorted(kept.values(), key=sort_key)


def load_frame(out_dir: str | os.PathLike = ".", kind: str = "cost", all_rows: bool = False):
    """The rows of one kind (cost, throughput, or predicted: results/predicted.jsonl) as a pandas DataFrame,
    nested settings flattened (`settings.dtype`).

    By default the latest measured row per measurement (as the reports show them); all_rows=True
    gives every valid row, failed and superseded ones included. Predicted rows are estimates, not
    measurements: every valid one, in file order (a line that is not one is skipped and named, as for
    the others).
    """
    import pandas as pd

    if kind not in (*KINDS, "predicted"):
        raise ValueError(f"unknown row kind {kind!r}; expected one of {', '.join(KINDS)}, predicted")
    if kind == "predicted":
        rows = predicted_rows(out_dir)
    else:
        rows = ResultStore(out_dir).rows(kind)
        rows = rows if all_rows else latest(rows)
    return pd.json_normalize(rows, max_level=1)      # no rows: pandas' own empty DataFrame()


def predicted_rows(out_dir: str | os.PathLike = ".", warn: bool = True) -> list[dict]:
    """The valid rows of <out_dir>/results/predicted.jsonl (check_predicted), in file order; lines that are not
    one are skipped, with one warning naming them (file, line, why)."""
    path = Path(out_dir) / "results" / PREDICTED_FILE
    if not path.is_file() or path.is_symlink():
        return []
    rows, bad = _read(path, "predicted")
    if warn:
        warn_skipped(path, bad, "are not predicted rows")
    return [row for _, row in rows]
