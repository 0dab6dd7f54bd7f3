"""zoo.select's measured screen: time the candidates that passed the counted one, cheapest first,
reusing stored rows under the --resume key; noisy timings leave a model undecided unless --allow-noisy."""
from __future__ import annotations

import contextlib
import logging

from .models.spec import Size
from .shortlist_cost import at_batch

log = logging.getLogger("zoo.select")
TIMED_FIELDS = ("latency_ms_p50", "latency_ms_p99", "imgs_per_s", "ran_batch_size", "cv", "foreign_cpu_share",
                "noisy", "iters", "backend")


def task_for(row: dict, q):
    from .runs.tasks import Task

    return Task("throughput", row["model"], row["img_size"], row["batch_size"], q.dtype, train=q.train,
                features=q.features, device=q.device, threads=q.threads, quick=q.quick,
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


def time_candidates(rows: list[dict], q, excluded: list[dict], undecided: list[dict],
                    run=None) -> list[dict]:
    """Time `rows` cheapest first; returns those that pass. A stored noisy row is timed again; a noisy
    timing puts the model under `undecided` (neither kept nor excluded) unless q.allow_noisy.
    `run(task, macs, peak)` measures one task (default: zoo.runs.tasks.run_task)."""
    from .runs.peaks import PeakCache
    from .runs.schema import is_measured, row_key
    from .runs.store import ResultStore
    from .runs.tasks import run_task, task_key

    run = run or (lambda task, macs, peak: run_task(task, macs=macs, peak=peak))
    store = ResultStore(q.out)
    previous = ({row_key(r): r for r in store.rows("throughput") if is_measured(r)}
                if store.path("throughput").is_file() else {})
    kept = []
    with store.locked() if q.save else contextlib.nullcontext():
        peaks = PeakCache(store.dir if q.save else None)
        for row in sorted(rows, key=lambda r: (r["gmacs"], r["model"])):
            task = task_for(row, q)
            timed = previous.get(task_key(task))
            if timed is not None and timed.get("noisy") and not q.allow_noisy:
                timed = None                    # noisy evidence is not reused: time it again
            row["timing"] = "reused" if timed else "measured"
            if timed is None:
                _wait(q)
                log.info("timing %s at %s px, batch %d (%s)", row["model"], Size.of(row["img_size"]).label,
                         row["batch_size"], q.backend)
                timed = run(task, row["macs"], peaks.get(task))
                if q.save:
                    store.append(timed)
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
