"""The shipped bands (benchmarks/fit_gpu_calibration.bands): p10-p90 of measured / expected img/s over held-out rows,
each held-out source weighing alike, whatever the number of its tables or rows."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[1] / "benchmarks"
if str(BENCH) not in sys.path:
    sys.path.insert(0, str(BENCH))      # benchmarks/ is not an installed package

import fit_gpu_calibration  # noqa: E402


def test_each_source_weighs_alike_not_each_table():
    # "many": nine tables of one row, each measured at the expected rate; "one": a single row measured 3x faster.
    # Sources alike, "one" holds half the weight, so p90 is 3; tables alike it would hold a tenth, and p90 be 1.
    found = [{"source": "many", "table": f"t{i}"} for i in range(9)] + [{"source": "one", "table": "u"}]
    ratios = [1.0] * 9 + [1 / 3]                     # predicted / measured img/s
    found.append({"source": "lone", "table": "v"})   # the "unfitted" band's one row: measured 1.5x the expected
    ratios.append(1 / 1.5)
    bands = fit_gpu_calibration.bands(found, ratios, [True] * 10 + [False])
    low, high, why = bands["fitted"]
    assert (low, high) == pytest.approx((1.0, 3.0))
    assert "10 rows of 10 tables from 2 sources, each source weighing alike" in why
    assert bands["unfitted"][:2] == pytest.approx([1.5, 1.5])
