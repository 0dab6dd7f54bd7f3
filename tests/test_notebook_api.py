"""The Python API for notebooks (issue 54, item 7): zoo.count, zoo.compare (the command's own path, as a
DataFrame) and zoo.load_frame of predicted rows; docs/models.md's examples run here. Expected counts are the
closed forms of analysis/count/closed_form.py (ViT paper Eq. 1-4), the printed output is the command's own."""
import doctest
import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
import torch

import zoo
from cli import call_main

from analysis.count.closed_form import ViTShape, vit_macs, vit_params
from zoo.compare.display import to_markdown
from zoo.errors import UsageError

REPO = Path(__file__).resolve().parents[1]
VIT_B16 = ViTShape(embed_dim=768, depth=12, mlp_dim=3072, patch_size=16)
DINOV2_S14 = ViTShape(embed_dim=384, depth=12, mlp_dim=1536, patch_size=14, num_classes=0, num_head_layers=0)
LAYER_SCALE = 2 * 384 * 12        # DINOv2's LayerScale: a gamma of width d after attention and after the MLP


def test_count_of_a_pooling_layer_is_zero_macs():
    record = zoo.count(torch.nn.AdaptiveAvgPool2d(1), 224)
    assert (record.macs, record.params, record.uncounted_ops) == (0, 0, [])


def records_of(frame: pd.DataFrame) -> list[dict]:
    """The frame's rows as records, a missing field (NA, NaN, None) left out."""
    def present(v) -> bool:
        return not (v is None or v is pd.NA or (isinstance(v, float) and math.isnan(v)))
    return [{k: v for k, v in row.items() if present(v)} for row in frame.to_dict("records")]


def test_compare_returns_the_records_the_command_prints():
    options = ["--models", "vit_b16", "--metrics", "cost", "--no-save"]
    frame = zoo.compare(models=["vit_b16"], metrics=["cost"], no_save=True)
    assert isinstance(frame, pd.DataFrame) and len(frame) == 1
    row = frame.iloc[0]
    assert (row["model"], row["size"], row["batch_size"]) == ("vit_b16", "224", 1)
    assert row["macs"] == vit_macs(VIT_B16, 224)["total"] and row["params"] == vit_params(VIT_B16, 224)
    assert frame.attrs["units"]["macs"] == "MACs per image"
    printed = call_main("zoo.compare", *options, "--format", "json")
    assert printed.returncode == 0, printed.stderr
    expected = [{k: v for k, v in r.items() if v is not None} for r in json.loads(printed.stdout)]
    assert records_of(frame) == expected
    table = call_main("zoo.compare", *options, "--format", "markdown")
    assert to_markdown(records_of(frame)) == table.stdout and "17.56" in table.stdout      # the printed table


def test_compare_counts_a_timm_model_with_its_own_head():
    frame = zoo.compare(models="timm:vit_small_patch14_dinov2", metrics="cost", resolutions=224, no_save=True)
    row = frame.iloc[0]
    assert row["head_classes"] == 0 and row["macs"] == vit_macs(DINOV2_S14, 224)["total"]
    assert row["params"] == vit_params(DINOV2_S14, 224) + LAYER_SCALE


def test_compare_saves_rows_as_the_command_does(tmp_path):
    frame = zoo.compare(models=["vit_ti16"], metrics=["cost"], resolutions=[32, (32, 48)], out=tmp_path)
    assert frame["size"].tolist() == ["32", "32x48"]
    stored = zoo.load_frame(tmp_path, "cost")
    assert stored[["img_h", "img_w"]].values.tolist() == [[32, 32], [32, 48]]
    assert stored["macs"].tolist() == frame["macs"].tolist()


@pytest.mark.parametrize("options, error, message", [
    ({"metrics": ["speed"]}, UsageError, "unknown metric 'speed'"),                  # the command's own refusal
    ({"resolutions": [0]}, UsageError, "--resolutions"),
    ({"no_such_option": 1}, TypeError, "unexpected keyword argument 'no_such_option'; options: "),
    ({"format": "csv"}, TypeError, r"zoo.compare\(format=...\): not in the Python API \(the DataFrame is the format\)"),
    ({"predict": "A100"}, TypeError, r"zoo.compare\(predict=...\): not in the Python API"),
    ({"no_save": "yes"}, TypeError, r"zoo.compare\(no_save=...\): True or False, not 'yes'"),
])
def test_a_bad_option_is_refused_before_any_work(options, error, message):
    with pytest.raises(error, match=message):
        zoo.compare(models=["vit_b16"], **options)


def test_predicted_rows_load_as_a_frame(tmp_path):
    committed = (REPO / "results" / "predicted.jsonl").read_text(encoding="utf-8").splitlines()
    assert len(zoo.load_frame(REPO, "predicted")) == len(committed)
    (tmp_path / "results").mkdir()
    (tmp_path / "results" / "predicted.jsonl").write_text("\n".join([*committed[:2], '{"predicted": "no"}', ""]),
                                                           encoding="utf-8")
    with pytest.warns(UserWarning, match=r"predicted.jsonl: skipped 1 line\(s\) that are not predicted rows "
                                         r"\(line 3: a predicted row: "):
        frame = zoo.load_frame(tmp_path, "predicted")
    assert frame[["device", "model", "batch_size"]].values.tolist() == \
        [[json.loads(line)[k] for k in ("device", "model", "batch_size")] for line in committed[:2]]
    assert zoo.load_frame(tmp_path / "nothing", "predicted").empty
    with pytest.raises(ValueError, match="unknown row kind 'predict'; expected one of cost, throughput, predicted"):
        zoo.load_frame(tmp_path, "predict")


def test_the_models_page_examples_run(monkeypatch):
    monkeypatch.chdir(REPO)                     # its load_frame(".") reads the committed rows
    result = doctest.testfile(str(REPO / "docs" / "models.md"), module_relative=False,
                              optionflags=doctest.NORMALIZE_WHITESPACE)
    assert result.attempted >= 10 and result.failed == 0


def test_the_api_names_load_nothing_heavy():
    """`import zoo` and touching zoo.count / zoo.compare (not calling them) import no torch, timm or pandas; a
    fresh process is what is tested, hence the subprocess."""
    code = ("import sys, zoo\nzoo.count, zoo.compare, zoo.load_frame\nassert callable(zoo.compare)\n"
            "print(sorted(m for m in ('torch', 'timm', 'pandas') if m in sys.modules))\n")
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env={**os.environ, "PYTHONPATH": str(REPO)})
    assert run.stdout.strip() == "[]"
