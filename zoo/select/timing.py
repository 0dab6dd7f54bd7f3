"""zoo.select's measured screen: the candidates that passed the counted one, bounded first (a model whose
lower-bound latency on this machine breaks the budget is excluded untimed, zoo.select.bound), then timed
one at a time in the order that settles the answer soonest (best-ranked first; for a measured rank, the
lowest bound first), stopping when no untimed candidate can beat the best that fits, when --budget-s is
spent, or on Ctrl-C / SIGTERM (the answer so far is kept, marked partial). Each decision carries its
evidence (zoo.select.evidence): a model whose band straddles the budget is undecided, within noise.
Stored rows under the --resume key are reused (through zoo.runs.scheduler); measured ones are appended."""
from __future__ import annotations

import contextlib
import logging
import os
import time
from dataclasses import dataclass, field
from typing import Callable

from .bound import trusted_rates
from .budget import BUDGET_GRACE_S, PARTIAL_STATUS, BudgetSpent, budget_alarm  # noqa: F401 - the API
from .budget import partial_of as _partial
from .cost import at_batch
from .evidence import against_budget, against_rate, band_text, evidence

log = logging.getLogger("zoo.select")
TIMED_FIELDS = ("latency_ms_p50", "latency_ms_p99", "imgs_per_s", "ran_batch_size", "cv", "foreign_cpu_share",
                "noisy", "iters", "backend")


@dataclass
class Timing:
    """How zoo.select times: run(task, macs, peak) -> a timed row; peak(task) -> this machine's kept GEMM peak
    and bandwidth ({} for none); clock() -> seconds; load() -> the machine's 1-min load average (None: not
    known). Tests hand in a seeded fake; nothing else is timed."""
    run: Callable
    peak: Callable
    clock: Callable[[], float] = time.monotonic
    caches: Callable[[], int | None] = None
    load: Callable[[], float | None] = lambda: None
    committed: Callable = lambda task: {}     # the committed quiet peak and bandwidth of this CPU model


@dataclass
class Progress:
    """What the timing loop has settled so far."""
    kept: list = field(default_factory=list)
    untimed: list = field(default_factory=list)
    timed: int = 0
    reused: int = 0
    bounded: int = 0
    partial: dict | None = None
    loaded: list = field(default_factory=list)       # undecided because timed under load
    load: float | None = None                        # the load average around the last fresh timing


def placed(row: dict, **fields) -> dict:
    """A model's entry in the answer's excluded, undecided or untimed list: its name and size, then `fields`."""
    return {"model": row["model"], "img_size": row["img_size"], **fields}


def task_for(row: dict, q):
    from ..runs.tasks import Task

    request = q.request_for(row["model"], row["batch_size"]).replace(optimizer=None)    # a timed step is SGD's
    return Task.of("throughput", request, q.timing, padded_from=q.padded_from)


def decide(row: dict, q, load: float | None = None) -> tuple[str, str, dict]:
    """("fits" | "over" | "within noise", the text saying why, the evidence) of a timed row; `load`: the load
    average sampled around its timing (None: not timed now, or unknown)."""
    from ..answers.text import num

    stat, point = q.latency_stat, q.allow_noisy
    if row.get(f"latency_ms_{stat}") is None:
        return "over", f"no latency {stat} in its timed row{at_batch(row)} ({q.timing.backend})", {}
    ev = evidence(row, stat, load)
    noisy = " (noisy timing, --allow-noisy)" if row.get("noisy") and point else ""
    texts = []
    if q.constraints.max_latency_ms is not None:
        verdict = against_budget(ev, q.constraints.max_latency_ms, point)
        sign = {"over": ">", "fits": "<=", "within noise": "vs"}[verdict]
        texts.append((verdict, f"latency {stat} {num(ev['value_ms'])} ms {sign} {q.constraints.max_latency_ms:g} ms"
                               f"{at_batch(row)} ({q.timing.backend}; {band_text(ev)}){noisy}"))
    if q.constraints.min_imgs_per_s is not None:
        median = evidence(row, "p50")
        verdict = against_rate(median, row["batch_size"], q.constraints.min_imgs_per_s, point)
        sign = {"over": "<", "fits": ">=", "within noise": "vs"}[verdict]
        texts.append((verdict, f"{num(row['imgs_per_s'])} img/s {sign} {q.constraints.min_imgs_per_s:g} img/s"
                               f"{at_batch(row)} ({q.timing.backend}; median step {band_text(median)}){noisy}"))
    if not texts and row.get("noisy") and not point:      # a measured rank on a noisy row: no budget to beat
        return "within noise", noise_reason(row), ev
    for wanted in ("over", "within noise"):
        for verdict, text in texts:
            if verdict == wanted:
                if wanted == "over":
                    return verdict, text, ev
                loaded = ev.get("loaded")
                return verdict, (f"undecided: {loaded}: a loaded timing cannot exclude (--wait-quiet SECONDS waits "
                                 f"for a quiet machine): " if loaded else "undecided: within noise: ") + text, ev
    return "fits", "; ".join(t for _, t in texts) or f"timed ({band_text(ev)})", ev


def noise_reason(timed: dict) -> str:
    share = timed.get("foreign_cpu_share")
    others = "unknown" if share is None else f"{100 * share:.0f}%"
    return (f"undecided: noisy timing (cv {timed['cv']:.2f}, others' CPU {others}), nothing to rank it by; "
            f"--allow-noisy ranks on it, --wait-quiet SECONDS waits for a quiet machine first")


def _default_timing(q, store, saving: bool) -> Timing:
    from analysis.timing.contention import wait_for_quiet

    from ..runs.peaks import PeakCache
    from ..runs.tasks import run_task
    from .bound import cache_bytes

    peaks = PeakCache(store.dir if saving else None)

    def run(task, macs, peak):
        if q.wait_quiet and not wait_for_quiet(timeout_s=q.wait_quiet):
            log.info("the machine stayed busy for --wait-quiet %gs; timing anyway", q.wait_quiet)
        return run_task(task, macs=macs, peak=peak)

    return Timing(run=run, peak=peaks.get, caches=cache_bytes, load=load_average, committed=_committed)


def _committed(task) -> dict:
    from ..runs.tasks import machine
    from .bound import committed_rates

    if str(task.timing.device) != "cpu":
        return {}
    return committed_rates(machine("cpu").get("cpu_model"), task.request.dtype, task.timing.threads)


def load_timing_modules() -> None:
    """torch and the timing stack, imported whole before the budget alarm is armed and before any code that
    catches an interrupt: an alarm or a Ctrl-C inside `import torch` would leave a half-imported torch that the
    rest of the run (a probe, machine()) imports again and crashes on (a traceback, exit 134 or 139)."""
    import torch  # noqa: F401

    from ..runs import peaks, scheduler, tasks, timed  # noqa: F401
    from ..store import store  # noqa: F401


def load_average() -> float | None:
    """The 1-min load average (runnable tasks), or None where the OS does not say."""
    try:
        return os.getloadavg()[0]
    except (AttributeError, OSError):
        return None


def _bound_out(rows: list[dict], q, peak: dict, caches, excluded: list[dict]) -> tuple[list[dict], dict]:
    """The rows whose lower bound keeps the budget (model -> bound); the others go to `excluded`."""
    from .bound import bound_text, lower_bound_ms

    budget, rate = q.constraints.max_latency_ms, q.constraints.min_imgs_per_s
    device = "cpu" if str(q.timing.device).startswith("cpu") else str(q.timing.device)
    keep, bounds = [], {}
    for row in rows:
        work = {**row["work"], "batch_size": row["batch_size"], "train": q.request.train}
        bound = lower_bound_ms(work, peak, device, caches)
        bounds[row["model"]] = bound
        limits = (budget, None if rate is None else row["batch_size"] * 1e3 / rate)     # a rate as ms per batch
        broken = [b for b in limits if b is not None and bound > b]
        if broken:
            excluded.append(placed(row, bound_ms=bound, reason=bound_text(bound, min(broken), work, peak)))
        else:
            keep.append(row)
    return keep, bounds


def time_candidates(rows: list[dict], q, excluded: list[dict], undecided: list[dict], counts,
                    timing: Timing | None = None, order_by: str | None = None,
                    spent_s: float = 0.0) -> tuple[list[dict], dict]:
    """Settle `rows` (in the order `order_by`, the rank used, wants them tried) against the measured constraints,
    within what is left of q.budget_s after `spent_s` (counting); returns (the rows that fit, a summary: timed,
    reused, bounded out, untimed with why, partial or None)."""
    from ..store.store import ResultStore
    from .stopped import undecided_rows

    try:
        load_timing_modules()
    except KeyboardInterrupt as e:       # Ctrl-C / SIGTERM inside `import torch`: that torch must not be used again
        partial = _partial(e, "while loading torch")
        done = Progress(untimed=[placed(r, reason=f"untimed: {partial['reason']}") for r in rows], partial=partial)
        log.info("zoo.select: %s: nothing timed, the answer so far follows", partial["reason"])
        return [], {**_summary(done, len(excluded), q, 0.0), "bound_rates": {}}
    real, timing = timing is None, timing or _default_timing(q, ResultStore(q.out), q.save)
    run = Run(q, timing, timing.clock() - spent_s, excluded, undecided, order_by or q.rank)
    screened, asked = len(excluded), list(rows)
    left = max(0.0, q.budget_s - spent_s)
    try:
        with budget_alarm(left + BUDGET_GRACE_S, real) as disarm:      # the peak probe spends the budget too
            run.disarm = disarm
            _settle(run, rows, counts)
    except KeyboardInterrupt as e:      # between the probe and the loop, or in its bookkeeping: what is settled stays
        run.disarm()
        run.done.partial = run.done.partial or _partial(e)
        run.done.untimed += [placed(r, reason=f"untimed: {run.done.partial['reason']}")
                             for r in undecided_rows(asked, run.done, excluded, undecided)]
    if run.done.partial and run.done.partial["status"] != PARTIAL_STATUS["budget"]:    # a signal: said in one line
        log.info("zoo.select: %s: the answer so far follows", run.done.partial["reason"])
    if run.order_by in ("latency", "imgs_per_s"):       # ranked on a loaded timing: the order is not settled
        run.done.loaded += [r["model"] for r in run.done.kept if (r.get("evidence") or {}).get("loaded")]
    if run.done.loaded and run.done.partial is None:
        run.done.partial = {"reason": f"timed under load: {', '.join(run.done.loaded)} undecided (a loaded "
                                      f"timing cannot exclude; time again on a quiet machine or with --wait-quiet)",
                            "status": PARTIAL_STATUS["budget"], "unsettled": "undecided"}
    return run.done.kept, {**_summary(run.done, screened, q, timing.clock() - run.start), "bound_rates": run.rates}


def _settle(run: "Run", rows: list[dict], counts) -> None:
    """The probe, the bound, the schedule (stored rows reused) and the loop, under the budget alarm."""
    from ..runs.scheduler import schedule
    from ..store.store import ResultStore

    q, excluded, screened = run.q, run.excluded, len(run.excluded)
    store = ResultStore(q.out)
    run.store = store if q.save else None
    peak = run.probe(rows[0]) if rows else {}
    rows, run.bounds = _bound_out(rows, q, peak, run.timing.caches() if run.timing.caches else None, excluded)
    if run.order_by in ("latency", "imgs_per_s"):
        rows = sorted(rows, key=lambda r: (run.bounds[r["model"]], r["gmacs"], r["model"]))
    run.done.bounded = len(excluded) - screened
    _announce(q, len(rows), screened, run.done.bounded if peak.get("peak_flops") else None, peak)
    run.rates = {k: v for k, v in peak.items() if k.startswith(("peak_flops", "mem_bandwidth"))}
    stored = store.rows("throughput") if store.path("throughput").is_file() else []
    tasks = [task_for(row, q) for row in rows]
    run.plan = schedule(tasks, stored, reuse=lambda r: not r.get("noisy") or q.allow_noisy, counted=counts)
    with store.locked() if q.save else contextlib.nullcontext():
        run.settle(rows, tasks)


@dataclass
class Run:
    """One timing loop's state: the query, the timer, where answers go, the bounds and the schedule."""
    q: object
    timing: Timing
    start: float
    excluded: list
    undecided: list
    order_by: str
    store: object = None
    bounds: dict = field(default_factory=dict)
    plan: object = None
    done: Progress = field(default_factory=Progress)
    disarm: Callable = lambda: None       # the budget alarm's, once an interrupt is caught
    rates: dict = field(default_factory=dict)       # the peak and bandwidth the bound used, with their sources

    def probe(self, row: dict) -> dict:
        """The largest trustworthy peak and bandwidth for this machine (zoo.select.bound.trusted_rates); {} (no
        bound) when the probe is cut short by the budget or an interrupt, which makes the answer partial."""
        task = task_for(row, self.q)
        try:
            return trusted_rates(self.timing.peak(task), self.timing.committed(task), self.q.timing.threads)
        except KeyboardInterrupt as e:
            self.disarm()
            self.done.partial = _partial(e, "while probing the peak")
            return trusted_rates({}, self.timing.committed(task), self.q.timing.threads)    # the committed one still holds

    def settle(self, rows: list[dict], tasks: list) -> None:
        """One candidate at a time, stopping as the module's docstring says."""
        best, q, done = None, self.q, self.done
        for i, (row, task) in enumerate(zip(rows, tasks)):
            skip = self.cannot_beat(best, row)
            if skip is None and done.partial is None and self.timing.clock() - self.start >= q.budget_s:
                done.partial = {"reason": f"budget spent (--budget-s {q.budget_s:g})",
                                "status": PARTIAL_STATUS["budget"]}
            if skip or done.partial:
                done.untimed.append(placed(row, reason=skip or f"untimed: {done.partial['reason']}"))
                continue
            try:
                timed = self.timed_row(task, f"[{i + 1}/{len(rows)}]", len(rows) - i)
            except KeyboardInterrupt as e:
                self.disarm()
                done.partial = _partial(e)
                done.untimed.append(placed(row, reason=f"untimed: {done.partial['reason']} while timing it"))
                continue
            verdict = self.record(row, task, timed)
            log.info("[%d/%d] %s: %s: %s", i + 1, len(rows), row["model"], verdict, row.get("decision", ""))
            if verdict == "fits" and (best is None or self.faster(row, best)):
                best = row

    def timed_row(self, task, step: str, left: int) -> dict:
        timed = self.plan.answered.get(task)
        self.done.load = None
        if timed is not None:
            self.done.reused += 1
            return timed
        request = task.request
        log.info("%s timing %s at %s px, batch %d (%s)%s", step, request.model, request.img_size.label,
                 request.batch_size, task.timing.backend, _eta(self.timing, self.start, self.q, self.done, left))
        before = self.timing.load()
        timed = self.timing.run(task, self.plan.macs_for(task), self.timing.peak(task))
        loads = [x for x in (before, self.timing.load()) if x is not None]
        self.done.load = max(loads) if loads else None
        if self.store is not None:
            self.store.append(timed)
        self.done.timed += 1
        return timed

    def record(self, row: dict, task, timed: dict) -> str:
        row["timing"] = "reused" if task in self.plan.answered else "measured"
        if timed.get("failed"):
            row["decision"] = f"timing failed: {timed['failed']}"
            self.excluded.append(placed(row, reason=row["decision"]))
            return "timing failed"
        row.update({k: timed.get(k) for k in TIMED_FIELDS})
        verdict, text, ev = decide({**timed, **row}, self.q, self.done.load)
        row["evidence"], row["decision"] = ev, text
        if verdict == "over":
            self.excluded.append(placed(row, reason=text, evidence=ev))
        elif verdict == "within noise":
            if ev.get("loaded"):
                self.done.loaded.append(row["model"])
            self.undecided.append(placed(row, reason=text, evidence=ev, **{k: row[k] for k in TIMED_FIELDS}))
        else:
            self.done.kept.append(row)
        return verdict

    def faster(self, row: dict, best: dict) -> bool:
        """row replaces best as the one to beat: only under a measured rank (else the first that fits is best)."""
        if self.order_by not in ("latency", "imgs_per_s"):
            return False
        edge = lambda r: r["evidence"].get("hi_ms", r["latency_ms_p50"])      # noqa: E731
        return edge(row) < edge(best)

    def cannot_beat(self, best: dict | None, row: dict) -> str | None:
        """Why `row` needs no timing now that `best` fits, or None."""
        if best is None or self.q.time_all:
            return None
        if self.order_by not in ("latency", "imgs_per_s"):
            if row.get("unranked"):
                why = row["unranked"].split(":")[0]
                above = (f"{best['model']}, with no value either, fits with fewer GMACs" if best.get("unranked")
                         else f"{best['model']}, ranked, fits")
                return f"untimed: {why}, and {above} (--time-all times it; --rank gmacs or latency ranks it)"
            return f"untimed: ranked below {best['model']} by {self.order_by}, which fits: it cannot beat it"
        stat = self.q.latency_stat if self.order_by == "latency" else "p50"
        ev = best.get("evidence") or {}
        best_hi = ev.get("hi_ms") if ev.get("stat") == stat else best.get(f"latency_ms_{stat}")
        bound = self.bounds[row["model"]]
        if best_hi is not None and bound > best_hi:
            return (f"untimed: its lower bound {bound:.3g} ms is above {best['model']}'s {stat} band edge "
                    f"{best_hi:.3g} ms: it cannot beat it")
        return None


def _eta(timing, start, q, done, left: int) -> str:
    elapsed = timing.clock() - start
    per = elapsed / done.timed if done.timed else None
    budget_left = max(0.0, q.budget_s - elapsed)
    if per and per * left < budget_left:
        guess = f"ETA ~{per * left:.0f} s ({left} left at {per:.0f} s each)"
    else:
        guess = f"ETA <= {budget_left:.0f} s (the budget's end; {left} left)"
    return f"; {elapsed:.0f} s elapsed, {guess}"


def _announce(q, to_time: int, screened: int, bounded: int | None, peak: dict) -> None:
    from ..runs.tasks import machine

    cpu = machine(q.timing.device).get("cpu_model") if q.timing.device == "cpu" else machine(q.timing.device).get("gpu_name")
    log.info("zoo.select: measured latency answers for this machine only (%s, %s threads, %s); for another "
             "machine: --save-plan FILE here, --from-plan FILE there (docs/select.md)", cpu or "unknown",
             q.timing.threads or "all", q.timing.backend)
    refused = f" ({peak['peak_flops_refused']}, and none committed for its CPU)" if peak.get("peak_flops_refused") \
        else ""
    bound = f"no lower bound: no trustworthy peak for this machine{refused}" if bounded is None else \
        f"{bounded} bounded out by a {peak['peak_flops'] / 1e9:.0f} GFLOP/s GEMM peak ({peak['peak_flops_source']})"
    log.info("zoo.select: %d candidates to time, best-ranked first (%d screened out before timing, %s); budget %g s "
             "(--budget-s)", to_time, screened, bound, q.budget_s)


def _summary(done: Progress, screened: int, q, elapsed: float) -> dict:
    return {"timed": done.timed, "reused": done.reused, "screened_out": screened, "bounded_out": done.bounded,
            "untimed": done.untimed, "partial": done.partial, "budget_s": q.budget_s, "elapsed_s": elapsed,
            "time_all": q.time_all}
