"""zoo.select's counted screen: a candidate's params, MACs and memory on the meta device at the query's
batch, dtype, feature-extractor and training settings (cost tasks on the scheduler), and the first counted
budget it breaks."""
from __future__ import annotations

from analysis.batch_search import largest_batch_where
from analysis.units import MIB

from ..options.values import MAX_BATCH
from .bound import split_macs


def count_candidates(models: list[str], q):
    """Count `models` at the query's batch on the scheduler (zoo.runs.scheduler): read from the user cache, the
    rest counted on the machine's cores. Returns (the schedule, whose MACs go on to timing; model -> cost row of
    the models counted; the Ctrl-C, SIGTERM or budget that stopped the counting, or None)."""
    from ..runs.scheduler import run_in_order, schedule
    from ..runs.tasks import Task, run_task

    batch = 1 if q.request.batch_size == "auto" else q.request.batch_size
    tasks = [Task.of("cost", q.request_for(model, batch), padded_from=q.padded_from) for model in models]
    plan, rows, stop = schedule(tasks), [], None
    try:
        run_in_order(plan, run_task, rows.append, pooled=True)
    except KeyboardInterrupt as e:      # the pool's queued counts cancelled (zoo.runs.parallel); the rows so far kept
        stop = e.with_traceback(None)   # NB: its frames would keep a suspended pool, and its workers, alive
    return plan, {task.request.model: row for task, row in zip(tasks, rows)}, stop


def _serve_mib(c: dict) -> float:
    return (c["weight_bytes"] + c["act_peak_bytes"]) / MIB


def _auto_batch(model: str, q, first: dict) -> tuple[int, dict]:
    """The largest batch whose weights + activation peak fit q.constraints.max_serve_mib (counted on meta), with its
    count; `first` is the batch-1 count, which fits."""
    from ..runs.counted import counted

    counts, budget_mib = {1: first}, q.constraints.max_serve_mib

    def fits(b: int) -> bool:
        if b not in counts:     # the user cache's when counted; --train's with the query's optimizer
            counts[b] = counted(q.request_for(model, b))
        return _serve_mib(counts[b]) <= budget_mib

    per_image = max(first["act_peak_bytes"], 1) / MIB
    guess = int(max(1, min(MAX_BATCH, (budget_mib - first["weight_bytes"] / MIB) // per_image)))
    batch = largest_batch_where(fits, range(1, MAX_BATCH + 1), start=guess - 1) or 1
    return batch, counts[batch]


def counted_row(model: str, q, cost_row: dict) -> dict:
    """The counted fields of a shortlist row from the model's cost row at the query's batch (batch "auto":
    the largest batch that fits --max-serve-mib)."""
    auto = q.request.batch_size == "auto"
    batch = cost_row["batch_size"]
    counted = cost_row       # --train's memory is the query's optimizer's (its request's)
    if auto and _serve_mib(counted) <= q.constraints.max_serve_mib:
        batch, counted = _auto_batch(model, q, counted)
    row = {"batch_size": batch, "params_m": counted["params"] / 1e6, "gmacs": counted["macs"] / 1e9,
           "macs": counted["macs"], "act_mib": counted["act_peak_bytes"] / MIB,
           "weight_mib": counted["weight_bytes"] / MIB, "serve_mib": _serve_mib(counted)}
    gemm, other = split_macs(counted)
    row["work"] = {"gemm_macs": gemm, "other_macs": other, "weight_bytes": counted["weight_bytes"]}  # the bound's
    if q.request.features:
        row["features"] = counted.get("features")
    if q.request.segmenter:     # the published ADE20K row --pretraining / --weights pick (zoo.models.segmenters.published)
        from ..models.segmenters.published import task_fields

        seg = task_fields(model, q.request.segmenter, (cost_row["img_h"], cost_row["img_w"]), q.pretraining, q.weights)
        published = seg["seg_published"] or {}
        row.update(miou=seg["miou"], miou_ms=seg["miou_ms"], miou_source=published.get("source"),
                   miou_recipe=seg["seg_recipe"] or seg["seg_unmatched"],
                   miou_pretraining=published.get("pretraining_group"))    # the recipe's: the front's groups
    if q.request.detector is not None:     # the published AP of the recipe counted (zoo.models.detectors.published)
        published = cost_row.get("task_published") or {}
        row.update(detector=cost_row["settings"]["detector"], box_ap=cost_row.get("box_ap"),
                   mask_ap=cost_row.get("mask_ap"), task_recipe=cost_row.get("task_recipe"),
                   task_unmatched=cost_row.get("task_unmatched"))
        if published:      # the Pareto front groups by the pretraining behind the published AP
            row.update(pretraining=published["pretraining_group"],
                       ap_recipe=f"{published['schedule']}, {published['pretraining']}")
    if q.request.train:
        gpu = counted["train_gpu_parts"]        # train_mib's own step (zoo.runs.counted.serving_memory)
        row.update(train_gmacs=counted["train_macs"] / 1e9, train_act_mib=gpu["act_peak_bytes"] / MIB,
                   train_mib=counted["train_serve_bytes"] / MIB, train_optimizer=counted["train_optimizer"])
    return row


def at_batch(row: dict) -> str:
    return "" if row["batch_size"] == 1 else f" at batch {row['batch_size']}"


def counted_reason(row: dict, q) -> str | None:
    from ..answers.text import num

    checks = [("max_params", row["params_m"], "params {v} M > {lim} M"),
              ("max_gmacs", row["gmacs"], "{v} GMACs > {lim}"),
              ("max_act_mib", row["act_mib"], "activation peak {v} MiB > {lim} MiB{b}"),
              ("max_serve_mib", row["serve_mib"], "serving memory {v} MiB > {lim} MiB{b} (weights {w} "
                                                  "MiB + activations {a} MiB)"),
              ("max_train_mib", row.get("train_mib"), "training memory {v} MiB > {lim} MiB{b} ({o}; "
                                                      "training activations {t} MiB)")]
    for key, value, text in checks:
        limit = getattr(q.constraints, key)
        if limit is not None and value > limit:
            return text.format(v=num(value), lim=f"{limit:g}", b=at_batch(row), w=num(row["weight_mib"]),
                               a=num(row["act_mib"]), o=row.get("train_optimizer"),
                               t=num(row.get("train_act_mib") or 0))
    return None
