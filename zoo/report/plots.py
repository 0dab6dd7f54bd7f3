"""Seaborn plots (PNG) from result rows; each function writes one figure and returns its path."""
from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402
import seaborn as sns  # noqa: E402

from .rows import machine_name  # noqa: E402


def _save(fig, path: Path) -> Path:
    fig.tight_layout()
    fig.savefig(path, dpi=110, metadata={"Software": None})
    plt.close(fig)
    return path


def macs_vs_resolution(cost: list[dict], path: Path) -> Path:
    df = pd.DataFrame([{"model": r["model"], "family": r["family"], "res": r["img_size"], "GMACs": r["macs"] / 1e9}
                       for r in cost])
    fig, ax = plt.subplots(figsize=(8, 5))
    sns.lineplot(df, x="res", y="GMACs", hue="family", units="model", estimator=None, marker="o", ax=ax)
    ax.set(xscale="log", yscale="log", title="MACs per image against input side (log-log)", xlabel="input side (px)")
    return _save(fig, path)


def attention_share_vs_tokens(cost: list[dict], path: Path) -> Path:
    from analysis.closed_form import attention_crossover_tokens, global_attention_layer_macs

    df = pd.DataFrame([{"model": r["model"], "tokens": r["tokens"], "attn %": 100 * r["attn_share"]}
                       for r in cost if r.get("tokens")])
    fig, ax = plt.subplots(figsize=(8, 5))
    sns.scatterplot(df, x="tokens", y="attn %", hue="model", ax=ax, s=40)
    n = [2 ** (k / 4) for k in range(20, 60)]
    layer = [global_attention_layer_macs(int(t), 768) for t in n]
    ax.plot(n, [100 * m["quadratic"] / (m["quadratic"] + m["linear"]) for m in layer], "k--", lw=1,
            label="one ViT-B layer, closed form")
    ax.axvline(attention_crossover_tokens(768), color="red", lw=1, label="N* = 6d (d = 768)")
    ax.set(xscale="log", title="Attention matmul share of MACs against sequence length", xlabel="tokens N")
    ax.legend(fontsize=7, ncol=2)
    return _save(fig, path)


def throughput_vs_resolution(throughput: list[dict], path: Path) -> Path:
    df = pd.DataFrame([{"model": r["model"], "res": r["img_size"], "img/s": r["imgs_per_s"],
                        "setting": f"{r['settings']['dtype']} bs{r['batch_size']}", "machine": machine_name(r)}
                       for r in throughput if not r["settings"].get("train")])
    fig, ax = plt.subplots(figsize=(8, 5))
    if not df.empty:
        sns.lineplot(df, x="res", y="img/s", hue="model", style="setting", marker="o", ax=ax)
        ax.set(yscale="log", title=f"Throughput against input side\n{df['machine'].iloc[0]}")
    return _save(fig, path)


def stacked_components(cost: list[dict], path: Path, img_size: int = 224) -> Path:
    parts = ["patch_embed", "attn_proj", "attn_matmul", "mlp", "conv", "head", "other"]
    df = pd.DataFrame([{"model": r["model"], **{p: r["macs_by_component"].get(p, 0) / 1e9 for p in parts}}
                       for r in cost if r["img_size"] == img_size]).set_index("model").sort_values("mlp")
    fig, ax = plt.subplots(figsize=(9, 6))
    df.plot.barh(stacked=True, ax=ax, colormap="tab10", width=0.8)
    ax.set(xscale="log", xlabel="GMACs", title=f"MACs per component at {img_size}px")
    return _save(fig, path)


def accuracy_vs(points: list[dict], x: str, path: Path, xlabel: str) -> Path:
    df = pd.DataFrame([p for p in points if p.get(x)])
    fig, ax = plt.subplots(figsize=(8, 5))
    if not df.empty:
        sns.scatterplot(df, x=x, y="top1", hue="family", style="pretraining", s=60, ax=ax)
        for _, p in df.iterrows():
            ax.annotate(p["model"], (p[x], p["top1"]), fontsize=7, xytext=(3, 3), textcoords="offset points")
        front = _front(df, x, lower_is_better=(x == "gmacs"))
        ax.step(front[x], front["top1"], "k--", where="post", lw=1, label="Pareto front")
        ax.set(xscale="log", xlabel=xlabel, ylabel="reported ImageNet top-1 (%)")
        ax.legend(fontsize=6, ncol=2)
    return _save(fig, path)


def _front(df: pd.DataFrame, x: str, lower_is_better: bool) -> pd.DataFrame:
    ordered = df.sort_values(x, ascending=lower_is_better)
    best, keep = -1.0, []
    for i, row in ordered.iterrows():
        if row["top1"] > best:
            best, keep = row["top1"], keep + [i]
    return ordered.loc[keep].sort_values(x)
