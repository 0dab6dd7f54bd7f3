"""The from-scratch ViT is timm's model: same parameter names, same logits, same resampling."""
import pytest
import timm
import torch
from timm.layers import resample_abs_pos_embed
from timm.models.vision_transformer import checkpoint_filter_fn

import zoo

TOL = 1e-4
SMALL = 64          # px: the logits test's input (the 224 px configuration is checked on meta)
PAIRS = [("vit_s16", "vit_small_patch16_224"), ("vit_b16", "vit_base_patch16_224"),
         ("vit_b32", "vit_base_patch32_224"), ("vit_l16", "vit_large_patch16_224"),
         ("vit_r50_b16", "vit_base_r50_s16_224")]


def timm_model(timm_name, **kw):
    torch.manual_seed(0)
    return timm.create_model(timm_name, pretrained=False, num_classes=1000, **kw).eval()


def max_diff(a, b, size, batch=2):
    x = torch.randn(batch, 3, size, size, generator=torch.Generator().manual_seed(1))
    with torch.inference_mode():
        return (a(x) - b(x)).abs().max().item()


@pytest.mark.parametrize("ours, theirs", PAIRS)
def test_strict_load_and_same_logits(ours, theirs):
    # at the default 224 px both built on meta: a strict load refuses a missing, extra or misshapen tensor
    with torch.device("meta"):
        at_224 = timm.create_model(theirs, pretrained=False, num_classes=1000)
    zoo.create_model(ours, device="meta").load_state_dict(at_224.state_dict(), strict=True, assign=True)
    assert zoo.get_spec(ours).timm_name == theirs
    # the logits on timm's own random weights at 64 px (a 4 x 4 patch grid: the same code as 14 x 14, with a
    # tenth of the tokens); ours built on meta and given timm's tensors (assign), strict again, so our own
    # initialisation of ViT-L/16's 300M weights (seconds) is skipped, as the load replaces it
    reference = timm_model(theirs, img_size=SMALL)
    model = zoo.create_model(ours, device="meta", img_size=SMALL)
    model.load_state_dict(reference.state_dict(), strict=True, assign=True)
    assert max_diff(model, reference, SMALL) <= TOL


@pytest.mark.parametrize("ours, theirs", [PAIRS[1], PAIRS[4]])
def test_224_weights_in_384_model_match_timms_checkpoint_filter(ours, theirs):
    """Our load_weights of a 224 checkpoint into a 384 model gives the tensors timm's checkpoint_filter_fn gives its
    own 384 model, every one (the forward on equal tensors is the strict-load test's: the same code at any grid)."""
    source = timm_model(theirs).state_dict()
    with torch.device("meta"):      # only its shapes: checkpoint_filter_fn resamples to its pos_embed's grid
        reference = timm.create_model(theirs, pretrained=False, num_classes=1000, img_size=384)
    expected = checkpoint_filter_fn(source, reference)
    reference.load_state_dict(expected, strict=True, assign=True)       # all of them, no more, in its shapes
    model = zoo.create_model(ours, img_size=384)
    zoo.load_weights(model, source, strict=True)
    assert model.pos_embed.shape == (1, 24 * 24 + 1, model.cfg.embed_dim)
    got = model.state_dict()
    assert got.keys() == expected.keys()
    assert torch.allclose(got["pos_embed"], expected["pos_embed"], atol=1e-6)        # resampled: bicubic, antialias
    assert all(torch.equal(got[name], expected[name]) for name in got if name != "pos_embed")


def test_math_attention_equals_sdpa():
    fused = zoo.create_model("vit_s16")
    explicit = zoo.create_model("vit_s16", attn_impl="math")
    explicit.load_state_dict(fused.state_dict())
    assert max_diff(fused, explicit, 224) <= TOL


def test_resampling_matches_timm_and_keeps_the_class_token():
    pos = torch.randn(1, 1 + 14 * 14, 32)
    ours = zoo.resample_pos_embed(pos, (24, 24), num_prefix_tokens=1)
    theirs = resample_abs_pos_embed(pos, new_size=[24, 24], num_prefix_tokens=1)
    assert ours.shape == (1, 1 + 24 * 24, 32)
    assert torch.equal(ours[:, 0], pos[:, 0])
    assert torch.allclose(ours, theirs, atol=1e-6)
    assert zoo.resample_pos_embed(pos, (14, 14)) is pos


def test_pooling_and_pretraining_head_options():
    gap = zoo.create_model("vit_ti16", pool="gap")
    assert not hasattr(gap, "cls_token") and gap.pos_embed.shape[1] == 196
    pre = zoo.create_model("vit_ti16", pre_logits_dim=192)
    assert isinstance(pre.pre_logits.act, torch.nn.Tanh)
    x = torch.randn(1, 3, 224, 224)
    with torch.inference_mode():
        assert gap(x).shape == pre(x).shape == (1, 1000)


def test_wrong_input_size_is_a_clear_error():
    model = zoo.create_model("vit_ti16")
    with pytest.raises(ValueError, match="img_size=256"):
        model(torch.randn(1, 3, 256, 256))
