"""Roofline against measured latency, and MACs-only against measured latency, on the same timed rows.

Rows: timed eager inference rows that carry roofline_ms (zoo.predict.inference), one machine at a
time. The MACs-only predictor is latency = k x MACs x batch, k fitted on those same rows (the median of
measured / (MACs x batch), so its median ratio is 1 by construction); the roofline is not fitted. For
each: Spearman's rank correlation with the measured p50 latency (Pearson's on average ranks), and the
ratio predicted / measured: median, 10th and 90th percentiles, and spread = p90 / p10 (scale-free).
"""
from __future__ import annotations

from pathlib import Path

import pandas as pd

from .rows import machine_name
from .tables import markdown

PREDICTORS = ("roofline", "macs_only")


def frame(rows: list[dict]) -> pd.DataFrame:
    """One line per usable row: measured and both predicted latencies (ms per batch)."""
    usable = [r for r in rows if r.get("roofline_ms") and r.get("latency_ms_p50") and r.get("macs")
              and r.get("mode", "inference") == "inference" and not r["settings"].get("compile")]
    df = pd.DataFrame([{"model": r["model"], "size": r["img_size"], "batch": r.get("ran_batch_size") or r["batch_size"],
                        "machine": f"{machine_name(r)}, {r['settings']['dtype']}", "noisy": bool(r.get("noisy")), "measured_ms": r["latency_ms_p50"],
                        "roofline_ms": r["roofline_ms"], "macs_x_batch": r["macs"] * (r.get("ran_batch_size") or
                                                                                      r["batch_size"]),
                        "memory_share": r.get("roofline_memory_share")} for r in usable])
    if df.empty:
        return df
    k = (df["measured_ms"] / df["macs_x_batch"]).median()
    return df.assign(macs_only_ms=df["macs_x_batch"] * k)


def spearman(a: pd.Series, b: pd.Series) -> float:
    return float(a.rank().corr(b.rank()))


def stats(df: pd.DataFrame) -> dict[str, dict]:
    out = {}
    for name in PREDICTORS:
        ratio = df[f"{name}_ms"] / df["measured_ms"]
        p10, p90 = ratio.quantile(0.1), ratio.quantile(0.9)
        out[name] = {"spearman": spearman(df[f"{name}_ms"], df["measured_ms"]), "median_ratio": float(ratio.median()),
                     "p10_ratio": float(p10), "p90_ratio": float(p90), "spread": float(p90 / p10)}
    return out


def table(df: pd.DataFrame) -> str:
    """One line per machine (and dtype) and predictor; empty rows give an empty table."""
    lines = []
    for machine, part in df.groupby("machine") if not df.empty else []:
        what = (f"{len(part)} ({part['model'].nunique()} models, px {'/'.join(map(str, sorted(part['size'].unique())))}, "
                f"batch {'/'.join(map(str, sorted(part['batch'].unique())))}, {int(part['noisy'].sum())} noisy)")
        for name, s in stats(part).items():
            lines.append([machine, what, name.replace("_", "-"), f"{s['spearman']:.3f}", f"{s['median_ratio']:.2f}",
                          f"{s['p10_ratio']:.2f}", f"{s['p90_ratio']:.2f}", f"{s['spread']:.2f}"])
    return markdown(["machine, dtype", "rows", "predictor", "Spearman rank corr.", "median predicted / measured",
                     "p10", "p90", "spread p90 / p10"], lines)


NO_ROWS = ("no timed eager inference rows with a roofline estimate in results/ (`python "
           "benchmarks/roofline_vs_measured.py` times them; the README shows one run)")


def plot(df: pd.DataFrame, path: Path) -> list[dict]:
    """Predicted against measured latency, log-log, both predictors, y = x dashed; returns the points."""
    from . import style
    from .plots import plt          # plots first: it puts matplotlib on the Agg backend

    fig, ax = plt.subplots(figsize=(6.5, 5.5))
    if df.empty:
        ax.set_axis_off()
        ax.text(0.5, 0.5, "nothing to plot: no timed rows with a roofline estimate", ha="center", va="center")
        points = []
    else:
        for name, marker in zip(PREDICTORS, ("o", "x")):
            ax.scatter(df["measured_ms"], df[f"{name}_ms"], marker=marker, s=18, label=name.replace("_", "-"))
        low = min(df["measured_ms"].min(), df[["roofline_ms", "macs_only_ms"]].min().min())
        high = max(df["measured_ms"].max(), df[["roofline_ms", "macs_only_ms"]].max().max())
        ax.plot([low, high], [low, high], "k--", lw=0.8, label="predicted = measured")
        ax.set(xscale="log", yscale="log", xlabel="measured p50 latency (ms / batch)",
               ylabel="predicted latency (ms / batch)")
        style.plain_log_axis(ax, "xy")
        ax.legend(fontsize=8)
        points = [{k: (round(v, 6) if isinstance(v, float) else v) for k, v in row.items()}
                  for row in df[["model", "size", "batch", "machine", "measured_ms", "roofline_ms",
                                 "macs_only_ms"]].to_dict("records")]
    ax.set_title("Roofline and MACs-only latency against measured (eager inference)", fontsize=9)
    if not df.empty:
        fig.tight_layout()
    style.save(fig, path, layout_at_write=df.empty)
    return points
