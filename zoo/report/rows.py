"""Reading results/ for reporting: the latest good row per measurement, grouped the way tables need them."""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from ..answers import load_answers
from ..models.registry import natural_key
from ..runs.schema import is_measured, measurement_key
from ..runs.store import BadLine, ResultStore, latest


@dataclass
class ReportRows:
    cost: list[dict]                  # one row per (model, size): batch 1, fp32, a row that counted training preferred
    cost_all: list[dict]              # every latest measured cost row (other batches, dtypes)
    throughput: list[dict]            # every latest measured timed row, each naming its machine
    not_measured: list[dict]          # latest failed or skipped rows (shown as a short list, never in tables)
    bad_lines: list[BadLine] = field(default_factory=list)
    left_out: int = 0                 # rows at H x W sizes or of feature extractors: not in these tables
    runs: dict = field(default_factory=dict)   # measurement key -> img/s of every measured timed row of it
    answers: list | None = None       # zoo.select's stored answers to the worked questions (zoo.answers)
    detection_cost: list = field(default_factory=list)    # latest measured rows at H x W sizes or of feature
    detection_timed: list = field(default_factory=list)   # extractors (the detection section)

    @property
    def empty(self) -> bool:
        return not (self.cost_all or self.throughput)


def _latest_unmeasured(rows: list[dict]) -> list[dict]:
    """Failed/skipped rows whose measurement has no later good row."""
    last: dict[tuple, dict] = {}
    for row in rows:
        last[measurement_key(row)] = row
    return [r for r in last.values() if not is_measured(r)]


def in_tables(row: dict) -> bool:
    """The report's tables compare classifiers on square inputs; other rows stay in results/ (load_frame)."""
    return row.get("img_size") is not None and not row["settings"].get("features")


def load(results_dir: str | Path) -> ReportRows:
    store = ResultStore(results_dir)
    every_cost, every_timed = store.rows("cost", warn=False), store.rows("throughput", warn=False)
    cost_rows, timed_rows = [r for r in every_cost if in_tables(r)], [r for r in every_timed if in_tables(r)]
    cost_all = latest(cost_rows)
    cost: dict[tuple, dict] = {}
    for r in cost_all:
        if r["batch_size"] == 1 and r["settings"]["dtype"] == "fp32":
            key = (r["model"], r["img_size"])
            if key not in cost or r["settings"].get("train") or not cost[key]["settings"].get("train"):
                cost[key] = r
    runs: dict[tuple, list[float]] = {}
    for r in timed_rows:
        if is_measured(r):
            runs.setdefault(measurement_key(r), []).append(r["imgs_per_s"])
    return ReportRows(cost=sorted(cost.values(), key=lambda r: (natural_key(r["model"]), r["img_size"])),
                      cost_all=cost_all,
                      runs=runs,
                      throughput=latest(timed_rows), not_measured=_latest_unmeasured(cost_rows + timed_rows),
                      bad_lines=store.bad_lines, answers=load_answers(results_dir),
                      detection_cost=[r for r in latest(every_cost) if is_measured(r) and not in_tables(r)],
                      detection_timed=[r for r in latest(every_timed) if is_measured(r) and not in_tables(r)],
                      left_out=len(every_cost) + len(every_timed) - len(cost_rows) - len(timed_rows))


def machine_name(row: dict) -> str:
    env = row.get("env") or {}
    gpu = env.get("gpu_name")
    cpu = f"{env.get('cpu_model') or '?'} ({row.get('threads') or '?'} threads)"
    return f"{gpu} / {cpu}" if gpu else cpu


def setting_name(row: dict) -> str:
    """"fp32 bs1 inference", plus whatever else differs from the defaults (backend, channels-last, compile)."""
    s = row["settings"]
    extra = [s["backend"] for _ in [0] if s.get("backend", "eager") != "eager"]
    extra += ["channels-last"] if s.get("channels_last") else []
    extra += [f"compile={s['compile']}"] if s.get("compile") else []
    return " ".join([s["dtype"], f"bs{row['batch_size']}", "train" if s.get("train") else "inference", *extra])


def main_machine(throughput: list[dict]) -> str | None:
    """The machine with the most timed rows: plots draw one machine only."""
    counts = Counter(machine_name(r) for r in throughput)
    return counts.most_common(1)[0][0] if counts else None
