"""The predicted-GPU section and its plots, from results/predicted.jsonl (zoo.report.gpu_predictions): expected
img/s with the held-out p10-p90 band, the roofline bound, latency and serving memory per device, model and batch,
all of it predicted; top-1 against predicted img/s per device; task accuracy (COCO box AP, ADE20K mIoU) against
the counted GFLOPs of the whole detector or segmenter."""
from __future__ import annotations

from pathlib import Path

import pandas as pd

from analysis.units import GIB

from ..console.markdown import markdown_table, plain
from ..models.accuracy import pareto_front
from ..predict.rows import model_label
from .gpu_predictions import BATCHES, DEVICES, DTYPE, OTHER_DTYPE, PREDICTED_FILE, SIZE, TORCH, fixed_sheets

PLOT_BATCH = 64
HEADING = "Predicted GPU throughput (not measured)"
PLOT_FILES = tuple(f"accuracy_vs_predicted_{d.replace(' ', '').lower()}.png" for d in DEVICES)


def dtype_on(device: str) -> str:
    return OTHER_DTYPE.get(device, DTYPE)


def intro(rows: list[dict]) -> str:
    """What the rows are: each figure predicted, how, the band's held-out error and the calibration's source."""
    bands: dict[str, list[str]] = {}          # the band as printed -> the devices whose rows carry it
    for r in rows:
        band = f"x{r['imgs_per_s_p10'] / r['imgs_per_s']:.2f}-x{r['imgs_per_s_p90'] / r['imgs_per_s']:.2f}"
        if r["device"] not in bands.setdefault(band, []):
            bands[band].append(r["device"])
    band_text = "; ".join(f"{band} on {', '.join(devices)}" for band, devices in bands.items())
    band_text += " (each row's band_from says which: a GPU whose architecture a fitted source ran, or one none did)"
    source = rows[0]["calibration_source"] if rows else "analysis/predict/data/gpu_calibration.json"
    saved = [r for r in rows if r.get("saved_by")]
    what = (f"Each classifier with an ImageNet accuracy entry at {SIZE} px, batch {' and '.join(map(str, BATCHES))}, "
            f"{DTYPE} (torch.autocast over fp32 weights, eager PyTorch {'.'.join(map(str, TORCH))}, as timm's "
            "benchmark --amp runs; fp16 on the V100, which has no bf16 tensor cores)" if len(saved) < len(rows) else
            "Each row saved by `--predict` in this folder, at the size, batch and dtype asked")
    form = "RepVGG-style branches fused" if len(saved) < len(rows) else "two-form models as the row's reparam says"
    return (f"PREDICTED, NOT MEASURED: no GPU ran these. {what}, its forward counted on the meta device as a CUDA GPU "
            f"runs it (fused attention, autocast's casts, {form}) and priced on each device's "
            "datasheet (footnotes) by `zoo.compare --predict` (docs/prediction.md). 'expected img/s' is the calibrated "
            "expectation; 'p10-p90' the band from held-out error (expected x the 10th and 90th percentile of "
            f"measured / expected over leave-one-source-out predictions: {band_text}); 'roofline' the datasheet bound "
            "(peak compute and bandwidth, no efficiency loss): an upper limit, not an estimate. ms / batch: expected "
            "(mean) latency of one batch; no tail (p99) is modelled. Serving memory: weights as held (fp32) + autocast's activation peak + input, "
            "per batch; a batch that does not fit the device's memory is kept and marked NO. Calibration: "
            f"{source}. Rows: results/{PREDICTED_FILE} (`python -m zoo.report --refresh` writes it, `--check` "
            "recomputes it)." + (f" {len(saved)} row(s) were saved by `--predict` in this folder (size, batch and "
                                 "dtype as asked; 'saved by' names the command; --refresh keeps them)."
                                 if saved and len(saved) < len(rows) else ""))


def sources(rows: list[dict]) -> list[str]:
    """Each device's datasheet sources, once, in table order: the table's device cells cite them as [n]."""
    return list(dict.fromkeys(map(_sheet_cited, rows)))


def _sheet_cited(row: dict) -> str:
    """A row's device, its part where the row names it, and the datasheet's source: a footnote's text."""
    return f"{row['device']}" + (f" ({row['part']})" if row.get("part") else "") + f": {row['source']}"


def predicted_table(rows: list[dict]) -> str:
    """One row per prediction; where some were saved by a user's --predict (saved_by), the size and who saved each
    are shown too (the fixed set is all at SIZE px)."""
    number = {s: i + 1 for i, s in enumerate(sources(rows))}
    saved = any(r.get("saved_by") for r in rows)
    cells = []
    for r in rows:
        fits = "yes" if r["fits_memory"] else f"NO: over {r['device_memory_bytes'] / 1e9:g} GB"
        where = [r.get("img_size") or f"{r.get('img_h')}x{r.get('img_w')}", r.get("saved_by") or "zoo.report"]
        cells.append([f"{r['device']} [{number[_sheet_cited(r)]}]", model_label(r),
                      *(where[:1] if saved else []), r["batch_size"], r["dtype"],
                      plain(r["imgs_per_s"]), f"{plain(r['imgs_per_s_p10'])}\u2013{plain(r['imgs_per_s_p90'])}",
                      plain(r["roofline_imgs_per_s"]), plain(r["latency_ms"], 3), f"{r['serve_bytes'] / GIB:.2f}",
                      fits, *(where[1:] if saved else [])])
    return markdown_table(["device (predicted on)", "model", *(["size (px)"] if saved else []), "batch", "autocast",
                           "expected img/s (predicted)", "p10-p90 img/s (predicted)",
                           "roofline bound img/s (predicted)", "ms / batch (predicted, mean)", "serving GiB / batch",
                           "fits device memory", *(["saved by"] if saved else [])], cells)


def predicted_points(points: list[dict], rows: list[dict], device: str, x: str = "predicted_imgs_per_s") -> list[dict]:
    """The accuracy points at SIZE px with the device's predicted img/s at batch PLOT_BATCH (a batch that does not
    fit its memory is left out), each with its Pareto flag within its pretraining group."""
    speed = {r["model"]: r["imgs_per_s"] for r in rows if r["device"] == device and r["batch_size"] == PLOT_BATCH
             and r["fits_memory"] and not r.get("saved_by")}     # the fixed set only: a user's row may be at any size
    mine = [{**p, x: speed[p["model"]]} for p in points
            if p["img_size"] == SIZE and p.get("top1") is not None and p["model"] in speed]
    singles = [p for p in mine if p["crops"] == "single"]
    on_front = {id(singles[i]) for i in pareto_front(singles, x, lower_x_is_better=False)}
    return [{**p, f"pareto_{x}": id(p) in on_front} for p in mine]


def predicted_inputs(points: list[dict], rows: list[dict], device: str) -> tuple[list[dict], str, str]:
    """accuracy_vs's points, x and x label (before its path) for the device's plot."""
    name = fixed_sheets()[device].name
    return (predicted_points(points, rows, name), "predicted_imgs_per_s",
            f"PREDICTED img/s on {name} ({SIZE} px, batch {PLOT_BATCH}, {dtype_on(device)} autocast; not measured)")


def accuracy_vs_predicted(points: list[dict], rows: list[dict], device: str, path: Path) -> list[dict]:
    from .plots import accuracy_vs      # matplotlib only where a figure is drawn

    points, x, label = predicted_inputs(points, rows, device)
    return accuracy_vs(points, x, path, label)


def task_points(detectors: list[dict], segmenters: list[dict]) -> list[dict]:
    """A point per whole detector with a published box AP and per segmenter with a published mIoU: GFLOPs = 2 x
    the counted MACs per image at the row's size."""
    points = [{"task": "detection: COCO box AP", "model": r["model"], "head": r["settings"]["detector"],
               "family": r.get("family"), "GFLOPs": 2 * r["macs"] / 1e9, "score": r["box_ap"],
               "size": f"{r['img_h']}x{r['img_w']}"} for r in detectors if r.get("box_ap") is not None]
    points += [{"task": "segmentation: ADE20K mIoU (single scale)", "model": r["model"],
                "head": r["settings"]["segmenter"], "family": r.get("family"), "GFLOPs": 2 * r["macs"] / 1e9,
                "score": r["miou"], "size": f"{r['img_h']}x{r['img_w']}"} for r in segmenters if r.get("miou") is not None]
    return sorted(points, key=lambda p: (p["task"], p["GFLOPs"], p["model"], p["head"]))


def task_accuracy_vs_gflops(detectors: list[dict], segmenters: list[dict], path: Path) -> list[dict]:
    """One panel per task: the published score of the recipe against the counted GFLOPs of the whole model."""
    from . import style
    from .plots import _empty, _rounded, plt          # plots first: it puts matplotlib on the Agg backend

    title = "Task accuracy against GFLOPs per image (counted; FLOPs = 2 x MACs)"
    points = task_points(detectors, segmenters)
    if not points:
        return _empty(path, title, "no detector row with a box AP or segmenter row with an mIoU in results/")
    tasks = sorted({p["task"] for p in points})
    fig, axes = plt.subplots(1, len(tasks), figsize=(7 * len(tasks), 5.5), squeeze=False)
    labelled = []
    for ax, task in zip(axes.flat, tasks):
        part = [p for p in points if p["task"] == task]
        style.draw_families(ax, part, "GFLOPs", "score")
        sizes = ", ".join(sorted({p["size"] for p in part}))
        ax.set(xscale="log", xlabel=f"GFLOPs per image (whole model, at {sizes} px H x W)",
               ylabel=task.split(": ")[1] + " %", title=task)
        ax.margins(x=0.15, y=0.12)
        style.plain_log_axis(ax, "x")
        labelled.append((ax, [(f"{p['model']} {p['head']}", p["GFLOPs"], p["score"]) for p in part]))
    style.family_legend(fig, [p["family"] for p in points], loc="upper center", ncol=8,
                        bbox_to_anchor=(0.5, 1 - 0.55 / fig.get_figheight()), fontsize=8, title=None)
    fig.suptitle(f"{title}; scores as published for the same recipe")
    fig.tight_layout(rect=(0, 0, 1, 1 - 0.9 / fig.get_figheight()))
    for ax, labels in labelled:
        style.place_labels(ax, labels)
    style.save(fig, path)
    return _rounded(pd.DataFrame(points))
