"""The page's answer views, right after the summary: one per decision a team brings (which GPU and batch, which
backbone on this CPU, which backbone for a task). Python picks the rows each view needs from results/ and embeds
them as JSON in the page; the inlined script (views_script.SCRIPT) answers the reader's inputs offline."""
from __future__ import annotations

import html

from analysis.units import GIB, MIB

from ..models.accuracy import checkpoint_at
from ..models.detectors.published import task_fields
from .escaping import json_for_script
from .rows import ReportRows, machine_name, main_machine
from .views_script import SCRIPT

VIEW_IDS = ("view-gpu", "view-cpu", "view-task")
DATA_ID = "view-data"
DEFAULT_MODEL = "vit_b16"          # the README's first model: what the GPU view opens on
DEFAULT_GPU_MS = 50                # latency targets the views open with (the reader changes them)
DEFAULT_CPU_MS = 200


def _sig(value: float | None, digits: int = 5) -> float | None:
    """Rounded to `digits` significant digits: the page's JSON stays small and the same on any machine."""
    return None if value is None else float(f"{value:.{digits}g}")


def _top1(model: str, size: int | None) -> tuple[float | None, str | None]:
    """(top-1, pretraining group) of the checkpoint the tables show at this size (timm's default), or Nones."""
    shown = checkpoint_at(model, size) if size else None
    return (None, None) if shown is None else (shown["top1"], shown["pretraining"])


def gpu_rows(data: ReportRows) -> list[dict]:
    """Every predicted row: device, model, batch and what the view compares (all predicted, never measured)."""
    return [{"device": r["device"], "model": r["model"], "batch": r["batch_size"], "dtype": r.get("dtype"),
             "ips": _sig(r["imgs_per_s"], 7), "p10": _sig(r["imgs_per_s_p10"], 7),   # x 3600 / price: 7 digits
             "p90": _sig(r["imgs_per_s_p90"], 7),
             "ms": _sig(r["latency_ms"]), "gib": _sig(r["serve_bytes"] / GIB, 3), "fits": bool(r["fits_memory"]),
             "size": r.get("img_size")} for r in data.predicted]


def cpu_rows(data: ReportRows) -> list[dict]:
    """The timed inference rows (each naming its machine), with the top-1 of the checkpoint at that size and
    whether other processes loaded the machine while it was timed."""
    found = []
    for r in data.throughput:
        s = r["settings"]
        if s.get("train") or r.get("latency_ms_p50") is None:
            continue
        found.append({"machine": machine_name(r), "model": r["model"], "family": r.get("family"),
                      "backend": s.get("backend", "eager"), "batch": r.get("ran_batch_size") or r["batch_size"],
                      "dtype": s["dtype"], "size": r["img_size"], "ms": _sig(r["latency_ms_p50"]),
                      "ips": _sig(r["imgs_per_s"]), **dict(zip(("top1", "pretraining"), _top1(r["model"], r["img_size"]))),
                      "noisy": bool(r.get("noisy")), "others": _sig(r.get("foreign_cpu_share"), 2),
                      "cv": _sig(r.get("cv"), 2)})
    return found


def _recipe(r: dict) -> str | None:
    p = r.get("seg_published")
    return None if not p else f"UPerNet, {p['pretraining']}, {p['crop']}x{p['crop']} crop, {p['schedule']}"


def task_rows(data: ReportRows) -> list[dict]:
    """Whole detectors with a published COCO box AP and whole segmenters with a published ADE20K mIoU: the
    published score of the same recipe beside the counted inference and training cost of the whole model."""
    found = []
    for r in data.detectors:
        task = task_fields(r["model"], r["settings"]["detector"])
        if task["box_ap"] is None:
            continue
        found.append({"task": "detection", "model": r["model"], "head": r["settings"]["detector"],
                      "score": task["box_ap"], "mask": task["mask_ap"], "recipe": task["task_recipe"],
                      **_cost(r)})
    for r in data.segmenters:
        if r.get("miou") is None:
            continue
        found.append({"task": "segmentation", "model": r["model"], "head": r["settings"]["segmenter"],
                      "score": r["miou"], "mask": r.get("miou_ms"), "recipe": _recipe(r), **_cost(r)})
    return sorted(found, key=lambda t: (t["task"], -t["score"], t["model"], t["head"]))


def _cost(r: dict) -> dict:
    train = r.get("train_serve_bytes")
    return {"size": f"{r['img_h']}x{r['img_w']}", "batch": r["batch_size"], "dtype": r["settings"]["dtype"],
            "gmacs": _sig(r["macs"] / 1e9, 4), "train_gmacs": _sig((r.get("train_macs") or 0) / 1e9, 4) or None,
            "train_mib": None if train is None else round(train / MIB), "optimizer": r.get("train_optimizer")}


def _number(name: str, label: str, value, unit: str, step: str = "any") -> str:
    shown = "" if value is None else f' value="{value}"'
    return (f'<label>{html.escape(label)} <input type="number" min="0" step="{step}" name="{html.escape(name)}"{shown}> '
            f'{html.escape(unit)}</label>')


def _gpu_view(found: dict) -> str:
    devices = list(dict.fromkeys(r["device"] for r in found["gpu"]))
    models = sorted({r["model"] for r in found["gpu"]})
    options = "".join(f'<option{" selected" if m == found["gpu_model"] else ""}>{html.escape(m)}</option>'
                      for m in models)
    prices = "".join(_number(f"price-{d}", d, None, "$/h") for d in devices)
    return (f'<section class="view" id="{VIEW_IDS[0]}"><h2>Which GPU and batch? <span class="predicted">PREDICTED, '
            f'not measured</span></h2><p>Each datasheet device at the batch with the most img/s whose predicted '
            f'latency per batch is under your target and whose serving memory fits; images per dollar at the '
            f'hourly prices you type (your quote: none is shipped). Predicted by <code>zoo.compare --predict</code> '
            f'(<a href="#predicted_gpu">how, and the held-out error of the band</a>).</p>'
            f'<div class="inputs">model <select name="model">{options}</select> '
            f'{_number("target", "latency target", DEFAULT_GPU_MS, "ms / batch")}</div>'
            f'<div class="inputs prices">price per hour: {prices}</div><div class="answer"></div></section>')


def _cpu_view(found: dict) -> str:
    machines = sorted({r["machine"] for r in found["cpu"]})
    options = "".join(f'<option{" selected" if m == found["machine"] else ""}>{html.escape(m)}</option>'
                      for m in machines)
    batches = sorted({r["batch"] for r in found["cpu"]})
    batch_options = "".join(f'<option{" selected" if b == 1 else ""}>{b}</option>' for b in batches)
    return (f'<section class="view" id="{VIEW_IDS[1]}"><h2>Which backbone on this CPU?</h2><p>Measured: the most '
            f'accurate models whose median (p50) latency per batch is under your target, per backend, on one '
            f'machine at a time. <span class="loaded">loaded</span> marks a timing taken while other processes '
            f'used the CPU or with step latencies\' cv above 0.2 (<a href="#throughput">every timed row</a>).</p>'
            f'<div class="inputs">machine <select name="machine">{options}</select> batch <select name="batch">'
            f'{batch_options}</select> {_number("target", "latency target", DEFAULT_CPU_MS, "ms / batch")}</div>'
            f'<div class="answer"></div></section>')


def _task_view(found: dict) -> str:
    tasks = sorted({r["task"] for r in found["task"]})
    options = "".join(f"<option>{html.escape(t)}</option>" for t in tasks)
    return (f'<section class="view" id="{VIEW_IDS[2]}"><h2>Which backbone for a task?</h2><p>Published COCO box '
            f'and mask AP (detection) or ADE20K mIoU (segmentation; single scale, multi-scale + flip) of the same '
            f'recipe, against the whole model\'s counted GMACs per image (FLOPs = 2 x MACs) and its training '
            f'memory (fp32 weights, gradients, optimizer state and the training step\'s activation peak) at the '
            f'row\'s size and batch. Leave a budget empty for no limit (<a href="#detectors">detectors</a>, '
            f'<a href="#segmentation">segmenters</a>).</p>'
            f'<div class="inputs">task <select name="task">{options}</select> '
            f'{_number("gmacs", "at most", None, "GMACs / image")} '
            f'{_number("train", "training memory at most", None, "MiB / batch")}</div>'
            f'<div class="answer"></div></section>')


def answer_views(data: ReportRows) -> tuple[str, list[str]]:
    """(the views' HTML, one line per view without rows): what html.page places after the summary."""
    gpu, cpu = gpu_rows(data), cpu_rows(data)
    models = sorted({r["model"] for r in gpu})
    found = {"gpu": gpu, "cpu": cpu, "task": task_rows(data),
             "gpu_model": DEFAULT_MODEL if DEFAULT_MODEL in models else (models[0] if models else None),
             "machine": main_machine([r for r in data.throughput if not r["settings"].get("train")])}
    why = {"gpu": "Which GPU and batch: no predicted GPU rows (results/predicted.jsonl)",
           "cpu": "Which backbone on this CPU: no timed inference rows",
           "task": "Which backbone for a task: no detector with a published box AP or segmenter with a published mIoU"}
    return views_html(found), [line for key, line in why.items() if not found[key]]


def views_html(found: dict) -> str:
    """The three views (those with rows), their rows as JSON and the script that answers their inputs."""
    parts = [view(found) for key, view in (("gpu", _gpu_view), ("cpu", _cpu_view), ("task", _task_view))
             if found[key]]
    if not parts:
        return ""
    embedded = json_for_script(found)
    return (f'<div id="views">{"".join(parts)}</div><script type="application/json" id="{DATA_ID}">{embedded}'
            f'</script><script>{SCRIPT}</script>')
