"""Markdown tables from result rows: cost, components, attention, scaling, throughput, accuracy."""
from __future__ import annotations

import math
from collections import defaultdict

from ..cards import CARDS
from ..registry import get_spec
from .rows import machine_name

CONVENTION = ("MACs = multiply-accumulates of matmuls, linear layers, convolutions and attention's QK^T "
              "and AV; biases, norms, softmax, activations and pooling are not counted. FLOPs = 2 x MACs.")


def markdown(headers: list[str], rows: list[list]) -> str:
    lines = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    lines += ["| " + " | ".join("-" if c is None else str(c) for c in row) + " |" for row in rows]
    return "\n".join(lines) + "\n"


def g(v: float | None, digits: int = 2) -> str | None:
    return None if v is None else f"{v / 1e9:,.{digits}f}"


def cost_table(cost: list[dict]) -> str:
    rows = [[r["model"], r["family"], r["img_size"], r.get("tokens"), f"{r['params']:,}", g(r["macs"]),
             g(2 * r["macs"]), f"{100 * r['attn_share']:.2f}", f"{r['act_peak_bytes'] / 2**20:,.1f}",
             g(r.get("train_macs")), f"{r['train_act_peak_bytes'] / 2**20:,.1f}" if r.get("train_act_peak_bytes") else None,
             ", ".join(r["uncounted_ops"]) or "none"] for r in cost]
    return markdown(["model", "family", "res", "tokens", "params", "GMACs", "GFLOPs", "attn %",
                     "act peak (MiB)", "train GMACs", "train act peak (MiB)", "uncounted ops"], rows)


def component_table(cost: list[dict], img_size: int = 224) -> str:
    components = ["patch_embed", "attn_proj", "attn_matmul", "mlp", "conv", "head", "other"]
    rows = [[r["model"]] + [g(r["macs_by_component"].get(c, 0), 3) for c in components] + [g(r["macs"], 3)]
            for r in cost if r["img_size"] == img_size]
    return markdown(["model (GMACs at %d)" % img_size] + components + ["total"], rows)


def attention_table(cost: list[dict]) -> str:
    from analysis.closed_form import attention_crossover_tokens

    rows = []
    for r in cost:
        spec = get_spec(r["model"])
        if not r.get("tokens") or spec.vit_config is None and spec.family not in ("deit", "beit", "eva"):
            continue
        width = spec.vit_config.embed_dim if spec.vit_config else None
        n_star = attention_crossover_tokens(width) if width else None
        rows.append([r["model"], r["img_size"], r["tokens"], f"{100 * r['attn_share']:.2f}",
                     f"{n_star:,.0f}" if n_star else None,
                     f"{r['tokens'] / n_star:.3f}" if n_star else None])
    return markdown(["model", "res", "tokens N", "attn share %", "N* = 6d", "N / N*"], rows)


def fit_exponent(xs: list[float], ys: list[float]) -> float | None:
    """Least-squares slope of log y on log x: y ~ x^slope."""
    points = [(math.log(x), math.log(y)) for x, y in zip(xs, ys) if x > 0 and y and y > 0]
    if len({p[0] for p in points}) < 2:
        return None
    mx = sum(p[0] for p in points) / len(points)
    my = sum(p[1] for p in points) / len(points)
    return sum((x - mx) * (y - my) for x, y in points) / sum((x - mx) ** 2 for x, _ in points)


def scaling_table(cost: list[dict], throughput: list[dict]) -> str:
    by_model: dict[str, list[dict]] = defaultdict(list)
    for r in cost:
        by_model[r["model"]].append(r)
    latency: dict[str, list[tuple[int, float]]] = defaultdict(list)
    for r in throughput:
        if r["batch_size"] == 1 and not r["settings"].get("train") and r["settings"]["dtype"] == "fp32":
            latency[r["model"]].append((r["img_size"], r["latency_ms_p50"]))
    rows = []
    for model, rs in sorted(by_model.items()):
        sizes = [r["img_size"] for r in rs]
        macs_exp = fit_exponent(sizes, [r["macs"] for r in rs])
        mem_exp = fit_exponent(sizes, [r["act_peak_bytes"] for r in rs])
        lat_exp = fit_exponent(*zip(*latency[model])) if len(latency[model]) > 1 else None
        rows.append([model, ", ".join(map(str, sorted(sizes))), _fmt(macs_exp), _fmt(mem_exp), _fmt(lat_exp)])
    return markdown(["model", "resolutions", "MACs ~ side^k", "act memory ~ side^k", "latency ~ side^k"], rows)


def _fmt(v: float | None) -> str | None:
    return None if v is None else f"{v:.2f}"


def throughput_table(throughput: list[dict]) -> str:
    rows = [[machine_name(r), r["model"], r["img_size"], r["batch_size"], r["settings"]["dtype"],
             "train" if r["settings"].get("train") else "inference", f"{r['imgs_per_s']:.2f}",
             f"{r['latency_ms_p50']:.1f}", f"{r['latency_ms_p90']:.1f}", f"{r['latency_ms_p99']:.1f}",
             f"{r['cv']:.3f}", f"{100 * r['mfu']:.1f}" if r.get("mfu") is not None else None,
             g(r.get("peak_flops"), 0)]
            for r in sorted(throughput, key=lambda r: (machine_name(r), r["model"], r["img_size"], r["batch_size"]))]
    return markdown(["machine", "model", "res", "batch", "dtype", "mode", "img/s", "p50 ms", "p90 ms", "p99 ms",
                     "cv", "MFU %", "peak GFLOP/s"], rows)


def accuracy_points(cost: list[dict], throughput: list[dict]) -> list[dict]:
    """Each carded model at the resolution its accuracy was reported at (when that row exists)."""
    macs = {(r["model"], r["img_size"]): r["macs"] for r in cost}
    speed = {(r["model"], r["img_size"]): r["imgs_per_s"] for r in throughput
             if r["batch_size"] == 1 and not r["settings"].get("train") and r["settings"]["dtype"] == "fp32"}
    points = []
    for model, c in sorted(CARDS.items()):
        if (model, c.resolution) in macs:
            points.append({"model": model, "family": get_spec(model).family, "top1": c.top1,
                           "resolution": c.resolution, "pretraining": c.pretraining, "source": c.source,
                           "gmacs": macs[(model, c.resolution)] / 1e9,
                           "imgs_per_s": speed.get((model, c.resolution))})
    for p in points:
        p["pareto_gmacs"] = not any(q["gmacs"] <= p["gmacs"] and q["top1"] > p["top1"] for q in points)
    return points


def accuracy_table(points: list[dict]) -> str:
    rows = [[p["model"], f"{p['top1']:.2f}", p["resolution"], p["pretraining"], f"{p['gmacs']:.2f}",
             f"{p['imgs_per_s']:.2f}" if p["imgs_per_s"] else None, "yes" if p["pareto_gmacs"] else "",
             p["source"]] for p in sorted(points, key=lambda p: p["gmacs"])]
    return markdown(["model", "top-1 %", "res", "pretraining", "GMACs", "img/s (bs 1)", "Pareto (GMACs)",
                     "source"], rows)
