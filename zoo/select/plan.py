"""A measured answer holds for the machine that timed it. `zoo.select --save-plan FILE` screens here (size
rules, published accuracy, counted cost: none of it depends on the machine) and writes the candidates left
and the whole query as JSON; `zoo.select --from-plan FILE --out DIR` on the serving machine runs that query
on exactly those candidates, times them there, appends its rows to DIR/results/throughput.jsonl and stores
its answer in DIR/results/select-answer.json, with the plan's screened-out models listed as excluded."""
from __future__ import annotations

import json
from pathlib import Path

from ..errors import UsageError

PLAN_FORMAT = "archzoo-select-plan"
PLAN_VERSION = 1
# options a plan fixes: every option of the Query (zoo.options.select.OPTIONS) but where and how long this
# machine runs it
RUN_OPTIONS = ("out", "save", "budget_s", "wait_quiet", "time_all", "threads")


def plan_of(q, candidates: list[str], excluded: list[dict]) -> dict:
    """The plan file's object for a checked Query, its candidates (in the order they would be tried) and the
    models screened out here (with their reasons)."""
    from ..runs.tasks import software

    query = {k: v for k, v in q.flat().items() if k not in RUN_OPTIONS}
    query["models"] = list(q.models)
    return {"format": PLAN_FORMAT, "version": PLAN_VERSION, "query": query, "candidates": candidates,
            "screened_out": excluded, "software": software()}


def check_plan_path(path: str) -> Path:
    """--save-plan's FILE, before any work: in an existing folder, and nothing but a regular file at it (a link,
    a FIFO, a folder, /dev/full: refused, exit 2)."""
    from ..store.safe_io import refuse_unless_regular, usable_path

    if not path.strip():
        raise UsageError("--save-plan: an empty FILE name")
    usable_path(path, "--save-plan")                # a name too long, a symlink loop: one line
    target = Path(path)
    if not target.parent.is_dir():
        raise UsageError(f"--save-plan: no folder {str(target.parent)!r}")
    refuse_unless_regular(target, option="--save-plan")
    return target


def check_plan_candidates(candidates: list[dict], excluded: list[dict], q) -> None:
    """A plan with nothing to time answers nothing on the serving machine (--from-plan refuses it): a UsageError
    (exit 2, one line, FILE not written) saying why every model was screened out."""
    if candidates:
        return
    from collections import Counter

    from .shortlist import top1_note

    why = Counter(e["reason"].split(" (")[0].split(":")[0] for e in excluded).most_common(2)
    note = top1_note(excluded, q)
    raise UsageError(f"--save-plan: no candidate left to time at {q.request.img_size.label} px ({len(excluded)} "
                     f"screened out, most for: {'; '.join(f'{r} ({n})' for r, n in why)})"
                     + (f"; {note}" if note else "") + "; nothing written")


def write_plan(path: str, plan: dict) -> None:
    """Whole or not at all (zoo.store.safe_io.write_atomic: a temporary file renamed over FILE, never through a
    link); OSError (a full disk) leaves FILE as it was."""
    from ..store.safe_io import write_atomic

    write_atomic(check_plan_path(path), json.dumps(plan, indent=1) + "\n")


MAX_PLAN_BYTES = 1 << 22      # a plan of the whole registry is ~100 KB


def read_plan(path: str) -> dict:
    """A plan file, checked whole before anything is timed (UsageError, one line, for anything else): a regular
    file of at most MAX_PLAN_BYTES, strict JSON (nesting bounded, no key twice), the shape plan_of writes."""
    from ..store.safe_io import StrictJSONError, read_regular, strict_loads, usable_path

    if not path.strip():
        raise UsageError("--from-plan: an empty FILE name")
    usable_path(path, "--from-plan")
    data = read_regular(Path(path), MAX_PLAN_BYTES, "--from-plan")
    try:
        plan = strict_loads(data.decode("utf-8"), unique_keys=True)
    except (UnicodeDecodeError, StrictJSONError, ValueError) as e:
        raise UsageError(f"--from-plan: cannot read {path!r}: {e}") from None
    if not isinstance(plan, dict) or plan.get("format") != PLAN_FORMAT or plan.get("version") != PLAN_VERSION:
        raise UsageError(f"--from-plan: {path!r} is not a zoo.select plan (format {PLAN_FORMAT} {PLAN_VERSION})")
    if not isinstance(plan.get("candidates"), list) or not isinstance(plan.get("query"), dict):
        raise UsageError(f"--from-plan: {path!r} has no candidates or query")
    if not all(isinstance(m, str) for m in plan["candidates"]):
        raise UsageError(f"--from-plan: {path!r}: candidates must be model names")
    screened = plan.get("screened_out", [])
    if not isinstance(screened, list) or not all(
            isinstance(e, dict) and isinstance(e.get("model"), str) and isinstance(e.get("reason"), str)
            and _size_ok(e.get("img_size")) for e in screened):
        raise UsageError(f"--from-plan: {path!r}: screened_out must list {{model, img_size, reason}} entries")
    if not isinstance(plan["query"].get("resolution"), (int, list)) or isinstance(plan["query"]["resolution"], bool):
        raise UsageError(f"--from-plan: {path!r}: the query has no resolution")
    return plan


def _size_ok(size) -> bool:
    ints = size if isinstance(size, list) else [size]
    return 1 <= len(ints) <= 2 and all(isinstance(v, int) and not isinstance(v, bool) for v in ints)


def query_from_plan(plan: dict, run_options: dict, path: str):
    """The plan's Query on its candidates, with this machine's run options (--out, --budget-s, ...), checked
    (Query.of; a UsageError for a query no zoo.select asks)."""
    try:
        return _query_of(plan, run_options)
    except (TypeError, KeyError, ValueError, AttributeError) as e:
        raise UsageError(f"--from-plan: {path!r}: its query is not one zoo.select asks "
                         f"({type(e).__name__}: {e})") from None


def _query_of(plan: dict, run_options: dict):
    from ..options.select import OPTIONS
    from .shortlist import Query

    query = {k: v for k, v in plan["query"].items() if k in OPTIONS and k not in RUN_OPTIONS}
    query["resolution"] = tuple(query["resolution"]) if isinstance(query["resolution"], list) else query["resolution"]
    query["padded_from"] = None       # check_query sets it again from pad_to
    query["models"] = plan["candidates"] or []
    return Query.of(**query, **{k: v for k, v in run_options.items() if k in RUN_OPTIONS})
