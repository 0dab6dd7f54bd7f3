"""The committed predicted-GPU rows (results/predicted.jsonl) and their report section and plots: which rows,
their band from the shipped calibration's factors, one count per (model, batch) reused across devices, --check
noticing a changed row, the table from hand-made rows, the plots with and without rows."""
import json
import os
from importlib import resources

import pytest

from zoo.report import gpu_predictions, predicted_gpu
from zoo.runs.request import Request
from zoo.report.build import Section
from analysis.predict.devices import device_sheet
from zoo.predict import inference as roofline_rows

# the five devices the report predicts for, as their datasheets name them (the V100 alias is the SXM2 part)
DEVICE_NAMES = {"H100", "A100", "L4", "RTX 4090", "V100 SXM2"}


def calibration() -> dict:
    """The shipped calibration, read here from the JSON itself (not through analysis.predict.calibration)."""
    return json.loads(resources.files("analysis.predict").joinpath("data", "gpu_calibration.json").read_text())


@pytest.fixture(scope="module")
def vit_ti_rows():
    counted = []
    real = roofline_rows.gpu_forward

    def counting(request, *args, **kwargs):
        counted.append(request)
        return real(request, *args, **kwargs)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(roofline_rows, "gpu_forward", counting)
        rows = gpu_predictions.fresh_predictions(["vit_ti16"])
    return rows, counted


def test_rows_cover_five_devices_two_batches_marked_predicted(vit_ti_rows):
    rows, _ = vit_ti_rows
    assert len(rows) == 5 * 2
    assert {r["device"] for r in rows} == DEVICE_NAMES
    assert {(r["device"], r["batch_size"]) for r in rows} == {(d, b) for d in DEVICE_NAMES for b in (1, 64)}
    assert all(r["predicted"] is True and r["img_h"] == r["img_w"] == 224 for r in rows)
    # AMP: bf16 autocast, except on Volta (no bf16 tensor cores): fp16
    assert {r["device"]: r["dtype"] for r in rows} == {**dict.fromkeys(DEVICE_NAMES, "bf16"), "V100 SXM2": "fp16"}
    assert all(r["fits_memory"] and 0 < r["serve_bytes"] < 1 << 30 for r in rows)   # ViT-Ti: 5.7 M params


def test_band_is_the_calibrations_held_out_factors(vit_ti_rows):
    rows, _ = vit_ti_rows
    cal = calibration()
    for r in rows:
        low, high, _ = cal["bands"]["fitted" if r["architecture"] in cal["arch"] else "unfitted"]
        assert r["imgs_per_s_p10"] == pytest.approx(r["imgs_per_s"] * low, rel=1e-6)
        assert r["imgs_per_s_p90"] == pytest.approx(r["imgs_per_s"] * high, rel=1e-6)
        assert r["calibration_source"] == cal["source"]
        assert ("no fitted source ran" in r["band_from"]) == (r["device"] == "H100")    # Hopper: none did
        assert r["torch"] == "2.9"                            # named, whatever torch the report runs under
        assert r["latency_ms"] == pytest.approx(r["batch_size"] / r["imgs_per_s"] * 1e3, rel=1e-6)


def test_fp32_and_tf32_are_fitted_on_published_tables_and_an_a100_row_says_its_band_is_the_fitted_one():
    """The shipped rows (fit_rows.csv.gz, read here as CSV) hold fp32 and TF32 tables of data-center GPUs beside
    timm's AMP ones, so an fp32 row on an A100 carries the band of a fitted architecture; an H100's says none ran."""
    import csv
    import gzip
    import io

    data = resources.files("analysis.predict").joinpath("data", "fit_rows.csv.gz").read_bytes()
    fitted = list(csv.DictReader(io.StringIO(gzip.decompress(data).decode("utf-8"))))
    fp32 = {(r["source"], r["device"]) for r in fitted if r["dtype"] == "fp32"}
    assert {("nvidia", "A100"), ("nvidia", "V100 SXM2"), ("nvidia", "T4"), ("pycls", "V100 SXM2"),
            ("convnext", "A100")} <= fp32
    assert all(r["cite"] for r in fitted)                                      # each row cited
    request = Request("vit_ti16", 224, 8, "fp32")
    a100 = roofline_rows.predict(request, device_sheet("A100")).to_json()
    h100 = roofline_rows.predict(request, device_sheet("H100")).to_json()
    lo, hi = calibration()["bands"]["fitted"][:2]
    assert a100["imgs_per_s_p10"] / a100["imgs_per_s"] == pytest.approx(lo)
    assert a100["imgs_per_s_p90"] / a100["imgs_per_s"] == pytest.approx(hi)
    assert "no fitted source ran" not in a100["band_from"] and "no fitted source ran a Hopper GPU" in h100["band_from"]


def test_one_count_per_model_batch_and_dtype_gives_predicts_numbers(vit_ti_rows):
    rows, counted = vit_ti_rows
    assert sorted((c.batch_size, c.dtype) for c in counted) == [(1, "bf16"), (1, "fp16"), (64, "bf16"), (64, "fp16")]
    one = next(r for r in rows if r["device"] == "L4" and r["batch_size"] == 64)
    alone = roofline_rows.predict(Request("vit_ti16", 224, 64, "bf16"), device_sheet("L4"),    # counted afresh
                                  torch=gpu_predictions.TORCH).to_json()
    assert one == {k: pytest.approx(alone[k], rel=1e-8) if isinstance(alone[k], float) else alone[k]
                   for k in gpu_predictions.KEPT}


def test_stale_predictions_name_a_changed_missing_or_absent_row(tmp_path, vit_ti_rows, monkeypatch):
    rows, _ = vit_ti_rows
    monkeypatch.setattr(gpu_predictions, "fresh_predictions", lambda models: [dict(r) for r in rows])
    assert gpu_predictions.stale_predictions(tmp_path, ["vit_ti16"])[0].endswith("run `python -m zoo.report --refresh`")
    gpu_predictions.write_predictions(tmp_path, ["vit_ti16"])
    assert gpu_predictions.stale_predictions(tmp_path, ["vit_ti16"]) == []
    path = gpu_predictions.predictions_path(tmp_path)
    kept = [json.loads(line) for line in path.read_text().splitlines()]
    kept[3]["imgs_per_s"] *= 1.01
    path.write_text("".join(json.dumps(r) + "\n" for r in kept[:-1]))
    problems = gpu_predictions.stale_predictions(tmp_path, ["vit_ti16"])
    assert any(f"vit_ti16 batch {kept[3]['batch_size']} on {kept[3]['device']}" in p and "imgs_per_s" in p
               for p in problems), problems
    assert any("lacks vit_ti16 batch 64 on V100 SXM2" in p for p in problems), problems
    path.write_text(path.read_text().replace('"predicted": true', '"predicted": false', 1))
    assert "not marked predicted" in gpu_predictions.stale_predictions(tmp_path, ["vit_ti16"])[0]


def hand_row(device="L4", model="vit_b16", batch=64, imgs=1000.0, fits=True, band=(0.8, 1.25)):
    return {"predicted": True, "device": device, "model": model, "batch_size": batch, "dtype": "bf16",
            "imgs_per_s": imgs, "imgs_per_s_p10": imgs * band[0], "imgs_per_s_p90": imgs * band[1],
            "roofline_imgs_per_s": 2 * imgs, "latency_ms": batch / imgs * 1e3, "serve_bytes": 3 * 2 ** 30,
            "device_memory_bytes": 24e9, "fits_memory": fits, "source": f"{device} datasheet",
            "calibration_source": "timm's tables", "band_from": "leave one device out"}


def test_section_table_from_hand_made_rows():
    rows = [hand_row(), hand_row(model="vit_h14", batch=1, imgs=4.0, fits=False), hand_row("A100", imgs=2500.0)]
    section = Section(predicted_gpu.HEADING, predicted_gpu.intro(rows), predicted_gpu.predicted_table(rows),
                      footnotes=predicted_gpu.sources(rows))
    text = section.markdown()
    assert text.startswith("# Predicted GPU throughput (not measured)")
    assert "x0.80-x1.25" in text and "timm's tables" in text
    lines = [line for line in text.splitlines() if line.startswith("| L4 [1] | vit_b16 |")]
    # 1000 img/s, band 800-1250, roofline 2000, 64 images in 64 ms, 3 GiB; as people read them (issue 44):
    # thousands separated, no exponent, ranges with an en dash
    assert lines == ["| L4 [1] | vit_b16 | 64 | bf16 | 1,000 | 800\u20131,250 | 2,000 | 64 | 3.00 | yes |"]
    assert "| L4 [1] | vit_h14 | 1 | bf16 | 4 | 3.2\u20135 | 8 | 250 | 3.00 | NO: over 24 GB |" in text
    assert predicted_gpu.plain(12160.4) == "12,160" and predicted_gpu.plain(9813.2) == "9,813"   # not 1.216e+04
    assert "| A100 [2] | vit_b16 |" in text and "[2] A100: A100 datasheet" in text
    header = next(line for line in text.splitlines() if line.startswith("| device"))
    assert header.count("(predicted") == 5
    empty = Section(predicted_gpu.HEADING, predicted_gpu.intro([]), predicted_gpu.predicted_table([]),
                    ["no predicted GPU rows in results/"])
    assert empty.empty_line == "Left out: no predicted GPU rows in results/"


def accuracy_point(model, top1, pretraining="in1k", crops="single", size=224):
    return {"model": model, "family": "vit", "img_size": size, "top1": top1, "pretraining": pretraining,
            "crops": crops}


def test_accuracy_against_predicted_keeps_fitting_rows_and_its_pareto_front(tmp_path):
    points = [accuracy_point("a", 80.0), accuracy_point("b", 75.0), accuracy_point("c", 70.0),
              accuracy_point("d", 90.0), accuracy_point("a", 81.0, size=384)]
    rows = [hand_row(model="a", imgs=100.0), hand_row(model="b", imgs=200.0), hand_row(model="c", imgs=150.0),
            hand_row(model="d", imgs=50.0, fits=False), hand_row(model="a", imgs=1.0, batch=1)]
    plotted = predicted_gpu.accuracy_vs_predicted(points, rows, "L4", tmp_path / "p.png")
    assert (tmp_path / "p.png").is_file()
    got = {p["model"]: (p["predicted_imgs_per_s"], p["pareto_predicted_imgs_per_s"]) for p in plotted}
    # d does not fit (left out), a@384 is not at 224; c is slower and less accurate than b: off the front
    assert got == {"a": (100.0, True), "b": (200.0, True), "c": (150.0, False)}
    assert predicted_gpu.accuracy_vs_predicted(points, [], "L4", tmp_path / "q.png") == []
    assert (tmp_path / "q.png").is_file()


def test_task_accuracy_against_gflops_with_and_without_rows(tmp_path):
    assert predicted_gpu.task_accuracy_vs_gflops([], [], tmp_path / "empty.png") == []
    assert (tmp_path / "empty.png").is_file()
    detector = {"model": "swin_t", "family": "swin", "settings": {"detector": "maskrcnn"}, "macs": 130e9,
                "box_ap": 46.0, "img_h": 800, "img_w": 1280}
    segmenter = {"model": "convnext_t", "family": "convnext", "settings": {"segmenter": "upernet"}, "macs": 470e9,
                 "miou": 46.7, "img_h": 512, "img_w": 2048}
    no_ap = {**detector, "model": "vit_b16", "box_ap": None}
    plotted = predicted_gpu.task_accuracy_vs_gflops([detector, no_ap], [segmenter], tmp_path / "t.png")
    assert (tmp_path / "t.png").is_file()
    assert [(p["model"], p["GFLOPs"], p["score"]) for p in plotted] == [("swin_t", 260.0, 46.0),
                                                                       ("convnext_t", 940.0, 46.7)]


def test_an_unusable_file_is_named_and_not_shown(tmp_path):
    from zoo.report.rows import load

    path = gpu_predictions.predictions_path(tmp_path)
    path.parent.mkdir(parents=True)
    path.write_text('{"predicted": true, "device": "L4"}\n')          # a row without the fields the table reads
    data = load(tmp_path)
    assert data.predicted == [] and data.predicted_problem is None    # the file is read; its one line is no row
    assert [(b.number, b.reason) for b in data.predicted_bad_lines] == [(1, "lacks model")]
    from zoo.report.build import sections

    shown = sections(data)["predicted_gpu.md"].markdown()
    assert f"Left out: no usable predicted GPU rows: 1 line(s) of results/ are no usable predicted rows and were " \
           f"skipped: {path}:1: lacks model" in shown
    path.write_text("{not json\n")
    assert gpu_predictions.read_predictions(tmp_path) == ([], None)
    path.unlink()
    os.mkfifo(path)                                                    # never opened: no hang
    assert gpu_predictions.read_predictions(tmp_path) == ([], "results/predicted.jsonl is a FIFO, not a regular file")
    path.unlink()
    assert gpu_predictions.read_predictions(tmp_path) == ([], None)
