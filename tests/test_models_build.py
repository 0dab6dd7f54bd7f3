"""Every registry model builds at its native and at another valid resolution; small ones really run (at two small
sizes, as timm's tests cap forward sizes: a wiring test needs no native-size forward; the meta forward above covers
the native size's shapes)."""
import pytest
import torch

import zoo
from analysis.size import Size
from zoo.models.meta_init import TiledRandomInit

SMALL = 30_000_000  # models under this many parameters also run a real CPU forward
# the registry models under SMALL parameters, named rather than built at collection (in every worker);
# test_builds_on_meta_at_native_and_other_resolution checks each model's side of the line as it builds it
SMALL_MODELS = ("bit_r50x1", "convnext_t", "deit_s", "deit_s_distilled", "deit_ti", "deit_ti_distilled", "resnet50",
                "swin_t", "vit_s16", "vit_ti16")
FORWARD_SIDES = (64, 96)    # real forwards at the nearest valid sides to these


def other_resolution(spec) -> int:
    """A second valid size, away from the native one (384, or the nearest valid size to it)."""
    size = 384 if spec.native_size != 384 else 256
    return size if spec.rule.accepts(Size.of(size)) else spec.rule.nearest(Size.of(size))[0].side


def n_params(model) -> int:
    return sum(p.numel() for p in model.parameters())


@pytest.mark.parametrize("name", zoo.list_models())
def test_builds_on_meta_at_native_and_other_resolution_and_takes_num_classes_and_dtype(name):
    """At the native size as the registry builds it (fp32, 1000 classes); at the other size with 10 classes in
    bf16 (one build and meta forward fewer per model than a third build for those two options)."""
    spec = zoo.get_spec(name)
    for size, num_classes, dtype in ((spec.native_size, 1000, None), (other_resolution(spec), 10, torch.bfloat16)):
        model = zoo.create_model(name, img_size=size, num_classes=num_classes, device="meta", dtype=dtype)
        assert all(p.is_meta for p in model.parameters())
        assert (n_params(model) < SMALL) == (name in SMALL_MODELS), (name, n_params(model))
        assert {p.dtype for p in model.parameters()} == {dtype or torch.float32}
        out = model(torch.empty(2, 3, size, size, device="meta", dtype=dtype))
        assert tuple(out.shape) == (2, num_classes) and out.dtype == (dtype or torch.float32)


def test_small_model_list_is_what_we_expect():
    assert {"vit_ti16", "vit_s16", "deit_s", "swin_t", "convnext_t", "resnet50"} <= set(SMALL_MODELS)
    assert set(SMALL_MODELS) <= set(zoo.list_models())


@pytest.mark.parametrize("name", SMALL_MODELS)
def test_small_models_run_on_cpu_at_two_resolutions(name):
    spec = zoo.get_spec(name)
    torch.manual_seed(0)
    sizes = [spec.rule.nearest(Size.of(side))[0].side for side in FORWARD_SIDES]
    assert len(set(sizes)) == 2
    for size in sizes:
        with TiledRandomInit():     # random weights of the model's own distributions, at memory speed
            model = zoo.create_model(name, img_size=size)
        with torch.inference_mode():
            out = model(torch.randn(1, 3, size, size))
        assert tuple(out.shape) == (1, 1000) and torch.isfinite(out).all()
