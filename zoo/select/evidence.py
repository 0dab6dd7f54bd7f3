"""What one timed row lets zoo.select be sure of: a band for the latency statistic it decides on, and the
decision that band supports against a budget or against the next model.

The band is distribution-free: order statistics of the row's step latencies (`latencies_ms`) that hold the
true quantile with 97.5% probability each side (Hahn & Meeker, Statistical Intervals, 2nd ed., sec. 5.2:
P(X_(l) <= q-quantile) = P(Binomial(n, q) >= l)). Where n is too small for such a bound (an upper bound of a
p99 needs 368 steps: 1 - 0.99^n >= 0.975) the slowest (fastest) step stands in, and `exact_band` says so.
Others' CPU can only slow a step down: with others using a fraction f of the cores we timed on, a quiet run
could take as little as (1 - f) x as long, so the lower edge is widened to `quiet_lo_ms` = lo x (1 - f). A row
without steps (a stored row of an older schema) gets lo, hi = value x (1 -/+ 2 cv).

NB: that widening is a model, not a bound: on an oversubscribed machine a multi-threaded GEMM waits at its
barriers for a descheduled thread, and a loaded step came out 2-18x the quiet one (issue 42). So a timing
under load (`loaded`: others above 15% of our cores or a cv above 0.2, zoo.runs.timed's noise rule, or more
runnable tasks than cores in the load average) never excludes: `against_budget` leaves it "within noise"
(an upper edge still holds: load only slows a step, so "fits" stands), and `ahead` never puts a model ahead
of a loaded one.
"""
from __future__ import annotations

import math
import os

from analysis.timing.contention import NOISY_CV, NOISY_FOREIGN_CPU_SHARE, share_of_ours

SIDE = 0.975          # each edge holds with this probability: a 95% band
QUANTILE = {"p50": 0.5, "p99": 0.99}


def _binom_cdf(n: int, p: float) -> list[float]:
    """P(Binomial(n, p) <= k) for k = 0..n, from log-pmfs (no overflow at thousands of steps), O(n)."""
    logs = [math.lgamma(n + 1) - math.lgamma(k + 1) - math.lgamma(n - k + 1) + k * math.log(p)
            + (n - k) * math.log1p(-p) for k in range(n + 1)]
    cdf, total = [], 0.0
    for value in logs:
        total += math.exp(value)
        cdf.append(min(total, 1.0))
    return cdf


def order_band(steps: list[float], q: float) -> tuple[float, float, bool]:
    """(lo, hi, exact) for the q-quantile of `steps`: X_(l) <= quantile <= X_(u), each with probability SIDE;
    exact is False where n is too small for one of them and the extreme step stands in."""
    xs, n = sorted(steps), len(steps)
    cdf = _binom_cdf(n, q)
    lows = [k for k in range(n, 0, -1) if 1 - cdf[k - 1] >= SIDE]      # P(Bin >= k) = 1 - P(Bin <= k - 1)
    highs = [k for k in range(1, n + 1) if cdf[k - 1] >= SIDE]
    lo = xs[lows[0] - 1] if lows else xs[0]
    hi = xs[highs[0] - 1] if highs else xs[-1]
    return lo, hi, bool(lows and highs)


def others_share_of_ours(row: dict) -> float:
    """The fraction of the cores we timed on that others used, within [0, 0.9]."""
    return min(0.9, max(0.0, share_of_ours(row.get("foreign_cpu_share"), row.get("threads"))))


def loaded(row: dict, load: float | None = None, cores: int | None = None) -> str | None:
    """Why `row` was timed under load (the text a decision shows), or None: its noise mark, others' share of
    our cores, its spread, or `load` (the 1-min load average sampled around the timing) above the cores."""
    cores = cores or os.cpu_count() or 1
    f, cv = others_share_of_ours(row), row.get("cv") or 0.0
    if row.get("noisy") or f > NOISY_FOREIGN_CPU_SHARE or cv > NOISY_CV:
        return f"timed under load (others' CPU {100 * f:.0f}% of our cores, cv {cv:.2f})"
    if load is not None and load > cores:
        return f"timed under load (load average {load:.1f} on {cores} cores)"
    return None


def evidence(row: dict, stat: str, load: float | None = None) -> dict:
    """The band of `row`'s latency `stat` (p50 or p99, ms per batch), with its step count, others' CPU and
    whether it was timed under load (`loaded`: why, or None)."""
    value = row[f"latency_ms_{stat}"]
    steps = row.get("latencies_ms") or []
    if steps:
        lo, hi, exact = order_band(steps, QUANTILE[stat])
        how = "order statistics of the steps"
    else:
        cv = row.get("cv") or 0.0
        lo, hi, exact, how = value * max(0.0, 1 - 2 * cv), value * (1 + 2 * cv), False, "value +- 2 cv (no steps)"
    f = others_share_of_ours(row)
    return {"stat": stat, "value_ms": value, "n": len(steps) or row.get("iters"), "lo_ms": lo, "hi_ms": hi,
            "quiet_lo_ms": lo * (1 - f), "others_cpu": f, "exact_band": exact, "band": how, "cv": row.get("cv"),
            "load": load, "loaded": loaded(row, load)}


def band_text(ev: dict) -> str:
    """'n=14, 95% band 71.0-80.2 ms' (+ the quiet lower edge when others used our cores)."""
    from ..answers.text import num

    n = f"n={ev['n']}" if ev["n"] is not None else "n=?"
    text = f"{n}, band {num(ev['lo_ms'])}-{num(ev['hi_ms'])} ms"
    if not ev["exact_band"]:
        text += " (too few steps for a 95% band: the extreme steps)"
    if ev["others_cpu"] > 0:
        text += f", quiet lower edge {num(ev['quiet_lo_ms'])} ms (others' CPU {100 * ev['others_cpu']:.0f}%)"
    return text


def against_budget(ev: dict, budget_ms: float, point_only: bool = False) -> str:
    """"over", "fits" or "within noise": the band against a latency budget (point_only: the value alone)."""
    if point_only:
        return "over" if ev["value_ms"] > budget_ms else "fits"
    if ev["quiet_lo_ms"] > budget_ms and not ev.get("loaded"):
        return "over"
    return "fits" if ev["hi_ms"] <= budget_ms else "within noise"


def against_rate(ev: dict, batch: int, min_rate: float, point_only: bool = False) -> str:
    """The same for a minimum images/s, from the median step's band (rate = batch / step)."""
    return against_budget(ev, batch * 1e3 / min_rate, point_only)


def ahead(first: dict, second: dict) -> bool:
    """first's latency is below second's beyond the noise: first's upper edge under second's quiet lower edge,
    which holds only where second was not timed under load."""
    return not second.get("loaded") and first["hi_ms"] < second["quiet_lo_ms"]
