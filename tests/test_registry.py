"""The registry's contract: names, specs, wildcards and the errors for bad input."""
import dataclasses

import pytest
import timm

import zoo
from zoo.models.spec import AtLeast, ModelSpec, MultipleOf
from analysis.size import Size

REQUIRED = (
    "vit_ti16 vit_s16 vit_b16 vit_b32 vit_b8 vit_l16 vit_l32 vit_h14 vit_r50_b16 "
    "deit_ti deit_s deit_b deit_ti_distilled deit_s_distilled deit_b_distilled "
    "swin_t swin_s swin_b swin_l convnext_t convnext_s convnext_b convnext_l convnext_xl "
    "bit_r50x1 bit_r101x1 bit_r152x2 bit_r152x4 resnet50 beit_b16 eva02_b14 regnety_160 effnet_l2"
).split()
FAMILIES = {"vit", "hybrid", "vitdet", "deit", "swin", "convnext", "bit", "resnet", "beit", "eva", "regnet", "efficientnet"}


def test_every_required_name_is_registered():
    assert set(REQUIRED) <= set(zoo.list_models())


def test_list_models_is_in_natural_order_and_takes_wildcards():
    assert zoo.list_models("vit_b*") == ["vit_b8", "vit_b16", "vit_b32"]          # 8 < 16 < 32, not "16" < "32" < "8"
    assert zoo.list_models("bit_*") == ["bit_r50x1", "bit_r101x1", "bit_r152x2", "bit_r152x4"]
    assert zoo.list_models("swin_*") == ["swin_b", "swin_l", "swin_s", "swin_t"]
    assert zoo.list_models("vit_?16") == ["vit_b16", "vit_l16", "vit_s16"]
    assert zoo.list_models("nothing*") == []


@pytest.mark.parametrize("name", zoo.list_models())
def test_spec_is_complete_and_frozen(name):
    spec = zoo.get_spec(name)
    assert spec.name == name and spec.family in FAMILIES and spec.source in ("scratch", "timm")
    assert spec.paper and spec.rule.describe()
    assert spec.check_resolution(Size.of(spec.native_size)) is None
    assert timm.is_model(spec.timm_name)
    with pytest.raises(dataclasses.FrozenInstanceError):
        spec.name = "other"


@pytest.mark.parametrize("name", [n for n in zoo.list_models() if zoo.get_spec(n).source == "timm"])
def test_timm_native_size_matches_one_of_timms_checkpoints(name):
    """The native resolution is one timm publishes a checkpoint for (an independent source)."""
    spec = zoo.get_spec(name)
    sizes = {timm.get_pretrained_cfg(tag).input_size[-1] for tag in timm.list_pretrained(spec.timm_name + "*")}
    sizes.add(timm.get_pretrained_cfg(spec.timm_name).input_size[-1])
    assert spec.native_size in sizes


def test_vit_b16_spec_follows_the_paper():
    spec = zoo.get_spec("vit_b16")
    cfg = spec.vit_config
    assert (cfg.embed_dim, cfg.depth, cfg.num_heads, cfg.mlp_dim, cfg.patch_size) == (768, 12, 12, 3072, 16)
    assert spec.tokens(Size.of(224)) == 14 * 14 + 1 and spec.tokens(Size.of(384)) == 24 * 24 + 1
    assert zoo.get_spec("deit_s_distilled").tokens(Size.of(224)) == 196 + 2
    assert zoo.get_spec("resnet50").tokens(Size.of(224)) is None


def test_registering_a_name_twice_raises():
    with pytest.raises(zoo.DuplicateModelError, match="vit_b16"):
        zoo.register(zoo.get_spec("vit_b16"))


def test_unknown_name_names_the_closest_ones():
    with pytest.raises(zoo.UnknownModelError) as e:
        zoo.create_model("vit_b17", device="meta")
    assert "vit_b17" in str(e.value) and "vit_b16" in str(e.value)
    with pytest.raises(KeyError):  # also a KeyError, as a lookup failure
        zoo.get_spec("swin_tt")
    assert "swin_t" in str(pytest.raises(zoo.UnknownModelError, zoo.get_spec, "swin_tt").value)


@pytest.mark.parametrize("name, size, rule_text, nearest", [
    ("vit_b16", 230, "multiple of 16", "224, 240"),
    ("vit_h14", 224 + 3, "multiple of 14", "224, 238"),
    ("swin_t", 200, "multiple of 32", "192, 224"),
    ("convnext_t", 16, "at least 32", "32"),
])
def test_unsupported_resolution_states_rule_and_nearest_sizes(name, size, rule_text, nearest):
    with pytest.raises(zoo.UnsupportedResolutionError) as e:
        zoo.create_model(name, img_size=size, device="meta")
    message = str(e.value)
    assert name in message and str(size) in message and rule_text in message and nearest in message


def test_non_integer_resolution_is_rejected():
    with pytest.raises(zoo.UnsupportedResolutionError, match="integer"):
        zoo.create_model("vit_b16", img_size=224.0, device="meta")


def test_unknown_config_override_is_rejected():
    with pytest.raises(zoo.ZooError, match="vit_b16"):
        zoo.create_model("vit_b16", device="meta", no_such_option=1)


def test_adhoc_timm_models():
    model = zoo.create_model("timm:resnet18", device="meta")
    assert sum(p.numel() for p in model.parameters()) == 11_689_512  # torchvision's ResNet-18 count
    spec = zoo.get_spec("timm:resnet18")
    assert spec.source == "timm" and spec.timm_name == "resnet18"
    with pytest.raises(zoo.UnknownModelError, match="timm:resnet18"):
        zoo.get_spec("timm:resnet181")


def test_scratch_variants_are_parsed_by_pattern():
    from zoo.models.catalog import _scratch_vit

    assert _scratch_vit("h14").vit_config.embed_dim == 1280 and _scratch_vit("b8").patch_size == 8
    for bad in ("x16", "b", "16", "bb16", "b16x"):
        with pytest.raises(ValueError, match="variant"):
            _scratch_vit(bad)


def test_rules():
    assert MultipleOf(16, "").nearest(Size(230, 230)) == [Size(224, 224), Size(240, 240)]
    assert MultipleOf(16, "").nearest(Size(5, 5)) == [Size(16, 16)]
    assert AtLeast(32, "").accepts(Size(32, 32)) and not AtLeast(32, "").accepts(Size(31, 32))
    assert isinstance(zoo.get_spec("vit_b16"), ModelSpec)


@pytest.mark.parametrize("timm_name", ["eva02_base_patch14_224", "vit_small_patch14_dinov2", "resnet18"])
def test_a_timm_model_has_timms_default_head_and_its_row_says_so(timm_name):
    """timm:NAME is built as timm.create_model(NAME) builds it: the head of timm's default config (none for the
    eva02 / dinov2 pre-training checkpoints, 1000 classes for resnet18). Expected: timm's own model and config;
    a head asked for adds the closed form of one linear layer (features x classes + classes)."""
    import timm
    import torch

    from zoo.runs.counted import count

    with torch.device("meta"):
        theirs = timm.create_model(timm_name, pretrained=False)
    ours = zoo.create_model(f"timm:{timm_name}", device="meta")
    default = timm.get_pretrained_cfg(timm_name).num_classes
    assert ours.num_classes == theirs.num_classes == default and (default == 0) == (timm_name != "resnet18")
    n_params = lambda m: sum(p.numel() for p in m.parameters())                      # noqa: E731
    assert n_params(ours) == n_params(theirs)
    with_head = zoo.create_model(f"timm:{timm_name}", num_classes=10, device="meta")
    assert n_params(with_head) - n_params(ours) == (ours.num_features * 10 + 10) - (
        (ours.num_features * default + default) if default else 0)
    assert count(f"timm:{timm_name}", 224, train=False)["head_classes"] == default


@pytest.mark.parametrize("name, axes, classes", [("vit_b16", {}, 1000), ("vitdet_b16", {}, 1000),
                                                 ("swin_t", {}, 1000), ("vit_b16", {"features": True}, None),
                                                 ("resnet50", {"detector": "maskrcnn"}, None)])
def test_a_registry_row_says_which_head_was_counted(name, axes, classes):
    from zoo.runs.counted import count

    size = 800 if axes.get("detector") else 224
    assert count(name, size, train=False, **axes)["head_classes"] == classes
