"""Accuracy entries against their sources: the cards, timm's packaged table, top1_at and Pareto fronts.

Every expected number below is typed from the source named beside it, not from the code's output.
"""
import csv
import importlib.util
import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]

import zoo  # noqa: E402
from zoo.models.accuracy import accuracy_entries, pareto_front, timm_table, top1_at  # noqa: E402
from zoo.models.cards import CARDS, PRETRAINING, TIMM_ARCHS  # noqa: E402

TIMM_RESULTS = pathlib.Path("/work/shared/data/timm-results")

# (model, img_size, pretraining, top-1) of the entry a table row at that size shows with --weights paper
PUBLISHED = [
    ("vit_ti16", 384, "in21k", 78.22),       # google-research/vision_transformer README: Ti/16 res_384 78.22%
    ("vit_s16", 384, "in21k", 83.73),        # vision_transformer README: S/16 res_384 83.73%
    ("vit_b8", 224, "in21k", 85.58),         # vision_transformer vit_jax_augreg.ipynb: B/8 res_224 0.85578
    ("vit_b16", 224, "in21k", 81.2),         # vision_transformer README: "expected to achieve 81.2%"
    ("vit_b16", 384, "in21k", 83.97),        # ViT paper Table 5, ImageNet-21k row
    ("vit_l16", 224, "in21k", 82.7),         # vision_transformer README: "... and 82.7%"
    ("vit_l32", 384, "in21k", 80.99),        # ViT paper Table 5, ImageNet-21k row (the old card said 81.37)
    ("vit_h14", 518, "jft300m", 88.55),      # ViT paper Table 2
    ("vit_r50_b16", 384, "jft300m", 85.58),  # ViT paper Table 6, R50x1+ViT-B/16
    ("deit_ti", 224, "in1k", 72.2),          # facebookresearch/deit README_deit.md: DeiT-tiny 72.2
    ("deit_s", 224, "in1k", 79.9),           # README_deit.md: DeiT-small 79.9
    ("deit_b", 384, "in1k", 82.9),           # README_deit.md: DeiT-base 384 82.9
    ("deit_b_distilled", 384, "in1k", 85.2),  # README_deit.md: DeiT-base distilled 384 (1000 epochs) 85.2
    ("swin_t", 224, "in1k", 81.2),           # microsoft/Swin-Transformer README: Swin-T ImageNet-1K 224 81.2
    ("swin_s", 224, "in1k", 83.2),           # Swin README: Swin-S 83.2
    ("swin_b", 384, "in1k", 84.5),           # Swin README: Swin-B ImageNet-1K 384 84.5
    ("swin_l", 224, "in21k", 86.3),          # Swin README: Swin-L ImageNet-22K 224 86.3
    ("swin_l", 384, "in21k", 87.3),          # Swin README: Swin-L ImageNet-22K 384 87.3
    ("convnext_t", 224, "in1k", 82.1),       # facebookresearch/ConvNeXt README: ConvNeXt-T 1K 224 82.1
    ("convnext_t", 384, "in21k", 84.1),      # ConvNeXt README: ConvNeXt-T 22K 384 84.1
    ("convnext_xl", 224, "in21k", 87.0),     # ConvNeXt README: ConvNeXt-XL 22K 224 87.0
    ("bit_r50x1", 480, "in21k", 80.68),      # google-research/big_transfer README: R50x1 full 80.68
    ("bit_r152x2", 480, "in21k", 85.15),     # big_transfer README: R152x2 full 85.15
    ("bit_r152x4", 480, "in21k", 85.39),     # BiT paper Table 2, BiT-M (not BiT-L's 87.54)
    ("resnet50", 224, "in1k", 75.3),         # KaimingHe/deep-residual-networks README: 1-crop top-1 error 24.7%
    ("beit_b16", 224, "in21k-selfsup", 85.2),  # microsoft/unilm beit README: pt22k_ft22k 224 85.2
    ("beit_b16", 384, "in21k-selfsup", 86.8),  # beit README: pt22k_ft22k 384 86.8
    ("eva02_b14", 448, "in21k-selfsup", 88.3),  # baaivision/EVA EVA-02/asuka README: eva02_B_pt_in21k_ft_in1k_p14
    ("regnety_160", 224, "in1k", 80.4),      # facebookresearch/pycls MODEL_ZOO.md: RegNetY-16GF error 19.6
    ("effnet_l2", 800, "jft300m-unlabelled", 88.4),  # google-research/noisystudent README: 88.4% top-1
]


@pytest.mark.parametrize("model,img_size,pretraining,top1", PUBLISHED)
def test_the_entry_a_paper_row_shows_is_the_published_one(model, img_size, pretraining, top1):
    found = top1_at(model, img_size, weights="paper")
    assert found is not None, (model, img_size)
    assert (found["top1"], found["img_size"], found["pretraining"]) == (top1, img_size, pretraining)
    assert found["source"] in ("paper", "repository") and found["crops"] == "single" and found["citation"]
    assert found["policy"] == "paper"


def test_sources_say_what_they_are():
    # papers' tables are "paper"; READMEs, notebooks and model zoos are "repository" (issue 19)
    for model, entries in CARDS.items():
        for e in entries:
            is_paper = "/" not in e.citation.split()[0]        # repositories are cited as owner/name
            assert e.source == ("paper" if is_paper else "repository"), (model, e.citation)
    # the two AugReg Table 3 values no one could open are gone
    assert all(e["top1"] not in (73.75, 80.46) for m in ("vit_ti16", "vit_s16") for e in accuracy_entries(m))


def test_vit_l32_is_table_5s_imagenet_21k_row():
    found = top1_at("vit_l32", 384, weights="paper")
    assert found["top1"] == 80.99 and "Table 5" in found["citation"]   # ViT Table 5; 81.37 was wrong
    assert all(e["top1"] != 81.37 for e in accuracy_entries("vit_l32"))


def test_other_published_entries():
    def entry(model, **match):
        return [e for e in accuracy_entries(model) if all(e[k] == v for k, v in match.items())]

    # EVA-02 README: with IN-21K intermediate fine-tuning 88.6, IN-V2 79.8, Sketch 57.7
    eva = entry("eva02_b14", source="repository", weights="eva02_base_patch14_448.mim_in22k_ft_in22k_in1k")
    assert [(e["top1"], e["imagenet_v2"], e["sketch"]) for e in eva] == [(88.6, 79.8, 57.7)]
    # deep-residual-networks README: 10-crop top-1 error 22.9% -> 77.1, never a single-crop row's value
    ten = entry("resnet50", crops="10-crop")
    assert [e["top1"] for e in ten] == [77.1] and top1_at("resnet50", 224, weights="paper")["top1"] == 75.3
    # Swin README: Swin-B ImageNet-22K 224 85.2 / 384 86.4 (after the ImageNet-1K rows)
    assert [e["top1"] for e in entry("swin_b", source="repository", pretraining="in21k")] == [85.2, 86.4]
    # ConvNeXt README: ConvNeXt-T ImageNet-22K 224 82.9
    assert [e["top1"] for e in entry("convnext_t", source="repository", pretraining="in21k", img_size=224)] == [82.9]


def test_bit_r152x4_shows_bit_m_not_bit_l():
    # timm's resnetv2_152x4_bit weights are BiT-M (ImageNet-21k); BiT-L (JFT-300M, 87.54) has no public weights
    assert all(e["pretraining"] == "in21k" for e in accuracy_entries("bit_r152x4"))
    assert all(e["top1"] != 87.54 for e in accuracy_entries("bit_r152x4"))


SIZES = (128, 160, 192, 224, 256, 288, 320, 384, 448, 475, 480, 512, 518, 800)


def test_top1_at_never_returns_another_resolutions_entry():
    for model in zoo.list_models():
        for size in SIZES:
            for weights in ("default", "paper", "best"):
                found = top1_at(model, size, weights=weights)
                assert found is None or (found["img_size"] == size and found["crops"] == "single"), (model, size)
    assert top1_at("bit_r50x1", 384) is None      # published at 480 (README), evaluated by timm at 448
    assert top1_at("vit_h14", 224) is None        # published at 518 only
    assert top1_at("effnet_l2", 475)["weights"] == "tf_efficientnet_l2.ns_jft_in1k_475"


def test_paper_policy_falls_back_to_timms_evaluation_of_the_same_weights():
    # results-imagenet.csv: convnext_tiny.fb_in1k at 288 -> 82.694 (the card's 224 weights tested at 288)
    found = top1_at("convnext_t", 288, weights="paper")
    assert (found["source"], found["weights"], found["top1"], found["policy"]) == \
        ("timm", "convnext_tiny.fb_in1k", 82.694, "paper")
    # resnet50's card is the original Caffe model: no paper checkpoint at 288, so timm's default
    # (results-imagenet.csv: resnet50.a1_in1k at 288 -> 81.240)
    found = top1_at("resnet50", 288, weights="paper")
    assert (found["weights"], found["top1"], found["policy"]) == ("resnet50.a1_in1k", 81.24, "default")
    # a pretraining filter picks the same model's ImageNet-22k weights (ConvNeXt README: 82.9)
    assert top1_at("convnext_t", 224, pretraining=["in21k"], weights="paper")["top1"] == 82.9


def test_convnext_t_carries_timms_evaluation_of_convnext_tiny_fb_in1k():
    # results-imagenet.csv / -imagenetv2-matched-frequency.csv / -sketch.csv rows for convnext_tiny.fb_in1k, 224
    timm_rows = [e for e in accuracy_entries("convnext_t")
                 if e["source"] == "timm" and e["weights"] == "convnext_tiny.fb_in1k" and e["img_size"] == 224]
    assert [(e["top1"], e["imagenet_v2"], e["sketch"]) for e in timm_rows] == [(82.066, 70.930, 33.825)]
    shown = top1_at("convnext_t", 224, weights="paper")
    assert shown["top1"] == 82.1 and shown["timm_eval"]["imagenet_v2"] == 70.930
    assert shown["timm_eval"]["sketch"] == 33.825 and shown["timm_eval"]["top1"] == 82.066


def test_entries_of_a_registry_model_cover_its_other_timm_sizes():
    # vit_b16 is a 224 model in timm; its 384 weights (vit_base_patch16_384.*) belong to it too
    weights = {e["weights"] for e in accuracy_entries("vit_b16") if e["source"] == "timm"}
    assert "vit_base_patch16_384.orig_in21k_ft_in1k" in weights and "vit_base_patch16_224.augreg_in1k" in weights
    assert not any(w.startswith("vit_base_patch16_224_miil") for w in weights)   # another model


def test_timm_models_get_timm_entries():
    only = accuracy_entries("timm:convnext_tiny.fb_in1k")
    assert {e["weights"] for e in only} == {"convnext_tiny.fb_in1k"} and {e["img_size"] for e in only} == {224, 288}
    assert all(e["source"] == "timm" for e in accuracy_entries("timm:convnext_tiny"))
    with pytest.raises(zoo.UnknownModelError):
        accuracy_entries("vit_b17")


def test_card_data_is_consistent_with_timm():
    import timm

    assert set(TIMM_ARCHS) == set(zoo.list_models()) and set(CARDS) <= set(zoo.list_models())
    for model, archs in TIMM_ARCHS.items():
        assert all(timm.is_model(a) for a in archs), model
        assert archs[0] == zoo.get_spec(model).timm_name, model      # its own architecture first
    evaluated = {(r["model_tag"], r["img_size"]): r["top1"] for r in timm_table()}
    for model, entries in CARDS.items():
        for e in entries:
            assert e.pretraining in PRETRAINING and e.citation
            if e.weights:
                assert e.weights in timm.list_pretrained(e.weights), (model, e.weights)
                # the authors' number and timm's evaluation of the same weights agree to a point or so
                if (e.weights, e.img_size) in evaluated:
                    assert abs(evaluated[(e.weights, e.img_size)] - e.top1) < 1.0, (model, e)


def test_pareto_front_per_pretraining_group():
    points = [
        {"model": "a", "gmacs": 1.0, "top1": 70.0, "pretraining": "in1k"},
        {"model": "b", "gmacs": 2.0, "top1": 69.0, "pretraining": "in1k"},     # beaten by a
        {"model": "c", "gmacs": 3.0, "top1": 75.0, "pretraining": "in1k"},
        {"model": "d", "gmacs": 5.0, "top1": 72.0, "pretraining": "in21k"},    # alone in its group
        {"model": "e", "gmacs": 0.5, "top1": 90.0, "pretraining": "in1k", "crops": "10-crop"},
        {"model": "f", "gmacs": None, "top1": 99.0, "pretraining": "in1k"},    # no x: on no front
        {"model": "g", "gmacs": 1.0, "top1": 70.0, "pretraining": "in1k"},     # ties a: both stay
        {"model": "h", "gmacs": 1.0, "top1": 69.5, "pretraining": "in1k"},     # a's cost, lower top-1: beaten
        {"model": "i", "gmacs": 3.5, "top1": 75.0, "pretraining": "in1k"},     # c's top-1 at more cost: beaten
    ]
    front = {points[i]["model"] for i in pareto_front(points, "gmacs")}
    assert front == {"a", "c", "d", "e", "g"}      # e (10-crop) neither joins nor beats the single-crop front
    faster = {points[i]["model"] for i in pareto_front(points, "gmacs", lower_x_is_better=False)}
    assert faster == {"d", "e", "i"}      # i has c's top-1 at more of x: c is beaten there


def test_packaged_table_is_package_data():
    from importlib import resources

    text = resources.files("zoo.models").joinpath("data", "timm_results.csv").read_text(encoding="utf-8")
    header = text.splitlines()[0].split(",")
    assert header[:11] == ["model_tag", "img_size", "top1", "top5", "real", "imagenet_v2", "sketch", "imagenet_r",
                           "imagenet_a", "param_count", "pretraining"] and "crop_pct" in header
    assert len(text.encode()) < 300_000
    assert resources.files("zoo.models").joinpath("data", "README.md").is_file()
    assert resources.files("zoo.models").joinpath("data", "timm_tag_order.json").is_file()   # CI: the installed copy
    import tomllib

    shipped = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]["zoo.models"]
    assert {"data/*.csv", "data/*.md", "data/*.json"} <= set(shipped)


@pytest.mark.skipif(not TIMM_RESULTS.is_dir(), reason="timm's result tables are not on this machine")
def test_packaged_rows_match_timms_tables():
    def read(name):
        with open(TIMM_RESULTS / name, newline="") as f:
            return {(r["model"], int(r["img_size"])): r for r in csv.DictReader(f)}

    main, v2 = read("results-imagenet.csv"), read("results-imagenetv2-matched-frequency.csv")
    sketch, real = read("results-sketch.csv"), read("results-imagenet-real.csv")
    rows = timm_table()
    assert len(rows) > 150
    for r in rows:
        key = (r["model_tag"], r["img_size"])
        assert r["top1"] == float(main[key]["top1"]) and r["top5"] == float(main[key]["top5"])
        assert r["imagenet_v2"] == float(v2[key]["top1"]) and r["sketch"] == float(sketch[key]["top1"])
        assert r["real"] == float(real[key]["top1"])


@pytest.mark.skipif(not TIMM_RESULTS.is_dir(), reason="timm's result tables are not on this machine")
def test_the_script_regenerates_the_packaged_table():
    path = ROOT / "benchmarks" / "make_timm_results.py"
    spec = importlib.util.spec_from_file_location("make_timm_results", path)
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    rebuilt = script.build(TIMM_RESULTS)
    with open(ROOT / "zoo" / "models" / "data" / "timm_results.csv", newline="") as f:
        assert list(csv.DictReader(f)) == rebuilt
    # labels: timm's metadata (jft300m-ns, in21k-selfsl) where it names the weights, else the tag
    by_tag = {r["model_tag"]: r["pretraining"] for r in rebuilt}
    assert by_tag["tf_efficientnet_l2.ns_jft_in1k"] == "jft300m-unlabelled"
    assert by_tag["beit_base_patch16_224.in22k_ft_in22k_in1k"] == "in21k-selfsup"
    assert by_tag["convnext_tiny.fb_in22k_ft_in1k"] == "in21k" and by_tag["convnext_tiny.fb_in1k"] == "in1k"
    # EVA-L: MIM on ImageNet-21k (baaivision/EVA EVA-01/eva/README.md); BEiT v2 pt1k_ft21kto1k: MIM on 1k,
    # supervised on 22k (timm beit.py's source file name)
    assert {by_tag[f"eva_large_patch14_{s}.in22k_ft_{t}"] for s in (196, 336) for t in ("in1k", "in22k_in1k")} \
        == {"in21k-selfsup"}
    assert by_tag["beitv2_large_patch16_224.in1k_ft_in22k_in1k"] == "in21k"
    # BEiT v2 in1k_ft_in1k: MIM on ImageNet-1k toward a tokenizer distilled from CLIP ViT-B/16 (microsoft/unilm
    # beit2/TOKENIZER.md): its teacher's group, not ImageNet-1k-only
    assert by_tag["beitv2_large_patch16_224.in1k_ft_in1k"] == "image-text"
    # BiT-R50x1 goog_distilled_in1k: distilled from BiT-M-R152x2, pre-trained on ImageNet-21k (google-research/
    # big_transfer README.md, 'Distilled models'); timm's metadata says in1k-dist
    assert by_tag["resnetv2_50x1_bit.goog_distilled_in1k"] == "in21k"
    # DeiT's students: a RegNetY-16GF teacher trained on ImageNet-1k, so still in1k
    assert by_tag["deit_base_distilled_patch16_224.fb_in1k"] == "in1k"
    # ConvNeXt-V2 fcmae_ft_in22k_in1k: FCMAE on ImageNet-1k (the ConvNeXt-V2 README's only FCMAE weights), then
    # supervised ImageNet-22k: in21k by the BEiT v2 rule, as beitv2 in1k_ft_in22k_in1k above
    assert {g for t, g in by_tag.items() if ".fcmae_ft_in22k_in1k" in t} == {"in21k"}
    # the rows whose group their teacher decided: exactly these two
    students = {r["model_tag"] for r in rebuilt if r["pretraining_from"] == "teacher"}
    assert students == {"beitv2_large_patch16_224.in1k_ft_in1k", "resnetv2_50x1_bit.goog_distilled_in1k"}
    assert script.tag_pretraining("vit_base_patch16_clip_224.openai_ft_in1k") == "image-text"


def test_a_students_group_is_its_teachers_and_shown_beside_its_weights():
    from zoo.models.accuracy import checkpoint_at, pretraining_groups, pretraining_of

    # results-imagenet.csv: resnetv2_50x1_bit.goog_distilled_in1k 224 -> 82.820; its teacher BiT-M-R152x2 is
    # ImageNet-21k pre-trained (google-research/big_transfer README.md), so it is no ImageNet-1k-only answer
    assert checkpoint_at("bit_r50x1", 224, "default", ["in1k"]) is None
    shown = checkpoint_at("bit_r50x1", 224)
    assert (shown["top1"], shown["pretraining"]) == (82.82, "in21k")
    assert shown["weights_short"] == "goog_distilled_in1k (teacher BiT-M-R152x2, in21k)"
    assert "big_transfer" in shown["note"]
    # DeiT's distilled students keep their plain tag: the teacher saw ImageNet-1k only
    assert checkpoint_at("deit_s_distilled", 224)["weights_short"] == "fb_in1k"
    # vit_h14's only card entry (ViT Table 2, JFT-300M) has no weights timm can load: no group at all
    assert pretraining_groups("vit_h14") == [] and pretraining_of("vit_h14") is None
    assert pretraining_of("vit_h14", 224) is None
    # vit_r50_b16: timm's weights are ImageNet-21k ones; the paper's JFT-300M hybrid names no group
    assert pretraining_groups("vit_r50_b16") == ["in21k"]


def test_paper_policy_prefers_the_papers_table_and_says_repository_for_a_re_release():
    # vit_b16 at 224: only the repository's 'expected to achieve 81.2%' (VIT_README), labelled so
    at_224 = top1_at("vit_b16", 224, weights="paper")
    assert (at_224["top1"], at_224["source"]) == (81.2, "repository")
    # at 384 the paper's Table 5 (83.97) comes before AugReg's repository number (85.49)
    at_384 = top1_at("vit_b16", 384, weights="paper")
    assert (at_384["top1"], at_384["source"]) == (83.97, "paper")
