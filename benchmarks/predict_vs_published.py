"""archzoo's GPU prediction against timm's published measured inference tables: how well it ranks, how far
off it is, and how often the p10-p90 band holds the measured figure, in-sample and held out.

    python benchmarks/predict_vs_published.py [--steps 1500] [--out FILE.md] [--held-out-only]

Reads what benchmarks/fit_gpu_calibration.py shipped (analysis/predict/data/timm_benchmark_gpu.csv, the cached
counts in benchmarks/data/gpu_op_counts.json.gz, analysis/predict/data/gpu_calibration.json); counts nothing.
Per table (one GPU): Spearman of predicted vs measured img/s, median |predicted / measured - 1|, share of
measured figures inside the predicted p10-p90 band, for
- calibrated, in-sample: the shipped factors (fitted on every table) and band;
- calibrated, leave one family out: factors refitted without the family, band as shipped;
- calibrated, leave one device out: factors fitted on the other tables only;
- roofline: datasheet peaks, 5 us per kernel, no calibration (a bound);
- k / MACs: img/s = k / (GMACs per image, timm's own column), k fitted per table (median), in-sample and
  leave one family out;
and for every table kept aside (benchmarks/published_tables.py: other labs' and papers' tables, never fitted on),
the shipped factors with the band a predicted row on that GPU carries, and the factors fitted on timm's tables
less one device (each split: the same statistics). --held-out-only prints only those (a few minutes, not 15).
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from gpu_published import FACTORS, read_counts, read_subset, samples  # noqa: E402


def stats(predicted: list[float], measured: list[float], band: tuple[float, float] | None) -> dict:
    from analysis.predict.calibration import spearman

    errors = [abs(p / m - 1) for p, m in zip(predicted, measured)]
    out = {"n": len(measured), "spearman": spearman(predicted, measured), "median_abs_error": statistics.median(errors)}
    if band is not None:
        out["band_coverage"] = sum(p * band[0] <= m <= p * band[1] for p, m in zip(predicted, measured)) / len(measured)
    return out


def rate(sample: dict, cal) -> float:
    from analysis.predict.calibration_fit import expected

    return sample["batch_size"] / expected(sample, cal)


def roofline_rate(sample: dict) -> float:
    from analysis.predict.roofline import roofline

    ms = roofline(sample["ops"], 0.0, sample["bandwidth"], 5e-6, peaks=sample["peaks"])["roofline_ms"]
    return sample["batch_size"] / ms * 1e3


def k_over_macs(train: list[dict], test: list[dict]) -> list[float]:
    k = statistics.median(s["imgs_per_s"] * s["gmacs"] for s in train)
    return [k / s["gmacs"] for s in test]


def table_report(device: str, rows: list[dict], every: list[dict], cal, steps: int,
                 band: tuple[float, float], base: list[dict]) -> list[tuple[str, dict]]:
    """One fitted table's lines; `base`: samples every refit keeps (a channels-last table's refits keep the NCHW
    tables, as the shipped fit does), `band` the one its rows carry."""
    from analysis.predict.calibration import Calibration
    from analysis.predict.calibration_fit import fit

    measured = [s["imgs_per_s"] for s in rows]
    lines = [("calibrated, in-sample (shipped factors)", stats([rate(s, cal) for s in rows], measured, band))]
    held = {}
    for family in sorted({s["group"] for s in rows}):
        refit = fit(base + [s for s in rows if s["group"] != family], steps)
        held.update({id(s): rate(s, refit) for s in rows if s["group"] == family})
    lines.append(("calibrated, leave one family out", stats([held[id(s)] for s in rows], measured, band)))
    others = [s for s in every if s["device"] != device and s["memory_format"] == "nchw"]
    if others and not base:
        other = fit(others, steps)
        names = " and ".join(sorted({s["device"] for s in others}))
        lines.append((f"calibrated, leave one device out (fitted on {names} only)",
                      stats([rate(s, other) for s in rows], measured, band)))
    lines.append(("roofline bound (datasheet, 5 us per kernel)", stats([roofline_rate(s) for s in rows], measured, None)))
    lines.append(("k / MACs, in-sample", stats(k_over_macs(rows, rows), measured, None)))
    k_held = {}
    for family in sorted({s["group"] for s in rows}):
        test = [s for s in rows if s["group"] == family]
        k_held.update(zip(map(id, test), k_over_macs([s for s in rows if s["group"] != family], test)))
    lines.append(("k / MACs, leave one family out", stats([k_held[id(s)] for s in rows], measured, None)))
    assert isinstance(cal, Calibration)
    return lines


def held_out_tables(cal, every: list[dict], steps: int) -> list[str]:
    """The tables kept aside: the shipped factors (and the band a row on that GPU carries), and factors
    refitted on timm's tables less each one device."""
    from analysis.predict.calibration_fit import fit
    from published_tables import TABLES, table_samples
    from zoo.predict.inference import band_for

    text = []
    refits = {d: fit([s for s in every if s["device"] != d or s["memory_format"] == "nhwc"], steps)
              for d in sorted({s["device"] for s in every})}
    for name, table in TABLES.items():
        rows = table_samples(name)
        measured = [s["imgs_per_s"] for s in rows]
        band, _ = band_for(cal, rows[0]["device"], table["channels_last"])
        text += [f"### held out: {name}, {len(rows)} rows ({table['source']}; {table['recipe']})", "",
                 "| predictor | Spearman | median abs(pred/pub - 1) | p10-p90 band covers |", "|---|---:|---:|---:|"]
        shipped = [rate(s, cal) for s in rows]
        lines = [("calibrated, shipped factors and band", stats(shipped, measured, band))]
        lines += [(f"calibrated, fitted without {d}'s NCHW table", stats([rate(s, c) for s in rows], measured, band))
                  for d, c in refits.items()]
        lines.append(("roofline bound (datasheet, 5 us per kernel)", stats([roofline_rate(s) for s in rows], measured, None)))
        text += [f"| {n} | {s['spearman']:.3f} | {s['median_abs_error']:.3f} | "
                 + (f"{s['band_coverage']:.0%} |" if "band_coverage" in s else "- |") for n, s in lines]
        text += ["", f"Median predicted / published: {statistics.median(p / m for p, m in zip(shipped, measured)):.2f}; "
                 f"band x{band[0]:.2f}-x{band[1]:.2f}."]
        if len(rows) <= 40:
            text += ["", "| model | size (px) | published img/s | predicted | ratio |", "|---|---:|---:|---:|---:|"]
            text += [f"| {s['model']} | {s['img_size']} | {s['imgs_per_s']:.4g} | {p:.4g} | {p / s['imgs_per_s']:.2f} |"
                     for s, p in zip(rows, shipped)]
        text.append("")
    return text


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=1500, help="optimiser steps per refit")
    parser.add_argument("--out", type=Path, default=None, help="also write the markdown here")
    parser.add_argument("--held-out-only", action="store_true", help="only the tables kept aside (no refits per family)")
    args = parser.parse_args(argv)
    from analysis.predict.calibration import Calibration

    cal = Calibration.from_json(json.loads(FACTORS.read_text(encoding="utf-8")))
    every = samples(read_subset(), read_counts())
    text = [f"Calibration: {cal.source}; band (measured / expected img/s, p10-p90): "
            f"{cal.band[0]:.3f}-{cal.band[1]:.3f}", ""]
    from zoo.predict.inference import band_for

    nchw = [s for s in every if s["memory_format"] == "nchw"]
    for device, fmt in sorted({(s["device"], s["memory_format"]) for s in every} if not args.held_out_only else ()):
        rows = [s for s in every if s["device"] == device and s["memory_format"] == fmt]
        band, _ = band_for(cal, device, fmt == "nhwc")
        text += [f"### {device}: {len(rows)} rows, {len({s['group'] for s in rows})} families (AMP fp16, "
                 f"{fmt.upper()}, timm's batch per row)", "",
                 "| predictor | Spearman | median abs(pred/meas - 1) | p10-p90 band covers |", "|---|---:|---:|---:|"]
        for name, s in table_report(device, rows, every, cal, args.steps, band, nchw if fmt == "nhwc" else []):
            cover = f"{s['band_coverage']:.0%}" if "band_coverage" in s else "-"
            text.append(f"| {name} | {s['spearman']:.3f} | {s['median_abs_error']:.3f} | {cover} |")
        text.append("")
    text += held_out_tables(cal, every, args.steps)
    out = "\n".join(text)
    print(out)
    if args.out:
        args.out.write_text(out, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
