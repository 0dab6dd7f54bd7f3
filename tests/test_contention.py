"""Foreign-CPU meter and the quiet-machine wait: bounds and plumbing, never a load threshold."""

import pytest

from analysis import contention
from analysis.contention import ForeignCpuMeter, wait_for_quiet


def test_share_is_a_fraction_or_unknown():
    with ForeignCpuMeter() as meter:
        sum(range(200_000))
    assert meter.share is None or 0.0 <= meter.share <= 1.0


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
