"""Every table shows the timing backend and p99 and marks noise: zoo.compare's merge keeps eager and ONNX
Runtime apart with their ratio, and the report's detection section shows H x W feature rows per size."""
import pytest

from analysis.size import Size
from zoo.compare.display import merge, to_markdown
from zoo.runs.tasks import Task, base_row, count
from probes import fake_probes


def timed(backend: str, imgs_per_s: float, iters: int = 200, noisy: bool = False) -> dict:
    task = Task.named("throughput", "deit_ti", 224, 1, backend=backend, threads=1)
    return {**base_row(task), "family": "deit", "imgs_per_s": imgs_per_s, "latency_ms_p50": 1e3 / imgs_per_s,
            "latency_ms_p99": 2e3 / imgs_per_s, "iters": iters, "cv": 0.5 if noisy else 0.01,
            "foreign_cpu_share": 0.3 if noisy else 0.0, "noisy": noisy, "backend": backend}


def test_eager_and_onnxruntime_are_two_records_with_their_ratio():
    cost = {**base_row(Task.named("cost", "deit_ti", 224)), "family": "deit", **count("deit_ti", Size(224, 224), train=False)}
    records = merge([cost, timed("eager", 10.0), timed("onnxruntime", 25.0, iters=3, noisy=True)])
    by_backend = {r["backend"]: r for r in records}
    assert set(by_backend) == {"eager", "onnxruntime"}
    assert by_backend["onnxruntime"]["vs_eager"] == pytest.approx(2.5) and "vs_eager" not in by_backend["eager"]
    assert all(r["macs"] == cost["macs"] for r in records)              # the cost row joins both
    assert by_backend["eager"]["settings"] == cost["settings"]          # JSON keeps the settings
    assert by_backend["onnxruntime"]["timing_settings"]["backend"] == "onnxruntime"
    table = to_markdown(records)
    header = [h.strip() for h in table.splitlines()[0].split("|")]
    for column in ("backend", "p99 (ms / batch)", "img/s vs eager", "noisy (cv, others' CPU)"):
        assert column in header
    ort = next(line for line in table.splitlines() if "onnxruntime" in line)
    cells = dict(zip(header, (c.strip() for c in ort.split("|"))))
    # p99 80 ms from 3 steps is marked with its count; the noisy row says why
    assert cells["p99 (ms / batch)"] == "80.0 (n=3)" and cells["img/s vs eager"] == "2.50x"
    assert cells["noisy (cv, others' CPU)"] == "cv 0.50, others 30%"


def test_the_detection_section_shows_feature_rows_at_800x1344(tmp_path):
    from zoo.report.build import build_reports
    from zoo.store.store import ResultStore
    from zoo.runs.tasks import run_task

    store = ResultStore(tmp_path)
    with store.locked():
        store.append(run_task(Task.named("cost", "convnext_t", (800, 1344), 2, train=True, features=True)))
        store.append({**timed("eager", 2.0), "model": "convnext_t", "img_h": 800, "img_w": 1344, "img_size": None,
                      "batch_size": 2, "settings": {**timed("eager", 2.0)["settings"], "features": True}})
    build_reports(tmp_path, tmp_path / "reports")
    text = (tmp_path / "reports" / "detection.md").read_text()
    (line,) = [row for row in text.splitlines() if row.startswith("| 800x1344 | convnext_t |")]
    cells = [c.strip() for c in line.split("|")[1:-1]]
    # ConvNeXt's four stages at strides 4, 8, 16, 32 with widths 96..768 (paper, Table 9)
    assert cells[4:6] == ["features", "[96,200,336]/4 [192,100,168]/8 [384,50,84]/16 [768,25,42]/32"]
    assert cells[10] == "2.00" and cells[11] == "-"
    assert "detection.md shows" in (tmp_path / "reports" / "not_measured.md").read_text()


def test_a_peak_probed_under_load_is_not_kept(tmp_path, monkeypatch):
    import json

    from zoo.runs.peaks import PEAKS_FILE, PeakCache, peak_key

    probes = fake_probes(monkeypatch, [(1e9, 0.9), (2e9, 0.0), (1.5e9, 0.9)])
    task = Task.named("throughput", "vit_ti16", 224, device="cpu", threads=2)
    loaded = PeakCache(tmp_path).get(task)
    assert loaded["peak_flops"] == 1e9 and loaded["peak_probe"] == "probed under load (others' CPU 90%), not kept"
    kept = json.loads((tmp_path / PEAKS_FILE).read_text())      # the bandwidth is kept; the loaded peak is not
    assert peak_key(task) not in kept and any(k.startswith("bandwidth | ") for k in kept)
    quiet = PeakCache(tmp_path).get(task)                      # the next run probes again, on a quiet machine
    assert quiet["peak_flops"] == 2e9 and quiet["peak_probe"] == "probed now, kept"
    assert PeakCache(tmp_path).get(task) == {**quiet, "peak_probe": "kept from a quiet probe"}
    assert json.loads((tmp_path / PEAKS_FILE).read_text())
    assert list(probes) == [(1.5e9, 0.9)]                      # a kept quiet peak is not probed again


def test_a_peak_probed_under_load_is_not_written_with_another_kept_one(tmp_path, monkeypatch):
    import json

    from zoo.runs.peaks import PEAKS_FILE, PeakCache, peak_key

    fake_probes(monkeypatch, [(1e9, 0.9), (2e9, 0.0)])       # one thread count under load, then another quiet
    loaded, quiet = (Task.named("throughput", "vit_ti16", 224, device="cpu", threads=t) for t in (2, 1))
    cache = PeakCache(tmp_path)
    assert cache.get(loaded)["peak_probe"].startswith("probed under load")
    assert cache.get(quiet)["peak_probe"] == "probed now, kept"
    peaks = {k for k in json.loads((tmp_path / PEAKS_FILE).read_text()) if not k.startswith("bandwidth | ")}
    assert peaks == {peak_key(quiet)}


def test_iters_and_min_seconds_set_the_protocol_and_stay_out_of_old_keys():
    from analysis.timing.latency import DEFAULT_PROTOCOL, QUICK_PROTOCOL

    assert "iters" not in Task.named("throughput", "deit_ti", 224).settings      # rows timed before keep their key
    task = Task.named("throughput", "deit_ti", 224, quick=True, iters=100, min_seconds=0.5)
    protocol = task.timing.protocol
    assert (protocol.min_iters, protocol.min_seconds, protocol.warmup) == (100, 0.5, QUICK_PROTOCOL.warmup)
    assert task.settings["iters"] == 100 and Task.named("throughput", "deit_ti", 224).timing.protocol == DEFAULT_PROTOCOL


def test_compare_plans_each_backend_interleaved():
    from zoo.compare.cli import main, parse
    from zoo.runs.plan import plan_tasks

    args = parse(["--models", "deit_ti,resnet50", "--metrics", "throughput", "--backend", "eager,onnxruntime",
                  "--no-save"])
    tasks = plan_tasks(args.models, None, [1], args.metrics, backends=args.backends).tasks
    assert [(t.request.model, t.timing.backend) for t in tasks] == [("deit_ti", "eager"), ("deit_ti", "onnxruntime"),
                                                     ("resnet50", "eager"), ("resnet50", "onnxruntime")]
    assert main(["--models", "deit_ti", "--backend", "eager,tensorrt", "--no-save"]) == 2


def test_compare_pad_to_records_the_size_asked_for(tmp_path):
    from zoo.compare.cli import main
    from zoo.store.store import ResultStore

    assert main(["--models", "swin_t,convnext_t", "--resolutions", "800x1333", "--pad-to", "32", "--metrics",
                 "cost", "--features", "--out", str(tmp_path), "--format", "json"]) == 0
    rows = ResultStore(tmp_path).rows("cost")
    assert {(r["model"], r["img_h"], r["img_w"], r["settings"]["padded_from"]) for r in rows} == {
        ("swin_t", 800, 1344, "800x1333"), ("convnext_t", 800, 1344, "800x1333")}
    assert main(["--models", "swin_t", "--resolutions", "800x1333", "--pad-to", "0", "--no-save"]) == 2


def test_the_console_table_never_cuts_a_map_shape():
    from rich.console import Console

    from zoo.compare.display import to_rich

    row = {**base_row(Task.named("cost", "resnet50", (800, 1344), features=True)), "family": "resnet",
           **count("resnet50", Size(800, 1344), train=False, features=True)}
    console = Console(width=160, record=True, file=open("/dev/null", "w"))    # zoo.compare prints at >= 160
    console.print(to_rich(merge([row])))
    text = "".join(console.export_text().split())          # the cells, however they wrapped
    for c, h, w in ([256, 200, 336], [512, 100, 168], [1024, 50, 84], [2048, 25, 42]):    # C2-C5 (He et al. Table 1)
        assert f"[{c},{h},{w}]" in text.replace("│", "")
    assert "…" not in text
