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
from analysis.timing import peak as peak_module


def test_mfu_formula_inference_and_training():
    # 1 GMAC/img at 100 img/s = 200 GFLOP/s of a 1 TFLOP/s peak
    assert model_flops_utilisation(1e9, 100.0, 1e12) == pytest.approx(0.2)
    assert model_flops_utilisation(1e9, 100.0, 1e12, mode="train") == pytest.approx(0.6)
    assert flops_per_image(4.1e9, "inference") == 8.2e9


def test_mfu_is_never_clipped():
    assert model_flops_utilisation(1e9, 1000.0, 1e12) == pytest.approx(2.0)


def test_peak_is_the_best_gemm_probe_and_threads_are_restored():
    before = torch.get_num_threads()
    peak = measure_peak_flops("cpu", "fp32", threads=1, target_seconds=0.005, repeats=1, budget_s=float("inf"))
    assert torch.get_num_threads() == before
    assert peak["peak_threads"] == 1 and peak["peak_dtype"] == "fp32"
    assert peak["peak_flops"] == max(peak["probe_flops"].values()) > 0
    assert set(peak["probe_flops"]) == {"mm_512", "mm_1024", "mm_2048"}   # GEMM only: no Winograd conv


def test_unknown_dtype_raises():
    with pytest.raises(ValueError):
        measure_peak_flops("cpu", "int4")


def test_datasheet_peaks_of_known_gpus():
    """NVIDIA's H100/H200 SXM datasheets: BF16 1,979 TFLOPS with 2:4 sparsity, so 989.4 dense; FP32 67 (66.9 as
    analysis.predict.devices keeps it, glennklockwood's dense figure)."""
    assert datasheet_peak_flops("NVIDIA H200", "bf16")["peak_flops"] == pytest.approx(1979e12 / 2, rel=1e-3)
    assert datasheet_peak_flops("NVIDIA H200", "fp32", tf32=True)["peak_flops"] == pytest.approx(989e12 / 2, rel=1e-3)
    assert datasheet_peak_flops("NVIDIA H200", "fp32")["peak_flops"] == pytest.approx(67e12, rel=2e-3)
    assert datasheet_peak_flops("NVIDIA H100 80GB HBM3", "bf16")["peak_source"] == "datasheet H100 bf16 dense"
    assert datasheet_peak_flops("AMD EPYC", "fp32") is None and datasheet_peak_flops(None, "bf16") is None


def test_peak_is_probed_once_per_machine_and_kept_in_results(tmp_path, monkeypatch):
    probes = iter([1e9, 3e9, 2e9, 4e9])
    calls = []

    def fake_probe(device, dtype, threads=None):
        calls.append((device, dtype, threads))
        return {"peak_flops": next(probes), "peak_kernel": "mm_fake", "probe_flops": {}}

    monkeypatch.setattr("zoo.runs.peaks.measure_peak_flops", fake_probe)
    task = Task.named("throughput", "vit_ti16", Size.of(224), device="cpu", threads=1)
    first = PeakCache(tmp_path).get(task)
    again = PeakCache(tmp_path).get(task)                       # a second run: read from results/peaks.json
    assert first["peak_flops"] == again["peak_flops"] == 1e9 and len(calls) == 1
    assert json.loads((tmp_path / PEAKS_FILE).read_text())       # kept on disk
    assert PeakCache(tmp_path, reprobe=True).get(task)["peak_flops"] == 3e9      # re-probed: the new probe kept
    assert PeakCache(tmp_path, reprobe=True).get(task)["peak_flops"] == 2e9      # a lower probe replaces it too
    assert PeakCache(tmp_path).get(task)["peak_flops"] == 2e9 and len(calls) == 3  # in the folder and the user cache
    assert PeakCache(tmp_path).get(Task.named("throughput", "vit_ti16", Size.of(224), dtype="bf16", device="cpu",
                                        threads=1))["peak_flops"] is not None   # another dtype: its own probe
    assert len(calls) == 4


def test_a_damaged_cache_is_probed_again(tmp_path, monkeypatch):
    (tmp_path / PEAKS_FILE).write_text("{not json")
    monkeypatch.setattr("zoo.runs.peaks.measure_peak_flops",
                        lambda device, dtype, threads=None: {"peak_flops": 5.0, "peak_kernel": "mm_fake"})
    assert PeakCache(tmp_path).get(Task.named("throughput", "vit_ti16", Size.of(224), device="cpu"))["peak_flops"] == 5.0
    assert json.loads((tmp_path / PEAKS_FILE).read_text())     # the damaged file is replaced


def test_the_probe_stops_at_its_time_cap_and_says_so():
    # a zero budget: the smallest size runs (one repeat), every larger one is predicted to overrun and left out
    peak = measure_peak_flops("cpu", "fp32", threads=1, target_seconds=0.005, repeats=5, budget_s=0)
    assert set(peak["probe_flops"]) == {"mm_512"} and peak["peak_kernel"] == "mm_512"
    assert "1024, 2048 left out: over the 0 s cap" in peak["peak_method"] and peak["fast_gemm"]


def fake_probes(rates: dict):
    """_probe_sizes returning the given FLOP/s per dtype, at the first size only."""
    def probe(sizes, device, dtype, target_seconds, repeats, budget_s):
        return {f"mm_{sizes[0]}": rates[dtype]}, list(sizes[1:])
    return probe


def test_a_dtype_without_a_fast_gemm_gets_no_mfu(monkeypatch):
    from analysis.timing.backends import TimingSetting
    from zoo.runs.timed import mfu_fields
    from zoo.compare.display import cells, _columns

    monkeypatch.setattr(peak_module, "_probe_sizes", fake_probes({torch.float16: 1e9, torch.float32: 3e10}))
    peak = measure_peak_flops("cpu", "fp16")
    assert peak["fast_gemm"] is False and peak["peak_flops"] == 1e9
    assert "no fast fp16 GEMM here: 1 GFLOP/s against fp32's 30 GFLOP/s" in peak["peak_method"]
    # 1 GMAC at 10 img/s against a 1 GFLOP/s peak would read MFU 2000%: not given, and the row says why
    fields = mfu_fields(1e9, 10.0, peak, torch.device("cpu"), TimingSetting(dtype="fp16", threads=1))
    assert fields["mfu"] is None and fields["mfu_above_peak"] is None and fields["peak_fast_gemm"] is False
    assert fields["peak_method"] == peak["peak_method"] and fields["peak_flops"] == 1e9
    record = {"model": "m", "size": "224", **fields}
    columns = [c for c in _columns([record]) if c.header == "MFU"]
    assert cells(record, columns) == ["no fast GEMM"]
    monkeypatch.setattr(peak_module, "_probe_sizes", fake_probes({torch.bfloat16: 6e10, torch.float32: 3e10}))
    peak = measure_peak_flops("cpu", "bf16")
    assert peak["fast_gemm"] is True and "no fast" not in peak["peak_method"]
    assert mfu_fields(1e9, 10.0, peak, torch.device("cpu"), TimingSetting(dtype="bf16", threads=1))["mfu"] == pytest.approx(2e10 / 6e10)
    monkeypatch.setattr(peak_module, "_probe_sizes", fake_probes({torch.bfloat16: 2e10, torch.float32: 3e10}))
    assert measure_peak_flops("cpu", "bf16")["fast_gemm"] is True       # a bit slower than fp32 is still a fast path


def test_a_16_bit_peak_cached_before_the_fast_gemm_check_is_probed_again(tmp_path, monkeypatch):
    fp16 = Task.named("throughput", "vit_ti16", Size.of(224), dtype="fp16", device="cpu", threads=1)
    fp32 = Task.named("throughput", "vit_ti16", Size.of(224), device="cpu", threads=1)
    from zoo.runs.peaks import peak_key
    old = {"peak_flops": 5e9, "peak_kernel": "mm_2048", "probe_flops": {}}      # no fast_gemm: an older archzoo
    (tmp_path / PEAKS_FILE).write_text(json.dumps({peak_key(fp16): old, peak_key(fp32): old}))
    monkeypatch.setattr("zoo.runs.peaks.measure_peak_flops", lambda device, dtype, threads=None: {
        "peak_flops": 1e9, "peak_kernel": "mm_512", "fast_gemm": False, "peak_method": "probed now"})
    assert PeakCache(tmp_path).get(fp16)["peak_method"] == "probed now"        # replaced, though lower
    assert PeakCache(tmp_path).get(fp32)["peak_flops"] == 5e9                 # fp32 has no such question: kept
    from analysis.timing.backends import TimingSetting
    from zoo.runs.timed import mfu_fields
    fields = mfu_fields(1e9, 10.0, PeakCache(tmp_path).get(fp32), torch.device("cpu"), TimingSetting(threads=1))
    assert fields["mfu"] == pytest.approx(2 * 1e9 * 10.0 / 5e9)     # and still gives an MFU: 2 FLOP per MAC
