"""Plots (PNG) from result rows, all in one style (style.py: a colour and marker per family, labels that
never overlap, plain numbers on log axes). Each function draws one figure from the rows it is given and
returns the data it plotted (rounded), which `zoo.report --check` compares, since PNG bytes are not
stable across matplotlib versions. With nothing to draw, the figure says so instead of failing.
"""
from __future__ import annotations

from pathlib import Path

from . import mpl_home  # noqa: F401 - before matplotlib: its font cache goes to the user cache
import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402
from matplotlib.lines import Line2D  # noqa: E402

from analysis.count.closed_form import attention_crossover_tokens, global_attention_layer_macs  # noqa: E402
from analysis.vocab import COMPONENTS  # noqa: E402

from . import style  # noqa: E402
from .rows import machine_name, main_machine  # noqa: E402

Plotted = list[dict]


def _empty(path: Path, title: str, why: str) -> Plotted:
    fig, ax = plt.subplots(figsize=(8, 3))
    ax.set_axis_off()
    ax.set_title(title)
    ax.text(0.5, 0.5, f"nothing to plot: {why}", ha="center", va="center")
    style.save(fig, path, layout_at_write=True)
    return []


def _rounded(df: pd.DataFrame) -> Plotted:
    return [{k: (round(v, 6) if isinstance(v, float) else v) for k, v in row.items()}
            for row in df.to_dict("records")]


def line_end_labels(rows: list[dict], x: str, y: str, by: str = "model", unit: str = "") -> list[tuple]:
    """One label per line at its right end; a line of one point says so ("deit_ti (224 only)")."""
    labels = []
    for name in sorted({r[by] for r in rows}):
        mine = sorted((r for r in rows if r[by] == name), key=lambda r: r[x])
        last = mine[-1]
        only = f" ({last[x]:g}{unit} only)" if len({r[x] for r in mine}) == 1 else ""
        labels.append((f"{name}{only}", last[x], last[y]))
    return labels


def macs_vs_resolution(cost: list[dict], path: Path) -> Plotted:
    title = "MACs per image against input side (log-log), one line per model"
    rows = [{"model": r["model"], "family": r.get("family"), "res": r["img_size"], "GMACs": r["macs"] / 1e9}
            for r in cost]
    if not rows:
        return _empty(path, title, "no cost rows")
    fig, ax = plt.subplots(figsize=(11, 8))
    families = style.draw_families(ax, rows, "res", "GMACs", lines_by="model", size=14, lw=0.9)
    ax.set(xscale="log", yscale="log", title=title, xlabel="input side (px)", ylabel="GMACs per image")
    style.plain_log_axis(ax, "xy")
    style.family_legend(ax, families, loc="upper left")
    fig.tight_layout()
    style.place_labels(ax, line_end_labels(rows, "res", "GMACs", unit=" px"), fontsize=6)
    style.save(fig, path)
    return _rounded(pd.DataFrame(rows).sort_values(["model", "res"]))


def attention_share_vs_tokens(cost: list[dict], path: Path) -> Plotted:
    title = "Attention matmul share of MACs against sequence length"
    rows = [{"model": r["model"], "family": r.get("family"), "tokens": r["tokens"], "attn %": 100 * r["attn_share"]}
            for r in cost if r.get("tokens")]
    if not rows:
        return _empty(path, title, "no rows of a model with one global token sequence")
    fig, ax = plt.subplots(figsize=(10, 6.5))
    families = style.draw_families(ax, rows, "tokens", "attn %", lines_by="model", size=24, lw=0.8)
    n = [2 ** (k / 4) for k in range(20, 60)]
    layer = [global_attention_layer_macs(int(t), 768) for t in n]
    ax.plot(n, [100 * m["quadratic"] / (m["quadratic"] + m["linear"]) for m in layer], "k--", lw=1)
    ax.axvline(attention_crossover_tokens(768), color="red", lw=1)
    ax.set(xscale="log", title=title, xlabel="tokens N", ylabel="attention matmuls, % of the model's MACs")
    style.plain_log_axis(ax, "x")
    style.family_legend(ax, families, loc="upper left", ncol=2, extra=(
        (Line2D([], [], color="k", ls="--", lw=1), "one ViT-B layer, closed form"),
        (Line2D([], [], color="red", lw=1), "N* = 6d (d = 768)")))
    fig.tight_layout()
    style.place_labels(ax, line_end_labels(rows, "tokens", "attn %", unit=" tokens"), fontsize=6)
    style.save(fig, path)
    return _rounded(pd.DataFrame(rows).drop(columns="family").sort_values(["model", "tokens"]))


def throughput_vs_resolution(throughput: list[dict], path: Path) -> Plotted:
    """One machine (the one with most rows), fp32 batch-1 inference only, one line per model; noisy
    measurements drawn hollow and named."""
    machine = main_machine(throughput)
    title = "Throughput against input side (fp32, batch 1, inference)"
    rows = [{"model": r["model"], "family": r.get("family"), "res": r["img_size"], "img/s": r["imgs_per_s"],
             "noisy": bool(r.get("noisy"))}
            for r in throughput if machine_name(r) == machine and r["batch_size"] == 1
            and r["settings"]["dtype"] == "fp32" and not r["settings"].get("train")]
    if not rows:
        return _empty(path, title, "no fp32 batch-1 inference timings")
    sides = sorted({r["res"] for r in rows})
    if len(sides) < 2:       # a plot against side with one side is a column of points: not drawn
        return _empty(path, title, f"every fp32 batch-1 timing on {machine} is at {sides[0]} px")
    fig, ax = plt.subplots(figsize=(9, 5.5))
    families = style.draw_families(ax, rows, "res", "img/s", lines_by="model", hollow="noisy")
    noisy = [r for r in rows if r["noisy"]]
    extra = ()
    if noisy:
        ax.scatter([r["res"] for r in noisy], [r["img/s"] for r in noisy], s=120, facecolors="none", edgecolors="red")
        extra = ((Line2D([], [], marker="o", lw=0, markerfacecolor="none", markeredgecolor="red", markersize=9),
                  "noisy (cv or load)"),)
    ax.set(yscale="log", title=f"{title}\non {machine}", xlabel="input side (px)", ylabel="images / s (mean)")
    ax.margins(x=0.12)
    style.plain_log_axis(ax, "y")
    style.family_legend(ax, families, extra=extra, loc="upper right")
    fig.tight_layout()
    style.place_labels(ax, line_end_labels(rows, "res", "img/s", unit=" px"))
    style.save(fig, path)
    return _rounded(pd.DataFrame(rows).drop(columns="family").sort_values(["model", "res"]))


def component_shares(cost: list[dict], path: Path, img_size: int | None) -> Plotted:
    """Stacked shares of MACs per component (linear axis: stacked bars on a log axis mislead)."""
    title = f"Share of MACs per component at {img_size} px"
    rows = [r for r in cost if r["img_size"] == img_size and r["macs"]]
    if not rows:
        return _empty(path, title, "no cost rows")
    df = pd.DataFrame([{"model": r["model"], **{c: 100 * r["macs_by_component"].get(c, 0) / r["macs"]
                                                 for c in COMPONENTS}} for r in rows]).set_index("model")
    df = df.sort_values(["attn_matmul", "mlp"])
    fig, ax = plt.subplots(figsize=(9, max(3.0, 0.28 * len(df) + 1)))
    df.plot.barh(stacked=True, ax=ax, colormap="tab10", width=0.8)
    ax.set(xlim=(0, 100), xlabel="% of the model's MACs", ylabel="", title=title)
    ax.legend(fontsize=7, ncol=4, loc="lower center", bbox_to_anchor=(0.5, 1.05))
    fig.tight_layout()
    style.save(fig, path)
    return _rounded(df.reset_index().sort_values("model"))


def accuracy_vs(points: list[dict], x: str, path: Path, xlabel: str) -> Plotted:
    """One panel per pretraining group, each with its own Pareto front (single-crop entries only); the
    front's models are labelled, the rest are in accuracy.md. One legend for all panels."""
    title = f"Top-1 at its own resolution against {xlabel}"
    points = [p for p in points if p.get(x) and p.get("top1") is not None]
    df = pd.DataFrame(points)
    if df.empty:
        return _empty(path, title, f"no model with both an accuracy entry and {xlabel} at the same resolution")
    groups = sorted(df["pretraining"].unique())
    cols = min(3, len(groups))
    rows = -(-len(groups) // cols)
    fig, axes = plt.subplots(rows, cols, figsize=(6.4 * cols, 5 * rows + 0.8), squeeze=False)
    for ax in axes.flat[len(groups):]:
        ax.set_axis_off()
    fronts = []
    for ax, group in zip(axes.flat, groups):
        part = [{**p, "multi_crop": p["crops"] != "single"} for p in points if p["pretraining"] == group]
        style.draw_families(ax, part, x, "top1", hollow="multi_crop")
        front = sorted((p for p in part if p[f"pareto_{x}"]), key=lambda p: p[x])
        ax.step([p[x] for p in front], [p["top1"] for p in front], "k--", where="post", lw=1)
        ax.set(xscale="log", xlabel=xlabel, ylabel="top-1 % (ImageNet-1k)", title=f"pretraining: {group}")
        ax.margins(x=0.15, y=0.12)
        style.plain_log_axis(ax, "x")
        fronts.append((ax, [(f"{p['model']} @{p['img_size']}", p[x], p["top1"]) for p in front]))
    extra = ((Line2D([], [], color="k", ls="--", lw=1), "Pareto front (single-crop)"),)
    if (df["crops"] != "single").any():
        extra += ((Line2D([], [], marker="o", lw=0, markerfacecolor="none", markeredgecolor="k"), "10-crop"),)
    style.family_legend(fig, df["family"].tolist(), extra=extra, loc="upper center", ncol=8,
                        bbox_to_anchor=(0.5, 1 - 0.55 / fig.get_figheight()), fontsize=8, title=None)
    fig.suptitle(f"{title} (dashed and labelled: the Pareto front within the group)")
    fig.tight_layout(rect=(0, 0, 1, 1 - 0.9 / fig.get_figheight()))
    for ax, labels in fronts:
        style.place_labels(ax, labels)
    style.save(fig, path)
    return _rounded(df[["model", "img_size", "pretraining", "crops", "top1", x, f"pareto_{x}"]]
                    .sort_values(["pretraining", "model", "img_size"]))


def eager_vs_onnxruntime(throughput: list[dict], path: Path) -> Plotted:
    """Per model (and input, batch, dtype) timed both ways on one machine: eager and ONNX Runtime img/s side by
    side as bars, with the ratio written at the end. Rows without a partner in the other backend are left out."""
    machine = main_machine(throughput)
    title = "Eager PyTorch against ONNX Runtime (inference)"
    speed: dict[tuple, dict[str, float]] = {}
    for r in throughput:
        if machine_name(r) == machine and not r["settings"].get("train") and r.get("img_size"):
            key = (r["model"], r["img_size"], r["batch_size"], r["settings"]["dtype"])
            speed.setdefault(key, {})[r["settings"].get("backend", "eager")] = r["imgs_per_s"]
    rows = [{"model": m, "res": s, "batch": b, "dtype": d, "eager img/s": v["eager"], "onnxruntime img/s": v["onnxruntime"]}
            for (m, s, b, d), v in sorted(speed.items()) if "eager" in v and "onnxruntime" in v]
    if not rows:
        return _empty(path, title, "no model timed under both eager and ONNX Runtime on one machine")
    fig, ax = plt.subplots(figsize=(9, 1.2 + 0.42 * len(rows)))
    ys = range(len(rows))
    names = [f"{r['model']} {r['res']} px, batch {r['batch']}, {r['dtype']}" for r in rows]
    ax.barh([y + 0.2 for y in ys], [r["eager img/s"] for r in rows], height=0.4, color="#1f77b4", label="eager")
    ax.barh([y - 0.2 for y in ys], [r["onnxruntime img/s"] for r in rows], height=0.4, color="#ff7f0e",
            label="ONNX Runtime")
    for y, r in zip(ys, rows):
        ax.text(max(r["eager img/s"], r["onnxruntime img/s"]) * 1.08, y,
                f"ORT / eager {r['onnxruntime img/s'] / r['eager img/s']:.2f}x", va="center", fontsize=7)
    ax.set_yticks(list(ys), names, fontsize=7)
    ax.invert_yaxis()
    ax.set(xscale="log", title=f"{title}\non {machine}", xlabel="images / s (mean)")
    ax.margins(x=0.25)
    style.plain_log_axis(ax, "x")
    ax.legend(fontsize=7, loc="lower right")
    fig.tight_layout()
    style.save(fig, path)
    return _rounded(pd.DataFrame(rows))
