"""Fit archzoo's GPU calibration (analysis.predict.calibration) on timm's published inference benchmarks.

    python benchmarks/fit_gpu_calibration.py --table "RTX 4090=PATH.csv@COMMIT" --table "RTX 5090=PATH.csv@COMMIT"
        [--table "RTX 3090=PATH.csv@COMMIT" --unfused "RTX 3090"] [--table "RTX 3090 NHWC=PATH.csv@COMMIT"]
        [--count-only] [--steps 1500]

A device name ending in " NHWC" is a channels-last table (timm's benchmark.py --channels-last) of that device: its
convolutions take their own factors (analysis.predict.calibration.CHANNELS_LAST), its band is the channels-last one.

Writes analysis/predict/data/timm_benchmark_gpu.csv (the rows used, with device, file and commit),
benchmarks/data/gpu_op_counts.json.gz (each row's counted kernels, so nothing is recounted; resumes) and
analysis/predict/data/gpu_calibration.json (the factors fitted on every table, the band from leave-one-family-out
predictions, the wider band for a GPU no table measured from predictions that left out both the row's table and
its family, the sources). A developer tool: the package reads its outputs, never runs it.
"""
from __future__ import annotations

import argparse
import csv
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from gpu_published import (COUNTS, FACTORS, SUBSET, count_key, count_row, family, read_counts,  # noqa: E402
                           read_subset, samples, write_counts)

COLUMNS = ("device", "memory_format", "source_file", "commit", "family", "model", "img_size", "batch_size",
           "imgs_per_s", "gmacs")


# Families counted in their fused inference form (timm's reparameterize_model); a table whose run did not fuse
# them (its GMACs column gives the training form: RepVGG-A0 1.52, not 1.36) leaves them out (--unfused).
FUSED_FAMILIES = ("repvgg", "levit")


def write_subset(tables: list[tuple[str, Path, str]], unfused: set[str] = frozenset()) -> list[dict]:
    rows = []
    for name, path, commit in tables:
        device, nhwc = (name[:-5], True) if name.endswith(" NHWC") else (name, False)
        with open(path, newline="", encoding="utf-8") as f:
            for r in csv.DictReader(f):
                fam = family(r["model"])
                if fam and not (name in unfused and fam in FUSED_FAMILIES):
                    rows.append({"device": device, "memory_format": "nhwc" if nhwc else "nchw",
                                 "source_file": "results/" + path.name, "commit": commit,
                                 "family": fam, "model": r["model"], "img_size": int(r["infer_img_size"]),
                                 "batch_size": int(r["infer_batch_size"]),
                                 "imgs_per_s": float(r["infer_samples_per_sec"]), "gmacs": float(r["infer_gmacs"])})
    SUBSET.parent.mkdir(parents=True, exist_ok=True)
    with open(SUBSET, "w", newline="", encoding="utf-8") as f:
        writer = csv.DictWriter(f, COLUMNS)
        writer.writeheader()
        writer.writerows(rows)
    return rows


def count_all(rows: list[dict]) -> dict:
    counts = read_counts()
    todo = sorted({count_key(r): r for r in rows if count_key(r) not in counts}.items())
    for i, (key, row) in enumerate(todo):
        start = time.perf_counter()
        try:
            counts[key] = count_row(row)
        except Exception as e:                 # recorded, never silent: the row is left out of the fit
            counts[key] = f"error: {type(e).__name__}: {str(e).splitlines()[0][:200] if str(e) else ''}"
        print(f"[{i + 1}/{len(todo)}] {key} {time.perf_counter() - start:.1f}s", file=sys.stderr, flush=True)
        if i % 10 == 9:
            write_counts(counts)
    if todo:
        write_counts(counts)
    return counts


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--table", action="append", default=[], help='"DEVICE=PATH@COMMIT" (repeatable)')
    parser.add_argument("--unfused", action="append", default=[],
                        help="DEVICE whose table ran RepVGG/LeViT unfused: those families are left out of it")
    parser.add_argument("--count-only", action="store_true")
    parser.add_argument("--steps", type=int, default=1500)
    args = parser.parse_args(argv)
    tables = []
    for spec in args.table:
        device, rest = spec.split("=", 1)
        path, commit = rest.rsplit("@", 1)
        tables.append((device, Path(path), commit))
    rows = write_subset(tables, set(args.unfused)) if tables else read_subset()
    counts = count_all(rows)
    if args.count_only:
        return 0
    from analysis.predict.calibration_fit import band, expected, fit, held_out, held_out_both

    all_samples = samples(rows, counts)
    cal = fit(all_samples, args.steps)
    nchw = [s for s in all_samples if s["memory_format"] == "nchw"]
    nhwc = [s for s in all_samples if s["memory_format"] == "nhwc"]
    first = sorted({s["device"] for s in nchw})
    ratios = []
    for device in first:                       # the band: leave-one-family-out within each table
        ratios += held_out([s for s in nchw if s["device"] == device], "group", args.steps)
    p10, p90 = band(ratios)
    other_device = []                          # the band for a GPU no table measured: leave its table and the
    if len(first) > 1:                         # model's family out (a new GPU running a model of any family)
        other_device = held_out_both(nchw, ("device", "group"), args.steps)
    channels_last = {}                         # channels-last: leave one family out within the NHWC table(s),
    if nhwc:                                   # the NCHW tables always in the fit (they hold the shared factors)
        nhwc_ratios = []
        for group in sorted({s["group"] for s in nhwc}):
            refit = fit(nchw + [s for s in nhwc if s["group"] != group], args.steps)
            nhwc_ratios += [expected(s, refit) / s["seconds"] for s in nhwc if s["group"] == group]
        channels_last = {"band_channels_last": list(band(nhwc_ratios)),
                         "channels_last_devices": sorted({s["device"] for s in nhwc}),
                         "band_channels_last_from": "p10/p90 of measured / expected img/s over leave-one-family-out "
                                                    "predictions of the channels-last table(s)"}
    files = sorted({(r["device"], r["source_file"], r["commit"]) for r in rows})
    source = ("fitted on timm's published inference benchmarks (huggingface/pytorch-image-models, "
              + "; ".join(f"{d}: {f} at {c}" for d, f, c in files)
              + f"), {len(all_samples)} rows of {len({s['group'] for s in all_samples})} families, AMP fp16 "
              + ("NCHW and NHWC" if nhwc else "NCHW"))
    out = {**cal.to_json(), "band": [p10, p90], "source": source, "dtype": "fp16 autocast",
           "band_from": "p10/p90 of measured / expected img/s over leave-one-family-out predictions, per table",
           "calibrated_devices": first,
           "band_other_device": list(band(other_device)) if other_device else None,
           "band_other_device_from": "p10/p90 of measured / expected img/s, each table's rows of each family "
                                     "predicted by factors fitted on the other tables less that family "
                                     "(leave one device and one family out)",
           **channels_last, "rows_skipped": sorted(k for k, v in counts.items() if not isinstance(v, list))}
    FACTORS.write_text(json.dumps(out, indent=1) + "\n", encoding="utf-8")
    print(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
