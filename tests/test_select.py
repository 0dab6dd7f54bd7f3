"""`zoo.select`: each constraint, ranking, exclusion reasons with their amounts, the JSON contract, bad input,
and timed rows measured once then reused from the results store.
"""
import json
import math
import os
import pathlib
import re
import subprocess
import sys

import pytest
from hypothesis import given, settings, strategies as st

ROOT = pathlib.Path(__file__).resolve().parents[1]

import zoo  # noqa: E402
from analysis.size import Size  # noqa: E402
from zoo.errors import UsageError  # noqa: E402
from zoo.select.cli import main, select  # noqa: E402
from zoo.options.values import number as limit  # noqa: E402  (the constraints' parser)
from zoo.select.shortlist import num  # noqa: E402
from cli import HANG_GUARD_S, call_main  # noqa: E402

pytestmark = pytest.mark.usefixtures("kept_peaks")     # timed runs probe no GEMM peak (conftest.py)

MIB = 2 ** 20
DEIT_TI_PARAMS = 5_717_416     # deit_tiny_patch16_224 (DeiT README: 5M; timm's results tables: 5.72 M)


def run_select(*args, cwd=None) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-m", "zoo.select", *args], capture_output=True, text=True,
                          cwd=cwd or ROOT, env=env, timeout=HANG_GUARD_S)


def vit_macs(n_tokens: int, dim: int, depth: int, patches: int, patch: int, classes: int = 1000) -> int:
    """ViT MACs in closed form (ViT paper's Table 1 shapes): blocks, patch embedding, head."""
    return depth * (12 * n_tokens * dim * dim + 2 * n_tokens * n_tokens * dim) + patches * patch * patch * 3 * dim \
        + dim * classes


@pytest.fixture(scope="module")
def at_384(tmp_path_factory):
    """The done-when query, once: the whole registry at 384 under 20 GMACs (its main in this process: the
    process is not what is tested; test_bad_input_exit_status_of_the_command starts one)."""
    cwd = tmp_path_factory.mktemp("select384")
    result = call_main("zoo.select", "--resolution", "384", "--max-gmacs", "20", "--format", "json", cwd=cwd)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout), cwd     # stdout holds nothing but the JSON object


def test_json_contract_and_max_gmacs(at_384):
    out, cwd = at_384
    assert set(out) == {"query", "shortlist", "excluded", "undecided", "pareto"} and out["undecided"] == []
    assert out["query"]["resolution"] == 384 and out["query"]["constraints"] == {"max_gmacs": 20.0}
    shortlisted = [r["model"] for r in out["shortlist"]]
    excluded = {e["model"]: e for e in out["excluded"]}
    assert sorted(shortlisted + list(excluded)) == sorted(zoo.list_models())    # every model, once
    assert all(r["gmacs"] <= 20 and r["img_size"] == 384 for r in out["shortlist"])
    assert all(e["reason"] and e["img_size"] == 384 for e in out["excluded"])
    # ViT-B/16 at 384: 577 tokens of width 768, 12 blocks -> 55.5 GMACs, over the budget by that amount
    assert excluded["vit_b16"]["reason"] == f"{vit_macs(577, 768, 12, 576, 16) / 1e9:.1f} GMACs > 20"
    # DeiT-Ti at 384 (width 192): 4.68 GMACs, inside
    assert "deit_ti" in shortlisted
    # 384 is no multiple of 14: ViT-H/14 and EVA-02-B/14 are excluded with their size rule
    for model in ("vit_h14", "eva02_b14"):
        assert excluded[model]["reason"].startswith("cannot take 384 px: the side must be a multiple of 14")
        assert excluded[model]["reason"].endswith("nearest: 378, 392")             # 27 and 28 patches of 14
    assert not (cwd / "results").exists()         # counting writes nothing


def test_rows_show_accuracy_at_the_resolution_only(at_384):
    rows = {r["model"]: r for r in at_384[0]["shortlist"]}
    # timm's results-imagenet{,v2-matched-frequency,-sketch}.csv: convnext_tiny.in12k_ft_in1k_384, the first tag
    # of timm's pretrained order evaluated at 384: 85.154, IN-V2 74.790, Sketch 41.097 (ImageNet-12k: in21k)
    t = rows["convnext_t"]
    assert (t["top1"], t["top1_resolution"], t["top1_source"].split(":")[0], t["pretraining"]) == (85.154, 384, "timm", "in21k")
    assert (t["imagenet_v2"], t["sketch"], t["weights_label"]) == (74.79, 41.097, "in12k_ft_in1k_384")
    # BiT-R50x1 is published at 480 (README) and evaluated by timm at 448: nothing at 384
    assert rows["bit_r50x1"]["top1"] is None


def test_the_pareto_front_of_published_numbers():
    # top-1 at 224 (--weights paper: DeiT README, ConvNeXt README, Swin README, the card's ResNet-50) against GMACs
    # (torchvision's counts: ResNet-50 4.09, ConvNeXt-T 4.46, Swin-T 4.49; DeiT-S 4.6, DeiT-Ti 1.3):
    # swin_t (81.2 at 4.49) and deit_s (79.9 at 4.6) are beaten by convnext_t (82.1 at 4.46)
    out = select(["deit_ti", "deit_s", "convnext_t", "resnet50", "swin_t"], 224, weights="paper")
    assert out["pareto"] == {"in1k": ["convnext_t", "resnet50", "deit_ti"]}
    assert [r["model"] for r in out["shortlist"] if r["pareto"]] == ["convnext_t", "resnet50", "deit_ti"]


def test_table_and_markdown_formats(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    for fmt, marker in (("table", "deit_ti"), ("markdown", "| deit_ti")):
        assert main(["--models", "deit_ti,vit_b16", "--max-gmacs", "5", "--format", fmt]) == 0
        printed = capsys.readouterr().out
        # ViT-B/16 at 224: 197 tokens of width 768, 12 blocks, in closed form
        assert marker in printed and f"vit_b16: {vit_macs(197, 768, 12, 196, 16) / 1e9:.1f} GMACs > 5" in printed
    assert list(tmp_path.iterdir()) == []


def test_max_params_and_memory_constraints():
    # deit_s has 22.05 M parameters (timm results-imagenet.csv param_count; DeiT README: 22M)
    out = select(["deit_ti", "deit_s"], 224, max_params=10)
    assert [r["model"] for r in out["shortlist"]] == ["deit_ti"]
    reason = out["excluded"][0]["reason"]
    value = float(re.fullmatch(r"params ([\d.]+) M > 10 M", reason).group(1))
    assert value == pytest.approx(22.05, abs=0.1)
    out = select(["deit_ti"], 224, max_serve_mib=21)
    assert re.fullmatch(r"serving memory [\d.]+ MiB > 21 MiB \(weights 21\.8 MiB \+ activations "
                        r"[\d.]+ MiB\)", out["excluded"][0]["reason"])
    # deit_ti's fp32 weights: DEIT_TI_PARAMS x 4 bytes, no buffers
    weight_mib = select(["deit_ti"], 224, max_serve_mib=100)["shortlist"][0]["weight_mib"]
    assert weight_mib == pytest.approx(DEIT_TI_PARAMS * 4 / MIB, rel=1e-9)
    out = select(["deit_ti"], 224, max_act_mib=0.01)
    assert re.fullmatch(r"activation peak [\d.]+ MiB > 0.01 MiB", out["excluded"][0]["reason"])


def test_batch_auto_is_the_largest_batch_that_fits():
    from zoo.runs.tasks import count

    out = select(["deit_ti"], 224, max_serve_mib=200, batch_size="auto")
    row = out["shortlist"][0]
    b = row["batch_size"]
    serve = lambda n: sum(count("deit_ti", Size(224, 224), batch_size=n, train=False)[k]  # noqa: E731
                          for k in ("weight_bytes", "act_peak_bytes")) / MIB
    assert b > 1 and serve(b) <= 200 < serve(b + 1) and row["serve_mib"] == pytest.approx(serve(b))
    out = select(["deit_ti"], 224, max_serve_mib=10, batch_size="auto")    # weights alone are 21.8 MiB
    assert out["excluded"][0]["reason"].startswith("serving memory")


def test_accuracy_constraints():
    # timm's results-imagenet.csv: deit_tiny 72.190, deit_small 79.856; ViT-H/14 is published at 518 only
    out = select(["deit_ti", "deit_s", "vit_h14"], 224, min_top1=75)
    assert [r["model"] for r in out["shortlist"]] == ["deit_s"]
    reasons = {e["model"]: e["reason"] for e in out["excluded"]}
    assert reasons == {"deit_ti": "top-1 72.19 < 75 (timm, 224 px)", "vit_h14": "no top-1 known at 224 px"}
    # --pretraining in21k --weights paper: ConvNeXt-T's ImageNet-22k weights (README 82.9); DeiT is ImageNet-1k only
    out = select(["deit_ti", "convnext_t"], 224, pretraining=["in21k"], weights="paper")
    assert [(r["model"], r["top1"]) for r in out["shortlist"]] == [("convnext_t", 82.9)]
    assert out["excluded"] == [{"model": "deit_ti", "img_size": 224,
                                "reason": "no in21k checkpoint (its checkpoints: in1k)"}]
    out = select(["deit_ti", "vit_h14"], 224, weights_available=True)   # timm has no vit_huge_patch14_224 eval
    assert [e["model"] for e in out["excluded"]] == ["vit_h14"]
    assert out["excluded"][0]["reason"] == "no timm weights evaluated at 224 px"


def test_size_rule_exclusion():
    out = select(["vit_b16", "resnet50"], 200, max_gmacs=100)
    assert [r["model"] for r in out["shortlist"]] == ["resnet50"]
    assert out["excluded"][0]["reason"].startswith("cannot take 200 px: the side must be a multiple of 16")


def test_ranking():
    models = ["deit_ti", "convnext_t", "vit_b16"]
    # top-1 at 224 (results-imagenet.csv, timm's default tags): ViT-B/16 85.108 > ConvNeXt-T 84.192 > DeiT-Ti 72.19
    by_top1 = select(models, 224)
    assert [r["model"] for r in by_top1["shortlist"]] == ["vit_b16", "convnext_t", "deit_ti"]
    # GMACs: DeiT-Ti 1.3, ConvNeXt-T 4.5 (README FLOPs column), ViT-B/16 17.6 (closed form)
    by_gmacs = select(models, 224, rank="gmacs")
    assert [r["model"] for r in by_gmacs["shortlist"]] == ["deit_ti", "convnext_t", "vit_b16"]
    # ImageNetV2 of the same weights (timm tables): vit_base_patch16_224.augreg2_in21k_ft_in1k 75.320,
    # convnext_tiny.in12k_ft_in1k 74.120, deit_tiny_patch16_224.fb_in1k 59.920
    by_v2 = select(models, 224, rank="imagenet_v2")
    assert [(r["model"], r["imagenet_v2"]) for r in by_v2["shortlist"]] == [
        ("vit_b16", 75.32), ("convnext_t", 74.12), ("deit_ti", 59.92)]
    assert by_v2["query"]["pareto_axes"]["y"] == "imagenet_v2"


BAD = [
    ["--max-gmacs", "abc"], ["--max-params", "-1"], ["--max-latency-ms", "nan"], ["--min-top1", "101"],
    ["--pretraining", "in1k,imagenet"], ["--rank", "speed"], ["--batch-size", "auto"], ["--batch-size", "0"],
    ["--latency-stat", "p90"], ["--resolution", "big"], ["--models", "vit_b17"], ["--format", "yaml"],
]


@pytest.mark.parametrize("args", BAD)
def test_bad_input_is_one_line_and_status_2(args, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    # a timed constraint first (a later repeat of it wins), so a run that got through would write rows
    assert main(["--max-latency-ms", "100", *args, "--out", str(tmp_path / "out")]) == 2
    captured = capsys.readouterr()
    lines = captured.err.strip().splitlines()
    assert captured.out == "" and len(lines) == 1 and lines[0].startswith("zoo.select: error: "), captured.err
    assert list(tmp_path.iterdir()) == []


def test_bad_input_exit_status_of_the_command(tmp_path):
    result = run_select("--max-latency-ms", "100", "--max-gmacs", "-5", "--out", str(tmp_path / "out"), cwd=tmp_path)
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr.strip().splitlines() == ["zoo.select: error: --max-gmacs: '-5' must be a finite number >= 0"]
    assert list(tmp_path.iterdir()) == []


@settings(max_examples=200, deadline=None)
@given(st.one_of(st.floats(allow_nan=True, allow_infinity=True).map(repr), st.text(max_size=8)))
def test_constraint_parser(text):
    """Python's float() reading of the text, where it is ASCII digits, a point and an exponent (float() also takes
    '８' and '1_0', which the one numeric parser refuses: issue 54), within the bound a row's count can hold."""
    from zoo.options.values import BOUNDS

    ascii_number = re.fullmatch(r"[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?", text.strip())
    expected = float(text) if ascii_number else None
    ok = expected is not None and math.isfinite(expected) and 0 <= expected <= BOUNDS["max-gmacs"].high
    if ok:
        assert limit(text, "max-gmacs") == expected
        assert (expected <= 100) == _accepts(text, "min-top1")
    else:
        with pytest.raises(UsageError):
            limit(text, "max-gmacs")


def _accepts(text, flag):
    try:
        limit(text, flag)
        return True
    except UsageError:
        return False


def test_latency_measured_once_then_reused(tmp_path):
    def stored():
        path = tmp_path / "results" / "throughput.jsonl"
        return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []

    common = dict(device="cpu", quick=True, threads=1, out=str(tmp_path), allow_noisy=True,   # a busy box decides too
                  time_all=True)                                          # both timed, not only the best that fits
    # a counted constraint first: vit_b16 (17.6 GMACs) is never timed
    first = select(["deit_ti", "deit_s", "vit_b16"], 224, max_gmacs=5, max_latency_ms=1e6, **common)
    # best-ranked first: deit_s (top-1 79.856, timm's results-imagenet.csv) before deit_ti (72.19)
    assert [r["model"] for r in stored()] == ["deit_s", "deit_ti"]
    assert {r["timing"] for r in first["shortlist"]} == {"measured"}
    p50 = {r["model"]: r["latency_ms_p50"] for r in stored()}
    fast, slow = sorted(p50, key=p50.get)                                    # whichever ran faster here
    budget = math.sqrt(p50[fast] * p50[slow])
    again = select(["deit_ti", "deit_s"], 224, max_latency_ms=budget, **common)
    assert len(stored()) == 2                                                # no new throughput row
    assert [(r["model"], r["timing"]) for r in again["shortlist"]] == [(fast, "reused")]
    assert again["excluded"][0]["model"] == slow and again["excluded"][0]["reason"].startswith(
        f"latency p50 {num(p50[slow])} ms > {budget:g} ms (eager; n=")
    ranked = select(["deit_ti", "deit_s"], 224, rank="latency", **common)
    assert [r["model"] for r in ranked["shortlist"]] == [fast, slow] and len(stored()) == 2


def test_no_save_writes_nothing(tmp_path):
    result = call_main("zoo.select", "--models", "deit_ti", "--max-latency-ms", "100000", "--device", "cpu",
                       "--quick", "--threads", "1", "--no-save", "--allow-noisy", "--format", "json", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    row = json.loads(result.stdout)["shortlist"][0]
    assert row["model"] == "deit_ti" and row["latency_ms_p50"] > 0 and row["timing"] == "measured"
    assert list(tmp_path.iterdir()) == []


def test_an_h_x_w_resolution_is_counted_per_side():
    result = select(["convnext_t", "vit_h14"], "800x1344", max_gmacs=200, save=False)
    (row,) = result["shortlist"]
    assert row["model"] == "convnext_t" and tuple(row["img_size"]) == (800, 1344)
    (excluded,) = result["excluded"]
    assert excluded["model"] == "vit_h14" and "800x1344" in excluded["reason"] and "multiple of 14" in excluded["reason"]


def test_the_api_takes_a_size_as_a_side_a_pair_or_a_size_and_checks_it_without_text():
    """One size whatever the API was handed; a bad side is named as the command line names it."""
    from zoo.select.shortlist import Query

    for given in ((800, 1344), Size(800, 1344), "800x1344"):
        q = Query.of(["convnext_t"], given, save=False)
        assert q.request.img_size == Size(800, 1344) and q.resolution == (800, 1344)
        request = q.request_for("convnext_t", 2)
        assert request.model == "convnext_t" and request.img_size == Size(800, 1344) and request.batch_size == 2
    assert Query.of(["convnext_t"], Size(224, 224), save=False).resolution == 224
    for bad, message in (((224, 0), "--resolution: a size's width is a positive integer, not 0"),
                         ((70_000, 224), "--resolution: 70000 is larger than archzoo's bound of 65,536"),
                         (224.0, "--resolution: a size is an integer")):
        with pytest.raises(UsageError, match=re.escape(message)):
            Query.of(["convnext_t"], bad, save=False)
