"""A measured answer holds for the machine that timed it. `zoo.select --save-plan FILE` screens here (size
rules, published accuracy, counted cost: none of it depends on the machine) and writes the candidates left
and the whole query as JSON; `zoo.select --from-plan FILE --out DIR` on the serving machine runs that query
on exactly those candidates, times them there, appends its rows to DIR/results/throughput.jsonl and stores
its answer in DIR/results/select-answer.json, with the plan's screened-out models listed as excluded."""
from __future__ import annotations

import dataclasses
import json
from pathlib import Path

from ..errors import UsageError

PLAN_FORMAT = "archzoo-select-plan"
PLAN_VERSION = 1
# options a plan fixes: everything of the Query but where and how long this machine runs it
RUN_OPTIONS = ("out", "save", "budget_s", "wait_quiet", "time_all", "threads")


def plan_of(q, candidates: list[str], excluded: list[dict]) -> dict:
    """The plan file's object for a checked Query, its candidates (in the order they would be tried) and the
    models screened out here (with their reasons)."""
    from ..runs.tasks import software

    query = {k: v for k, v in dataclasses.asdict(q).items() if k not in RUN_OPTIONS}
    query["models"] = list(q.models)
    return {"format": PLAN_FORMAT, "version": PLAN_VERSION, "query": query, "candidates": candidates,
            "screened_out": excluded, "software": software()}


def write_plan(path: str, plan: dict) -> None:
    target = Path(path)
    if not target.parent.is_dir():
        raise UsageError(f"--save-plan: no folder {str(target.parent)!r}")
    target.write_text(json.dumps(plan, indent=1) + "\n", encoding="utf-8")


def read_plan(path: str) -> dict:
    """A plan file, checked (UsageError for anything else)."""
    try:
        plan = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:
        raise UsageError(f"--from-plan: cannot read {path!r}: {getattr(e, 'strerror', None) or e}") from None
    if not isinstance(plan, dict) or plan.get("format") != PLAN_FORMAT or plan.get("version") != PLAN_VERSION:
        raise UsageError(f"--from-plan: {path!r} is not a zoo.select plan (format {PLAN_FORMAT} {PLAN_VERSION})")
    if not isinstance(plan.get("candidates"), list) or not isinstance(plan.get("query"), dict):
        raise UsageError(f"--from-plan: {path!r} has no candidates or query")
    return plan


def query_from_plan(plan: dict, run_options: dict):
    """The plan's Query on its candidates, with this machine's run options (--out, --budget-s, ...)."""
    from .shortlist import Query

    fields = set(Query.__dataclass_fields__)
    query = {k: v for k, v in plan["query"].items() if k in fields and k not in RUN_OPTIONS}
    query["resolution"] = tuple(query["resolution"]) if isinstance(query["resolution"], list) else query["resolution"]
    query["padded_from"] = None       # check_query sets it again from pad_to
    query["models"] = plan["candidates"] or []
    return Query(**query, **{k: v for k, v in run_options.items() if k in RUN_OPTIONS})
