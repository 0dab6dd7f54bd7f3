"""Harness logic with tiny models: iteration counts, statistics, OOM retry, record fields. No timing thresholds."""

import math

import pytest
import torch
import torch.nn as nn

from analysis.size import Size
from analysis.timing.backends import EagerBackend, TimingSetting
from analysis.timing.harness import is_out_of_memory, time_model
from analysis.timing.latency import TimingProtocol, latency_stats, timed_loop
from analysis.timing.steps import make_inference_step, random_input

FAST = TimingProtocol(warmup=1, min_iters=3, min_seconds=0.0)


def measure_throughput(model, batch_size=1, device="cpu", protocol=FAST, img_size=16, **setting) -> dict:
    """The eager backend through the one harness, as a row's fields."""
    result = time_model(model, EagerBackend(), Size.of(img_size), batch_size,
                        TimingSetting(device=device, **setting), protocol)
    return result.as_fields()


def tiny_cnn(classes: int = 10) -> nn.Module:
    return nn.Sequential(nn.Conv2d(3, 4, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten(),
                         nn.Linear(4, classes))


class CountingModel(nn.Module):
    """Counts forward calls; optionally raises out-of-memory above a batch size (a fake big model)."""

    def __init__(self, oom_above_batch: int | None = None, error_type=torch.OutOfMemoryError):
        super().__init__()
        self.body = tiny_cnn()
        self.calls = 0
        self.oom_above_batch = oom_above_batch
        self.error_type = error_type

    def forward(self, x):
        self.calls += 1
        if self.oom_above_batch is not None and x.shape[0] > self.oom_above_batch:
            raise self.error_type(f"CUDA out of memory. Tried to allocate {x.shape[0]} GiB")
        return self.body(x)


class FakeClock:
    """A clock that only the step advances: each step takes exactly `step_seconds`."""

    def __init__(self, step_seconds: float):
        self.now, self.step_seconds, self.steps = 0.0, step_seconds, 0

    def __call__(self) -> float:
        return self.now

    def step(self):
        self.now += self.step_seconds
        self.steps += 1


@pytest.mark.parametrize("min_iters, min_seconds, expected_iters", [
    (3, 1.0, 4),     # duration dominates: 4 x 0.25 s reaches 1 s
    (10, 1.0, 10),   # count dominates
    (1, 0.0, 1),
])
def test_timed_loop_needs_both_min_iters_and_min_seconds(min_iters, min_seconds, expected_iters):
    clock = FakeClock(0.25)
    run = timed_loop(clock.step, torch.device("cpu"), TimingProtocol(warmup=2, min_iters=min_iters, min_seconds=min_seconds),
                     clock=clock)
    assert run.iters == expected_iters
    assert clock.steps == 2 + expected_iters
    assert run.latencies_s == (0.25,) * expected_iters
    assert run.total_seconds == pytest.approx(0.25 * expected_iters)
    assert run.warmup_iters == 2 and run.warmup_seconds == pytest.approx(0.5)


def test_timed_loop_max_iters_caps_a_long_duration():
    clock = FakeClock(0.25)
    run = timed_loop(clock.step, torch.device("cpu"), TimingProtocol(warmup=0, min_iters=1, min_seconds=100.0, max_iters=5),
                     clock=clock)
    assert run.iters == 5


def test_timed_loop_rejects_zero_iterations():
    with pytest.raises(ValueError):
        TimingProtocol(warmup=0, min_iters=0, min_seconds=0.0)


def test_latency_stats_hand_computed():
    stats = latency_stats([0.001, 0.002, 0.003, 0.004])  # seconds -> 1, 2, 3, 4 ms
    assert stats["latency_ms_p50"] == pytest.approx(2.5)
    assert stats["latency_ms_p90"] == pytest.approx(3.7)   # 1 + 0.9 * 3 positions -> 3 + 0.7
    assert stats["latency_ms_p99"] == pytest.approx(3.97)
    assert stats["latency_ms_mean"] == pytest.approx(2.5)
    assert stats["cv"] == pytest.approx(math.sqrt(5 / 3) / 2.5)  # sample std of 1..4 is sqrt(5/3)


def test_latency_stats_single_value_has_zero_cv():
    assert latency_stats([0.002])["cv"] == 0.0


def test_record_has_every_field_and_counts_steps():
    model = CountingModel()
    record = measure_throughput(model, batch_size=2)
    assert model.calls == 1 + record["iters"] and record["iters"] >= 3   # warm-up, then the timed steps
    assert len(record["latencies_ms"]) == record["iters"]
    assert record["ran_batch_size"] == record["requested_batch_size"] == 2
    assert record["error"] is None and record["oom_batch_sizes"] == []
    assert record["device"] == "cpu" and record["dtype"] == "fp32"
    assert record["imgs_per_s"] > 0 and record["backend"] == "eager" and record["mode"] == "inference"
    assert record["latency_ms_min"] <= record["latency_ms_p50"] <= record["latency_ms_p90"] <= record["latency_ms_p99"]
    assert record["latency_ms_p99"] <= record["latency_ms_max"]
    assert record["latency_ms_p50"] == pytest.approx(sorted(record["latencies_ms"])[1])   # the middle of 3 steps
    assert (record["warmup"], record["min_iters"], record["min_seconds"]) == (1, 3, 0.0)   # FAST, as recorded
    assert record["env"]["torch_version"] == torch.__version__  # the machine's fingerprint, in env only
    assert "torch_version" not in record and "mfu" not in record and "attn_path" not in record   # the run layer's


def test_imgs_per_s_is_batch_times_iters_over_span():
    record = measure_throughput(tiny_cnn(), batch_size=3)
    assert record["imgs_per_s"] == pytest.approx(3 * record["iters"] / record["total_seconds"])


def test_threads_are_applied_and_restored():
    before = torch.get_num_threads()
    record = measure_throughput(tiny_cnn(), batch_size=1, threads=1)
    assert record["threads"] == 1
    assert torch.get_num_threads() == before


def test_oom_retry_halves_until_it_fits_and_records_the_error():
    model = CountingModel(oom_above_batch=4)
    record = measure_throughput(model, batch_size=16)
    assert record["requested_batch_size"] == 16
    assert record["ran_batch_size"] == 4
    assert record["oom_batch_sizes"] == [16, 8]
    assert "OutOfMemoryError at batch_size=16" in record["error"]
    assert "batch_size=8" in record["error"]
    assert record["imgs_per_s"] > 0


def test_oom_retry_in_train_mode():
    record = measure_throughput(CountingModel(oom_above_batch=2), batch_size=8, mode="train")
    assert record["ran_batch_size"] == 2 and record["oom_batch_sizes"] == [8, 4]
    assert record["error"].count("OutOfMemoryError") == 2


def test_oom_at_batch_one_gives_an_empty_measurement_not_an_exception():
    record = measure_throughput(CountingModel(oom_above_batch=0), batch_size=4)
    assert record["ran_batch_size"] is None and record["imgs_per_s"] is None
    assert record["oom_batch_sizes"] == [4, 2, 1]
    assert "batch_size=1" in record["error"]


def test_cpu_allocator_failure_counts_as_out_of_memory():
    assert is_out_of_memory(RuntimeError("[enforce fail at alloc_cpu.cpp:117] DefaultCPUAllocator: "
                                         "can't allocate memory: you tried to allocate 123 bytes"))
    assert not is_out_of_memory(RuntimeError("shape mismatch"))


def test_other_errors_are_not_swallowed():
    with pytest.raises(ValueError):
        measure_throughput(CountingModel(oom_above_batch=0, error_type=ValueError), batch_size=2)


def test_train_mode_updates_weights():
    model = tiny_cnn()
    before = [p.detach().clone() for p in model.parameters()]
    record = measure_throughput(model, batch_size=2, mode="train")
    assert record["mode"] == "train" and record["iters"] >= 3
    assert any(not torch.equal(b, p) for b, p in zip(before, model.parameters()))


@pytest.mark.parametrize("mode, factor", [("inference", 2), ("train", 6)])
def test_mfu_uses_the_given_macs_and_peak(mode, factor):
    from zoo.runs.timed import mfu_fields

    fields = mfu_fields(10**6, 250.0, {"peak_flops": 1e9, "peak_kernel": "given"}, torch.device("cpu"),
                        TimingSetting(mode=mode))
    assert fields["flops_per_img"] == factor * 1e6 and fields["peak_kernel"] == "given"
    assert fields["mfu"] == pytest.approx(factor * 1e6 * 250 / 1e9)       # 0.5 inference, 1.5 train
    assert fields["mfu_above_peak"] == (mode == "train") and fields["mfu_datasheet"] is None   # no known GPU


def test_bf16_autocast_and_channels_last_input():
    images = random_input(2, Size(16, 16), torch.device("cpu"), channels_last=True)
    assert images.is_contiguous(memory_format=torch.channels_last)
    step = make_inference_step(nn.Linear(16, 4), images, torch.device("cpu"), "bf16")
    assert step().dtype == torch.bfloat16
    record = measure_throughput(tiny_cnn(), batch_size=2, dtype="bf16", channels_last=True)
    assert record["dtype"] == "bf16" and record["channels_last"] is True


def test_invalid_settings_raise():
    with pytest.raises(ValueError):
        measure_throughput(tiny_cnn(), mode="eval")
    with pytest.raises(ValueError):
        measure_throughput(tiny_cnn(), dtype="int8")
    with pytest.raises(ValueError, match="tpu"):
        measure_throughput(tiny_cnn(), device="tpu")


@pytest.mark.cuda
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_cuda_events_time_every_iteration():
    model = CountingModel()
    record = measure_throughput(model, batch_size=2, device="cuda", dtype="fp16",
                                protocol=TimingProtocol(warmup=1, min_iters=5, min_seconds=0.0))
    assert record["device"].startswith("cuda") and record["env"]["gpu_name"]
    assert record["iters"] >= 5 and len(record["latencies_ms"]) == record["iters"]
    assert model.calls == 1 + record["iters"]
