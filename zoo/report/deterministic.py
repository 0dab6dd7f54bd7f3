"""The deterministic part of the committed results, and the check that keeps it (and reports/) true.

Cost and memory are counted, not timed, so they must come out the same on any machine: every
registry model at 224, 384, its native resolution and every resolution an accuracy entry of it
was measured at, plus ViT-B/16 at 512 and 1024 for the textbook's attention-share examples, and the
whole detectors of the published detection tables at 800 x 1280 (and ViTDet-B's Mask R-CNN and Cascade
Mask R-CNN with detectron2's ViTDet heads at 1024), each with the published AP of its recipe, and every
segmenter with a published ADE20K row at its test scale (whole and slide) and its training crop. Beside them the predicted GPU rows of the
classifiers among them (zoo.report.gpu_predictions: results/predicted.jsonl, counted on meta, shipped calibration).
`stale_rows` recounts them (never from the user cache; on the machine's cores) and `stale_reports` rebuilds every
report file in a scratch folder (markdown, the data behind each plot (plots.json), the HTML page, its inlined PNG
bytes aside) and checks each committed PNG whole and drawn from the committed rows (zoo.report.redraw).
zoo.reference adds zoo.select's worked answers to both.
"""
from __future__ import annotations

import tempfile
from pathlib import Path

from analysis.size import Size

from ..models.accuracy import accuracy_entries
from ..models.detectors.published import PUBLISHED, PUBLISHED_SIZE
from ..models.registry import get_spec, list_models
from ..models.segmenters.published import ADE20K
from ..runs.parallel import count_rows
from ..runs.request import Request
from ..store.safe_io import read_stored
from ..store.store import ResultStore, latest
from ..runs.tasks import Task
from ..store.user_cache import disabled
from .gpu_predictions import (PredictionsError, predicted_models, read_predicted_file, stale_predictions,
                              write_predictions)
from .tpu_compute import stale_tpu, write_tpu
from .build import HTML_FILE, MARKDOWN_FILES, PLOT_DATA_FILE, build_reports
from .html import without_images
from .redraw import png_problems
from .rows import load

EXTRA = {"vit_b16": (512, 1024)}
MEASURED = ("params", "trainable_params", "params_by_component", "tokens", "macs", "attn_macs",
            "macs_by_component", "act_peak_bytes", "train_macs", "train_act_peak_bytes", "train_serve_bytes",
            "weight_bytes", "uncounted_ops", "backbone_macs", "bytes_moved", "non_mac_flops",
            "arithmetic_intensity_by_component", "box_ap", "mask_ap", "miou", "slide_macs")


def deterministic_requests() -> list[Request]:
    """What the committed cost rows count: each at batch 1 in fp32 with the training step (zoo.runs.request)."""
    requests = []
    for model in list_models():
        spec = get_spec(model)
        sizes = {224, 384, spec.native_size, *EXTRA.get(model, ()),
                 *(e["img_size"] for e in accuracy_entries(model) if isinstance(e["img_size"], int))}
        requests += [Request(model, Size(s, s), train=True) for s in sorted(sizes) if spec.rule.accepts(Size(s, s))]
    requests += [Request(model, PUBLISHED_SIZE, train=True, detector=detector) for model, detector in sorted(PUBLISHED)]
    return requests + [Request("vitdet_b16", 1024, train=True, detector=detector)
                       for detector in ("vitdet_maskrcnn", "vitdet_cascade_maskrcnn")]


def segmenter_tasks() -> list[Task]:
    """Per backbone and heads with a published ADE20K row (zoo.models.segmenters.published): inference at the
    shown row's test scale (crop x 4 crop), whole and in mmseg's slide test (windows of the crop every 2/3 of it:
    the ConvNeXt configs' 512/341 and 640/426), and a training step at the crop, the recipe's images per GPU."""
    from ..models.segmenters.published import published_row
    from ..models.segmenters.specs import SEGMENTERS

    tasks = []
    for model, segmenter in dict.fromkeys((r.model, r.segmenter) for r in ADE20K if r.segmenter in SEGMENTERS):
        row = published_row(model, segmenter)
        tasks += [Task.of("cost", Request(model, row.flops_size, segmenter=segmenter),
                          slide=(row.crop, row.crop * 2 // 3)),
                  Task.of("cost", Request(model, Size(row.crop, row.crop), row.images_per_gpu, train=True,
                                          segmenter=segmenter))]
    return tasks


def deterministic_tasks() -> list[Task]:
    return [Task.of("cost", request) for request in deterministic_requests()] + segmenter_tasks()


DETERMINISTIC_SETTINGS = Task.of("cost", Request("any", Size(224, 224), train=True)).settings
SEGMENTER_SETTINGS = [{k: v for k, v in t.settings.items() if k not in ("segmenter", "slide")}
                      for t in (Task.of("cost", Request("any", 224)), Task.of("cost", Request("any", 224, train=True)))]


def _is_deterministic(row: dict) -> bool:
    settings = {k: v for k, v in row["settings"].items() if k not in ("detector", "segmenter", "slide")}
    if row["settings"].get("segmenter"):      # inference (whole and slide) at the test scale, training at the crop
        return settings in SEGMENTER_SETTINGS
    return row["batch_size"] == 1 and settings == DETERMINISTIC_SETTINGS


def _key(row: dict) -> tuple:
    s = row["settings"]
    return row["model"], row["img_h"], row["img_w"], row["batch_size"], s.get("detector"), s.get("segmenter"), \
        s.get("train"), s.get("slide")


def _task_key(task: Task) -> tuple:
    request = task.request
    return _key({"model": request.model, "img_h": request.img_size.height, "img_w": request.img_size.width,
                 "batch_size": request.batch_size, "settings": task.settings})


def _measured(row: dict) -> dict:
    return {k: row.get(k) for k in MEASURED}


def refresh(out_dir: str | Path = ".", progress=None, beside=None) -> int:
    """Append the deterministic rows that results/ lacks or holds with other numbers, and rewrite the predicted
    rows; returns how many rows were appended. beside(out_dir), if given, writes under the same lock (zoo.reference:
    zoo.select's worked answers)."""
    store = ResultStore(out_dir)
    with store.locked():
        unreadable = read_predicted_file(out_dir).problem      # found before counting: users' rows are never lost
        if unreadable:
            raise PredictionsError(f"{unreadable}: move it aside, then refresh again")
        have = {_key(r): _measured(r) for r in latest(store.rows("cost")) if _is_deterministic(r)}
        written = 0
        tasks = deterministic_tasks()
        for task, row in zip(tasks, count_rows(tasks)):
            if have.get(_task_key(task)) != _measured(row):
                store.append(row)
                written += 1
            if progress:
                progress(f"{task.request.model} {task.request.img_size}")
        if beside:
            beside(out_dir)
        write_predictions(out_dir, predicted_models(tasks))   # predicted GPU rows (rewritten whole)
        write_tpu(out_dir)         # the seeds' pre-training compute on TPU v3 (predicted, rewritten whole)
    return written


def stale_rows(out_dir: str | Path = ".", progress=None) -> list[str]:
    """check's counting part: each deterministic row and predicted row against a fresh count."""
    problems = []
    store = ResultStore(out_dir)
    committed = {_key(r): r for r in latest(store.rows("cost")) if _is_deterministic(r)}
    tasks = deterministic_tasks()
    with disabled():    # a fresh count, never the user cache's (the workers are told so too)
        for task, fresh in zip(tasks, count_rows(tasks)):
            if "failed" in fresh:
                problems.append(f"{task.request.model} at {task.request.img_size}: counting failed: {fresh['failed']}")
                continue
            old = committed.get(_task_key(task))
            if old is None:
                problems.append(f"results/cost.jsonl lacks {task.request.model} at {task.request.img_size}")
            elif _measured(old) != _measured(fresh):
                fields = [k for k in MEASURED if old.get(k) != fresh.get(k)]
                problems.append(f"{task.request.model} at {task.request.img_size}: committed {', '.join(fields)} "
                                "differ from a fresh count")
            if progress:
                progress(f"{task.request.model} {task.request.img_size}")
        problems += stale_predictions(out_dir, predicted_models(tasks)) + stale_tpu(out_dir)
    return problems


MAX_REPORT_BYTES = 64 << 20      # the committed index.html, plotly.js inlined, is about 5 MB


def stale_reports(out_dir: str | Path) -> list[str]:
    problems = []
    reports = Path(out_dir) / "reports"
    with tempfile.TemporaryDirectory() as tmp:
        build_reports(out_dir, tmp, pictures=False)     # draws only what no committed PNG proves current
        problems += png_problems(load(out_dir), reports)
        for name in (*MARKDOWN_FILES, PLOT_DATA_FILE, HTML_FILE):
            fresh = (Path(tmp) / name).read_text(encoding="utf-8")
            # NB: the committed file is read as results/ are (regular, bounded, UTF-8): a FIFO there would hang
            # --check, /dev/zero behind a link would fill the memory
            old, why = read_stored(reports / name, f"reports/{name}", MAX_REPORT_BYTES)
            if old is None:
                problems.append(why or f"reports/{name} is missing")
                continue
            if name == HTML_FILE:
                old, fresh = without_images(old), without_images(fresh)
            if old != fresh:
                problems.append(f"reports/{name} is stale: regenerate with `python -m zoo.report`")
    return problems
