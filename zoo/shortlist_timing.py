"""zoo.select's measured screen: time the candidates that passed the counted one on the scheduler, cheapest
first, with their counted MACs, reusing stored rows under the --resume key; noisy timings leave a model
undecided unless --allow-noisy."""
from __future__ import annotations

import contextlib
import logging

from .shortlist_cost import at_batch

log = logging.getLogger("zoo.select")
TIMED_FIELDS = ("latency_ms_p50", "latency_ms_p99", "imgs_per_s", "ran_batch_size", "cv", "foreign_cpu_share",
                "noisy", "iters", "backend")


def task_for(row: dict, q):
    from .runs.tasks import Task

    return Task("throughput", row["model"], row["img_size"], row["batch_size"], q.dtype, train=q.train,
                features=q.features, segmenter=q.segmenter, device=q.device, threads=q.threads, quick=q.quick,
                channels_last=q.channels_last, compile=q.compile, backend=q.backend, iters=q.iters,
                min_seconds=q.min_seconds, padded_from=q.padded_from)


def measured_reason(row: dict, q) -> str | None:
    from .selection_table import num

    stat = q.latency_stat
    latency = row.get(f"latency_ms_{stat}")
    if latency is None and (q.max_latency_ms is not None or q.rank == "latency"):   # a stored row without it
        return f"no latency {stat} in its timed row{at_batch(row)} ({q.backend})"
    if q.max_latency_ms is not None and latency > q.max_latency_ms:
        return f"latency {stat} {num(latency)} ms > {q.max_latency_ms:g} ms{at_batch(row)} ({q.backend})"
    if q.min_imgs_per_s is not None and row["imgs_per_s"] < q.min_imgs_per_s:
        return f"{num(row['imgs_per_s'])} img/s < {q.min_imgs_per_s:g} img/s{at_batch(row)} ({q.backend})"
    return None


def noise_reason(timed: dict) -> str:
    share = timed.get("foreign_cpu_share")
    others = "unknown" if share is None else f"{100 * share:.0f}%"
    return (f"undecided: noisy timing (cv {timed['cv']:.2f}, others' CPU {others}); --allow-noisy decides on it, "
            f"--wait-quiet SECONDS waits for a quiet machine first")


def _wait(q) -> None:
    from analysis.timing.contention import wait_for_quiet

    if q.wait_quiet and not wait_for_quiet(timeout_s=q.wait_quiet):
        log.info("the machine stayed busy for --wait-quiet %gs; timing anyway", q.wait_quiet)


def _timed(task, macs: int | None, peak: dict | None, q) -> dict:
    """Time one task (waiting for a quiet machine first when asked); the scheduler hands it the MACs."""
    from .runs.tasks import run_task

    _wait(q)
    log.info("timing %s at %s px, batch %d (%s)", task.model, task.img_size.label, task.batch_size, task.backend)
    return run_task(task, macs=macs, peak=peak)


def time_candidates(rows: list[dict], q, excluded: list[dict], undecided: list[dict], counts) -> list[dict]:
    """Time `rows` cheapest first on the scheduler (zoo.runs.scheduler), with the MACs of `counts` (the counting
    schedule); returns those that pass. A stored row under the --resume key is reused, unless it is noisy:
    that is timed again. A noisy timing puts the model under `undecided` (neither kept nor excluded) unless
    q.allow_noisy."""
    from .runs.peaks import PeakCache
    from .runs.scheduler import run_in_order, schedule
    from .runs.store import ResultStore

    store = ResultStore(q.out)
    stored = store.rows("throughput") if store.path("throughput").is_file() else []
    rows = sorted(rows, key=lambda r: (r["gmacs"], r["model"]))
    tasks = [task_for(row, q) for row in rows]
    plan = schedule(tasks, stored, reuse=lambda r: q.allow_noisy or not r.get("noisy"), counted=counts)
    measured = []

    def on_row(row: dict) -> None:
        if q.save:
            store.append(row)
        measured.append(row)

    with store.locked() if q.save else contextlib.nullcontext():
        peaks = PeakCache(store.dir if q.save else None)
        run_in_order(plan, lambda task, macs, peak: _timed(task, macs, peak, q), on_row, peaks)
    timings = {**plan.answered, **dict(zip(plan.timed, measured))}
    kept = []
    for row, task in zip(rows, tasks):
        timed = timings[task]
        row["timing"] = "reused" if task in plan.answered else "measured"
        entry = {"model": row["model"], "img_size": row["img_size"]}
        if timed.get("failed"):
            excluded.append({**entry, "reason": f"timing failed: {timed['failed']}"})
            continue
        row.update({k: timed.get(k) for k in TIMED_FIELDS})
        if timed.get("noisy") and not q.allow_noisy:
            undecided.append({**entry, "reason": noise_reason(timed), **{k: row[k] for k in TIMED_FIELDS}})
            continue
        reason = measured_reason(row, q)
        if reason:
            excluded.append({**entry, "reason": reason + (" (noisy timing, --allow-noisy)" if row["noisy"] else "")})
        else:
            kept.append(row)
    return kept
