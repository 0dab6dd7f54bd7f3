"""Fit archzoo's GPU calibration (analysis.predict.calibration) on every published source, and its bands held out.

    python benchmarks/fit_gpu_calibration.py [--count] [--steps 1500]

The rows are benchmarks/fit_sources.py's (timm's results/, NVIDIA's DeepLearningExamples, the Swin README, pycls,
the ConvNeXt paper), inference and training, each table weighing alike. Writes
analysis/predict/data/gpu_calibration.json: the factors fitted on every row, and the bands from leave-one-source-out
predictions (each source's rows predicted by factors fitted on the other sources only): "fitted", the rows whose
GPU architecture another source also ran, for a device whose architecture the shipped factors hold; "unfitted", the
rows whose architecture no other source ran, for a device whose architecture has no fitted source. Each band is the
p10 and p90 of measured / expected img/s, each held-out source weighing alike (the unit a new source's error comes
in: weighing tables alike let a source split into many tables, timm's 23, outweigh one of a single table). Also
writes
analysis/predict/data/fit_rows.csv.gz (every row used, with its citation) and, per table, the held-out statistics.
A developer tool: the package reads its outputs, never runs it (--count: count the rows not counted yet, which
takes about half an hour on two cores).
"""
from __future__ import annotations

import argparse
import csv
import gzip
import io
import json
import statistics
import sys
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import fit_sources  # noqa: E402

DATA = fit_sources.HERE.parent / "analysis" / "predict" / "data"
FACTORS = DATA / "gpu_calibration.json"
ROWS = DATA / "fit_rows.csv.gz"
SOURCES = {"timm": "huggingface/pytorch-image-models results/ (every eager GPU table, torch 1.10-2.9)",
           "nvidia": "NVIDIA/DeepLearningExamples PyTorch ConvNets READMEs (pytorch-20.12 and 21.03 containers)",
           "swin": "microsoft/Swin-Transformer README", "pycls": "facebookresearch/pycls MODEL_ZOO.md",
           "convnext": "the ConvNeXt paper, arXiv:2201.03545, Tables 1, 2 and 12"}


def samples(count: bool = False) -> list[dict]:
    rows = fit_sources.rows()
    counts = fit_sources.read_counts()
    if count:
        counts = fit_sources.count_all(rows, counts)
    return fit_sources.samples(rows, counts)


def held_out(found: list[dict], steps: int) -> tuple[list[float], list[bool]]:
    """Leave-one-source-out: each sample's predicted / measured img/s by factors fitted on the other sources, and
    whether its architecture was among theirs."""
    from analysis.predict.fit import held_out as by_key

    ratios = by_key(found, "source", steps)
    archs = {source: {s["setting"].sheet.architecture for s in found if s["source"] != source}
             for source in {s["source"] for s in found}}
    return ratios, [s["setting"].sheet.architecture in archs[s["source"]] for s in found]


def bands(found: list[dict], ratios: list[float], fitted: list[bool]) -> dict:
    from analysis.predict.fit import band

    out = {}
    for kind, keep in (("fitted", True), ("unfitted", False)):
        picked = [(s, r) for s, r, f in zip(found, ratios, fitted) if f == keep]
        sizes = defaultdict(int)
        for s, _ in picked:
            sizes[s["source"]] += 1
        low, high = band([r for _, r in picked], [1 / sizes[s["source"]] for s, _ in picked])
        tables = len({s["table"] for s, _ in picked})
        why = ("p10-p90 of measured / expected img/s over leave-one-source-out predictions of the rows whose GPU "
               f"architecture {'another' if keep else 'no other'} source ran ({len(picked)} rows of {tables} tables "
               f"from {len(sizes)} sources, each source weighing alike)")
        out[kind] = [low, high, why]
    return out


def table_stats(found: list[dict], ratios: list[float], cal_bands: dict, fitted: list[bool]) -> dict:
    """Per table: rows, Spearman of predicted vs measured img/s, median |pred / pub - 1|, median pred / pub, and the
    share of published figures inside the band the row would carry (fitted or not, as held out)."""
    from analysis.predict.calibration import spearman

    by = defaultdict(list)
    for s, r, f in zip(found, ratios, fitted):
        by[s["table"]].append((s, r, f))
    out = {}
    for table, items in sorted(by.items()):
        measured = [s["batch_size"] / s["seconds"] for s, _, _ in items]
        predicted = [m * r for m, (_, r, _) in zip(measured, items)]
        inside = [cal_bands["fitted" if f else "unfitted"][0] <= 1 / r <= cal_bands["fitted" if f else "unfitted"][1]
                  for _, r, f in items]
        out[table] = {"source": items[0][0]["source"], "rows": len(items),
                      "spearman": spearman(predicted, measured) if len(items) > 2 else None,
                      "median_abs_error": statistics.median(abs(r - 1) for _, r, _ in items),
                      "median_ratio": statistics.median(r for _, r, _ in items),
                      "band_coverage": sum(inside) / len(inside)}
    return out


def write_rows(found: list[dict]) -> None:
    columns = ("source", "table", "device", "model", "img_size", "batch_size", "mode", "dtype", "tf32",
               "channels_last", "torch", "fused_attention", "reparam", "seconds", "cite")
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, columns, extrasaction="ignore", lineterminator="\n")
    writer.writeheader()
    writer.writerows(sorted(found, key=lambda s: (s["source"], s["table"], s["model"], s["img_size"], s["batch_size"])))
    ROWS.write_bytes(gzip.compress(buffer.getvalue().encode("utf-8"), mtime=0))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", action="store_true", help="count the rows not counted yet first")
    parser.add_argument("--steps", type=int, default=1500, help="optimiser steps per fit")
    args = parser.parse_args(argv)
    from analysis.predict.fit import fit

    found = samples(args.count)
    cal = fit(found, args.steps)
    ratios, fitted = held_out(found, args.steps)
    cal_bands = bands(found, ratios, fitted)
    per_table = table_stats(found, ratios, cal_bands, fitted)
    sources = sorted({s["source"] for s in found})
    out = {**cal.to_json(), "bands": cal_bands,
           "source": (f"fitted on {len(found)} published rows of {len(per_table)} tables from {len(sources)} sources ("
                      + "; ".join(SOURCES[s] for s in sources) + "), inference and training, each table weighing "
                      "alike; rows in analysis/predict/data/fit_rows.csv.gz"),
           "held_out": {"how": "leave one source out: each source's rows predicted by factors fitted on the others",
                        "tables": per_table}}
    FACTORS.write_text(json.dumps(out, indent=1) + "\n", encoding="utf-8")
    write_rows(found)
    for table, st in per_table.items():
        print(f"{table:60s} {st['rows']:4d}  median |pred/pub - 1| {st['median_abs_error']:.3f}  "
              f"median pred/pub {st['median_ratio']:.2f}  band covers {st['band_coverage']:.0%}")
    print(f"bands: {json.dumps(cal_bands)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
