"""archzoo's GPU prediction against every published table it is fitted on, held out: how far off it is, how well it
ranks, and how often its band holds the published figure, when the table's source played no part in the fit.

    python benchmarks/predict_vs_published.py [--steps 1500] [--out FILE.md]

Reads the rows and counts benchmarks/fit_sources.py keeps (counts nothing) and refits, in one run:
- leave one source out (a source: one repository or paper, all its tables): each source's rows predicted by factors
  fitted on the other sources; per table: rows, Spearman of predicted vs published img/s, median |predicted /
  published - 1|, median predicted / published, and the share of published figures inside the p10-p90 band the row
  would carry (benchmarks/fit_gpu_calibration.py's bands); the data-center tables judged against issue 53's goal
  (median <= 0.15, band covering 70-90%);
- timm's RTX 4090 AMP tables, the device left out (timm's other tables kept), against <= 0.10;
- timm's torch 1.10 RTX 3090 table, predicted with --torch 1.10 by factors fitted without it, against <= 0.10;
- the V100 and the RTX 3090: for the models both NVIDIA's V100 AMP table and timm's 3090 AMP tables publish, whether
  the predictions put the two devices in the published order.
About 10 minutes on two cores.
"""
from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import fit_gpu_calibration as fitting  # noqa: E402

DATA_CENTER = ("nvidia", "swin", "pycls", "convnext")


def held_out_table(found: list[dict], test, steps: int) -> tuple[list[dict], list[float]]:
    """The rows `test` picks, predicted by factors fitted on all the others."""
    from analysis.predict.fit import fit, predicted_over_measured

    cal = fit([s for s in found if not test(s)], steps)
    picked = [s for s in found if test(s)]
    return picked, predicted_over_measured(picked, cal)


def line(name: str, st: dict, goal: str = "") -> str:
    rho = "-" if st["spearman"] is None else f"{st['spearman']:.3f}"
    return (f"| {name} | {st['rows']} | {rho} | {st['median_abs_error']:.3f} | {st['median_ratio']:.2f} | "
            f"{st['band_coverage']:.0%} |{goal}")


def verdict(st: dict, worst: float, cover: tuple[float, float] | None) -> str:
    ok = st["median_abs_error"] <= worst and (cover is None or cover[0] <= st["band_coverage"] <= cover[1])
    return f" {'met' if ok else 'NOT met'} |"


def order_check(found: list[dict], shipped, without_nvidia) -> list[str]:
    """V100 (NVIDIA's AMP table, its largest batch) against the RTX 3090 (timm's AMP NCHW table of each torch
    release, the same model and size): published 3090 / V100 beside the ratio archzoo predicts with the shipped
    factors and with factors fitted without NVIDIA (the V100 then held out, the 3090 not)."""
    from analysis.predict.calibration import expected_seconds

    def rate(s, cal=None):
        return s["batch_size"] / (expected_seconds(s["ops"], s["setting"], cal) if cal else s["seconds"])

    v100 = {}
    for s in found:
        key = (s["model"], s["img_size"])
        if s["table"] == "NVIDIA V100 SXM2 infer AMP" and s["batch_size"] >= v100.get(key, (0,))[0]:
            v100[key] = (s["batch_size"], s)
    out = ["| model | px | 3090 table | published 3090 / V100 | predicted (shipped) | predicted (NVIDIA held out) "
           "| order |", "|---|---:|---|---:|---:|---:|---|"]
    agree = {"shipped": 0, "held": 0}
    pairs = [(s, v100[(s["model"], s["img_size"])][1]) for s in found
             if (s["model"], s["img_size"]) in v100 and s["device"] == "RTX 3090" and s["mode"] == "infer"
             and not s["channels_last"]]
    for s, v in pairs:
        published = rate(s) / rate(v)
        shipped_ratio = rate(s, shipped) / rate(v, shipped)
        held = rate(s, without_nvidia) / rate(v, without_nvidia)
        same = [(published > 1) == (r > 1) for r in (shipped_ratio, held)]
        agree["shipped"] += same[0]
        agree["held"] += same[1]
        order = "same" if all(same) else "REVERSED " + " and ".join(w for w, ok in zip(("shipped", "held out"), same)
                                                                    if not ok)
        out.append(f"| {s['model']} | {s['img_size']} | torch {s['torch']} | {published:.2f} | {shipped_ratio:.2f} | "
                   f"{held:.2f} | {order} |")
    return [f"{agree['shipped']} of {len(pairs)} pairs in the published order with the shipped factors, "
            f"{agree['held']} with NVIDIA held out", ""] + out


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=1500, help="optimiser steps per fit")
    parser.add_argument("--out", type=Path, default=None, help="also write the markdown here")
    args = parser.parse_args(argv)
    from analysis.predict.fit import fit

    found = fitting.samples()
    ratios, fitted = fitting.held_out(found, args.steps)
    cal_bands = fitting.bands(found, ratios, fitted)        # as benchmarks/fit_gpu_calibration.py ships them
    per_table = fitting.table_stats(found, ratios, cal_bands, fitted)
    head = ["| table | rows | Spearman | median abs(pred/pub - 1) | median pred / pub | band covers |",
            "|---|---:|---:|---:|---:|---:|"]
    text = [f"Leave one source out ({len(found)} rows, {len(per_table)} tables). Bands as shipped: "
            + "; ".join(f"{k} x{v[0]:.2f}-x{v[1]:.2f}" for k, v in cal_bands.items()), ""]
    text += ["### Data-center sources (goal: median <= 0.15, band covering 70-90%)", "",
             head[0] + " goal |", head[1] + "---|"]
    text += [line(t, st, verdict(st, 0.15, (0.7, 0.9))) for t, st in per_table.items() if st["source"] in DATA_CENTER]
    text += ["", "### timm's tables (the whole source held out)", "", *head]
    text += [line(t, st) for t, st in per_table.items() if st["source"] == "timm"]
    rows_4090, r_4090 = held_out_table(found, lambda s: s["device"] == "RTX 4090", args.steps)
    text += ["", "### timm's RTX 4090 tables, the device held out (goal for AMP: median <= 0.10)", "",
             head[0] + " goal |", head[1] + "---|"]
    st = fitting.table_stats(rows_4090, r_4090, cal_bands, [False] * len(rows_4090))
    text += [line(t, s, verdict(s, 0.10, None)) for t, s in st.items()]
    pt110 = "timm RTX 3090 infer AMP NCHW torch 1.10"
    rows_110, r_110 = held_out_table(found, lambda s: s["table"] == pt110, args.steps)
    st = fitting.table_stats(rows_110, r_110, cal_bands, [True] * len(rows_110))[pt110]
    text += ["", "### --torch 1.10: timm's torch 1.10 RTX 3090 table, fitted without it (goal: median <= 0.10)", "",
             head[0] + " goal |", head[1] + "---|", line(pt110, st, verdict(st, 0.10, None))]
    without_nvidia = fit([s for s in found if s["source"] != "nvidia"], args.steps)
    text += ["", "### V100 against RTX 3090, AMP", "", *order_check(found, fit(found, args.steps), without_nvidia)]
    errors = [abs(r - 1) for s, r in zip(found, ratios) if s["source"] in DATA_CENTER]
    text += ["", f"All data-center rows held out: median abs(pred/pub - 1) {statistics.median(errors):.3f}"]
    out = "\n".join(text) + "\n"
    print(out)
    if args.out:
        args.out.write_text(out, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
