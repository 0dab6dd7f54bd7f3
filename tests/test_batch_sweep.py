"""The batch sweep's stopping rule, with fake measurements: latency = a x batch + b on a fake clock."""

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from analysis.timing.batch_sweep import sweep_batches
from analysis.timing.latency import TimingProtocol, latency_stats, timed_loop

PROTOCOL = TimingProtocol(warmup=1, min_iters=5, min_seconds=0.0)


class FakeClock:
    """Time moves only when a step runs."""

    def __init__(self):
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def fake_measure(a_ms: float, b_ms: float, oom_from: int | None = None, halve_from: int | None = None):
    """A harness-style measure(batch): each step takes a_ms x batch + b_ms on a fake clock.

    oom_from: raise torch.OutOfMemoryError from that batch on; halve_from: return a record whose
    ran_batch_size is half the batch asked for (what the harness does after out-of-memory).
    """
    asked = []

    def measure(batch: int) -> dict:
        asked.append(batch)
        if oom_from is not None and batch >= oom_from:
            raise torch.OutOfMemoryError(f"CPU out of memory at batch {batch}")
        ran = batch // 2 if halve_from is not None and batch >= halve_from else batch
        clock = FakeClock()

        def step():
            clock.now += (a_ms * ran + b_ms) / 1e3

        run = timed_loop(step, torch.device("cpu"), PROTOCOL, clock=clock)
        return {"requested_batch_size": batch, "ran_batch_size": ran, **latency_stats(run.latencies_s)}

    measure.asked = asked
    return measure


def batches(points):
    return [p["requested_batch_size"] for p in points]


def serving(points):
    return [p["requested_batch_size"] for p in points if p["serving_batch"]]


def test_stops_at_first_batch_over_target_and_marks_the_one_before():
    points = sweep_batches(fake_measure(a_ms=1.0, b_ms=2.0), latency_target_ms=20.0)
    # latencies 3, 4, 6, 10, 18, 34 ms: 32 is over 20, so 16 serves
    assert batches(points) == [1, 2, 4, 8, 16, 32]
    assert [p["sweep_within_target"] for p in points] == [True] * 5 + [False]
    assert serving(points) == [16]
    assert points[-1]["latency_ms_p99"] == pytest.approx(34.0)


def test_target_is_inclusive():
    points = sweep_batches(fake_measure(a_ms=1.0, b_ms=0.0), latency_target_ms=4.0)
    assert batches(points) == [1, 2, 4, 8] and serving(points) == [4]


def test_none_serves_when_batch_1_misses():
    measure = fake_measure(a_ms=1.0, b_ms=50.0)
    points = sweep_batches(measure, latency_target_ms=10.0)
    assert batches(points) == [1] and measure.asked == [1]
    assert not points[0]["sweep_within_target"] and serving(points) == []


def test_out_of_memory_raised_stops_without_a_point():
    measure = fake_measure(a_ms=0.1, b_ms=1.0, oom_from=16)
    points = sweep_batches(measure, latency_target_ms=1e6)
    assert measure.asked == [1, 2, 4, 8, 16]
    assert batches(points) == [1, 2, 4, 8] and serving(points) == [8]


def test_halved_batch_stops_and_is_never_served():
    points = sweep_batches(fake_measure(a_ms=0.1, b_ms=1.0, halve_from=8), latency_target_ms=1e6)
    assert batches(points) == [1, 2, 4, 8]
    assert points[-1]["ran_batch_size"] == 4 and not points[-1]["sweep_within_target"]
    assert serving(points) == [4]


def test_record_without_a_run_stops():
    def measure(batch):  # what the harness returns when even batch 1 ran out of memory
        return {"requested_batch_size": batch, "ran_batch_size": None, "latency_ms_p99": None}
    points = sweep_batches(measure, latency_target_ms=10.0)
    assert len(points) == 1 and serving(points) == []


@pytest.mark.parametrize("max_batch, last", [(1, 1), (64, 64), (100, 64)])
def test_respects_max_batch(max_batch, last):
    points = sweep_batches(fake_measure(a_ms=0.0, b_ms=1.0), latency_target_ms=10.0, max_batch=max_batch)
    assert batches(points)[-1] == last and serving(points) == [last]
    assert all(p["sweep_within_target"] for p in points)


def test_other_errors_propagate_and_bad_arguments_are_refused():
    def broken(batch):
        raise ValueError("shape mismatch")
    with pytest.raises(ValueError, match="shape mismatch"):
        sweep_batches(broken, latency_target_ms=10.0)
    with pytest.raises(ValueError):
        sweep_batches(fake_measure(1.0, 1.0), latency_target_ms=0.0)
    with pytest.raises(ValueError):
        sweep_batches(fake_measure(1.0, 1.0), latency_target_ms=10.0, max_batch=0)


def test_other_stat_and_records_are_copies():
    records = []

    def measure(batch):
        record = {"requested_batch_size": batch, "ran_batch_size": batch, "latency_ms_p50": float(batch)}
        records.append(record)
        return record
    points = sweep_batches(measure, latency_target_ms=5.0, stat="latency_ms_p50")
    assert batches(points) == [1, 2, 4, 8] and serving(points) == [4]
    assert all("serving_batch" not in r for r in records)


@settings(max_examples=150, deadline=None)
@given(a=st.integers(0, 200), b=st.integers(1, 200), target=st.integers(0, 5000),
       max_exp=st.integers(0, 16))
def test_rule_matches_the_closed_form(a, b, target, max_exp):
    # integer ms latencies and a target halfway between integers: no ties within float rounding
    target_ms, max_batch = target + 0.5, 1 << max_exp
    points = sweep_batches(fake_measure(a, b), target_ms, max_batch=max_batch)
    fits = [1 << k for k in range(max_exp + 1) if a * (1 << k) + b <= target_ms]
    expected = [1 << k for k in range(max_exp + 1)]
    first_miss = next((i for i, n in enumerate(expected) if n not in fits), None)
    expected = expected if first_miss is None else expected[: first_miss + 1]
    assert batches(points) == expected
    assert serving(points) == ([max(n for n in expected if n in fits)] if fits else [])
    assert sum(p["serving_batch"] for p in points) == (1 if fits else 0)
    assert all(p["sweep_within_target"] == (p["requested_batch_size"] in fits) for p in points)
