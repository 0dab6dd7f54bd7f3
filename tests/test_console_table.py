"""The console table of zoo.compare: shared settings stated once, few records turned on their side, never squeezed."""
from rich.console import Console

from zoo.compare.display import fold_constant, to_rich


def _records():
    base = {"size": "224", "img_size": 224, "batch_size": 1, "backend": "eager", "dtype": "fp32",
            "timed_on": "cpu: AMD EPYC, 2 threads", "noisy": False, "latency_ms_p50": 50.0, "imgs_per_s": 20.0,
            "imgs_per_s_p50": 20.5, "attn_share": 0.04, "act_peak_bytes": 7 * 2**20, "serve_bytes": 337 * 2**20,
            "top1": 81.0, "weights_label": "augreg2_in21k_ft_in1k", "pretraining": "in21k"}
    return [{**base, "model": "vit_b16", "params": 86_567_656, "macs": 17_563_828_224},
            {**base, "model": "swin_t", "params": 28_288_354, "macs": 4_490_000_000},
            {**base, "model": "convnext_t", "params": 28_589_128, "macs": 4_460_000_000}]


def _text(records, width):
    console = Console(width=width, record=True, file=open("/dev/null", "w"))
    console.print(to_rich(records, width))
    return console.export_text()


def test_shared_columns_become_one_note_and_empty_columns_go():
    headers, rows, notes = fold_constant(["model", "res", "batch", "noisy", "GMACs"],
                                         [["a", "224", "1", "", "4.5"], ["b", "224", "2", "", "17.6"]], {1, 2})
    assert headers == ["model", "batch", "GMACs"]
    assert rows == [["a", "1", "4.5"], ["b", "2", "17.6"]]
    assert notes == ["res: 224"]
    # one row: nothing is "shared", every column with a value stays in the table
    assert fold_constant(["model", "res"], [["a", "224"]], {1}) == (["model", "res"], [["a", "224"]], [])
    # a measured value two rows happen to share stays in the table
    assert fold_constant(["model", "GMACs"], [["a", "4.5"], ["b", "4.5"]], set())[2] == []


def test_three_models_in_a_narrow_terminal_read_whole_headers_and_values():
    text = _text(_records(), 100)
    lines = text.splitlines()
    assert max(len(line.rstrip()) for line in lines) <= 100
    for header in ("params (M)", "GMACs / image", "p50 (ms / batch)", "img/s (mean)"):
        assert any(header in line for line in lines), header        # on one line, not broken across lines
    gmacs = next(line for line in lines if "GMACs / image" in line)
    assert ["17.56", "4.49", "4.46"] == [cell for cell in gmacs.replace("│", " ").split() if "." in cell]
    shared = " ".join(text[text.index("same for all:"):].split())
    for note in ("res (px): 224", "batch: 1", "backend: eager", "dtype: fp32", "timed on: cpu: AMD EPYC, 2 threads"):
        assert note in shared
    assert "noisy" not in text                 # no row is noisy: no empty column


def test_a_table_that_fits_stays_one_row_per_record():
    records = [{k: r[k] for k in ("model", "size", "batch_size", "params", "macs")} for r in _records()]
    lines = _text(records, 100).splitlines()
    assert any("GMACs / image" in line for line in lines)
    assert [line.split()[1] for line in lines if line.startswith("│ ")] == ["vit_b16", "swin_t", "convnext_t"]


def test_many_records_stay_one_row_each():
    records = [{**_records()[0], "model": f"m{i}", "macs": 1e9 * (i + 1)} for i in range(13)]
    lines = _text(records, 160).splitlines()
    assert sum(1 for line in lines if line.startswith("│ m")) == 13


def test_a_timed_record_names_its_device_and_machine_as_the_reports_do():
    from zoo.compare.display import timed_on

    record = {"env": {"cpu_model": "AMD EPYC", "gpu_name": None}, "threads": 2, "timing_settings": {"device": "cpu"}}
    assert timed_on(record) == "cpu: AMD EPYC (2 threads)"
    gpu = {"env": {"cpu_model": "Intel Xeon", "gpu_name": "NVIDIA H200"}, "threads": 16, "device": "cuda"}
    assert timed_on(gpu) == "cuda: NVIDIA H200 / Intel Xeon (16 threads)"
