"""Device peak measurement structure and the MFU formula (hand-computed values; no speed thresholds)."""

import pytest
import torch

from analysis.peak import flops_per_image, measure_peak_flops, model_flops_utilisation


def test_mfu_formula_inference_and_training():
    # 1 GMAC/img at 100 img/s = 200 GFLOP/s of a 1 TFLOP/s peak
    assert model_flops_utilisation(1e9, 100.0, 1e12) == pytest.approx(0.2)
    assert model_flops_utilisation(1e9, 100.0, 1e12, mode="train") == pytest.approx(0.6)
    assert flops_per_image(4.1e9, "inference") == 8.2e9


def test_mfu_is_never_clipped():
    assert model_flops_utilisation(1e9, 1000.0, 1e12) == pytest.approx(2.0)


def test_peak_is_the_best_probe_and_threads_are_restored():
    before = torch.get_num_threads()
    peak = measure_peak_flops("cpu", "fp32", threads=1, target_seconds=0.005, repeats=1)
    assert torch.get_num_threads() == before
    assert peak["peak_threads"] == 1 and peak["peak_dtype"] == "fp32"
    assert peak["peak_flops"] == max(peak["probe_flops"].values()) > 0
    assert peak["probe_flops"][peak["peak_kernel"]] == peak["peak_flops"]
    labels = set(peak["probe_flops"])
    assert {"mm_512", "mm_1024", "mm_2048"} <= labels  # GEMM at several sizes
    assert any(label.startswith("conv3x3") for label in labels)  # oneDNN's convolution path on CPU


def test_peak_is_cached_per_setting():
    first = measure_peak_flops("cpu", "bf16", threads=1, target_seconds=0.005, repeats=1)
    assert measure_peak_flops("cpu", "bf16", threads=1, target_seconds=0.005, repeats=1) is first


def test_unknown_dtype_raises():
    with pytest.raises(ValueError):
        measure_peak_flops("cpu", "int4")


def test_refresh_keeps_the_best_peak_seen():
    first = dict(measure_peak_flops("cpu", "fp32", threads=2, target_seconds=0.005, repeats=1))
    refreshed = measure_peak_flops("cpu", "fp32", threads=2, target_seconds=0.005, repeats=1, refresh=True)
    assert refreshed["peak_flops"] >= first["peak_flops"]
    assert all(refreshed["probe_flops"][label] >= rate for label, rate in first["probe_flops"].items())
