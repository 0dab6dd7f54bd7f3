"""The deterministic part of the committed results, and the check that keeps it (and reports/) true.

Cost and memory are counted, not timed, so they must come out the same on any machine: every
registry model at 224, 384, its native resolution and the one its accuracy is reported at, plus
ViT-B/16 at 512 and 1024 for the textbook's attention-share examples.
"""
from __future__ import annotations

import tempfile
from pathlib import Path

from ..cards import CARDS
from ..registry import get_spec, list_models
from ..store import ResultStore
from ..tasks import Task, run_task
from .build import MARKDOWN_FILES, build_reports
from .rows import latest

EXTRA = {"vit_b16": (512, 1024)}
MEASURED = ("params", "trainable_params", "params_by_component", "tokens", "macs", "attn_macs",
            "macs_by_component", "act_peak_bytes", "train_macs", "train_act_peak_bytes", "uncounted_ops")


def deterministic_tasks() -> list[Task]:
    tasks = []
    for model in list_models():
        spec = get_spec(model)
        sizes = {224, 384, spec.native_size, *EXTRA.get(model, ())}
        if model in CARDS:
            sizes.add(CARDS[model].resolution)
        tasks += [Task("cost", model, s, 1, "fp32", train=True) for s in sorted(sizes) if spec.rule.accepts(s)]
    return tasks


def _is_deterministic(row: dict) -> bool:
    return row["batch_size"] == 1 and row["settings"] == {"dtype": "fp32", "train": True}


def _measured(row: dict) -> dict:
    return {k: row.get(k) for k in MEASURED}


def refresh(out_dir: str | Path = ".", progress=None) -> int:
    """Append the deterministic rows that results/ lacks or holds with other numbers; returns how many."""
    store = ResultStore(out_dir)
    have = {(r["model"], r["img_size"]): _measured(r) for r in latest(store.rows("cost")) if _is_deterministic(r)}
    written = 0
    for task in deterministic_tasks():
        row = run_task(task)
        if have.get((task.model, task.img_size)) != _measured(row):
            store.append(row)
            written += 1
        if progress:
            progress(f"{task.model} {task.img_size}")
    return written


def check(out_dir: str | Path = ".", progress=None) -> list[str]:
    """Problems found: a deterministic row missing or different from a fresh count, or a stale report."""
    problems = []
    store = ResultStore(out_dir)
    committed = {(r["model"], r["img_size"]): r for r in latest(store.rows("cost")) if _is_deterministic(r)}
    for task in deterministic_tasks():
        fresh = run_task(task)
        if "failed" in fresh:
            problems.append(f"{task.model} at {task.img_size}: counting failed: {fresh['failed']}")
            continue
        old = committed.get((task.model, task.img_size))
        if old is None:
            problems.append(f"results/cost.jsonl lacks {task.model} at {task.img_size}")
        elif _measured(old) != _measured(fresh):
            fields = [k for k in MEASURED if old.get(k) != fresh.get(k)]
            problems.append(f"{task.model} at {task.img_size}: committed {', '.join(fields)} differ from a fresh count")
        if progress:
            progress(f"{task.model} {task.img_size}")
    with tempfile.TemporaryDirectory() as tmp:
        build_reports(out_dir, tmp, with_plots=False)
        for name in MARKDOWN_FILES:
            committed_md = Path(out_dir) / "reports" / name
            if not committed_md.exists():
                problems.append(f"reports/{name} is missing")
            elif committed_md.read_text(encoding="utf-8") != (Path(tmp) / name).read_text(encoding="utf-8"):
                problems.append(f"reports/{name} is stale: regenerate with `python -m zoo.report`")
    return problems
