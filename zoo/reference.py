"""The committed reference data as a whole, refreshed and checked by `python -m zoo.report --refresh` and
`--check`: the deterministic rows and predicted rows (zoo.report.deterministic), zoo.select's answers to the
worked questions (zoo.select.answers) and the reports built from them. The commands import none of each other;
this is the one module that composes two of them (tests/test_layers.py).
"""
from __future__ import annotations

from pathlib import Path

from .report.deterministic import refresh as refresh_rows, stale_reports, stale_rows
from .select.answers import stale_answers, write_answers


def refresh(out_dir: str | Path = ".", progress=None) -> int:
    """Append the deterministic rows results/ lacks or holds with other numbers (returns how many), and rewrite
    the worked answers and the predicted rows, all under results/' lock."""
    return refresh_rows(out_dir, progress, beside=write_answers)


def check(out_dir: str | Path = ".", progress=None) -> list[str]:
    """Problems found: a deterministic row missing or different from a fresh count, a stale prediction or
    worked answer, or a stale report file."""
    return stale_rows(out_dir, progress) + stale_answers(out_dir) + stale_reports(out_dir)
