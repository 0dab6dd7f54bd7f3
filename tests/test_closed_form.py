"""Counted MACs equal the closed forms exactly (0 MACs difference): every ViT/DeiT, Swin at native."""
import pytest

import zoo
from zoo_cost import build, cost_of
from analysis.count.closed_form import (attention_crossover_tokens, global_attention_layer_macs, swin_macs,
                                  vit_macs)
from analysis.count.cost import cost_record
from analysis.count.shapes import swin_shape_of, vit_shape_of
from analysis.size import Size

VIT_LIKE = zoo.list_models("vit_*") + zoo.list_models("deit_*")
EXTRA_SIZES = (160, 448)           # besides 224 and 384; each model uses those its rule accepts


def _sizes(name):
    spec = zoo.get_spec(name)
    return [s for s in (224, 384, *EXTRA_SIZES) if spec.rule.accepts(Size.of(s))]


def test_vit_b16_reference_numbers_from_the_seed_notes():
    record = cost_of("vit_b16", img_size=224, train=False)
    assert record["tokens"] == 197
    assert record["macs"] == 17_563_828_224
    assert record["attn_macs"] == 715_327_488
    assert round(100 * record["attn_share"], 2) == 4.07


@pytest.mark.parametrize("name,img_size", [(n, s) for n in VIT_LIKE for s in _sizes(n)])
def test_vit_and_deit_counted_equals_closed_form(name, img_size):
    module, spec, _ = build(name, img_size, "meta", None)
    shape = vit_shape_of(module, patch_size=spec.patch_size)
    expected = vit_macs(shape, img_size)                  # per image; counted at batch 2
    record = cost_record(module, img_size, batch_size=2, train=False).as_dict()
    counted = record["macs_by_component"]
    assert shape.tokens(Size.of(img_size)) == spec.tokens(Size.of(img_size))
    encoder_parts = ("attn_proj", "attn_matmul", "mlp", "head")
    assert {k: counted[k] for k in encoder_parts} == {k: expected[k] for k in encoder_parts}
    if spec.family == "hybrid":      # the stem is a ResNet, not a closed form; nothing else may leak
        assert counted["other"] == 0 and counted["patch_embed"] > 0
    else:
        assert record["macs"] == expected["total"]
        assert counted["patch_embed"] == expected["patch_embed"]
    assert record["attn_macs"] == expected["attn_matmul"]


@pytest.mark.parametrize("name", zoo.list_models("swin_*"))
def test_swin_counted_equals_closed_form_at_native_resolution(name):
    spec = zoo.get_spec(name)
    module, _, img_size = build(name, spec.native_size, "meta", None)
    expected = swin_macs(swin_shape_of(module, window_size=7), img_size)
    record = cost_record(module, img_size, train=False).as_dict()
    assert record["macs"] == expected["total"]
    assert {k: record["macs_by_component"][k] for k in expected if k != "total"} == \
        {k: v for k, v in expected.items() if k != "total"}


def test_swin_shape_reads_the_head_it_was_built_with():
    """A Swin built for 10 classes (timm's num_classes) has a 10-way head: 768 x 10 MACs, not ImageNet's 1000."""
    import timm

    module = timm.create_model("swin_tiny_patch4_window7_224", num_classes=10, pretrained=False).eval()
    shape = swin_shape_of(module)
    assert shape.num_classes == 10
    assert swin_macs(shape, 224)["head"] == 768 * 10


def test_swin_t_window_term_by_hand():
    # Stage 1 of Swin-T at 224: 56x56 tokens, C=96, M=7, 2 blocks: 2 x 2 M^2 hw C.
    stage1 = 2 * 2 * 49 * 56 * 56 * 96
    stage2 = 2 * 2 * 49 * 28 * 28 * 192
    stage3 = 6 * 2 * 49 * 14 * 14 * 384
    stage4 = 2 * 2 * 49 * 7 * 7 * 768
    assert swin_macs(swin_shape_of(build("swin_t", 224, "meta", None)[0]), 224)["attn_matmul"] == \
        stage1 + stage2 + stage3 + stage4


def test_crossover_is_six_d_and_the_seed_table_shares():
    assert attention_crossover_tokens(768) == 6 * 768 == 4608
    at_crossover = global_attention_layer_macs(4608, 768)
    assert at_crossover["linear"] == at_crossover["quadratic"]
    # Seed notes, example 3.5.1: quadratic share of (linear + quadratic) per layer.
    for tokens, share in ((197, 4.1), (576, 11.1), (1024, 18.2), (4096, 47.1)):
        layer = global_attention_layer_macs(tokens, 768)
        assert round(100 * layer["quadratic"] / (layer["linear"] + layer["quadratic"]), 1) == share
