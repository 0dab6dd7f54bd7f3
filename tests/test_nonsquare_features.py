"""Non-square (H, W) inputs and backbones as feature extractors (issue 13, items 1-2).

Shapes and counts on the meta device; real CPU forwards only for ViT-Ti at 64x96 and the ViT-B
parity check. Expected numbers come from the issue or from formulas written out here.
"""
import pytest
import timm
import torch
from timm.models.vision_transformer import checkpoint_filter_fn

import zoo
from analysis.count.closed_form import swin_macs, vit_macs, vit_params, vit_textbook_params
from analysis.count.cost import cost_record
from analysis.count.shapes import swin_shape_of, vit_shape_of
from zoo.models.registry import feature_shapes
from analysis.size import Size
from zoo.models.spec import AtLeast, MultipleOf

DETECTION = (800, 1344)   # a typical detection input, H x W


def valid_near(name, size):
    """`size` if the model's rule takes it, else the first nearest valid (H, W) (798x1344 for patch 14)."""
    rule = zoo.get_spec(name).rule
    return size if rule.accepts(Size.of(size)) else rule.nearest(Size.of(size))[0].hw


def n_params(model):
    return sum(p.numel() for p in model.parameters())


# --- sizes and rules ---------------------------------------------------------------------------

def test_one_size_however_it_is_spelled():
    assert Size.of(224) == Size.of((224, 224)) == Size.of([224, 224]) == Size.parse("224x224") == Size(224, 224)
    assert Size.parse("800X1344") == Size.of(DETECTION) and Size.of(DETECTION).hw == DETECTION
    assert Size.of(224).label == "224" and Size.of(DETECTION).label == "800x1344" and str(Size(2, 3)) == "2x3"
    assert Size.of(224).side == 224 and Size.of(DETECTION).side is None and Size.of(DETECTION).compact == DETECTION
    for bad in (224.0, (224,), (224, 320, 3), True):
        with pytest.raises(TypeError):
            Size.of(bad)
    for bad in (("224", 320), (0, 224), (224, -1), (True, 2)):
        with pytest.raises(ValueError):
            Size.of(bad)
    for bad in ("", "224x", "x224", "2x3x4", "22a", "-224", "224.0"):
        with pytest.raises(ValueError):
            Size.parse(bad)


def test_rules_apply_per_side():
    rule = MultipleOf(16, "")
    assert rule.accepts(Size.of((224, 320))) and not rule.accepts(Size.of((230, 320))) and not rule.accepts(Size.of((224, 330)))
    assert rule.nearest(Size.of((230, 320))) == [Size(224, 320), Size(240, 320)]
    assert rule.nearest(Size.of((230, 330))) == [Size(224, 320), Size(224, 336), Size(240, 320), Size(240, 336)]
    assert rule.nearest(Size.of(230)) == [Size.of(224), Size.of(240)]          # a square size stays square
    assert AtLeast(32, "").accepts(Size(32, 1344)) and AtLeast(32, "").nearest(Size(16, 64)) == [Size(32, 64)]


@pytest.mark.parametrize("name, size, bad, rule_text, nearest", [
    ("vit_b16", (230, 1344), "height", "multiple of 16", "nearest: 224x1344, 240x1344"),
    ("vit_b16", (800, 1350), "width", "multiple of 16", "nearest: 800x1344, 800x1360"),
    ("swin_t", (800, 1350), "width", "multiple of 32", "nearest: 800x1344, 800x1376"),
    ("convnext_t", (16, 224), "height", "at least 32", "nearest: 32x224"),
])
def test_a_bad_side_is_named_with_its_nearest_valid_sizes(name, size, bad, rule_text, nearest):
    with pytest.raises(zoo.UnsupportedResolutionError) as e:
        zoo.create_model(name, img_size=size, device="meta")
    message = str(e.value)
    good = {"height": "width", "width": "height"}[bad]
    assert name in message and f"{size[0]}x{size[1]}" in message and rule_text in message and nearest in message
    assert f"the {bad} must" in message and good not in message


def test_both_bad_sides_are_named():
    with pytest.raises(zoo.UnsupportedResolutionError,
                       match=r"the height and the width must be .*nearest: 224x1344, 224x1360, 240x1344, 240x1360$"):
        zoo.get_spec("vit_b16").check_resolution(Size.of((230, 1350)))


def test_a_square_pair_is_exactly_an_int():
    spec = zoo.get_spec("vit_b16")
    assert spec.tokens(Size.of((224, 224))) == spec.tokens(Size.of(224)) == 197
    int_error = pytest.raises(zoo.UnsupportedResolutionError, spec.check_resolution, Size.of(230)).value
    pair_error = pytest.raises(zoo.UnsupportedResolutionError, spec.check_resolution, Size.of((230, 230))).value
    assert str(pair_error) == str(int_error) == \
        "vit_b16 cannot take 230 px: the side must be a multiple of 16 (the patch size; position " \
        "embeddings are resampled); nearest: 224, 240"
    as_int = zoo.create_model("vit_b16", 224, device="meta")
    as_pair = zoo.create_model("vit_b16", (224, 224), device="meta")
    assert as_pair.cfg == as_int.cfg and as_pair.cfg.img_size == Size(224, 224)
    assert cost_record(as_pair, (224, 224), train=False).macs == cost_record(as_int, 224, train=False).macs
    vit, swin = vit_shape_of(as_int), swin_shape_of(zoo.create_model("swin_t", device="meta"))
    assert vit_macs(vit, (224, 224)) == vit_macs(vit, 224) and swin_macs(swin, (224, 224)) == swin_macs(swin, 224)
    assert vit_params(vit, (224, 224)) == vit_params(vit, 224) and vit.tokens(Size.of((224, 224))) == vit.tokens(Size.of(224))
    assert feature_shapes("convnext_t", (224, 224)) == feature_shapes("convnext_t", 224)


def test_tokens_follow_h_by_w():
    assert zoo.get_spec("vit_b16").tokens(Size.of(DETECTION)) == 50 * 84 + 1
    assert zoo.get_spec("deit_b_distilled").tokens(Size.of(DETECTION)) == 50 * 84 + 2
    assert zoo.get_spec("eva02_b14").tokens(Size.of((798, 1344))) == 57 * 96 + 1
    assert zoo.get_spec("swin_t").tokens(Size.of(DETECTION)) is None


# --- every registry model at H x W ------------------------------------------------------------

@pytest.mark.parametrize("name", zoo.list_models())
def test_every_model_and_extractor_runs_at_detection_size_on_meta(name):
    h, w = size = valid_near(name, DETECTION)
    x = torch.empty(1, 3, h, w, device="meta")
    assert tuple(zoo.create_model(name, img_size=size, device="meta")(x).shape) == (1, 1000)
    maps = zoo.create_model(name, img_size=size, device="meta", features=True)(x)
    assert isinstance(maps, list) and maps
    for m in maps:                        # NCHW, keeping the aspect ratio exactly (every stride divides)
        assert m.dim() == 4 and m.shape[0] == 1 and m.shape[2] * w == m.shape[3] * h
    spec = zoo.get_spec(name)
    if spec.is_token_model:               # one map of the token grid, H/P x W/P
        assert [tuple(m.shape[2:]) for m in maps] == [(h // spec.patch_size, w // spec.patch_size)]


def test_feature_shapes_at_detection_size():
    assert feature_shapes("convnext_t", DETECTION) == [[96, 200, 336], [192, 100, 168], [384, 50, 84], [768, 25, 42]]
    # Swin-T: C = 96 doubling per stage, strides 4, 8, 16, 32; NCHW although timm gives NHWC
    assert feature_shapes("swin_t", DETECTION) == [[96, 200, 336], [192, 100, 168], [384, 50, 84], [768, 25, 42]]
    assert feature_shapes("vit_b16", DETECTION) == [[768, 800 // 16, 1344 // 16]]
    assert feature_shapes("vit_r50_b16", (224, 320)) == [[768, 14, 20]]
    assert feature_shapes("deit_s", DETECTION, out_indices=(3, -1)) == [[384, 50, 84]] * 2


# --- closed forms at H x W equal the counts ----------------------------------------------------

def test_vit_closed_form_at_224x320_equals_count_and_hand_formula():
    size = (224, 320)
    model = zoo.create_model("vit_b16", img_size=size, device="meta")
    counted = cost_record(model, size, train=False).macs
    d, patches = 768, (224 // 16) * (320 // 16)
    n = patches + 1
    by_hand = 12 * (12 * n * d * d + 2 * n * n * d) + patches * 3 * 16 * 16 * d + d * 1000
    assert counted == vit_macs(vit_shape_of(model), size)["total"] == by_hand
    assert vit_shape_of(model).tokens(Size.of(size)) == n == model.cfg.num_tokens


def test_vit_params_at_224x320():
    size = (224, 320)
    model = zoo.create_model("vit_b16", img_size=size, device="meta")
    assert model.pos_embed.shape == (1, 14 * 20 + 1, 768)
    assert vit_textbook_params(vit_shape_of(model), size)["pos_embed"] == (14 * 20 + 1) * 768
    assert vit_params(vit_shape_of(model), size) == n_params(model)


@pytest.mark.parametrize("size", [(224, 320), (64, 1344)])
def test_swin_closed_form_at_non_square_sizes_equals_count(size):
    model = zoo.create_model("swin_t", img_size=size, device="meta")
    record = cost_record(model, size, train=False).as_dict()
    expected = swin_macs(swin_shape_of(model), size)
    assert record["macs"] == expected["total"]
    assert {k: record["macs_by_component"][k] for k in expected if k != "total"} == \
        {k: v for k, v in expected.items() if k != "total"}


def test_swin_window_pads_and_shrinks_per_side_by_hand():
    # Swin-T at 64x1344: grids 16x336, 8x168, 4x84, 2x42 (C 96..768, depths 2, 2, 6, 2). Windows 7x7
    # pad 16 -> 21 and 8 -> 14 rows; at 4x84 and 2x42 the window shrinks to 4x7 and 2x7 (rows only).
    stage1 = 2 * 2 * 49 * (21 * 336) * 96
    stage2 = 2 * 2 * 49 * (14 * 168) * 192
    stage3 = 6 * 2 * (4 * 7) * (4 * 84) * 384
    stage4 = 2 * 2 * (2 * 7) * (2 * 42) * 768
    model = zoo.create_model("swin_t", img_size=(64, 1344), device="meta")
    assert cost_record(model, (64, 1344), train=False).attn_macs == stage1 + stage2 + stage3 + stage4
    assert [blk.window_size for blk in (layer.blocks[0] for layer in model.layers)] == \
        [(7, 7), (7, 7), (4, 7), (2, 7)]


def test_convnext_features_cost_the_backbone_without_head():
    full = cost_record(zoo.create_model("convnext_t", device="meta"), 224, train=False).macs
    features = cost_record(zoo.create_model("convnext_t", device="meta", features=True), 224, train=False).macs
    assert features < full
    assert full - features == 768 * 1000     # the classifier; pooling and LayerNorm cost no MACs


# --- the scratch ViT at H x W: weights, parity, feature maps ------------------------------------

def test_scratch_vit_config_takes_h_by_w():
    cfg = zoo.ViTConfig(img_size=(224, 320))
    assert cfg.grid_size == (14, 20) and cfg.num_patches == 280 and cfg.num_tokens == 281
    assert zoo.ViTConfig(img_size=[224, 224]).img_size == zoo.ViTConfig(img_size=224).img_size == Size(224, 224)
    with pytest.raises(ValueError, match="multiple of patch_size"):
        zoo.ViTConfig(img_size=(224, 330))
    model = zoo.create_model("vit_ti16", img_size=(64, 96))
    with pytest.raises(ValueError, match=r"img_size=\(96, 64\)"):
        model(torch.randn(1, 3, 96, 64))


def test_square_224_weights_in_224x320_model_match_timms_checkpoint_filter():
    # ViT-Ti/16 (timm's vit_tiny_patch16_224): the code of ViT-B/16 at a sixteenth of its MACs
    torch.manual_seed(0)
    source = timm.create_model("vit_tiny_patch16_224", pretrained=False).state_dict()
    # NB: weight_init="skip" leaves some weights uninitialised; fine here, as every one is loaded
    reference = timm.create_model("vit_tiny_patch16_224", pretrained=False, weight_init="skip", img_size=(224, 320))
    reference.eval()
    reference.load_state_dict(checkpoint_filter_fn(source, reference), strict=True)
    model = zoo.create_model("vit_ti16", img_size=(224, 320))
    assert zoo.get_spec("vit_ti16").timm_name == "vit_tiny_patch16_224"
    zoo.load_weights(model, source, strict=True)
    assert model.pos_embed.shape == (1, 14 * 20 + 1, 192)
    x = torch.randn(1, 3, 224, 320, generator=torch.Generator().manual_seed(1))
    with torch.inference_mode():
        assert (model(x) - reference(x)).abs().max().item() <= 1e-4


def test_scratch_vit_feature_map_is_the_normed_patch_tokens():
    size, x = (64, 96), torch.randn(2, 3, 64, 96, generator=torch.Generator().manual_seed(2))
    full = zoo.create_model("vit_ti16", img_size=size)
    features = zoo.create_model("vit_ti16", img_size=size, features=True)
    result = features.load_state_dict(full.state_dict(), strict=False)
    assert not result.missing_keys and set(result.unexpected_keys) == {"head.weight", "head.bias"}
    with torch.inference_mode():
        (fmap,) = features(x)
        tokens = full.forward_features(x)[:, 1:]                               # (B, 24, 192), class token dropped
    assert fmap.shape == (2, 192, 4, 6)
    assert torch.equal(fmap, tokens.transpose(1, 2).reshape(2, 192, 4, 6))


def test_scratch_vit_feature_maps_match_timms_forward_intermediates():
    """Our ViT-Ti and timm's DeiT-Ti (the same architecture) as extractors of blocks 3 and 12."""
    size, x = (64, 96), torch.randn(1, 3, 64, 96, generator=torch.Generator().manual_seed(3))
    theirs = zoo.create_model("deit_ti", img_size=size, features=True, out_indices=(2, -1))
    ours = zoo.create_model("vit_ti16", img_size=size, features=True, out_indices=(2, -1))
    ours.load_state_dict(theirs.model.state_dict(), strict=True)
    with torch.inference_mode():
        ours_maps, theirs_maps = ours(x), theirs(x)
    assert [m.shape for m in ours_maps] == [m.shape for m in theirs_maps] == [(1, 192, 4, 6)] * 2
    assert all((a - b).abs().max().item() <= 1e-5 for a, b in zip(ours_maps, theirs_maps))


def test_earlier_blocks_only_keep_the_blocks_they_need():
    extractor = zoo.create_model("vit_ti16", device="meta", features=True, out_indices=(2,))
    assert len(extractor.blocks) == 3 and isinstance(extractor.head, torch.nn.Identity)
    assert zoo.create_model("vit_ti16", device="meta", features=True, out_indices=2).indices == [10, 11]


@pytest.mark.parametrize("name", ["convnext_t", "swin_t", "deit_s", "bit_r50x1", "resnet50", "vit_b16"])
def test_a_feature_extractor_differs_from_its_classifier_only_by_the_head(name):
    """timm's wrappers rename modules (model.*, stem_0, stem_conv): the stem must still be the patch embedding."""
    from zoo.runs.tasks import count

    extractor = count(name, Size(224, 224), train=False, features=True)["macs_by_component"]
    classifier = count(name, Size(224, 224), train=False)["macs_by_component"]
    assert extractor["head"] == 0 < classifier["head"]
    assert {k: v for k, v in extractor.items() if k != "head"} == {k: v for k, v in classifier.items() if k != "head"}
