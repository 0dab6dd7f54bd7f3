"""The calibrated GPU expectation (analysis.predict.calibration): its formula on hand-worked kernels, which precision
and library each kernel runs in as PyTorch runs it, the torch releases, the statistics against known values (scipy's
documented Spearman example, numpy's linear quantile), the fit's vectorised formula against the predictor's, the fit
recovering factors that generated synthetic data, and the shipped factors' provenance."""
import json
import math
from dataclasses import dataclass, field
from importlib import resources

import pytest

from analysis.predict.calibration import (Calibration, Setting, expected_seconds, kernel_of, kernel_seconds,
                                          op_precisions, quantile, release, spearman, version_of)
from analysis.predict.devices import device_sheet


@dataclass(frozen=True)
class Sheet:                      # a datasheet of round numbers: 100 TFLOP/s half, 10 fp32, 1 TB/s
    peak_flops: dict = field(default_factory=lambda: {"fp32": 10e12, "fp16": 100e12, "bf16": 100e12})
    mem_bandwidth: float = 1e12
    architecture: str = "Test"


def cal(**changed) -> Calibration:
    """Every fraction 0.5 (logit 0), ridge factors near 0 (GEMMs at their ceiling), no launch, host or version."""
    params = {"ceiling": {"cuda": 0.0, "tensor": 0.0}, "attention": 0.0,
              "conv_ceiling": {k: {"fp32": 0.0, "tf32": 0.0, "half": 0.0} for k in ("conv", "grouped_conv")},
              "ridge": dict.fromkeys(("matmul", "conv", "conv_nhwc", "grouped_conv", "grouped_conv_nhwc"), -30.0),
              "depthwise": dict.fromkeys([f"{lib}/k{k}" for lib in ("native", "cudnn") for k in (3, 5, 7)], 0.0),
              "memory": dict.fromkeys(("matmul", "conv", "conv_nhwc", "grouped_conv", "grouped_conv_nhwc",
                                       "depthwise_conv", "depthwise_conv_nhwc", "attention", "norm", "elementwise",
                                       "data_movement", "serial"), 0.0),
              "launch": -100.0, "host": -100.0, "host_autocast": -100.0,
              "serial_step": math.log(250e-9), "version": {}}
    params.update(changed)
    return Calibration(params)


HALF = Setting(Sheet(), "fp16")


def seconds(op_class, flops, nbytes, setting=HALF, calibration=None):
    return kernel_seconds(flops, nbytes, kernel_of(op_class, setting), setting, calibration or cal())


def test_kernel_time_is_the_larger_of_compute_and_memory_at_achieved_rates():
    # 2 TFLOP at half of 100 TFLOP/s = 40 ms; 1 GB at half of 1 TB/s = 2 ms -> 40 ms
    assert seconds("matmul", 2e12, 1e9) == pytest.approx(0.04)
    # intensity 2e12 / 1e9 = 2000 FLOP/B over the ridge 100e12 / 1e12 = 100: x = 20; a ridge factor of 20 halves it
    ridge = cal(ridge={**cal().params["ridge"], "conv": math.log(20.0)})
    assert seconds("conv", 2e12, 1e9, calibration=ridge) == pytest.approx(0.08)
    # depthwise: half of the fp32 CUDA-core peak (10 TFLOP/s), no ridge term: 1 TFLOP -> 0.2 s
    assert seconds("depthwise_conv_k7", 1e12, 1e9, calibration=ridge) == pytest.approx(0.2)
    # elementwise work is memory-bound: 8 GB at half of 1 TB/s = 16 ms
    assert seconds("elementwise", 1e9, 8e9) == pytest.approx(0.016)
    # fused attention: the ceiling (0.5) times its own fraction (0.5) of 100 TFLOP/s
    assert seconds("attention", 1e12, 1e6) == pytest.approx(0.04)


def test_a_batch_takes_the_larger_of_its_kernels_and_the_host_issuing_them():
    ops = [("elementwise", 0, 1e9, 3), ("matmul", 2e12, 1e9, 1)]        # 3 x 2 ms + 40 ms on the GPU
    assert expected_seconds(ops, HALF, cal()) == pytest.approx(0.046)
    # the host: 10 ms a kernel x 1.5 under autocast x 4 kernels = 60 ms, against 46 ms on the GPU
    host = cal(host=math.log(0.01), host_autocast=math.log(0.5), harness={"nvidia": math.log(0.001)})
    assert expected_seconds(ops, HALF, host) == pytest.approx((0.046 ** 4 + 0.060 ** 4) ** 0.25)
    assert expected_seconds(ops, Setting(Sheet(), "fp32"), host) > 0.040     # fp32: 40 ms on the host, no autocast
    # a published table's own loop adds its fitted time per batch (1 ms) to the host's; a user's setting never does
    nvidia = Setting(Sheet(), "fp16", harness="nvidia")
    assert expected_seconds(ops, nvidia, host) == pytest.approx((0.046 ** 4 + 0.061 ** 4) ** 0.25)
    assert expected_seconds(ops, Setting(Sheet(), "fp16", harness="timm"), host) == expected_seconds(ops, HALF, host)


def test_fp32_runs_as_each_torch_release_defaults_say():
    # cuDNN's allow_tf32 defaults to True; cuBLAS's matmul.allow_tf32 to True before torch 1.12, False since
    assert op_precisions("fp32", has_tf32=True) == {"conv": "tf32", "matmul": "fp32"}
    assert op_precisions("fp32", True, torch=(1, 10)) == {"conv": "tf32", "matmul": "tf32"}
    assert op_precisions("fp32", True, "on") == {"conv": "tf32", "matmul": "tf32"}
    assert op_precisions("fp32", True, "off", torch=(1, 10)) == {"conv": "fp32", "matmul": "fp32"}
    assert op_precisions("fp32", has_tf32=False, tf32="on") == {"conv": "fp32", "matmul": "fp32"}   # V100, T4
    assert op_precisions("bf16", True) == {"conv": "bf16", "matmul": "bf16"}                        # autocast
    with pytest.raises(ValueError):
        op_precisions("fp32", True, "yes")


def test_each_kernel_runs_at_its_precisions_peak_in_its_library():
    a100 = Setting(device_sheet("A100"), "fp32")
    assert kernel_of("conv", a100).column == "tf32" and kernel_of("matmul", a100).column == "fp32"
    assert kernel_of("attention", a100).ceiling == "fp32" and kernel_of("grouped_conv", a100).ridge == "grouped_conv"
    # depthwise convolutions multiply on CUDA cores whatever the dtype; PyTorch's own kernel runs NCHW ones but fp16
    # with filters up to 5 x 5 (cuDNN), and cuDNN runs every channels-last one
    half = Setting(device_sheet("A100"), "fp16")
    assert kernel_of("depthwise_conv_k3", half).column == "fp32"
    assert kernel_of("depthwise_conv_k3", half).depthwise == "cudnn/k3"
    assert kernel_of("depthwise_conv_k7", half).depthwise == "native/k7"
    assert kernel_of("depthwise_conv_k5", Setting(device_sheet("A100"), "bf16")).depthwise == "native/k5"
    nhwc = Setting(device_sheet("A100"), "bf16", channels_last=True)
    assert kernel_of("depthwise_conv_k7", nhwc).depthwise == "cudnn/k7"
    assert kernel_of("conv", nhwc).memory == "conv_nhwc" and kernel_of("matmul", nhwc).memory == "matmul"


def test_a_torch_release_takes_the_latest_fitted_one_not_after_it():
    assert version_of("2.4.1+cu124") == (2, 4) and version_of("1.13.0a0") == (1, 13)
    assert release((2, 14)) == (2, 9) and release((2, 4)) == (2, 4) and release((2, 0)) == (1, 13)
    assert release((1, 9)) == (1, 10)                    # before the first fitted release: its factors
    factors = cal(version={"1.10": {"gemm": math.log(2.0)}})
    old = Setting(Sheet(), "fp16", torch=(1, 10))
    assert seconds("matmul", 2e12, 1e9, old, factors) == pytest.approx(0.08)
    assert seconds("elementwise", 1e9, 8e9, old, factors) == pytest.approx(0.016)      # another group: as it was


def test_an_architecture_takes_its_own_factors_and_an_unfitted_one_the_shared_factors():
    own = Calibration(cal().params, {"Test": {"ceiling": math.log(1.2), "precision": {"half": math.log(1.25)},
                                              "depthwise": 0.0, "memory": math.log(3.0)}})
    # sigmoid(0) x 1.2 x 1.25 -> a ceiling of 0.75 (factors, not logits: 0.5 moves as freely as a 0.99 would)
    assert seconds("matmul", 2e12, 1e9, calibration=own) == pytest.approx(2e12 / 75e12)
    # fp32 takes the architecture's shared factor only: 0.5 x 1.2 of 10 TFLOP/s
    fp32 = Setting(Sheet(), "fp32")
    assert seconds("matmul", 2e12, 1e9, fp32, own) == pytest.approx(2e12 / 6e12)
    # memory: a logit offset, logit 0 + logit 3 -> 0.75 of 1 TB/s, 75 GB in 0.1 s
    assert seconds("elementwise", 1e9, 75e9, calibration=own) == pytest.approx(0.1)
    other = Setting(Sheet(architecture="Other"), "fp16")
    assert seconds("matmul", 2e12, 1e9, other, own) == pytest.approx(0.04)
    assert own.fitted("Test") and not own.fitted("Other")


def test_a_serial_kernel_takes_its_steps_times_the_step_or_its_bytes():
    # 1024 x 1024 steps of 250 ns = 262 ms; 100 MB at half of 1 TB/s = 0.2 ms
    assert seconds("serial", 1024 * 1024, 100e6) == pytest.approx(0.262144)
    assert seconds("serial", 10, 100e6) == pytest.approx(2e-4)


def test_statistics_match_numpy_and_scipy():
    assert quantile([1, 2, 3, 4], 0.5) == 2.5 and quantile([1, 2, 3, 4], 0.1) == pytest.approx(1.3)
    assert quantile([1, 2, 3], 0.5, [1, 1, 10]) == 3 and quantile([1, 2, 3], 0.1, [10, 1, 1]) == 1
    assert spearman([1, 2, 3, 4, 5], [5, 6, 7, 8, 7]) == pytest.approx(0.8207826816681233)   # scipy docs example
    assert spearman([1, 2, 3], [3, 2, 1]) == pytest.approx(-1)


SETTINGS = (("V100 SXM2", "fp32", None, False, (1, 9), "nvidia"), ("A100", "fp32", "on", True, (1, 10), "convnext"),
            ("RTX 4090", "fp16", None, False, (2, 9), "timm"), ("T4", "fp16", None, True, (2, 1), "nvidia"),
            ("H100", "bf16", None, False, (2, 14), None))
CLASSES = ("matmul", "conv", "grouped_conv", "depthwise_conv_k3", "depthwise_conv_k7", "attention", "norm",
           "elementwise", "data_movement", "serial")


def test_the_fit_times_every_kernel_as_the_predictor_does():
    import random

    import torch

    from analysis.predict import fit

    rng = random.Random(0)
    samples = [{"ops": [(c, rng.randint(1, 10 ** 10), rng.randint(10 ** 5, 10 ** 9), rng.randint(1, 30))
                        for c in CLASSES], "setting": Setting(device_sheet(d), *rest), "seconds": 1.0}
               for d, *rest in SETTINGS]
    for s in samples:       # small kernels: the host's and a harness's time count (the smooth maximum keeps both)
        s["ops"] = [(c, f // 10 ** 6, b // 10 ** 4, n) for c, f, b, n in s["ops"]]
    arrays = fit.Arrays(samples)
    torch.manual_seed(0)
    params = {k: v + 0.3 * torch.randn_like(v) for k, v in fit.initial(arrays).items()}
    calibration = fit.calibration_of(params, arrays, samples)
    assert fit.expected(params, arrays).tolist() == pytest.approx(
        [expected_seconds(s["ops"], s["setting"], calibration) for s in samples], rel=1e-9)


def test_fit_recovers_the_factors_that_made_the_data():
    from analysis.predict.fit import fit

    truth = cal(ridge={**cal().params["ridge"], "matmul": math.log(2.0)},
                memory={**cal().params["memory"], "elementwise": math.log(0.4 / 0.6)}, launch=math.log(2e-6))
    setting = Setting(Sheet(), "fp16")
    samples = []
    for i in range(1, 13):             # memory-bound elementwise and compute-bound GEMMs, mixed per sample
        ops = [("elementwise", 0, 1e8 * i, 2), ("matmul", 1e12 * (13 - i), 1e9 * i, 1 + i % 3)]
        samples.append({"ops": ops, "setting": setting, "seconds": expected_seconds(ops, setting, truth)})
    found = fit(samples, steps=1500)
    assert 1 / (1 + math.exp(-found.params["memory"]["elementwise"])) == pytest.approx(0.4, rel=0.05)
    ceiling = found.efficiencies(kernel_of("matmul", setting), "Test")[0]          # with its architecture factor
    assert math.exp(found.params["ridge"]["matmul"]) / ceiling \
        == pytest.approx(2.0 / 0.5, rel=0.15)        # the GEMMs' time fixes r / ceiling, not each alone


def test_held_out_predicts_each_source_by_a_fit_without_it(monkeypatch):
    from analysis.predict import fit

    seen = []

    def fake_fit(train, steps):
        seen.append({s["source"] for s in train})
        return cal()

    monkeypatch.setattr(fit, "fit", fake_fit)
    ops = [("elementwise", 0, 1e9, 1)]                 # 1 GB at half of 1 TB/s: 2 ms expected
    samples = [{"ops": ops, "setting": HALF, "seconds": 2e-3 * (i + 1), "source": s} for i, s in enumerate("aab")]
    ratios = fit.held_out(samples, "source", steps=1)
    assert seen == [{"b"}, {"a"}]
    assert ratios == pytest.approx([1.0, 2.0, 3.0])     # measured over expected seconds: predicted / measured img/s


def test_shipped_factors_name_their_sources_and_bands_straddle_one():
    data = json.loads(resources.files("analysis.predict").joinpath("data", "gpu_calibration.json").read_text())
    calibration = Calibration.from_json(data)
    for source in ("huggingface/pytorch-image-models", "NVIDIA/DeepLearningExamples", "Swin-Transformer", "pycls",
                   "ConvNeXt"):
        assert source in calibration.source
    for kind in ("fitted", "unfitted"):
        low, high, why = calibration.bands[kind]
        assert low < 1 < high and "leave-one-source-out" in why
    assert {"Volta", "Turing", "Ampere GA100", "Ampere GA10x", "Ada", "Blackwell"} <= set(calibration.arch)
    assert "Hopper" not in calibration.arch                # no fitted source ran one: the shared factors
