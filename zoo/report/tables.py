"""Markdown tables from result rows: cost, components, attention, scaling, throughput, accuracy.

Units are in every header: MACs per image (FLOPs = 2 x MACs), memory in MiB (2^20 bytes) per batch,
latency in ms per step of the batch. Each table builds from whatever rows exist; what it had to
leave out is returned beside it, and the page says so.
"""
from __future__ import annotations

import math
import statistics
from collections import defaultdict

from analysis.count.closed_form import attention_crossover_tokens
from analysis.vocab import COMPONENTS

from ..errors import ZooError
from ..console import columns as table
from ..console.markdown import markdown_table as markdown
from ..console.markdown import mfu_cell
from ..models.registry import get_spec
from ..store.schema import measurement_key, row_size, sort_key
from .rows import machine_name, setting_name

CONVENTION = ("MACs = multiply-accumulates of matmuls, linear layers, convolutions and attention's QK^T "
              "and AV; biases, norms, softmax, activations and pooling are not counted. FLOPs = 2 x MACs.")


def g(v: float | None, digits: int = 2) -> str | None:
    return None if v is None else f"{v / 1e9:,.{digits}f}"


def spec_or_none(model: str):
    try:
        return get_spec(model)
    except ZooError:    # a row of a model no longer in the registry: shown from its own fields
        return None


def cost_table(cost: list[dict]) -> str:
    """The cost rows (batch 1) with the shared table's report columns (zoo.console.columns)."""
    columns = [c.at_batch(1) for c in table.COLUMNS if c.report]
    rows = [[r["model"], r.get("family"), row_size(r).label, r.get("tokens"), *(table.cell(r, c) for c in columns),
             ", ".join(r["uncounted_ops"]) or "none"] for r in cost]
    return markdown(["model", "family", "res (px)", "tokens", *(c.header for c in columns), "uncounted ops"], rows)


def components_size(cost: list[dict]) -> int | None:
    """224 when there are rows at 224, else the size with most rows."""
    sizes = [r["img_size"] for r in cost]
    return None if not sizes else 224 if 224 in sizes else max(set(sizes), key=sizes.count)


def component_table(cost: list[dict], img_size: int | None) -> str:
    rows = [[r["model"]] + [g(r["macs_by_component"].get(c, 0), 3) for c in COMPONENTS] + [g(r["macs"], 3)]
            for r in cost if r["img_size"] == img_size]
    at = f" at {img_size} px" if img_size else ""
    return markdown([f"model (GMACs / image{at})"] + list(COMPONENTS) + ["total"], rows)


def attention_table(cost: list[dict]) -> tuple[str, list[str]]:
    rows, left_out = [], set()
    for r in cost:
        spec = spec_or_none(r["model"])
        width = spec.vit_config.embed_dim if spec and spec.vit_config else None
        if not r.get("tokens"):
            continue
        if width is None:
            left_out.add(r["model"])
        n_star = attention_crossover_tokens(width) if width else None
        rows.append([r["model"], r["img_size"], r["tokens"], f"{100 * r['attn_share']:.2f}",
                     f"{n_star:,.0f}" if n_star else None, f"{r['tokens'] / n_star:.3f}" if n_star else None])
    notes = [f"N* left blank for {', '.join(sorted(left_out))}: their width is not in the registry's ViT table"] \
        if left_out else []
    return markdown(["model", "res (px)", "tokens N", "attn % of MACs", "N* = 6d", "N / N*"], rows), notes


def fit_exponent(xs: list[float], ys: list[float]) -> float | None:
    """Least-squares slope of log y on log x: y ~ x^slope."""
    points = [(math.log(x), math.log(y)) for x, y in zip(xs, ys) if x > 0 and y and y > 0]
    if len({p[0] for p in points}) < 2:
        return None
    mx = sum(p[0] for p in points) / len(points)
    my = sum(p[1] for p in points) / len(points)
    return sum((x - mx) * (y - my) for x, y in points) / sum((x - mx) ** 2 for x, _ in points)


def scaling_table(cost: list[dict], throughput: list[dict]) -> tuple[str, list[str]]:
    by_model: dict[str, list[dict]] = defaultdict(list)
    for r in cost:
        by_model[r["model"]].append(r)
    latency: dict[str, tuple[float | None, str]] = {}
    noisy_left_out = []
    series: dict[tuple[str, str, str], list[dict]] = defaultdict(list)     # the only rows a curve or fit may join
    for r in throughput:
        series[(r["model"], machine_name(r), setting_name(r))].append(r)
    for (model, machine, setting), rs in series.items():
        if setting != "fp32 bs1 inference":
            continue
        clean = [r for r in rs if not r.get("noisy")]
        noisy_left_out += [f"{model} {r['img_size']} px" for r in rs if r.get("noisy")]
        exp = fit_exponent([r["img_size"] for r in clean], [r["latency_ms_p50"] for r in clean])
        if exp is not None and (model not in latency or len(clean) > 1):
            latency[model] = (exp, machine)
    rows = []
    for model, rs in sorted(by_model.items()):
        sizes = [r["img_size"] for r in rs]
        lat, machine = latency.get(model, (None, None))
        rows.append([model, ", ".join(map(str, sorted(sizes))),
                     *(_opt(fit_exponent(sizes, [r[f] for r in rs]), ".2f") for f in ("macs", "act_peak_bytes")),
                     _opt(lat, ".2f"), machine])
    notes = [f"noisy timings left out of the latency fits: {', '.join(sorted(noisy_left_out))}"] if noisy_left_out else []
    return markdown(["model", "resolutions (px)", "MACs ~ side^k", "act memory ~ side^k",
                     "latency p50 ~ side^k (fp32, batch 1)", "latency measured on"], rows), notes


def runs_cell(r: dict, runs: dict) -> str | None:
    """Median and spread of img/s over every run of this measurement, when it was measured more than once."""
    values = sorted(runs.get(measurement_key(r), []))
    if len(values) < 2:
        return None
    return f"{statistics.median(values):,.2f} ({values[0]:,.2f}\u2013{values[-1]:,.2f}, n={len(values)})"


def throughput_table(throughput: list[dict], runs: dict | None = None) -> str:
    ordered = sorted(throughput, key=lambda r: (machine_name(r), *sort_key(r), setting_name(r)))
    rows = [[machine_name(r), r["model"], r["img_size"], f"{r.get('ran_batch_size') or r['batch_size']}",
             r["settings"]["dtype"], "train" if r["settings"].get("train") else "inference",
             r["settings"].get("backend", "eager"), f"{r['imgs_per_s']:,.2f}", _imgs_at_p50(r),
             f"{r['latency_ms_p50']:,.1f}", _p99(r), _opt(r.get("cv"), ".3f"), _opt(r.get("foreign_cpu_share"), ".0%"),
             mfu_cell(r), g(r.get("peak_flops"), 0), runs_cell(r, runs or {}), "noisy" if r.get("noisy") else ""]
            for r in ordered]
    return markdown(["machine", "model", "res (px)", "batch", "dtype", "mode", "backend", "img/s (mean)",
                     "img/s (at p50)", "p50 (ms / batch)", "p99 (ms / batch)", "cv", "others' CPU", "MFU %",
                     "GEMM peak (GFLOP/s)", "all runs: median img/s (min\u2013max, n)", "flag"], rows)


def _p99(r: dict) -> str | None:
    """The p99, marked with its step count when fewer than 100 steps gave it (then it is about the slowest)."""
    steps = r.get("iters")
    return None if r.get("latency_ms_p99") is None else f"{r['latency_ms_p99']:,.1f}" + (
        f" (n={steps})" if steps is not None and steps < 100 else "")


def _imgs_at_p50(r: dict) -> str | None:
    batch = r.get("ran_batch_size") or r["batch_size"]
    seconds = (r.get("latency_ms_p50") or 0) / 1e3          # a denormal p50 in ms is 0.0 s: no figure, not a crash
    return f"{batch / seconds:,.2f}" if seconds > 0 else None


def _opt(v, spec: str) -> str | None:
    return None if v is None else format(v, spec)


def not_measured_table(rows: list[dict]) -> str:
    listed = sorted(rows, key=lambda r: (r["kind"], *sort_key(r)))
    return markdown(["kind", "model", "res (px)", "batch", "settings", "why"],
                    [[r["kind"], r["model"], row_size(r).label, r["batch_size"], setting_name(r) if r["kind"] ==
                      "throughput" else r["settings"]["dtype"], f"skipped: {r['skipped']}" if r.get("skipped")
                      else f"failed: {r['failed']}"] for r in listed])
