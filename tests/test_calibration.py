"""The calibrated GPU expectation (analysis.predict.calibration): its formula on hand-worked kernels, the statistics
against known values (scipy's documented Spearman example, numpy's linear quantile), the fit recovering
factors that generated synthetic data, and the shipped factors' provenance."""
import json
import math
from importlib import resources

import pytest

from analysis.predict.calibration import (KERNEL_CLASSES, Calibration, class_peaks, expected_seconds, kernel_seconds,
                                  op_precisions, quantile, spearman)

CAL = Calibration({"matmul": 0.5, "conv": 0.5, "depthwise_conv": 0.25, "attention": 0.8},
                  {c: 0.5 for c in KERNEL_CLASSES}, ridge_factor={"matmul": 0.0, "conv": 0.0}, launch_seconds=1e-6)


def test_kernel_time_is_the_larger_of_compute_and_memory_at_achieved_rates():
    # GEMM, 2 TFLOP at half of 100 TFLOP/s = 40 ms; 1 GB at half of 1 TB/s = 2 ms -> 40 ms
    assert kernel_seconds("matmul", 2e12, 1e9, 100e12, 1e12, CAL) == pytest.approx(0.04)
    # intensity 2e12 / 1e9 = 2000 FLOP/B over the ridge 100e12 / 1e12 = 100: x = 20; ridge_factor 20 halves e_max
    half = Calibration(CAL.compute_efficiency, CAL.memory_efficiency, {"matmul": 0.0, "conv": 20.0}, 0.0)
    assert kernel_seconds("conv", 2e12, 1e9, 100e12, 1e12, half) == pytest.approx(0.08)
    assert kernel_seconds("depthwise_conv", 2e12, 1e9, 100e12, 1e12, half) == pytest.approx(0.08)  # no ridge term
    # elementwise: 1e9 FLOPs at its 10 TFLOP/s = 0.1 ms; bytes 8 GB / 0.5 TB/s = 16 ms
    assert kernel_seconds("elementwise", 1e9, 8e9, 10e12, 1e12, CAL) == pytest.approx(0.016)


def test_expected_time_adds_a_launch_per_kernel_and_counts_repeats():
    ops = [("elementwise", 0, 1e9, 3), ("matmul", 2e12, 1e9, 1)]
    peaks = dict.fromkeys(KERNEL_CLASSES, 100e12)
    # 3 x (2 ms + 1 us) + (40 ms + 1 us)
    assert expected_seconds(ops, peaks, 1e12, CAL) == pytest.approx(3 * 0.002 + 0.04 + 4e-6)


def test_fp32_runs_as_pytorch_defaults_say_convolutions_tf32_matmuls_fp32():
    # torch.backends.cudnn.allow_tf32 defaults to True, torch.backends.cuda.matmul.allow_tf32 to False (torch >= 1.12)
    assert op_precisions("fp32", has_tf32=True) == {"conv": "tf32", "matmul": "fp32"}
    assert op_precisions("fp32", True, "on") == {"conv": "tf32", "matmul": "tf32"}
    assert op_precisions("fp32", True, "off") == {"conv": "fp32", "matmul": "fp32"}
    assert op_precisions("fp32", has_tf32=False, tf32="on") == {"conv": "fp32", "matmul": "fp32"}   # V100, T4
    assert op_precisions("bf16", True) == {"conv": "bf16", "matmul": "bf16"}                        # autocast
    with pytest.raises(ValueError):
        op_precisions("fp32", True, "yes")


def test_each_class_takes_its_precisions_datasheet_peak():
    a100 = {"fp32": 19.5e12, "tf32": 156e12, "bf16": 312e12, "fp16": 312e12}     # the A100 datasheet's dense peaks
    peaks = class_peaks(a100, {"conv": "tf32", "matmul": "fp32"})
    assert peaks["conv"] == peaks["conv_nhwc"] == 156e12
    assert peaks["matmul"] == peaks["attention"] == peaks["norm"] == peaks["elementwise"] == 19.5e12
    # depthwise (grouped) convolutions run on CUDA cores, accumulating in float, whatever the dtype
    assert peaks["depthwise_conv"] == peaks["depthwise_conv_nhwc"] == 19.5e12
    assert class_peaks(a100, {"conv": "fp16", "matmul": "fp16"})["depthwise_conv"] == 19.5e12
    legacy = class_peaks(a100, {"conv": "tf32", "matmul": "fp32"}, depthwise_on_cuda_cores=False)
    assert legacy["depthwise_conv"] == 156e12


def test_statistics_match_numpy_and_scipy():
    assert quantile([1, 2, 3, 4], 0.5) == 2.5 and quantile([1, 2, 3, 4], 0.1) == pytest.approx(1.3)
    assert spearman([1, 2, 3, 4, 5], [5, 6, 7, 8, 7]) == pytest.approx(0.8207826816681233)   # scipy docs example
    assert spearman([1, 2, 3], [3, 2, 1]) == pytest.approx(-1)


def test_fit_recovers_the_factors_that_made_the_data():
    from analysis.predict.calibration_fit import fit

    truth = Calibration({"matmul": 1.0, "conv": 1.0, "depthwise_conv": 0.5, "attention": 0.5},
                        {c: 0.4 if c == "elementwise" else 0.8 for c in CAL.memory_efficiency},
                        {"matmul": 2.0, "conv": 2.0}, 2e-6)
    peaks = {**dict.fromkeys(KERNEL_CLASSES, 10e12), "matmul": 100e12}
    samples = []
    for i in range(1, 13):                  # memory-bound elementwise and compute-bound GEMMs, mixed per sample
        ops = [("elementwise", 0, 1e8 * i, 2), ("matmul", 1e12 * (13 - i), 1e9 * i, 1 + i % 3)]   # x = 10 (13-i) / i
        seconds = expected_seconds(ops, peaks, 1e12, truth)
        samples.append({"ops": ops, "peaks": peaks, "bandwidth": 1e12, "seconds": seconds, "group": str(i % 3)})
    found = fit(samples, steps=800, lr=0.05)
    assert found.memory_efficiency["elementwise"] == pytest.approx(0.4, rel=0.05)
    assert found.ridge_factor["matmul"] == pytest.approx(2.0, rel=0.05)


def test_shipped_factors_name_their_tables_and_band_straddles_one():
    data = json.loads(resources.files("analysis.predict").joinpath("data", "gpu_calibration.json").read_text())
    cal = Calibration.from_json(data)
    assert "huggingface/pytorch-image-models" in cal.source and "90cae8c" in cal.source
    assert cal.band[0] < 1 < cal.band[1]
    assert all(0 < v <= 1 for v in [*cal.compute_efficiency.values(), *cal.memory_efficiency.values()])


def test_leave_device_and_family_out_fits_on_neither(monkeypatch):
    # each (device, family) cell is predicted by a fit that saw no row of that device and no row of that family
    from analysis.predict import calibration_fit

    seen = []

    def fake_fit(train, steps):
        seen.append({(s["device"], s["group"]) for s in train})
        return Calibration({}, dict.fromkeys(KERNEL_CLASSES, 1.0), {"matmul": 0.0, "conv": 0.0, "conv_nhwc": 0.0}, 0.0)

    monkeypatch.setattr(calibration_fit, "fit", fake_fit)
    ops = [("elementwise", 0, 1e9, 1)]                 # 1 GB at 1 TB/s: 1 ms expected
    samples = [{"ops": ops, "peaks": dict.fromkeys(KERNEL_CLASSES, 1e12), "bandwidth": 1e12, "seconds": 2e-3 * (i + 1),
                "device": d, "group": g} for i, (d, g) in enumerate([("A", "x"), ("A", "y"), ("B", "x"), ("B", "y")])]
    ratios = calibration_fit.held_out_both(samples, ("device", "group"), steps=1)
    assert seen == [{("B", "y")}, {("B", "x")}, {("A", "y")}, {("A", "x")}]   # (A, x) left out: only (B, y) remains
    assert ratios == pytest.approx([0.5, 0.25, 1 / 6, 0.125])                  # expected 1 ms over measured seconds


def test_a_serial_kernel_takes_its_steps_times_the_step_or_its_bytes():
    """A serial-loop kernel (NCHW bilinear upsampling) carries steps per thread where other kernels carry FLOPs."""
    cal = Calibration({}, {"serial": 0.5}, {"matmul": 0.0, "conv": 0.0}, 0.0, serial_step_seconds=250e-9)
    # 1024 x 1024 steps of 250 ns = 262 ms; 100 MB at half of 1 TB/s = 0.2 ms
    assert kernel_seconds("serial", 1024 * 1024, 100e6, math.inf, 1e12, cal) == pytest.approx(0.262144)
    assert kernel_seconds("serial", 10, 100e6, math.inf, 1e12, cal) == pytest.approx(2e-4)   # bytes-bound
    assert class_peaks({"fp32": 1e12, "fp16": 2e12}, {"conv": "fp16", "matmul": "fp16"})["serial"] == math.inf
