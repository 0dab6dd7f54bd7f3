"""zoo.select cut short before it times (Ctrl-C, SIGTERM or --budget-s while screening or counting): the answer
so far, decided models where they belong and every other model untimed with why, marked partial with its exit
status (docs/select.md). The timing loop's own interruptions are zoo.select.timing's."""
from __future__ import annotations

import logging

from .budget import partial_of

log = logging.getLogger("zoo.select")


def cut_short(error: KeyboardInterrupt, q, placed: tuple[list, list], candidates: list[dict], elapsed_s: float,
              where: str = "while counting") -> tuple[list[dict], dict]:
    """(the shortlist: the counted candidates for a question on counts alone, none for a measured one; the
    timing summary, partial) after `error` stopped the screens or the counting. `placed`: (excluded, undecided)
    so far. Models in neither, nor counted, are untimed, "not counted"; a measured question's counted candidates
    are untimed, "counted, not timed"."""
    excluded, undecided = placed
    partial = partial_of(error, where)
    log.info("zoo.select: %s: the answer so far follows", partial["reason"])
    decided = {e["model"] for e in [*excluded, *undecided]}
    counted = {r["model"]: r for r in candidates}
    untimed = []
    for model in q.models:
        if model in decided or (model in counted and not q.measured):
            continue
        state = "counted, not timed" if model in counted else "not counted"
        untimed.append({"model": model, "img_size": q.resolution, "reason": f"untimed: {partial['reason']} ({state})"})
    summary = {"timed": 0, "reused": 0, "screened_out": len(excluded), "bounded_out": 0, "untimed": untimed,
               "partial": partial, "budget_s": q.budget_s, "elapsed_s": elapsed_s, "time_all": q.time_all,
               "bound_rates": {}}
    return ([] if q.measured else candidates), summary


def undecided_rows(rows: list[dict], done, excluded: list[dict], undecided: list[dict]) -> list[dict]:
    """The rows of `rows` the timing loop had not placed (kept, excluded, undecided or untimed) when it stopped."""
    placed = {r["model"] for r in [*done.kept, *done.untimed, *excluded, *undecided]}
    return [r for r in rows if r["model"] not in placed]
