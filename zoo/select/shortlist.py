"""The selection behind `python -m zoo.select`: candidates screened by size rule, published accuracy,
counted cost and measured speed (in that order), ranked, with Pareto fronts and reasons for every exclusion."""
from __future__ import annotations

import time
from typing import Union

from ..models.accuracy import (accuracy_at, accuracy_entries, checkpoint_at, entry_fields, pareto_front,
                              pretraining_of, teacher_groups)
from ..models.accuracy import pretraining_groups as checkpoint_groups
from ..models.registry import TIMM_PREFIX, get_spec
from ..models.spec import Size
from ..options.compare import NO_STAGES, no_stages
from ..options import BACKENDS, COMPILE_MODES, pretraining_option  # noqa: F401 - zoo.select names them
from ..options import SELECT_FORMATS as FORMATS  # noqa: F401 - zoo.select.FORMATS
from ..options.select import DEFAULT_BUDGET_S, LATENCY_STATS, Constraints, Query, check_query  # noqa: F401
from ..runs.tasks import one_line
from ..console.signals import defer
from ..answers.text import num  # noqa: F401 - the callers' number format

from .rank import (FALLBACK_RANK, MEASURED_RANKS, RANKS, SEG_RANKS, TASK_RANKS,  # noqa: F401
                   _rank_field, _rank_key, _versus_next, effective_rank, pareto_axes, rank_screen, timing_key)


def detector_reason(model: str, q: Query) -> str | None:
    """Why `model` cannot carry q.detector: a detector needs maps at strides 4-32 (hierarchical backbones and
    ViTDet's simple pyramid), which a plain ViT/DeiT and a timm: model (not checked here) do not give."""
    spec, detector = get_spec(model), q.request.detector
    if detector is None or spec.family == "vitdet":
        return None
    if model.startswith(TIMM_PREFIX) or spec.is_token_model:
        return f"--detector {detector}: gives one map, not maps at strides 4-32 (use vitdet_*)"
    return None


def stages_reason(model: str, q: Query) -> str | None:
    """Why `model` cannot have q.frozen_stages: it has blocks, not stages (as zoo.compare refuses it)."""
    if q.request.frozen_stages is None or model.startswith(TIMM_PREFIX) or not no_stages(model):
        return None
    return f"--frozen-stages: {NO_STAGES}"


def _accuracy(model: str, img_size: Size, groups: list[str] | None, weights: str) -> tuple[dict | None, str | None]:
    """(the checkpoint the row shows under --weights, chosen among --pretraining's groups; the reason the
    model is excluded by --pretraining, or None)."""
    entry = checkpoint_at(model, img_size, weights, groups)
    if groups is None or entry is not None:
        return entry, None
    has = checkpoint_groups(model)      # of the checkpoints timm can load, never of a card without weights
    if set(has) & set(groups):
        return None, None          # no accuracy at this size, but it has checkpoints of those groups
    taught = "".join(f"; {t}" for t in teacher_groups(model))          # where a teacher decided the group
    return None, (f"no {','.join(groups)} checkpoint (its checkpoints: {', '.join(has)}{taught})" if has else
                  f"no {','.join(groups)} checkpoint (timm has no evaluated checkpoint of it)")


def _row(model: str, img_size: Size, entry: dict | None, weights: str = "default", groups=None) -> dict:
    robust = entry if entry and entry["source"] == "timm" else (entry or {}).get("timm_eval") or entry or {}
    fields = entry_fields(entry)          # the names zoo.compare's rows give the same fields
    if entry is None:
        fields["pretraining"] = pretraining_of(model, None, weights, groups)
    return {"model": model, "img_size": img_size, "family": get_spec(model).family, **fields,
            "imagenet_v2": robust.get("imagenet_v2"), "sketch": robust.get("sketch"),
            "robustness_weights": robust.get("weights") if robust.get("imagenet_v2") is not None else None,
            "accuracy": accuracy_at(model, img_size)}


NO_TOP1 = "no top-1 known at"        # a --min-top1 exclusion at a size no checkpoint of the model was evaluated at


def nearest_evaluated(model: str, q: Query) -> dict | None:
    """The size nearest q's (by pixel count, on a log scale; the smaller on a tie) at which `model` has a top-1 under
    q's --weights and --pretraining, and that its size rule takes: {"img_size": side, "top1", "source"}, or None.
    NB: a top-1 is never carried from one size to another; this only says where one was measured."""
    import math

    pixels = q.request.img_size.pixels
    sides = sorted({e["img_size"] for e in accuracy_entries(model)}, key=lambda s: (abs(math.log(s * s / pixels)), s))
    for side in sides:
        entry = checkpoint_at(model, side, q.weights, q.pretraining)
        if entry is not None and get_spec(model).rule.accepts(Size(side, side)):
            return {"img_size": side, "top1": entry["top1"], "source": entry["source"]}
    return None


def top1_note(excluded: list[dict], q: Query) -> str | None:
    """For an answer left empty by --min-top1 at a size without evaluated top-1s: the evaluated size nearest it for
    the most of those models, named as such (never a top-1 at this size)."""
    missing = [e for e in excluded if e["reason"].startswith(NO_TOP1)]
    near = [e["nearest_evaluated"]["img_size"] for e in missing if e.get("nearest_evaluated")]
    if not near:
        return None
    best = max(sorted(set(near)), key=near.count)
    label = q.request.img_size.label
    return (f"no top-1 is known at {label} px for {len(missing)} of the {len(q.models)} models (ImageNet-1k top-1s "
            f"are published at the sizes checkpoints were evaluated at); the nearest evaluated size is {best} px for "
            f"{near.count(best)} of them: ask --resolution {best} for an answer on measured top-1s")


def _published(model: str, q: Query) -> tuple[dict | None, str | None]:
    """(the accuracy entry the row shows, None), or (None, the accuracy constraint it broke)."""
    size, groups, label, min_top1 = q.resolution, q.pretraining, q.request.img_size.label, q.constraints.min_top1
    entry, reason = _accuracy(model, size, groups, q.weights)
    if reason:
        return None, reason
    if q.weights_available and not any(e["source"] == "timm" and e["img_size"] == size
                                       and (groups is None or e["pretraining"] in groups)
                                       for e in accuracy_entries(model)):
        return None, f"no timm weights evaluated at {label} px"
    if min_top1 is not None:
        if entry is None:
            near = nearest_evaluated(model, q)
            return None, f"{NO_TOP1} {label} px" + ("" if near is None else
                                                    f" (nearest evaluated size: {near['img_size']} px, top-1 "
                                                    f"{near['top1']:g} there, {near['source']})")
        if entry["top1"] < min_top1:
            return None, f"top-1 {entry['top1']:g} < {min_top1:g} ({entry['source']}, {label} px)"
    return entry, None


def screen(model: str, q: Query) -> tuple[dict | None, str | None]:
    """(the accuracy entry the row shows, None), or (None, the first constraint it broke before counting): its
    size rule, then published accuracy."""
    reason = get_spec(model).rule.refusal(q.request.img_size) or detector_reason(model, q) or stages_reason(model, q)
    return (None, reason) if reason else _published(model, q)


def screen_all(q: Query) -> tuple[list[dict], dict[str, dict | None]]:
    """(every model the size rule or the accuracy screen excludes, with why; {model: its published entry} of
    the rest), in the query's order."""
    excluded, published = [], {}
    for model in q.models:
        entry, reason = screen(model, q)
        if reason:
            excluded.append({"model": model, "img_size": q.resolution, "reason": reason})
            if reason.startswith(NO_TOP1) and "nearest evaluated size" in reason:
                excluded[-1]["nearest_evaluated"] = nearest_evaluated(model, q)
        else:
            published[model] = entry
    return excluded, published


def count_screen(published: dict[str, dict | None], q: Query, excluded: list[dict]):
    """Count the models that passed `screen` (model -> its accuracy entry) on the scheduler; returns (the
    schedule, whose MACs timing takes; the rows within the counted budgets; the interrupt that stopped the
    counting, or None: the models counted by then are placed, the rest in neither). The others: `excluded`."""
    from .cost import count_candidates, counted_reason, counted_row

    counts, cost_rows, stop = count_candidates(list(published), q)
    candidates = []
    for model, entry in published.items():
        if model not in cost_rows:
            continue          # not counted: stopped before it
        row, failed = None, cost_rows[model].get("failed")     # a timm model that refuses the size, an error
        skipped = cost_rows[model].get("skipped")               # a count past the row schema's int64 bound
        if skipped:
            excluded.append({"model": model, "img_size": q.resolution, "reason": f"not counted: {skipped}"})
            continue
        if not failed:
            try:
                row = {**_row(model, q.resolution, entry, q.weights, q.pretraining),
                       **counted_row(model, q, cost_rows[model])}
            except KeyboardInterrupt as e:     # inside --batch-size auto's larger counts: the rest uncounted
                return counts, candidates, e.with_traceback(None)
            except Exception as e:  # noqa: BLE001 - a failed count at --batch-size auto's larger batches
                failed = one_line(e)
        reason = f"counting failed: {failed}" if failed else counted_reason(row, q)
        if reason:
            excluded.append({"model": model, "img_size": q.resolution, "reason": reason})
        else:
            candidates.append(row)
    return counts, candidates, stop


def _describe(q: Query, rank: str, note: str | None, axes: tuple) -> dict:
    x, y, lower = axes
    flat = q.flat()
    query = {k: flat[k] for k in ("resolution", "padded_from", "batch_size", "dtype", "features", "detector",
                                        "train", "optimizer", "device", "threads", "quick", "iters", "min_seconds", "backend",
                                        "channels_last", "compile", "allow_noisy", "latency_stat", "pretraining",
                                        "weights", "weights_available", "budget_s", "time_all", "predict")}
    for axis in ("segmenter", "frozen_stages"):   # only when asked: stored answers to other questions keep their keys
        if flat[axis] is not None:
            query[axis] = flat[axis]
    query.update({"rank": rank, "rank_asked": q.rank, "rank_note": note, "models": q.models,
                  "constraints": q.constraints.asked(),
                  "pareto_axes": {"x": x, "y": y, "lower_x_is_better": lower}})
    return query


def select(models: Union[Query, list, str, None] = None, resolution: Union[Size, str] = 224, *, timing=None,
           **options) -> dict:
    """What `python -m zoo.select` prints as JSON: {"query", "shortlist", "excluded", "undecided", "pareto"},
    and for a measured (or interrupted) question also "untimed" and "timing" (counts, partial or None).
    Takes a checked Query (Query.of), or its options by their flat names (zoo.options.select.OPTIONS:
    `select(["deit_ti"], 384, max_gmacs=20)`). Raises UsageError for bad options before any work. timing: a
    zoo.select.timing.Timing (tests hand in a fake timer)."""
    started = time.monotonic()          # the budget counts from here: checking, counting, the peak probe spend it
    if not isinstance(models, Query) and options.get("predict") is not None:     # a GPU not at hand
        from ..options.predicted import predicted_fields
        from .predicted import Predicted, answer

        return answer(Predicted(**predicted_fields({"models": models, "resolution": resolution, **options})))
    q = models if isinstance(models, Query) else Query.of(models, resolution, **options)
    excluded, undecided, candidates, summary, where = [], [], [], None, "while counting"
    try:        # an interrupt in the screens, the counts or before the timing loop: what is decided stays
        screened, published = screen_all(q)
        excluded += screened
        counts, candidates, stop = count_screen(published, q, excluded)
        if stop is None and q.measured:
            from .timing import time_candidates

            candidates = rank_screen(candidates, q, excluded)
            order = q.rank if q.rank in MEASURED_RANKS else effective_rank(candidates, q)[0]
            candidates.sort(key=timing_key(order, q.latency_stat))
            spent, where = time.monotonic() - started if timing is None else 0.0, "before timing"   # a fake: its clock
            candidates, summary = time_candidates(candidates, q, excluded, undecided, counts, timing, order, spent)
    except KeyboardInterrupt as e:
        stop = e.with_traceback(None)       # NB: not its frames (a suspended counting pool among them)
    if stop is not None:
        from .stopped import cut_short

        candidates, summary = cut_short(stop, q, (excluded, undecided), candidates, time.monotonic() - started, where)
    defer("zoo.select")       # settled: a signal from here on is kept, the answer finished, kept and printed
    rank, note = effective_rank(candidates, q)
    candidates.sort(key=_rank_key(rank, q.latency_stat))
    if rank == "latency":
        _versus_next(candidates)
    axes = pareto_axes(rank, q.latency_stat)
    # the front's groups: the classifier checkpoint's pretraining, or for mIoU the segmentation recipe's
    groups = [r.get("miou_pretraining") if rank.startswith("miou") else r["pretraining"] for r in candidates]
    front = pareto_front([{**r, "pretraining": g} for r, g in zip(candidates, groups)], *axes)
    pareto: dict[str, list[str]] = {}
    for i, row in enumerate(candidates):
        row["pareto"] = i in front
        row.pop("macs")
        row.pop("work")
        if i in front:
            pareto.setdefault(groups[i] or "unknown", []).append(row["model"])
    order = {m: i for i, m in enumerate(q.models)}
    excluded.sort(key=lambda e: order.get(e["model"], len(order)))
    result = {"query": _describe(q, rank, note, axes), "shortlist": candidates, "excluded": excluded,
              "undecided": undecided, "pareto": pareto}
    hint = None if candidates or undecided else top1_note(excluded, q)
    if hint:                     # only then: stored answers to other questions keep their keys
        result["note"] = hint
    if summary is not None:
        result["untimed"] = summary.pop("untimed")
        result["timing"] = summary
    return result
