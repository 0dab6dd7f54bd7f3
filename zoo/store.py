"""The results store: append-only JSON Lines under <out>/results/, one file per kind of row.

Each row is written whole with a single write of one line and flushed, as soon as it is measured,
so an interrupted run loses nothing it had finished; a torn last line (a crash mid-write) is
skipped on reading, with a warning, instead of poisoning the file.
"""
from __future__ import annotations

import json
import os
import warnings
from pathlib import Path

from .tasks import KINDS, row_key


class ResultStore:
    def __init__(self, out_dir: str | os.PathLike):
        self.dir = Path(out_dir) / "results"

    def path(self, kind: str) -> Path:
        if kind not in KINDS:
            raise ValueError(f"unknown row kind {kind!r}; expected one of {KINDS}")
        return self.dir / f"{kind}.jsonl"

    def append(self, row: dict) -> None:
        self.dir.mkdir(parents=True, exist_ok=True)
        line = json.dumps(row, sort_keys=True, default=str) + "\n"
        with open(self.path(row["kind"]), "a", encoding="utf-8") as f:
            f.write(line)
            f.flush()
            os.fsync(f.fileno())

    def rows(self, kind: str | None = None) -> list[dict]:
        rows = []
        for k in ([kind] if kind else KINDS):
            path = self.path(k)
            if not path.exists():
                continue
            for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
                if not line.strip():
                    continue
                try:
                    rows.append(json.loads(line))
                except json.JSONDecodeError:
                    warnings.warn(f"{path}:{number}: skipping a torn line (an interrupted write)")
        return rows

    def keys(self) -> set[tuple]:
        """Keys of the rows already measured (failed ones excluded, so --resume retries them)."""
        return {row_key(r) for r in self.rows() if "failed" not in r}


def load_frame(out_dir: str | os.PathLike = ".", kind: str = "cost"):
    """The rows of one kind as a pandas DataFrame, nested settings flattened (`settings.dtype`)."""
    import pandas as pd

    rows = ResultStore(out_dir).rows(kind)
    return pd.json_normalize(rows, max_level=1) if rows else pd.DataFrame()
