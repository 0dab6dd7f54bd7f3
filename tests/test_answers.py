"""The worked selection questions are stored answers: zoo.select writes them, the report only renders them
(it builds no model), and `zoo.report --check`'s stale_answers finds stored answers that are out of date."""
import json

import pytest

import zoo.select.answers
from zoo.answers.stored import load_answers
from zoo.select.answers import stale_answers, write_answers

SMALL = [("Under 5 GMACs at 224 px", {"models": "deit_ti,vit_b16", "resolution": "224", "max_gmacs": "5"})]


@pytest.fixture
def small_answers(tmp_path, monkeypatch):
    monkeypatch.setattr(zoo.select.answers, "QUESTIONS", SMALL)
    write_answers(tmp_path)
    return tmp_path


def test_stored_answers_are_zoo_selects_output_and_stale_ones_are_found(small_answers, monkeypatch, capsys):
    (stored,) = load_answers(small_answers)
    assert stored["command"] == "python -m zoo.select --models deit_ti,vit_b16 --resolution 224 --max-gmacs 5"
    from zoo.select.cli import main                       # the command prints the same answer

    monkeypatch.chdir(small_answers)
    assert main(stored["command"].split()[3:] + ["--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out) == stored["answer"]
    assert [r["model"] for r in stored["answer"]["shortlist"]] == ["deit_ti"]
    assert stale_answers(small_answers) == []
    path = small_answers / "results" / "answers.json"
    changed = json.loads(path.read_text())
    changed[0]["answer"]["shortlist"][0]["gmacs"] = 1.0           # a count that is no longer true
    path.write_text(json.dumps(changed))
    assert stale_answers(small_answers) == ["results/answers.json is stale: rewrite it with "
                                            "`python -m zoo.select --answers`"]
    path.unlink()
    assert "missing" in stale_answers(small_answers)[0]


def test_the_report_renders_stored_answers_without_building_a_model(small_answers, monkeypatch):
    import timm

    import zoo.models.registry
    import zoo.runs.module_build
    import zoo.runs.plan
    from zoo.report.build import build_reports

    def refuse(*args, **kwargs):
        raise AssertionError("the report built a model")

    for module in (zoo.models.registry, timm, zoo.runs.module_build, zoo.runs.plan):    # timed builds: module_build
        monkeypatch.setattr(module, "create_model", refuse)
    import zoo.runs.parallel
    from zoo.store.user_cache import disabled

    # counted, and here, not by the pool's workers (a fresh process would not see the stand-in)
    monkeypatch.setattr(zoo.runs.parallel, "available_cores", lambda: 1)
    with disabled():
        (fresh,) = zoo.select.answers.fresh_answers()      # the stand-in is the one zoo.select reaches
    assert {e["reason"] for e in fresh["answer"]["excluded"]} == {"counting failed: AssertionError: the report "
                                                                 "built a model"}
    build_reports(small_answers, small_answers / "reports", pictures=False)    # PNG bytes build no model either
    text = (small_answers / "reports" / "choosing.md").read_text()
    assert "### Under 5 GMACs at 224 px" in text and "| deit_ti * | 224 |" in text
    assert "- vit_b16: 17.6 GMACs > 5" in text


def test_the_committed_reports_build_without_building_a_model(tmp_path, monkeypatch):
    import pathlib

    import timm

    import zoo.models.registry
    import zoo.runs.module_build
    from zoo.report.build import build_reports

    def refuse(*args, **kwargs):
        raise AssertionError("the report built a model")

    for module in (zoo.models.registry, timm, zoo.runs.module_build):    # timed builds through module_build
        monkeypatch.setattr(module, "create_model", refuse)
    root = pathlib.Path(__file__).resolve().parents[1]
    build_reports(root, tmp_path, pictures=False)     # every table and plot's data; PNG bytes build no model
    assert (tmp_path / "choosing.md").read_text() == (root / "reports" / "choosing.md").read_text()


def test_the_committed_first_question_answers_an_imagenet_1k_only_model():
    import pathlib

    from zoo.report.summary import answer_lines

    root = pathlib.Path(__file__).resolve().parents[1]
    first = load_answers(root)[0]
    assert "registry" in first["question"]                        # it says where it searches
    best = first["answer"]["shortlist"][0]
    # results-imagenet.csv: convnext_tiny.fb_in1k at 224 -> 82.066; bit_r50x1's goog_distilled_in1k (82.820) was
    # distilled from BiT-M-R152x2, ImageNet-21k pre-trained (google-research/big_transfer README): excluded
    assert (best["model"], best["top1"], best["weights"], best["pretraining"]) == \
        ("convnext_t", 82.066, "convnext_tiny.fb_in1k", "in1k")
    excluded = {e["model"]: e["reason"] for e in first["answer"]["excluded"]}
    assert excluded["bit_r50x1"] == "no in1k checkpoint (its checkpoints: in21k; goog_distilled_in1k is in21k by " \
                                    "its teacher BiT-M-R152x2)"
    assert excluded["vit_h14"] == "no in1k checkpoint (timm has no evaluated checkpoint of it)"
    assert answer_lines([first])[0].endswith(": convnext_t, top-1 82.066% (fb_in1k, in1k), 4.46 GMACs")
