"""Reading results/ for reporting: the latest good row per measurement, grouped the way tables need them."""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from ..answers.stored import load_answers, read_select_answer
from ..console.markdown import machine_name
from ..models.registry import natural_key
from ..store.schema import fields_of, is_measured, measurement_key
from ..store.store import BadLine, ResultStore, latest
from .gpu_predictions import read_predicted_file
from .row_checks import usable_rows
from .tpu_compute import read_tpu


@dataclass
class ReportRows:
    cost: list[dict]                  # one row per (model, size, square or H x W): batch 1, fp32, a row that
                                      # counted training preferred
    cost_all: list[dict]              # every latest measured cost row (other batches, dtypes)
    throughput: list[dict]            # every latest measured timed row, each naming its machine
    not_measured: list[dict]          # latest failed or skipped rows (shown as a short list, never in tables)
    bad_lines: list[BadLine] = field(default_factory=list)
    left_out: int = 0                 # rows of feature extractors, and timed rows at H x W: not in these tables
    runs: dict = field(default_factory=dict)   # measurement key -> img/s of every measured timed row of it
    detectors: list[dict] = field(default_factory=list)   # latest whole-detector cost rows (--detector)
    segmenters: list[dict] = field(default_factory=list)  # latest whole-segmenter cost rows (--segmenter)
    answers: list | None = None       # zoo.select's stored answers to the worked questions (zoo.select.answers)
    select_answer: dict | None = None    # the last measured zoo.select answer (results/select-answer.json)
    select_answer_problem: str | None = None   # why that file cannot be used (it is then not shown)
    detection_cost: list = field(default_factory=list)    # latest measured rows at H x W sizes, of feature
    detection_timed: list = field(default_factory=list)   # extractors or of detectors (the detection section)
    predicted: list = field(default_factory=list)         # results/predicted.jsonl: predicted GPU rows, never timed
    tpu: list = field(default_factory=list)               # results/tpu_pretraining.json: predicted TPU v3 rows
    tpu_problem: str | None = None                        # why that file cannot be used
    predicted_problem: str | None = None                  # why that file cannot be used (it is then not shown)
    predicted_bad_lines: list = field(default_factory=list)   # its lines that are no usable row (BadLine each)

    @property
    def square_cost(self) -> list[dict]:
        """The cost rows at square sizes: what the tables and plots that compare resolutions by side use."""
        return [r for r in self.cost if r["img_size"] is not None]


def _latest_unmeasured(rows: list[dict]) -> list[dict]:
    """Failed/skipped rows whose measurement has no later good row."""
    last: dict[tuple, dict] = {}
    for row in rows:
        last[measurement_key(row)] = row
    return [r for r in last.values() if not is_measured(r)]


# fields the tables and plots compute with, beyond the schema's required ones (every counted row has them)
TABLE_FIELDS = {"cost": ("attn_macs", "attn_share", "macs_by_component", "uncounted_ops"), "throughput": ()}


def in_tables(row: dict) -> bool:
    """The report's tables compare classifiers: cost rows at any size (the cost table shows H x W ones under
    their label), timed rows at square sizes; feature extractors' rows stay in results/ (load_frame). A
    measured row without the fields the tables compute with (a hand-made or older row) stays out too."""
    complete = not is_measured(row) or all(row.get(f) is not None for f in TABLE_FIELDS[row["kind"]])
    square_or_counted = row.get("img_size") is not None or row["kind"] == "cost"
    return square_or_counted and not row["settings"].get("features") and not task_head(row) and complete


def task_head(row: dict) -> bool:
    """A whole detector's or segmenter's row (their own sections)."""
    return bool(row["settings"].get("detector") or row["settings"].get("segmenter"))


def detection_row(row: dict) -> bool:
    """A measured row at an H x W size, of a feature extractor or of a whole detector: the report's detection
    section (detectors.md shows detector rows again, beside the published tables; segmenters have their own)."""
    s = row["settings"]
    return is_measured(row) and not s.get("segmenter") and \
        (row.get("img_size") is None or bool(s.get("features")) or bool(s.get("detector")))


def _filled(rows: list[dict], kind: str) -> list[dict]:
    """Absent optional fields read as None, so tables never meet a missing key."""
    blank = dict.fromkeys(fields_of(kind))
    return [{**blank, **r} for r in rows]


def load(results_dir: str | Path) -> ReportRows:
    store = ResultStore(results_dir)
    every_cost, every_timed = usable_rows(store, "cost"), usable_rows(store, "throughput")   # others: bad_lines
    cost_rows = _filled([r for r in every_cost if in_tables(r)], "cost")
    timed_rows = _filled([r for r in every_timed if in_tables(r)], "throughput")
    cost_all = latest(cost_rows)
    cost: dict[tuple, dict] = {}
    for r in cost_all:
        if r["batch_size"] == 1 and r["settings"]["dtype"] == "fp32":
            key = (r["model"], r["img_h"], r["img_w"])
            if key not in cost or r["settings"].get("train") or not cost[key]["settings"].get("train"):
                cost[key] = r
    predicted = read_predicted_file(results_dir)
    tpu, tpu_problem = read_tpu(results_dir)
    select_answer, select_problem = read_select_answer(results_dir)
    runs: dict[tuple, list[float]] = {}
    for r in timed_rows:
        if is_measured(r):
            runs.setdefault(measurement_key(r), []).append(r["imgs_per_s"])
    return ReportRows(cost=sorted(cost.values(), key=lambda r: (natural_key(r["model"]), r["img_h"] * r["img_w"],
                                                                r["img_h"])),
                      cost_all=cost_all,
                      runs=runs,
                      throughput=latest(timed_rows),
                      not_measured=_latest_unmeasured(_filled(every_cost, "cost") + _filled(every_timed, "throughput")),
                      bad_lines=store.bad_lines, answers=load_answers(results_dir),
                      detectors=[r for r in latest(every_cost) if r["settings"].get("detector") and is_measured(r)],
                      segmenters=_filled([r for r in latest(every_cost)
                                          if r["settings"].get("segmenter") and is_measured(r)], "cost"),
                      detection_cost=_filled([r for r in latest(every_cost) if detection_row(r)], "cost"),
                      detection_timed=_filled([r for r in latest(every_timed) if detection_row(r)], "throughput"),
                      predicted=predicted.rows, predicted_problem=predicted.problem,
                      predicted_bad_lines=predicted.bad_lines, tpu=tpu, tpu_problem=tpu_problem,
                      select_answer=select_answer, select_answer_problem=select_problem,
                      left_out=len(every_cost) + len(every_timed) - len(cost_rows) - len(timed_rows)
                      - sum(1 for r in every_cost if task_head(r)))


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
