"""Which interactive figure (zoo.report.interactive) stands on the page for each PNG plot, built from the data the
plot was drawn from (what plots.json keeps): the page draws these, the markdown reports link the PNGs. The five
predicted-GPU plots are one figure on the page, a button per device."""
from __future__ import annotations

from analysis.vocab import COMPONENTS

from . import interactive as ip
from .predicted_gpu import DEVICES, PLOT_FILES as PREDICTED_FILES, PLOT_BATCH, SIZE, dtype_on


def _roofline(rows: list[dict]) -> dict:
    traces = [{"type": "scatter", "mode": "markers", "name": name, "x": [r["measured_ms"] for r in rows],
               "y": [r[field] for r in rows], "text": [f"{r['model']} ({r['machine']})" for r in rows],
               "marker": {"size": 8, "symbol": symbol},
               "hovertemplate": ip._hover(("measured p50 ms", f"%{{x:{ip.NUMBER}}}"),
                                          (f"{name} ms", f"%{{y:{ip.NUMBER}}}"))}
              for name, field, symbol in (("roofline", "roofline_ms", "circle"),
                                          ("MACs-only", "macs_only_ms", "x"))]
    ends = [min(r["measured_ms"] for r in rows), max(r["measured_ms"] for r in rows)]
    traces.append({"type": "scatter", "mode": "lines", "name": "predicted = measured", "x": ends, "y": ends,
                   "line": {"dash": "dot", "color": "#888"}, "hoverinfo": "skip"})
    return {"data": traces, "layout": ip._layout("Roofline and MACs-only latency against measured (eager inference)",
                                                 ip._axis("measured p50 latency (ms / batch)", True),
                                                 ip._axis("predicted latency (ms / batch)", True))}


def _task(points: list[dict], family) -> list[tuple[str, dict]]:
    """One figure per task: the published score against the whole model's counted GFLOPs."""
    out = []
    for task in sorted({p["task"] for p in points}):
        part = [{**p, "model": f"{p['model']} {p['head']}"} for p in points if p["task"] == task]
        title, score = task.split(": ")
        out.append((task, ip.pareto(part, "GFLOPs", family, f"{score} against GFLOPs per image ({title}; whole model, counted)",
                                    "GFLOPs per image (FLOPs = 2 x MACs)", y=("score", f"{score} % (published)"))))
    return out


def figures(plotted: dict[str, list[dict]], captions: dict[str, str], facets: dict) -> dict[str, str]:
    """PNG name -> the page's figure HTML ('' for a plot folded into another's figure; absent: no data)."""
    def family(p):      # a point's own family, else the registry's family of its model (the page's facets)
        return p.get("family") or facets.get(p["model"], {}).get("family")

    made: dict[str, list[tuple[str, dict]]] = {}
    rows = plotted
    if rows.get("macs_vs_resolution.png"):
        made["macs_vs_resolution.png"] = [("", ip.lines_by_model(
            rows["macs_vs_resolution.png"], ("res", "input side (px)"), ("GMACs", "GMACs / image"), family,
            "GMACs per image against input side"))]
    if rows.get("attention_share_vs_tokens.png"):
        made["attention_share_vs_tokens.png"] = [("", ip.lines_by_model(
            rows["attention_share_vs_tokens.png"], ("tokens", "tokens N"), ("attn %", "attention matmuls, % of MACs"),
            family, "Attention's share of MACs against tokens", log=(True, False)))]
    if rows.get("throughput_vs_resolution.png"):
        made["throughput_vs_resolution.png"] = [("", ip.lines_by_model(
            rows["throughput_vs_resolution.png"], ("res", "input side (px)"), ("img/s", "images / s (mean)"), family,
            "Throughput against input side (fp32, batch 1; hollow: loaded)", log=(False, True), flag="noisy"))]
    if rows.get("component_shares.png"):
        present = [c for c in COMPONENTS if any(r.get(c) for r in rows["component_shares.png"])]
        made["component_shares.png"] = [("", ip.bars(rows["component_shares.png"], present, "MACs per component",
                                                     "% of MACs", stacked=True))]
    for name, x, x_title in (("accuracy_vs_gmacs.png", "gmacs", "GMACs per image (at the accuracy's resolution)"),
                             ("accuracy_vs_throughput.png", "imgs_per_s", "measured img/s at batch 1")):
        if rows.get(name):
            made[name] = [("", ip.pareto(rows[name], x, family, f"Top-1 against {x_title.split(' (')[0]}; "
                                         "fronts per pretraining group", x_title))]
    if rows.get("roofline_vs_measured.png"):
        made["roofline_vs_measured.png"] = [("", _roofline(rows["roofline_vs_measured.png"]))]
    if rows.get("eager_vs_onnxruntime.png"):
        made["eager_vs_onnxruntime.png"] = [("", ip.bars(rows["eager_vs_onnxruntime.png"], ["eager img/s",
                                                         "onnxruntime img/s"], "Eager PyTorch against ONNX Runtime",
                                                         "images / s", stacked=False))]
    if rows.get("task_accuracy_vs_gflops.png"):
        made["task_accuracy_vs_gflops.png"] = _task(rows["task_accuracy_vs_gflops.png"], family)
    devices = {d: ip.pareto(rows[n], "predicted_imgs_per_s", family, "", "PREDICTED img/s (not measured)")
               for d, n in zip(DEVICES, PREDICTED_FILES) if rows.get(n)}
    if devices:
        made[PREDICTED_FILES[0]] = [("", ip.with_buttons(devices, f"Top-1 against PREDICTED img/s ({SIZE} px, batch "
                                                                  f"{PLOT_BATCH}, autocast; not measured)"))]
    out, number = {}, 0
    for name, figs in made.items():
        parts = []
        for sub, fig in figs:
            number += 1
            caption = captions.get(name, name) if name != PREDICTED_FILES[0] else (
                "top-1 against PREDICTED img/s per device (" + ", ".join(f"{d}: {dtype_on(d)}" for d in devices)
                + " autocast; Pareto per pretraining group); a button per device")
            parts.append(ip.html_of(fig, number, f"{caption}{': ' + sub if sub else ''}"))
        out[name] = "".join(parts)
    out.update({n: "" for n in PREDICTED_FILES[1:] if devices})
    return out
