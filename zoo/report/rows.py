"""Reading results/ for reporting: the latest good row per measurement, as plain dicts."""
from __future__ import annotations

from pathlib import Path

from ..store import ResultStore


def latest(rows: list[dict]) -> list[dict]:
    """Later rows replace earlier ones of the same measurement; failed and skipped rows are dropped."""
    kept: dict[tuple, dict] = {}
    for row in rows:
        if "failed" in row or "skipped" in row:
            continue
        machine = tuple(sorted((row.get("env") or {}).items())) if row["kind"] == "throughput" else ()
        key = (row["kind"], row["model"], row["img_size"], row["batch_size"],
               tuple(sorted(row["settings"].items())), machine)
        kept[key] = row
    return sorted(kept.values(), key=lambda r: (r["model"], r["img_size"], r["batch_size"]))


def load(results_dir: str | Path) -> tuple[list[dict], list[dict]]:
    """(cost rows at batch 1 fp32, throughput rows) from <results_dir>/results."""
    store = ResultStore(results_dir)
    cost: dict[tuple, dict] = {}
    for r in latest(store.rows("cost")):  # one row per model and size: one that counted training wins
        if r["batch_size"] == 1 and r["settings"]["dtype"] == "fp32":
            key = (r["model"], r["img_size"])
            if key not in cost or r["settings"].get("train") or not cost[key]["settings"].get("train"):
                cost[key] = r
    return sorted(cost.values(), key=lambda r: (r["model"], r["img_size"])), latest(store.rows("throughput"))


def machine_name(row: dict) -> str:
    env = row.get("env") or {}
    gpu = env.get("gpu_name")
    cpu = f"{env.get('cpu_model', '?')} ({env.get('threads', '?')} threads)"
    return f"{gpu} / {cpu}" if gpu else cpu
