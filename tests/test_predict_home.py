"""Prediction's home (issue 52): a datasheet is looked up by name in one place and handed down, a new device is one
sheet, and zoo.select reads its command line with one parser that declares each option once."""
import ast
import json
from pathlib import Path

import pytest

from cli import call_main

from analysis.predict import devices
from analysis.predict.devices import DeviceSheet

REPO = Path(__file__).resolve().parents[1]
T = 1e12


def calls_of(name: str) -> dict[str, int]:
    """'module.function' -> how many calls of `name` it makes, over zoo/ and analysis/ (the definition aside)."""
    found: dict[str, int] = {}
    for path in [*(REPO / "zoo").rglob("*.py"), *(REPO / "analysis").rglob("*.py")]:
        module = ".".join(path.relative_to(REPO).with_suffix("").parts)
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            for call in ast.walk(node):
                callee = call.func if isinstance(call, ast.Call) else None
                named = getattr(callee, "id", None) or getattr(callee, "attr", None)
                if named == name:
                    found[f"{module}.{node.name}"] = found.get(f"{module}.{node.name}", 0) + 1
    return found


def test_a_datasheet_is_looked_up_by_name_in_one_place():
    """device_sheet is called once for the command line (zoo.options.datasheet, which --predict, --price-per-hour,
    the report's fixed devices and the TPU recipes go through) and once for the GPU a timed run names (the
    measured MFU's datasheet peak); everything else is handed the sheet. No module reads the table by a name."""
    assert calls_of("device_sheet") == {"zoo.options.__init__.datasheet": 1,
                                        "analysis.timing.peak.datasheet_peak_flops": 1}
    indexed = [str(p.relative_to(REPO)) for p in [*(REPO / "zoo").rglob("*.py"), *(REPO / "analysis").rglob("*.py")]
               if any(isinstance(n, ast.Subscript) and getattr(n.value, "id", None) == "DEVICE_SHEETS"
                      for n in ast.walk(ast.parse(p.read_text(encoding="utf-8"))))]
    assert indexed == []


def test_every_sheet_names_its_architecture_and_the_linked_ones_their_link():
    """The architectures issue 53's factors hang on, one per sheet; NVLink where a source states it (the
    schedule's all-reduce reads nothing else)."""
    kinds = {"Volta", "Turing", "Ampere GA100", "Ampere GA10x", "Ada", "Hopper", "Blackwell", "TPU v3"}
    assert all(s.architecture in kinds for s in devices.DEVICE_SHEETS.values())
    assert {s.name: s.link_bandwidth for s in devices.DEVICE_SHEETS.values() if s.link_bandwidth} == \
        {"H100": 900e9, "H200": 900e9, "A100": 600e9, "A100 40GB": 600e9, "V100 SXM2": 300e9}
    assert all(s.link_source for s in devices.DEVICE_SHEETS.values() if s.link_bandwidth)


def test_a_new_device_is_one_sheet(monkeypatch):
    """One DeviceSheet added to the table: the help lists it, --predict takes it, and it is predicted on (its
    bandwidth ten times another's makes a memory-bound forward faster, with nothing else told)."""
    fast = DeviceSheet("Test GPU", {"fp32": 10 * T, "bf16": 100 * T}, 10_000e9, ("a test's own sheet",),
                       architecture="Hopper", memory_bytes=10e9)
    slow = DeviceSheet("Slow GPU", {"fp32": 10 * T, "bf16": 100 * T}, 1_000e9, ("a test's own sheet",),
                       architecture="Hopper", memory_bytes=10e9)
    monkeypatch.setitem(devices.DEVICE_SHEETS, fast.name, fast)
    monkeypatch.setitem(devices.DEVICE_SHEETS, slow.name, slow)
    from zoo.select.cli import build_parser

    assert "'Test GPU'" in build_parser().format_help().replace("\n", " ").replace("  ", " ")
    done = call_main("zoo.compare", "--models", "vit_ti16", "--resolutions", "32", "--predict", "testgpu,Slow GPU",
                     "--dtype", "bf16", "--format", "json", "--no-save")
    assert done.returncode == 0, done.stderr
    rows = {r["device"]: r for r in json.loads(done.stdout)["rows"]}
    assert rows["Test GPU"]["mem_bandwidth"] == 10_000e9 and rows["Test GPU"]["imgs_per_s"] > rows["Slow GPU"]["imgs_per_s"]


def test_select_predicts_training_with_metrics_written_either_way():
    """`--metrics=train` and `--metrics train` are one option of one parser (the old dispatch searched the raw
    command line for "--metrics" and missed the first)."""
    answers = []
    for metrics in (["--metrics=train"], ["--metrics", "train"]):
        done = call_main("zoo.select", "--predict", "H100", *metrics, "--models", "vit_ti16", "--resolution", "64",
                         "--batch-size", "4", "--format", "json")
        assert done.returncode == 0, done.stderr
        answers.append(json.loads(done.stdout))
    assert answers[0] == answers[1] and answers[0]["query"]["metrics"] == "train"
    assert answers[0]["shortlist"][0]["train_imgs_per_s"] > 0 and answers[0]["query"]["dtype"] == "bf16"


@pytest.mark.parametrize("args, named", [(["--predict", "H100", "--metrics", "train", "--max-gmacs", "3"], "--max-gmacs"),
                                         (["--predict", "H100", "--max-train-hours", "3"], "--max-train-hours"),
                                         (["--tf32", "on"], "--tf32"), (["--epochs", "3"], "--epochs"),
                                         (["--predict", "H100", "--metrics", "cost"], "--metrics")])
def test_an_option_the_mode_does_not_take_is_refused_in_one_line(args, named, tmp_path):
    done = call_main("zoo.select", *args, "--models", "vit_ti16", "--out", str(tmp_path / "o"))
    assert done.returncode == 2 and not done.stdout and not (tmp_path / "o").exists()
    assert len(done.stderr.strip().splitlines()) == 1 and named in done.stderr


@pytest.mark.parametrize("command", ["compare", "select", "report"])
def test_each_command_has_one_parser_and_declares_each_option_once(command):
    """Counted in the source: one parser constructed per command package, and `--dtype` (any option) named in
    one add_argument / add_options call of it."""
    parsers, declared = 0, {}
    for path in (REPO / "zoo" / command).rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.Call):
                continue
            called = getattr(node.func, "id", None) or getattr(node.func, "attr", None)
            parsers += called in ("ArgumentParser", "UsageParser")
            if called in ("add_argument", "add_options"):
                for arg in node.args:
                    if isinstance(arg, ast.Constant) and str(arg.value).startswith("--"):
                        declared[arg.value] = declared.get(arg.value, 0) + 1
    assert parsers == 1
    assert {k: n for k, n in declared.items() if n > 1} == {}
    assert command == "report" or declared["--dtype"] == 1


def test_a_column_shows_its_fields_schema_unit():
    """Each figure column scales its field by the unit the row schema gives it (analysis.units.SHOWN) and its
    header names that unit; the exceptions say why."""
    from analysis.units import SHOWN
    from zoo.console.columns import COLUMNS, unit_of

    stated_otherwise = {"GFLOPs / image": "FLOPs = 2 x MACs", "MB moved / batch": "decimal MB",
                        "box AP (published)": "AP is a percentage", "mask AP (published)": "AP is a percentage"}
    for c in COLUMNS:
        unit = unit_of(c.field)
        if c.format is not None and unit in SHOWN and c.header not in stated_otherwise:    # MFU: "12%" in its cell
            assert SHOWN[unit][1].split()[0] in c.header, (c.field, unit, c.header)
    macs = next(c for c in COLUMNS if c.header == "GMACs / image")
    assert (unit_of("macs"), macs.format(4_608_000_000)) == ("MACs per image", "4.61")
    act = next(c for c in COLUMNS if c.field == "act_peak_bytes")
    assert act.format(3 * 2 ** 20 + 2 ** 19) == "3.5" and act.at_batch(1).header == "act peak (MiB, batch 1)"


def test_a_new_cost_column_is_its_field_plus_one_entry(monkeypatch):
    """One entry in the column table (zoo.console.columns) for a field the cost row already has (its unit from the
    schema: bytes per batch): zoo.compare's table and the report's cost table both show it, scaled to MiB."""
    from zoo.compare.display import to_markdown
    from zoo.console import columns
    from zoo.report.tables import cost_table

    entry = columns.Column("train_cuda_peak_bytes", "train CUDA peak (MiB / batch)",
                           columns.figure("train_cuda_peak_bytes", 1), report=True)
    monkeypatch.setattr(columns, "COLUMNS", (*columns.COLUMNS, entry))
    row = {"model": "m", "size": "224", "family": "vit", "img_h": 224, "img_w": 224, "params": 5_000_000,
           "macs": 10 ** 9, "attn_share": 0.1, "act_peak_bytes": 2 ** 20, "uncounted_ops": [],
           "train_cuda_peak_bytes": 3 * 2 ** 20}
    shown = to_markdown([row])
    assert "train CUDA peak (MiB / batch)" in shown and "| 3.0 |" in shown
    report = cost_table([row])
    assert "train CUDA peak (MiB, batch 1)" in report and report.rstrip().endswith("| 3.0 | none |")
