"""Parameter counts and the ViT-B/16 textbook-vs-implementation reconciliation (seed notes ex. 3.5.2)."""
import pytest
import timm
import torch
from torch import nn

import zoo
from analysis.count.closed_form import ViTShape, vit_params, vit_textbook_params
from analysis.count.params import param_counts, vit_param_reconciliation
from analysis.count.shapes import vit_shape_of
from zoo_cost import build
from analysis.size import Size

VIT_B16 = ViTShape(embed_dim=768, depth=12, mlp_dim=3072, patch_size=16)


def test_textbook_table_of_the_seed_notes():
    table = vit_textbook_params(VIT_B16, 224)
    assert table["patch_embed"] == 590_592
    assert table["pos_embed"] == 151_296
    assert table["blocks"] == 12 * 7_080_960 == 84_971_520
    assert table["head"] == 769_000
    assert table["total"] == 86_482_408


def test_reconciliation_names_every_difference():
    model = zoo.create_model("vit_b16", device="meta")
    ledger = vit_param_reconciliation(model, 224)
    assert ledger["textbook"] == 86_482_408
    assert ledger["implementation"] == 86_567_656
    assert ledger["unexplained"] == 0
    sizes = {d["item"]: d["params"] for d in ledger["differences"]}
    assert sizes == {"qkv biases": 12 * 3 * 768, "attention output projection biases": 12 * 768,
                     "MLP biases (fc1 + fc2)": 12 * (3072 + 768), "class/distillation tokens": 768,
                     "final LayerNorm (weight + bias)": 2 * 768}
    assert all(d["params"] == d["closed_form"] for d in ledger["differences"])


def test_implementation_count_matches_timm():
    with torch.device("meta"):
        reference = timm.create_model("vit_base_patch16_224")
    assert sum(p.numel() for p in reference.parameters()) == 86_567_656
    assert param_counts(zoo.create_model("vit_b16", device="meta"))["params"] == 86_567_656


@pytest.mark.parametrize("name", zoo.list_models("vit_*") + zoo.list_models("deit_*"))
@pytest.mark.parametrize("img_size", [224, 384])
def test_vit_and_deit_params_closed_form(name, img_size):
    spec = zoo.get_spec(name)
    if not spec.rule.accepts(Size.of(img_size)):
        pytest.skip(f"{name} does not take {img_size}")
    module, _, _ = build(name, img_size, "meta", None)
    counts = param_counts(module)
    if spec.family == "hybrid":      # everything but the ResNet stem + 1x1 projection is the ViT's
        shape = vit_shape_of(module, spec.patch_size)
        stem = sum(p.numel() for p in module.patch_embed.parameters())
        assert counts["params"] - stem == vit_params(shape, img_size) - vit_textbook_params(shape, img_size)["patch_embed"]
    else:
        assert counts["params"] == vit_params(vit_shape_of(module), img_size)
        assert vit_param_reconciliation(module, img_size)["unexplained"] == 0


def test_components_and_trainable():
    model = zoo.create_model("vit_ti16", device="meta")
    model.patch_embed.requires_grad_(False)
    counts = param_counts(model)
    d = 192
    with torch.device("meta"):
        timm_total = sum(p.numel() for p in timm.create_model("vit_tiny_patch16_224").parameters())
    assert counts["params"] == sum(counts["params_by_component"].values()) == timm_total == 5_717_416
    assert counts["trainable_params"] == counts["params"] - (16 * 16 * 3 * d + d)
    assert counts["params_by_component"]["attn_proj"] == 12 * (4 * d * d + 4 * d)
    assert counts["params_by_component"]["mlp"] == 12 * (8 * d * d + 5 * d)
    assert counts["params_by_component"]["head"] == d * 1000 + 1000
    assert counts["params_by_component"]["norm"] == (2 * 12 + 1) * 2 * d


def test_shared_parameters_count_once():
    shared = nn.Linear(4, 4)
    model = nn.Sequential(shared, nn.ReLU(), shared)
    assert param_counts(model)["params"] == 20
