"""A timed row's attention path is read during its first warm-up step (zoo.runs.timed), by a dispatcher watch
(analysis.count.counter.AttentionPathWatch) that sees the kernel that ran even under inference_mode."""

import contextlib

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

from analysis.count.counter import AttentionPathWatch
from analysis.size import Size
from analysis.timing.backends import EagerBackend, TimingSetting
from analysis.timing.harness import time_model
from analysis.timing.latency import TimingProtocol, timed_loop

# aten's names (native_functions.yaml): SDPA on a CPU float tensor runs the CPU flash kernel; an explicit
# QK^T and AV of (B, heads, N, d) tensors is matmul, which decomposes into bmm
CPU_FLASH = "fused:_scaled_dot_product_flash_attention_for_cpu"
MATH = "math:bmm"


class TinyAttention(nn.Module):
    def __init__(self, fused: bool):
        super().__init__()
        self.fused, self.qkv = fused, nn.Linear(3, 8)

    def forward(self, x):                                                   # (B, 3, H, W)
        t = self.qkv(x.flatten(2).transpose(1, 2))                          # (B, HW, 8)
        t = t.unflatten(-1, (2, 4)).transpose(1, 2)                         # (B, 2 heads, HW, 4)
        if self.fused:
            out = F.scaled_dot_product_attention(t, t, t)
        else:
            out = (t @ t.transpose(-2, -1)).softmax(-1) @ t
        return out.mean((1, 2))                                             # (B, 4)


class TinyNet(nn.Module):
    def __init__(self, fused: bool):
        super().__init__()
        self.attn = TinyAttention(fused)
        self.calls = 0

    def forward(self, x):
        self.calls += 1
        return self.attn(x)


@pytest.mark.parametrize("fused, expected", [(True, CPU_FLASH), (False, MATH)])
def test_the_watch_reads_the_kernel_that_ran_under_inference_mode_as_under_no_grad(fused, expected):
    model, x = TinyNet(fused).eval(), torch.randn(2, 3, 4, 4)
    paths = []
    for grad_mode in (torch.no_grad, torch.inference_mode):      # no_grad: autograd decomposes before any mode
        watch = AttentionPathWatch(model)
        assert watch.path is None
        with grad_mode(), watch():
            model(x)
        paths.append(watch.path)
    assert paths == [expected, expected]


def test_a_forward_that_fails_inside_the_watch_leaves_no_path():
    model = TinyNet(True)
    watch = AttentionPathWatch(model)
    with pytest.raises(RuntimeError), watch():
        model(torch.randn(2, 5, 4, 4))                   # 5 channels into a 3-feature projection
    assert watch.path is None


class FakeClock:
    """A clock only the step advances (one second a step)."""

    def __init__(self):
        self.now = self.steps = 0

    def __call__(self) -> float:
        return self.now

    def step(self):
        self.now += 1.0
        self.steps += 1


@pytest.mark.parametrize("warmup, watched", [(3, [(0, 1)]), (1, [(0, 1)]), (0, [])])
def test_the_timed_loop_watches_the_first_warm_up_step_only(warmup, watched):
    clock, seen = FakeClock(), []

    @contextlib.contextmanager
    def watch():
        start = clock.steps
        yield
        seen.append((start, clock.steps))

    run = timed_loop(clock.step, torch.device("cpu"), TimingProtocol(warmup=warmup, min_iters=2, min_seconds=0.0),
                     clock=clock, watch=watch)
    assert seen == watched                      # around step 1 of the warm-up, no timed step
    assert clock.steps == warmup + 2 and run.latencies_s == (1.0, 1.0)


def test_the_harness_watches_an_eager_inference_step_and_adds_no_forward():
    model = TinyNet(True)
    watch = AttentionPathWatch(model)
    result = time_model(model, EagerBackend(), Size(4, 4), 2, TimingSetting(), TimingProtocol(2, 3, 0.0),
                        watch=watch)
    assert watch.path == CPU_FLASH
    assert model.calls == 2 + 3 == result.warmup + result.iters


def test_a_training_or_compiled_step_is_not_watched():
    model, images = TinyNet(True), torch.randn(2, 3, 4, 4)
    watch = AttentionPathWatch(model)
    time_model(model, EagerBackend(), Size(4, 4), 2, TimingSetting(mode="train"), TimingProtocol(1, 1, 0.0),
               watch=watch)
    assert watch.path is None                   # a backward inside would be read as the forward's attention
    assert EagerBackend().prepare(model, images, TimingSetting()).observable
    assert not EagerBackend().prepare(model, images, TimingSetting(compile="default")).observable   # lazy: not run


def test_a_timed_row_reads_the_path_in_its_warm_up_and_a_training_row_after_it(monkeypatch):
    import zoo.runs.timed as timed
    from zoo.runs.tasks import Task, run_task

    after = []
    monkeypatch.setattr(timed, "attention_path_on", lambda *args: after.append(args) or "read after the timing")
    peak = {"peak_flops": 1e9, "peak_kernel": "mm_test"}
    task = Task.named("throughput", "deit_ti", 64, device="cpu", quick=True, iters=1, threads=1)
    row = run_task(task, macs=1, peak=peak)
    assert row.get("failed") is None and row["attn_path"] == CPU_FLASH and after == []
    row = run_task(task.replace(request=task.request.replace(train=True)), macs=1, peak=peak)
    assert row.get("failed") is None and row["attn_path"] == "read after the timing" and len(after) == 1
