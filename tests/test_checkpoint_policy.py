"""The accuracy shown is that of the weights a user would download (issue 19): --weights default|paper|best.

Expected checkpoints are derived here from timm's own pretrained configs (the installed timm's registry)
and the packaged table read as plain CSV, not through zoo.models.accuracy; expected numbers are typed
from timm's results-imagenet.csv (aa4b585) or the repositories named beside them.
"""
import csv
import json
from importlib import resources

import pytest
import timm
from timm.models import _registry

import zoo
from zoo.compare.display import merge
from zoo.models.accuracy import checkpoint_at
from zoo.models.cards import TIMM_ARCHS
from zoo.report.accuracy import accuracy_points, accuracy_table
from zoo.select.shortlist import _accuracy, _row

ACCURACY_FIELDS = {"source", "weights", "pretraining", "img_size", "top1", "top5", "real", "imagenet_v2", "sketch",
                   "imagenet_r", "imagenet_a"}


def packaged_rows() -> dict:
    text = resources.files("zoo.models").joinpath("data", "timm_results.csv").read_text(encoding="utf-8")
    return {(r["model_tag"], int(r["img_size"])): r for r in csv.DictReader(text.splitlines())}


def expected_default(model: str, size: int, groups=None) -> dict | None:
    """The first `arch.tag` in timm's pretrained order over the model's architectures that the packaged table
    evaluated at `size` (timm's default tag first: get_pretrained_cfg(arch).tag)."""
    rows = packaged_rows()
    for arch in TIMM_ARCHS[model]:
        names = _registry._model_with_tags[arch]
        default = timm.models.get_pretrained_cfg(arch)
        assert default is None or names[0] == f"{arch}.{default.tag}"      # the order's head is the default
        for name in names:
            row = rows.get((name, size))
            if row and (groups is None or row["pretraining"] in groups):
                return {"weights": name, "top1": float(row["top1"]), "pretraining": row["pretraining"]}
    return None


def cost_row(model: str, size: int) -> dict:
    return {"kind": "cost", "model": model, "img_h": size, "img_w": size, "img_size": size, "batch_size": 1,
            "settings": {"dtype": "fp32"}, "family": zoo.get_spec(model).family, "macs": 1e9}


CASES = [(m, s) for m in zoo.list_models() for s in sorted({zoo.get_spec(m).native_size, 384})]


def test_every_table_shows_the_default_checkpoint_derived_from_timm():
    """Every registry model at its native size and at 384: the compare table, zoo.select's row and the report's
    accuracy section all show timm's evaluation of the checkpoint timm's pretrained order gives."""
    cost = [cost_row(m, s) for m, s in CASES]
    compared = {(r["model"], r["img_size"]): r for r in merge(cost)}
    reported = {(p["model"], p["img_size"]): p for p in accuracy_points(cost, [])[0]}
    shown = 0
    for model, size in CASES:
        want = expected_default(model, size)
        got = compared[(model, size)]
        assert (got["weights"], got["top1"], got["pretraining"]) == \
            ((want["weights"], want["top1"], want["pretraining"]) if want else (None, None, None)), (model, size)
        entry, reason = _accuracy(model, size, None, "default")
        selected = _row(model, size, entry)
        assert reason is None and selected["weights"] == (want and want["weights"]), (model, size)
        if want:
            shown += 1
            assert selected["top1"] == want["top1"] and selected["pretraining"] == want["pretraining"]
            point = reported[(model, size)]
            assert (point["weights"], point["top1"], point["pretraining"]) == \
                (want["weights"], want["top1"], want["pretraining"])
            assert got["weights_label"] == want["weights"].partition(".")[2]     # the short form: timm's tag
    assert shown >= 40      # most of the 33 models x 1-2 sizes have an evaluated default checkpoint


def test_pretraining_chooses_among_checkpoints():
    # results-imagenet.csv: convnext_tiny.fb_in1k 224 -> 82.066 (the in1k one; the default is in12k_ft_in1k)
    found = checkpoint_at("convnext_t", 224, "default", ["in1k"])
    assert (found["weights"], found["top1"], found["pretraining"]) == ("convnext_tiny.fb_in1k", 82.066, "in1k")
    assert expected_default("convnext_t", 224, ["in1k"])["weights"] == found["weights"]
    # no in1k checkpoint at 384: no accuracy, but the row's group is the one asked for
    entry, reason = _accuracy("convnext_t", 384, ["in1k"], "default")
    assert entry is None and reason is None and _row("convnext_t", 384, None, "default", ["in1k"])["pretraining"] \
        == "in1k"
    # a model with no checkpoint of the group is excluded, naming its groups
    entry, reason = _accuracy("vit_r50_b16", 384, ["in1k"], "default")
    assert entry is None and "no in1k checkpoint" in reason


def test_best_is_the_most_accurate_evaluated_checkpoint():
    rows = packaged_rows()
    for model, size in CASES:
        evaluated = [(float(r["top1"]), name) for (name, s), r in rows.items()
                     if s == size and name.partition(".")[0] in TIMM_ARCHS[model]]
        found = checkpoint_at(model, size, "best")
        assert (found and found["top1"]) == (max(evaluated)[0] if evaluated else None), (model, size)
    # results-imagenet.csv: convnext_tiny.in12k_ft_in1k_384 at 384 -> 85.154, the best convnext_tiny at 384
    assert checkpoint_at("convnext_t", 384, "best")["weights"] == "convnext_tiny.in12k_ft_in1k_384"


def test_vit_r50_b16_at_384_is_in21k_everywhere():
    # results-imagenet.csv: vit_base_r50_s16_384.orig_in21k_ft_in1k 384 -> 84.988 (timm's weights: ImageNet-21k)
    cost = [cost_row("vit_r50_b16", 384), cost_row("vit_r50_b16", 224)]
    record = merge(cost)[0]
    point = accuracy_points(cost, [])[0][0]
    row = _row("vit_r50_b16", 384, checkpoint_at("vit_r50_b16", 384))
    for shown in (record, point, row):
        assert (shown["top1"], shown["pretraining"]) == (84.988, "in21k")
    assert _row("vit_r50_b16", 224, None)["pretraining"] == "in21k"     # no entry at 224: still its weights' group
    # the paper's JFT-300M hybrid (ViT Table 6: 85.58) is the paper column only
    paper = checkpoint_at("vit_r50_b16", 384, "paper")
    assert (paper["top1"], paper["pretraining"], paper["shipped"]) == (85.58, "jft300m", False)
    assert point["other_top1"] == 85.58 and point["other_pretraining"] == "jft300m"


def test_report_shows_default_and_paper_side_by_side_with_the_shifted_sets():
    points, _ = accuracy_points([cost_row("convnext_t", 224), cost_row("resnet50", 224)], [])
    table = accuracy_table(points)
    header = table.splitlines()[0]
    # the paper policy's column is 'published': each cell says paper or repository (issue 35)
    assert "top-1 % (default)" in header and "top-1 % (published)" in header and "(paper)" not in header
    assert "| ReaL % (default) | IN-V2 % (default) | Sketch % (default) | IN-R % (default) | IN-A % (default) |" \
        in header                                                        # one figure per cell, never stacked
    line = next(l for l in table.splitlines() if l.startswith("| convnext_t "))
    cells = [c.strip() for c in line.strip("|").split("|")]
    # results-imagenet{,-real,v2-matched-frequency,-sketch,-r,-a}.csv rows of convnext_tiny.in12k_ft_in1k at 224
    row = packaged_rows()[("convnext_tiny.in12k_ft_in1k", 224)]
    shifted = [f"{float(row[k]):.2f}" for k in ("real", "imagenet_v2", "sketch", "imagenet_r", "imagenet_a")]
    assert cells[3:12] == ["84.19", "in12k_ft_in1k", "in21k", *shifted, "82.10"]    # ConvNeXt README: 82.1
    assert cells[12] == "fb_in1k (repository)"
    # the long citation is a footnote: the cell says 'repository [n]', citations(points)[n - 1] is the README
    from zoo.report.accuracy import citations
    number = int(cells[-1].removeprefix("repository [").removesuffix("]"))
    assert citations(points)[number - 1].startswith("facebookresearch/ConvNeXt README.md")
    resnet = next(l for l in table.splitlines() if l.startswith("| resnet50 "))
    assert "| 80.38 | a1_in1k |" in resnet and "75.30 | not in timm (repository)" in resnet


def run(module, capsys, *args) -> tuple[int, str, str]:
    """`python -m <module> args` in this process (as tests/test_select.py does): exit status, stdout, stderr."""
    code = module.main(list(args))
    out = capsys.readouterr()
    return code, out.out, out.err


def test_select_json_shows_the_downloaded_weights_and_the_paper_ones(capsys, tmp_path, monkeypatch):
    from zoo import select

    monkeypatch.chdir(tmp_path)
    models = "convnext_t,vit_b16,resnet50,vit_r50_b16"
    code, out, err = run(select, capsys, "--models", models, "--resolution", "224", "--format", "json")
    assert code == 0, err
    rows = {r["model"]: r for r in json.loads(out)["shortlist"]}
    # results-imagenet.csv at 224 (the default tags of timm 1.0.31's pretrained order)
    assert (rows["convnext_t"]["top1"], rows["convnext_t"]["weights"]) == (84.192, "convnext_tiny.in12k_ft_in1k")
    assert (rows["vit_b16"]["top1"], rows["vit_b16"]["weights_label"]) == (85.108, "augreg2_in21k_ft_in1k")
    assert (rows["resnet50"]["top1"], rows["resnet50"]["weights_label"]) == (80.382, "a1_in1k")
    for row in rows.values():
        assert all(set(e) >= ACCURACY_FIELDS and e["img_size"] == 224 for e in row["accuracy"])
    assert {e["weights"] for e in rows["convnext_t"]["accuracy"]} >= {"convnext_tiny.fb_in1k",
                                                                      "convnext_tiny.in12k_ft_in1k"}
    assert {e["source"] for e in rows["convnext_t"]["accuracy"]} == {"repository", "timm"}
    code, out, err = run(select, capsys, "--models", models, "--resolution", "224", "--format", "json",
                         "--weights", "paper")
    rows = {r["model"]: r for r in json.loads(out)["shortlist"]}
    # ConvNeXt README: 82.1; deep-residual-networks README: 1-crop error 24.7% (the Caffe model timm lacks)
    assert (rows["convnext_t"]["top1"], rows["convnext_t"]["weights_label"]) == (82.1, "fb_in1k (repository)")
    assert (rows["resnet50"]["top1"], rows["resnet50"]["weights"], rows["resnet50"]["weights_label"]) == \
        (75.3, None, "not in timm (repository)")
    code, out, err = run(select, capsys, "--models", "deit_ti", "--weights", "newest")
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1
    assert list(tmp_path.iterdir()) == []


def test_compare_json_rows_carry_the_accuracy_list(capsys):
    from zoo import compare

    code, out, err = run(compare, capsys, "--models", "convnext_t", "--metrics", "cost", "--no-save",
                         "--format", "json", "--pretraining", "in1k")
    assert code == 0, err
    (record,) = json.loads(out)
    # --pretraining in1k chooses timm's convnext_tiny.fb_in1k (results-imagenet.csv: 82.066)
    assert (record["top1"], record["weights"], record["pretraining"]) == (82.066, "convnext_tiny.fb_in1k", "in1k")
    assert len(record["accuracy"]) >= 4 and all(set(e) >= ACCURACY_FIELDS for e in record["accuracy"])
    code, out, err = run(compare, capsys, "--models", "convnext_t", "--no-save", "--pretraining", "laion")
    assert code == 2 and "--pretraining" in err


@pytest.mark.parametrize("flags", [["--weights", "paper", "--check"], ["--weights", "x"]])
def test_report_weights_option(flags, tmp_path, capsys):
    from zoo.report import __main__ as report

    code, out, err = run(report, capsys, "--results", str(tmp_path), *flags)
    assert code == 2 and len(err.strip().splitlines()) == 1 and list(tmp_path.iterdir()) == []


def test_the_published_column_says_whose_number_it_is():
    # KaimingHe/deep-residual-networks README: ResNet-50 1-crop top-1 error 24.7% -> 75.3, a repository number
    points, _ = accuracy_points([cost_row("resnet50", 224)], [], "paper")
    header, _, line = accuracy_table(points, "paper").splitlines()[:3]
    assert "top-1 % (published)" in header and "(paper)" not in header
    cells = [c.strip() for c in line.strip("|").split("|")]
    assert cells[3:5] == ["75.30", "not in timm (repository)"]
