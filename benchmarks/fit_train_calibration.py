"""Fit archzoo's training-step calibration (analysis.predict.calibration's form) on timm's published training benchmark.

    python benchmarks/fit_train_calibration.py --table "RTX 3090=PATH.csv@COMMIT" [--steps 1500] [--count-only]

PATH is timm's results/benchmark-train-amp-nchw-pt112-cu113-rtx3090.csv (columns model, train_samples_per_sec,
train_step_time, train_batch_size, train_img_size, param_count): torch 1.12, CUDA 11.3, fp16 autocast without
a grad scaler, NCHW, timm's SGD (momentum 0.9, Nesterov) stepped parameter by parameter (torch 1.12's
default), attention written op by op (timm of July 2022 on torch 1.12: no fused SDPA). The rows of
benchmarks/gpu_published.py's 16 FAMILIES are used, each counted once on meta so
(zoo.predict.train.train_step_ops, cached in benchmarks/data/gpu_train_op_counts.json.gz; resumes).

Writes analysis/predict/data/timm_benchmark_train_gpu.csv (the rows used, with device, file and commit) and
analysis/predict/data/gpu_train_calibration.json (the factors fitted on every row, the band from leave-one-family-out
predictions, the held-out statistics) and prints the statistics. A developer tool: the package reads its
outputs, never runs it.
"""
from __future__ import annotations

import argparse
import csv
import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from gpu_published import ROOT, family, read_counts, write_counts  # noqa: E402

SUBSET = ROOT / "analysis" / "predict" / "data" / "timm_benchmark_train_gpu.csv"
COUNTS = ROOT / "benchmarks" / "data" / "gpu_train_op_counts.json.gz"
FACTORS = ROOT / "analysis" / "predict" / "data" / "gpu_train_calibration.json"
COLUMNS = ("device", "source_file", "commit", "family", "model", "img_size", "batch_size", "train_imgs_per_s")
DTYPE = "fp16"


def write_subset(device: str, path: Path, commit: str) -> list[dict]:
    rows = []
    with open(path, newline="", encoding="utf-8") as f:
        for r in csv.DictReader(f):
            fam = family(r["model"])
            if fam is not None:
                rows.append({"device": device, "source_file": path.name, "commit": commit, "family": fam,
                             "model": r["model"], "img_size": int(r["train_img_size"]),
                             "batch_size": int(r["train_batch_size"]),
                             "train_imgs_per_s": float(r["train_samples_per_sec"])})
    with open(SUBSET, "w", newline="", encoding="utf-8") as f:
        writer = csv.DictWriter(f, COLUMNS, lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)
    return rows


def key(r: dict) -> str:
    return f"{r['model']}@{r['img_size']}@{r['batch_size']}"


def count_all(rows: list[dict]) -> dict:
    from zoo.runs.request import Request
    from zoo.predict.train import train_step_ops

    counts = read_counts(COUNTS)
    for i, r in enumerate(rows):
        if key(r) in counts:
            continue
        start = time.perf_counter()
        try:
            request = Request("timm:" + r["model"], r["img_size"], r["batch_size"], DTYPE, train=True)
            counts[key(r)] = [list(op) for op in train_step_ops(request, foreach=False, fused_attention=False)]
        except Exception as e:                  # recorded, never silent: the row is left out of the fit
            counts[key(r)] = f"not counted: {type(e).__name__}: {e}"
        write_counts(counts, COUNTS)
        print(f"[{i + 1}/{len(rows)}] {key(r)}: {time.perf_counter() - start:.1f} s", file=sys.stderr, flush=True)
    return counts


def samples(rows: list[dict], counts: dict) -> list[dict]:
    from zoo.options import datasheet

    out = []
    for r in rows:
        ops = counts.get(key(r))
        if isinstance(ops, list):
            sheet = datasheet(r["device"])
            out.append({"ops": [tuple(o) for o in ops], "tensor_peak": sheet.peak_flops[DTYPE],
                        "vector_peak": sheet.peak_flops["fp32"], "bandwidth": sheet.mem_bandwidth,
                        "seconds": r["batch_size"] / r["train_imgs_per_s"], "group": r["family"], **r})
    return out


def statistics_of(ratios: list[float], expected_rates: list[float], published: list[float], band) -> dict:
    """Spearman of expected vs published img/s, median |expected / published - 1|, the band's coverage."""
    from analysis.predict.calibration import spearman

    low, high = band
    return {"spearman": spearman(expected_rates, published),
            "median_abs_error": statistics.median(abs(1 / q - 1) for q in ratios),
            "band_covers": sum(low <= q <= high for q in ratios) / len(ratios), "rows": len(ratios)}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--table", required=True, help='"DEVICE=PATH.csv@COMMIT"')
    parser.add_argument("--steps", type=int, default=1500)
    parser.add_argument("--count-only", action="store_true")
    args = parser.parse_args(argv)
    device, rest = args.table.split("=", 1)
    path, commit = rest.rsplit("@", 1)
    rows = write_subset(device, Path(path), commit)
    counts = count_all(rows)
    if args.count_only:
        return 0
    from analysis.predict.calibration_fit import band, expected, fit, held_out

    data = samples(rows, counts)
    cal = fit(data, args.steps)
    in_sample = [expected(s, cal) / s["seconds"] for s in data]      # measured / expected img/s
    lofo = held_out(data, "group", args.steps)
    p10, p90 = band(lofo)
    published = [s["train_imgs_per_s"] for s in data]
    out = {**cal.to_json(), "band": [p10, p90], "dtype": "fp16 autocast",
           "source": f"{device}: huggingface/pytorch-image-models@{commit} results/{Path(path).name} "
                     f"({len(data)} rows of {len({s['group'] for s in data})} families)",
           "band_from": "p10/p90 of published / expected train img/s over leave-one-family-out predictions",
           "calibrated_devices": [device], "band_other_device": None,
           "in_sample": statistics_of(in_sample, [s["batch_size"] / (s["seconds"] * q) for s, q in
                                                  zip(data, in_sample)], published, (p10, p90)),
           "leave_one_family_out": statistics_of(lofo, [s["batch_size"] / (s["seconds"] * q) for s, q in
                                                        zip(data, lofo)], published, (p10, p90)),
           "not_counted": sorted(k for k, v in counts.items() if not isinstance(v, list))}
    FACTORS.write_text(json.dumps(out, indent=1) + "\n", encoding="utf-8")
    print(json.dumps({k: v for k, v in out.items() if k != "not_counted"}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
