"""The calibrated GPU expectation (analysis.calibration): its formula on hand-worked kernels, the statistics
against known values (scipy's documented Spearman example, numpy's linear quantile), the fit recovering
factors that generated synthetic data, and the shipped factors' provenance."""
import json
from importlib import resources

import pytest

from analysis.calibration import Calibration, expected_seconds, kernel_seconds, quantile, spearman

CAL = Calibration({"matmul_conv": 0.5, "depthwise_conv": 0.25, "attention": 0.8},
                  {c: 0.5 for c in ("matmul_conv", "depthwise_conv", "attention", "norm", "elementwise",
                                    "data_movement")}, gemm_half_flops=0.0, launch_seconds=1e-6)


def test_kernel_time_is_the_larger_of_compute_and_memory_at_achieved_rates():
    # GEMM, 2 TFLOP at half of 100 TFLOP/s = 40 ms; 1 GB at half of 1 TB/s = 2 ms -> 40 ms
    assert kernel_seconds("matmul_conv", 2e12, 1e9, 100e12, 10e12, 1e12, CAL) == pytest.approx(0.04)
    # a GEMM of exactly gemm_half_flops runs at half of e_max: 2 TFLOP -> 80 ms
    half = Calibration(CAL.compute_efficiency, CAL.memory_efficiency, 2e12, 0.0)
    assert kernel_seconds("matmul_conv", 2e12, 1e9, 100e12, 10e12, 1e12, half) == pytest.approx(0.08)
    # elementwise: FLOPs at the vector (fp32) peak, 1e9 / 10e12 = 0.1 ms; bytes 8 GB / 0.5 TB/s = 16 ms
    assert kernel_seconds("elementwise", 1e9, 8e9, 100e12, 10e12, 1e12, CAL) == pytest.approx(0.016)


def test_expected_time_adds_a_launch_per_kernel_and_counts_repeats():
    ops = [("elementwise", 0, 1e9, 3), ("matmul_conv", 2e12, 1e9, 1)]
    # 3 x (2 ms + 1 us) + (40 ms + 1 us)
    assert expected_seconds(ops, 100e12, 10e12, 1e12, CAL) == pytest.approx(3 * 0.002 + 0.04 + 4e-6)


def test_statistics_match_numpy_and_scipy():
    assert quantile([1, 2, 3, 4], 0.5) == 2.5 and quantile([1, 2, 3, 4], 0.1) == pytest.approx(1.3)
    assert spearman([1, 2, 3, 4, 5], [5, 6, 7, 8, 7]) == pytest.approx(0.8207826816681233)   # scipy docs example
    assert spearman([1, 2, 3], [3, 2, 1]) == pytest.approx(-1)


def test_fit_recovers_the_factors_that_made_the_data():
    from analysis.calibration_fit import fit

    truth = Calibration({"matmul_conv": 0.6, "depthwise_conv": 0.5, "attention": 0.5},
                        {c: 0.4 if c == "elementwise" else 0.8 for c in CAL.memory_efficiency}, 1e6, 2e-6)
    samples = []
    for i in range(1, 13):                  # memory-bound elementwise and compute-bound GEMMs, mixed per sample
        ops = [("elementwise", 0, 1e8 * i, 2), ("matmul_conv", 1e12 * (13 - i), 1e6, 1 + i % 3)]
        seconds = expected_seconds(ops, 100e12, 10e12, 1e12, truth)
        samples.append({"ops": ops, "tensor_peak": 100e12, "vector_peak": 10e12, "bandwidth": 1e12,
                        "seconds": seconds, "group": str(i % 3)})
    found = fit(samples, steps=800, lr=0.05)
    assert found.memory_efficiency["elementwise"] == pytest.approx(0.4, rel=0.05)
    assert found.compute_efficiency["matmul_conv"] == pytest.approx(0.6, rel=0.05)


def test_shipped_factors_name_their_tables_and_band_straddles_one():
    data = json.loads(resources.files("zoo.models").joinpath("data", "gpu_calibration.json").read_text())
    cal = Calibration.from_json(data)
    assert "huggingface/pytorch-image-models" in cal.source and "90cae8c" in cal.source
    assert cal.band[0] < 1 < cal.band[1]
    assert all(0 < v <= 1 for v in [*cal.compute_efficiency.values(), *cal.memory_efficiency.values()])
