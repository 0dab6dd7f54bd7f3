"""Foreign-CPU meter and the quiet-machine wait: bounds and plumbing, never a load threshold."""

import pytest

from analysis.timing import contention
from analysis.timing.contention import ForeignCpuMeter, wait_for_quiet


@pytest.mark.parametrize("machine_busy, own, expected", [
    (1.0, 1.04, 0.0),     # this process's time read a jiffy later than the machine's: clamped up to 0
    (8.5, 0.0, 1.0),      # more busy time than wall time on the cores (counter skew): clamped down to 1
    (4.0, 2.0, 0.25),
])
def test_share_is_clamped_only_at_the_edges(monkeypatch, machine_busy, own, expected):
    readings = iter([(0.0, 0.0), (machine_busy, 8.0)])
    own_times = iter([0.0, own])
    monkeypatch.setattr(contention, "_machine_cpu_seconds", lambda: next(readings))
    monkeypatch.setattr(contention, "_own_cpu_seconds", lambda: next(own_times))
    with ForeignCpuMeter() as meter:
        pass
    assert meter.share == pytest.approx(expected)


def test_share_is_unknown_without_proc_stat(monkeypatch):
    monkeypatch.setattr(contention, "_machine_cpu_seconds", lambda: None)
    with ForeignCpuMeter() as meter:
        pass
    assert meter.share is None


def test_share_from_hand_made_counters(monkeypatch):
    readings = iter([(10.0, 40.0), (16.0, 48.0)])  # machine: 6 s busy of 8 s over the interval
    own = iter([1.0, 3.0])                          # this process: 2 s of it
    monkeypatch.setattr(contention, "_machine_cpu_seconds", lambda: next(readings))
    monkeypatch.setattr(contention, "_own_cpu_seconds", lambda: next(own))
    with ForeignCpuMeter() as meter:
        pass
    assert meter.share == pytest.approx((6 - 2) / 8)


def test_wait_for_quiet_gives_up_after_the_timeout(monkeypatch):
    clock = iter(range(0, 1000))
    busy = iter((float(t), float(t)) for t in range(0, 1000))  # 100% busy forever
    monkeypatch.setattr(contention, "_machine_cpu_seconds", lambda: next(busy))
    monkeypatch.setattr(contention.time, "sleep", lambda seconds: None)
    monkeypatch.setattr(contention.time, "monotonic", lambda: float(next(clock)))
    assert wait_for_quiet(timeout_s=5) is False


def test_wait_for_quiet_returns_once_quiet_long_enough(monkeypatch):
    clock = iter(range(0, 1000))
    idle = iter((0.0, float(t)) for t in range(0, 1000))  # never busy
    monkeypatch.setattr(contention, "_machine_cpu_seconds", lambda: next(idle))
    monkeypatch.setattr(contention.time, "sleep", lambda seconds: None)
    monkeypatch.setattr(contention.time, "monotonic", lambda: float(next(clock)))
    assert wait_for_quiet(quiet_seconds=3, timeout_s=100) is True
