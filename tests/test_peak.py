"""The GEMM peak, its per-machine cache in results/, the datasheet table and the MFU formula
(hand-computed values; no speed thresholds)."""
import json

import pytest
import torch

from analysis.timing.peak import (datasheet_peak_flops, flops_per_image, measure_peak_flops,
                                  model_flops_utilisation)
from zoo.runs.peaks import PEAKS_FILE, PeakCache
from zoo.runs.tasks import Task
from analysis.size import Size


def test_mfu_formula_inference_and_training():
    # 1 GMAC/img at 100 img/s = 200 GFLOP/s of a 1 TFLOP/s peak
    assert model_flops_utilisation(1e9, 100.0, 1e12) == pytest.approx(0.2)
    assert model_flops_utilisation(1e9, 100.0, 1e12, mode="train") == pytest.approx(0.6)
    assert flops_per_image(4.1e9, "inference") == 8.2e9


def test_mfu_is_never_clipped():
    assert model_flops_utilisation(1e9, 1000.0, 1e12) == pytest.approx(2.0)


def test_peak_is_the_best_gemm_probe_and_threads_are_restored():
    before = torch.get_num_threads()
    peak = measure_peak_flops("cpu", "fp32", threads=1, target_seconds=0.005, repeats=1)
    assert torch.get_num_threads() == before
    assert peak["peak_threads"] == 1 and peak["peak_dtype"] == "fp32"
    assert peak["peak_flops"] == max(peak["probe_flops"].values()) > 0
    assert set(peak["probe_flops"]) == {"mm_512", "mm_1024", "mm_2048"}   # GEMM only: no Winograd conv


def test_unknown_dtype_raises():
    with pytest.raises(ValueError):
        measure_peak_flops("cpu", "int4")


def test_datasheet_peaks_of_known_gpus():
    """NVIDIA's H100/H200 SXM datasheets: BF16 1,979 TFLOPS with 2:4 sparsity, so 989.4 dense."""
    assert datasheet_peak_flops("NVIDIA H200", "bf16")["peak_flops"] == pytest.approx(1979e12 / 2, rel=1e-3)
    assert datasheet_peak_flops("NVIDIA H200", "fp32", tf32=True)["peak_flops"] == pytest.approx(989e12 / 2, rel=1e-3)
    assert datasheet_peak_flops("NVIDIA H200", "fp32")["peak_flops"] == 67e12
    assert datasheet_peak_flops("AMD EPYC", "fp32") is None and datasheet_peak_flops(None, "bf16") is None


def test_peak_is_probed_once_per_machine_and_kept_in_results(tmp_path, monkeypatch):
    probes = iter([1e9, 3e9, 2e9, 4e9])
    calls = []

    def fake_probe(device, dtype, threads=None):
        calls.append((device, dtype, threads))
        return {"peak_flops": next(probes), "peak_kernel": "mm_fake", "probe_flops": {}}

    monkeypatch.setattr("zoo.runs.peaks.measure_peak_flops", fake_probe)
    task = Task("throughput", "vit_ti16", Size.of(224), device="cpu", threads=1)
    first = PeakCache(tmp_path).get(task)
    again = PeakCache(tmp_path).get(task)                       # a second run: read from results/peaks.json
    assert first["peak_flops"] == again["peak_flops"] == 1e9 and len(calls) == 1
    assert json.loads((tmp_path / PEAKS_FILE).read_text())       # kept on disk
    assert PeakCache(tmp_path, reprobe=True).get(task)["peak_flops"] == 3e9      # re-probed: the higher kept
    assert PeakCache(tmp_path, reprobe=True).get(task)["peak_flops"] == 3e9      # 2e9 probe does not lower it
    assert PeakCache(tmp_path).get(Task("throughput", "vit_ti16", Size.of(224), dtype="bf16", device="cpu",
                                        threads=1))["peak_flops"] is not None   # another dtype: its own probe
    assert len(calls) == 4


def test_a_damaged_cache_is_probed_again(tmp_path, monkeypatch):
    (tmp_path / PEAKS_FILE).write_text("{not json")
    monkeypatch.setattr("zoo.runs.peaks.measure_peak_flops",
                        lambda device, dtype, threads=None: {"peak_flops": 5.0, "peak_kernel": "mm_fake"})
    assert PeakCache(tmp_path).get(Task("throughput", "vit_ti16", Size.of(224), device="cpu"))["peak_flops"] == 5.0
    assert json.loads((tmp_path / PEAKS_FILE).read_text())     # the damaged file is replaced
