"""Seaborn plots (PNG) from result rows. Each function draws one figure from the rows it is given and
returns the data it plotted (rounded), which `zoo.report --check` compares, since PNG bytes are not
stable across matplotlib versions. With nothing to draw, the figure says so instead of failing.
"""
from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402
import seaborn as sns  # noqa: E402

from analysis.count.closed_form import attention_crossover_tokens, global_attention_layer_macs  # noqa: E402
from analysis.vocab import COMPONENTS  # noqa: E402

from .rows import machine_name, main_machine  # noqa: E402

Plotted = list[dict]


def _save(fig, path: Path) -> Path:
    fig.tight_layout()
    fig.savefig(path, dpi=110, metadata={"Software": None})
    plt.close(fig)
    return path


def _empty(path: Path, title: str, why: str) -> Plotted:
    fig, ax = plt.subplots(figsize=(8, 3))
    ax.set_axis_off()
    ax.set_title(title)
    ax.text(0.5, 0.5, f"nothing to plot: {why}", ha="center", va="center")
    _save(fig, path)
    return []


def _rounded(df: pd.DataFrame) -> Plotted:
    return [{k: (round(v, 6) if isinstance(v, float) else v) for k, v in row.items()}
            for row in df.to_dict("records")]


def _label_line_ends(ax, df: pd.DataFrame, x: str, y: str, by: str) -> None:
    """One label per line at its right end, instead of a legend over the data."""
    for name, part in df.sort_values(x).groupby(by):
        last = part.iloc[-1]
        ax.annotate(name, (last[x], last[y]), fontsize=6, xytext=(3, 0), textcoords="offset points", va="center")


def macs_vs_resolution(cost: list[dict], path: Path) -> Plotted:
    title = "MACs per image against input side (log-log), one line per model"
    df = pd.DataFrame([{"model": r["model"], "family": r.get("family"), "res": r["img_size"], "GMACs": r["macs"] / 1e9}
                       for r in cost])
    if df.empty:
        return _empty(path, title, "no cost rows")
    fig, ax = plt.subplots(figsize=(9, 7))
    sns.lineplot(df, x="res", y="GMACs", hue="family", units="model", estimator=None, marker="o", ax=ax, lw=1)
    _label_line_ends(ax, df, "res", "GMACs", "model")
    ax.set(xscale="log", yscale="log", title=title, xlabel="input side (px)", ylabel="GMACs per image")
    ax.legend(fontsize=7, title="family", loc="upper left")
    _save(fig, path)
    return _rounded(df.sort_values(["model", "res"]))


def attention_share_vs_tokens(cost: list[dict], path: Path) -> Plotted:
    title = "Attention matmul share of MACs against sequence length"
    df = pd.DataFrame([{"model": r["model"], "tokens": r["tokens"], "attn %": 100 * r["attn_share"]}
                       for r in cost if r.get("tokens")])
    if df.empty:
        return _empty(path, title, "no rows of a model with one global token sequence")
    fig, ax = plt.subplots(figsize=(8, 5))
    sns.scatterplot(df, x="tokens", y="attn %", hue="model", ax=ax, s=40)
    n = [2 ** (k / 4) for k in range(20, 60)]
    layer = [global_attention_layer_macs(int(t), 768) for t in n]
    ax.plot(n, [100 * m["quadratic"] / (m["quadratic"] + m["linear"]) for m in layer], "k--", lw=1,
            label="one ViT-B layer, closed form")
    ax.axvline(attention_crossover_tokens(768), color="red", lw=1, label="N* = 6d (d = 768)")
    ax.set(xscale="log", title=title, xlabel="tokens N")
    ax.legend(fontsize=6, ncol=2, loc="upper left")
    _save(fig, path)
    return _rounded(df.sort_values(["model", "tokens"]))


def throughput_vs_resolution(throughput: list[dict], path: Path) -> Plotted:
    """One machine (the one with most rows), fp32 batch-1 inference only, one line per model; noisy
    measurements drawn hollow and named."""
    machine = main_machine(throughput)
    title = "Throughput against input side (fp32, batch 1, inference)"
    rows = [r for r in throughput if machine_name(r) == machine and r["batch_size"] == 1
            and r["settings"]["dtype"] == "fp32" and not r["settings"].get("train")]
    df = pd.DataFrame([{"model": r["model"], "res": r["img_size"], "img/s": r["imgs_per_s"],
                        "noisy": bool(r.get("noisy"))} for r in rows])
    if df.empty:
        return _empty(path, title, "no fp32 batch-1 inference timings")
    fig, ax = plt.subplots(figsize=(8, 5))
    sns.lineplot(df, x="res", y="img/s", hue="model", marker="o", ax=ax, estimator=None)
    noisy = df[df["noisy"]]
    if not noisy.empty:
        ax.scatter(noisy["res"], noisy["img/s"], s=120, facecolors="none", edgecolors="red", label="noisy (cv or load)")
    _label_line_ends(ax, df, "res", "img/s", "model")
    ax.set(yscale="log", title=f"{title}\non {machine}", xlabel="input side (px)", ylabel="images / s (mean)")
    ax.legend(fontsize=7)
    _save(fig, path)
    return _rounded(df.sort_values(["model", "res"]))


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
    _save(fig, path)
    return _rounded(df.reset_index().sort_values("model"))


def accuracy_vs(points: list[dict], x: str, path: Path, xlabel: str) -> Plotted:
    """One panel per pretraining group, each with its own Pareto front (single-crop entries only); the
    front's models are labelled, the rest are in accuracy.md."""
    title = f"Top-1 at its own resolution against {xlabel}"
    df = pd.DataFrame([p for p in points if p.get(x) and p.get("top1") is not None])
    if df.empty:
        return _empty(path, title, f"no model with both an accuracy entry and {xlabel} at the same resolution")
    groups = sorted(df["pretraining"].unique())
    cols = min(3, len(groups))
    rows = -(-len(groups) // cols)
    fig, axes = plt.subplots(rows, cols, figsize=(6 * cols, 4.8 * rows), squeeze=False)
    for ax in axes.flat[len(groups):]:
        ax.set_axis_off()
    for ax, group in zip(axes.flat, groups):
        part = df[df["pretraining"] == group]
        sns.scatterplot(part, x=x, y="top1", hue="family", style="crops", s=45, ax=ax)
        front = part[part[f"pareto_{x}"]].sort_values(x)
        ax.step(front[x], front["top1"], "k--", where="post", lw=1)
        for i, (_, p) in enumerate(front.iterrows()):
            ax.annotate(f"{p['model']} @{p['img_size']}", (p[x], p["top1"]), fontsize=7,
                        xytext=(4, -10 if i % 2 else 4), textcoords="offset points")
        ax.set(xscale="log", xlabel=xlabel, ylabel="top-1 % (ImageNet-1k)", title=f"pretraining: {group}")
        ax.legend(fontsize=6, loc="lower right")
    fig.suptitle(f"{title} (dashed and labelled: the Pareto front within the group)")
    _save(fig, path)
    return _rounded(df[["model", "img_size", "pretraining", "crops", "top1", x, f"pareto_{x}"]]
                    .sort_values(["pretraining", "model", "img_size"]))
