"""The published GPU measurements the prediction may be fitted on, one typed dict per published figure.

Read from benchmarks/data/sources/ (written by benchmarks/extract_sources.py from mirrors of the two
repositories; docs/sources.md describes every column): `timm` (timm_gpu.csv.gz: one row per line of timm's GPU
benchmark CSVs, samples/s at timm's batch) and `nvidia_dle` (nvidia_dle.csv.gz: one row per throughput or latency
cell of NVIDIA DeepLearningExamples' PyTorch image-classification READMEs). Every row cites repository, commit,
file and line; `citation(row)` writes it out. The three papers' tables the calibration is also fitted on (the Swin
README, pycls, the ConvNeXt paper) are in benchmarks/published_tables.py.

Types: counts (line, img_size, batch_size, n_gpus, gpu_memory_gb, system_line, statement_line) are int, measurements
(samples_per_s, step_time_ms, gmacs, macts_m, params_m, value) float, the rest str; an empty cell (not stated,
or not given by the source) is None.
"""
from __future__ import annotations

import csv
import gzip
from functools import lru_cache
from pathlib import Path

DATA = Path(__file__).resolve().parent / "data" / "sources"
FILES = {"timm": "timm_gpu.csv.gz", "nvidia_dle": "nvidia_dle.csv.gz"}   # gzip, UTF-8 CSV
INTS = frozenset({"line", "img_size", "batch_size", "n_gpus", "gpu_memory_gb", "system_line", "statement_line"})
FLOATS = frozenset({"samples_per_s", "step_time_ms", "gmacs", "macts_m", "params_m", "value"})


def _typed(name: str, text: str):
    if text == "":
        return None
    if name in INTS:            # NB: timm's torch 2.1 files write batch sizes as floats ("1024.0")
        number = float(text)
        if not number.is_integer():
            raise ValueError(f"{name} {text!r} is not a whole number")
        return int(number)
    if name in FLOATS:
        return float(text)
    return text


@lru_cache(maxsize=None)
def _read(source: str) -> tuple[dict, ...]:
    with gzip.open(DATA / FILES[source], "rt", newline="", encoding="utf-8") as f:
        return tuple({"source": source, **{k: _typed(k, v) for k, v in row.items()}} for row in csv.DictReader(f))


def rows(source: str | None = None) -> list[dict]:
    """Every row of one source ('timm', 'nvidia_dle') or of all; fresh dicts the caller may change."""
    if source is not None and source not in FILES:
        raise ValueError(f"unknown source {source!r}; sources: {', '.join(FILES)}")
    return [dict(r) for s in ([source] if source else FILES) for r in _read(s)]


def citation(row: dict) -> str:
    return f"{row['repo']}@{row['commit']} {row['file']} line {row['line']}"
