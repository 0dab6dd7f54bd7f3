"""The machine model and the roofline: the estimate's arithmetic, the triad's byte count, the datasheet
table, the bandwidth cache, timed rows' roofline fields and `zoo.compare --predict`."""
from __future__ import annotations

import json

import pytest

from analysis.predict.roofline import roofline
from analysis.timing import bandwidth as bandwidth_module
from analysis.predict.devices import DEVICE_SHEETS, device_sheet, sheet_peak
from cli import call_main
from zoo.runs.peaks import PEAKS_FILE, PeakCache
from zoo.runs.request import Request
from zoo.predict.inference import gpu_forward
from zoo.runs.timed import measured_roofline
from zoo.runs.tasks import Task


def test_roofline_takes_the_larger_bound_per_op_and_adds_launches():
    peak, bw = 1e12, 1e10
    ops = [("matmul_conv", 2e12, 1e9, 1),     # compute 2 s > memory 0.1 s
           ("elementwise", 1e6, 3e10, 4)]     # memory 3 s > compute 1e-6 s, four times
    est = roofline(ops, peak, bw, launch_seconds=0.5)
    assert est["roofline_ms"] == pytest.approx((2 + 4 * 3 + 5 * 0.5) * 1e3)
    assert est["roofline_compute_share"] == pytest.approx(2 / 16.5)
    assert est["roofline_memory_share"] == pytest.approx(12 / 16.5)
    assert est["roofline_launch_share"] == pytest.approx(2.5 / 16.5)
    assert est["roofline_ms_by_op_class"] == pytest.approx({"elementwise": 14e3, "matmul_conv": 2.5e3})


def test_triad_counts_three_arrays_per_element(monkeypatch):
    monkeypatch.setattr(bandwidth_module, "_seconds_per_call", lambda *a, **k: 0.5)
    found = bandwidth_module.measure_bandwidth("cpu", elements=1000)
    assert found["mem_bandwidth"] == 3 * 1000 * 4 / 0.5 and found["bandwidth_kernel"] == "triad_1000"


def test_a_real_triad_runs_and_restores_threads():
    import torch

    before = torch.get_num_threads()
    found = bandwidth_module.measure_bandwidth("cpu", threads=1, elements=1 << 12, target_seconds=0.001, repeats=1)
    assert found["mem_bandwidth"] > 0 and found["bandwidth_threads"] == 1 and torch.get_num_threads() == before


def test_datasheets_name_sources_and_dense_peaks():
    assert set(DEVICE_SHEETS) == {"H100", "H100 PCIe", "H200", "A100", "A100 40GB", "V100 SXM2", "V100 PCIe", "L4",
                                  "L40S", "T4", "RTX 3090", "RTX 4090", "RTX 5090", "RTX PRO 6000 Max-Q", "TPU v3"}
    for sheet in DEVICE_SHEETS.values():
        assert sheet.sources and sheet.mem_bandwidth > 0 and all(v > 0 for v in sheet.peak_flops.values())
    # NVIDIA's H100 SXM datasheet: BF16 1,979 TFLOPS with sparsity -> dense half; A100: 312 dense, 2,039 GB/s
    assert sheet_peak(device_sheet("h100"), "bf16") == pytest.approx(1979e12 / 2, rel=1e-3)
    assert sheet_peak(device_sheet("A100"), "fp32", tf32=True) == 156e12
    assert device_sheet("A100").mem_bandwidth == 2039e9 and device_sheet("rtx4090").name == "RTX 4090"
    with pytest.raises(ValueError, match="no bf16"):
        sheet_peak(device_sheet("T4"), "bf16")
    with pytest.raises(ValueError, match="unknown device"):
        device_sheet("P100")
    # V100 SXM2 datasheet: 125 tensor TFLOPS, 900 GB/s, no bf16; PCIe 112; A100 40 GB: 1,555 GB/s, same peaks
    assert sheet_peak(device_sheet("V100"), "fp16") == 125e12 and device_sheet("v100 pcie").peak_flops["fp16"] == 112e12
    assert device_sheet("V100 SXM2").mem_bandwidth == device_sheet("V100 PCIe").mem_bandwidth == 900e9


def test_new_datasheets_are_the_cited_pages_figures_and_derived_ones_say_so():
    """H100 PCIe (hpctech's copy of NVIDIA's table): BF16 1,513 and TF32 756 with sparsity, FP32 51, 2,000 GB/s;
    L40S (mullet.se's copy of NVIDIA's table): TF32 183 dense, BF16 733 with sparsity, 864 GB/s, 48 GB; the RTX PRO
    6000 Max-Q's FP32 110.1 (technical.city). The seven GeForce peaks no page states (issue 39) are marked derived."""
    assert sheet_peak(device_sheet("H100 PCIe"), "bf16") == pytest.approx(1513e12 / 2)
    assert sheet_peak(device_sheet("h100pcie"), "fp32", tf32=True) == pytest.approx(756e12 / 2)
    assert device_sheet("H100 PCIe").peak_flops["fp32"] == 51e12 and device_sheet("H100 PCIe").mem_bandwidth == 2000e9
    l40s = device_sheet("l40s")
    assert (l40s.peak_flops["tf32"], l40s.peak_flops["fp16"], l40s.mem_bandwidth, l40s.memory_bytes) == \
        (183e12, pytest.approx(733e12 / 2), 864e9, 48e9)
    maxq = device_sheet("RTX PRO 6000 Blackwell Max-Q")
    assert maxq.peak_flops["fp32"] == pytest.approx(110.1e12) and maxq.memory_bytes == 96e9
    derived = {name: " ".join(DEVICE_SHEETS[name].derived) for name in ("RTX 3090", "RTX 5090", "RTX PRO 6000 Max-Q")}
    for name, columns in (("RTX 3090", ("tf32", "bf16", "fp16")), ("RTX 5090", ("fp32", "tf32", "bf16", "fp16")),
                          ("RTX PRO 6000 Max-Q", ("tf32", "bf16", "fp16"))):
        assert all(c in derived[name] for c in columns), name
    assert not device_sheet("H100 PCIe").derived and not l40s.derived
    with pytest.raises(ValueError, match="no bf16"):
        sheet_peak(device_sheet("V100 PCIe"), "bf16")
    assert device_sheet("A100 40GB").mem_bandwidth == 1555e9 and device_sheet("a100 80gb").name == "A100"
    assert device_sheet("A100 40GB").peak_flops == device_sheet("A100").peak_flops
    assert device_sheet("A100 40GB").memory_bytes == 40e9 and device_sheet("A100").memory_bytes == 80e9


def test_bandwidth_is_probed_once_per_machine_whatever_the_dtype(tmp_path, monkeypatch):
    calls = []
    monkeypatch.setattr("zoo.runs.peaks.measure_peak_flops",
                        lambda device, dtype, threads=None: {"peak_flops": 1e9, "peak_kernel": "mm_fake"})
    monkeypatch.setattr("zoo.runs.peaks.measure_bandwidth",
                        lambda device, threads=None: calls.append(device) or {"mem_bandwidth": 5e9})
    fp32 = PeakCache(tmp_path).get(Task.named("throughput", "vit_ti16", 224, device="cpu", threads=1))
    bf16 = PeakCache(tmp_path).get(Task.named("throughput", "vit_ti16", 224, dtype="bf16", device="cpu", threads=1))
    assert fp32["mem_bandwidth"] == bf16["mem_bandwidth"] == 5e9 and calls == ["cpu"]
    assert any(k.startswith("bandwidth | ") for k in json.loads((tmp_path / PEAKS_FILE).read_text()))


def test_timed_rows_get_the_roofline_of_the_batch_that_ran():
    peak = {"peak_flops": 1e11, "mem_bandwidth": 1e10}
    task = Task.named("throughput", "vit_ti16", 224, batch_size=4, device="cpu")
    fields = measured_roofline(task, {"ran_batch_size": 2}, peak)
    assert fields["roofline_ms"] == pytest.approx(roofline(gpu_forward(Request("vit_ti16", 224, 2), gpu=False)["ops"], 1e11, 1e10)["roofline_ms"])
    assert fields["roofline_launch_share"] == 0.0 and fields["mem_bandwidth"] == 1e10      # CPU: no launch cost
    assert measured_roofline(Task.named("throughput", "vit_ti16", 224, train=True), {}, peak) == {}
    assert measured_roofline(task, {}, {"peak_flops": 1e11}) == {}                        # no bandwidth, no estimate


def test_compare_predict_marks_rows_and_writes_only_predicted_rows(tmp_path):
    result = call_main("zoo.compare", "--models", "vit_ti16,swin_t", "--resolutions", "224", "--batch-sizes", "1,8",
                     "--predict", "H100", "--format", "json", "--out", str(tmp_path))
    assert result.returncode == 0, result.stderr
    rows = json.loads(result.stdout)
    assert len(rows) == 4 and all(r["predicted"] and r["device"] == "H100" for r in rows)
    assert all(r["roofline_ms"] > 0
               and r["roofline_imgs_per_s"] == pytest.approx(r["batch_size"] * 1e3 / r["roofline_ms"]) for r in rows)
    assert all(r["imgs_per_s_p10"] < r["imgs_per_s"] < r["imgs_per_s_p90"] and r["calibration_source"] for r in rows)
    assert all(r["imgs_per_s"] == pytest.approx(r["batch_size"] * 1e3 / r["latency_ms"]) for r in rows)
    written = sorted(p.name for p in (tmp_path / "results").iterdir() if not p.name.startswith("."))
    assert written == ["predicted.jsonl"]      # never a measured row's file
    saved = [json.loads(line) for line in (tmp_path / "results" / "predicted.jsonl").read_text().splitlines()]
    assert [{k: v for k, v in r.items() if k not in ("saved_by", "archzoo_version")} for r in saved] == rows
    table = call_main("zoo.compare", "--models", "vit_ti16", "--predict", "l4")
    assert table.returncode == 0 and table.stdout.startswith("PREDICTED, not measured")


def test_compare_predict_refuses_unknown_devices_and_missing_dtypes():
    for args in (("--predict", "P100"), ("--predict", "T4", "--dtype", "bf16")):
        result = call_main("zoo.compare", "--models", "vit_ti16", *args)
        assert result.returncode == 2 and len(result.stderr.strip().splitlines()) == 1 and not result.stdout


def test_report_compares_both_predictors_by_rank_and_ratio(tmp_path):
    from zoo.report import roofline as report

    rows = [{"model": m, "img_size": 224, "batch_size": 1, "ran_batch_size": 1, "roofline_ms": est,
             "latency_ms_p50": measured, "macs": macs, "settings": {"dtype": "fp32"}, "env": {"cpu_model": "X"},
             "threads": 2} for m, est, measured, macs in [("a", 1, 2, 3), ("b", 2, 3, 5), ("c", 3, 7, 4), ("d", 5, 6, 9)]]
    df = report.frame(rows)
    # MACs-only: k = median(measured / MACs) = median(2/3, 3/5, 7/4, 6/9) = (2/3 + 2/3) / 2 = 2/3
    assert list(df["macs_only_ms"]) == pytest.approx([2, 10 / 3, 8 / 3, 6])
    found = report.stats(df)
    # ranks of measured 1 2 4 3; roofline 1 2 3 4 (sum d^2 = 2); MACs-only 1 3 2 4 (sum d^2 = 6): 1 - 6 sum d^2 / 60
    assert found["roofline"]["spearman"] == pytest.approx(0.8) and found["macs_only"]["spearman"] == pytest.approx(0.4)
    assert found["roofline"]["median_ratio"] == pytest.approx((1 / 2 + 2 / 3) / 2)
    assert found["macs_only"]["median_ratio"] == pytest.approx(1.0)
    assert "| roofline | 0.800 |" in report.table(df)
    assert len(report.plot(df, tmp_path / "p.png")) == 4 and (tmp_path / "p.png").stat().st_size > 0
    assert report.frame([]).empty and report.plot(report.frame([]), tmp_path / "e.png") == []


def test_a_timed_detector_row_gets_the_whole_detectors_roofline():
    """The roofline of a timed --detector row is the detector's, not its backbone's (issue 30): with a stand-in
    machine of 100 GFLOP/s and 10 GB/s, it is at least the whole detector's compute time, 2 x MACs / peak."""
    from analysis.size import Size
    from zoo.runs.timed import measured_roofline
    from zoo.runs.tasks import Task, run_task

    size = Size(800, 1280)
    whole = run_task(Task.named("cost", "resnet50", size, detector="maskrcnn", train=False))
    assert whole["backbone_macs"] < 0.5 * whole["macs"]              # so a backbone-only roofline falls short
    task = Task.named("throughput", "resnet50", size, detector="maskrcnn")
    fields = measured_roofline(task, {"ran_batch_size": 1}, {"peak_flops": 1e11, "mem_bandwidth": 1e10})
    assert fields["roofline_ms"] >= 2 * whole["macs"] / 1e11 * 1e3
