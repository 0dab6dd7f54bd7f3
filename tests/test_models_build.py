"""Every registry model builds at its native and at another valid resolution; small ones really run."""
import pytest
import torch

import zoo
from analysis.size import Size

SMALL = 30_000_000  # models under this many parameters also run a real CPU forward


def other_resolution(spec) -> int:
    """A second valid size, away from the native one (384, or the nearest valid size to it)."""
    size = 384 if spec.native_size != 384 else 256
    return size if spec.rule.accepts(Size.of(size)) else spec.rule.nearest(Size.of(size))[0].side


def n_params(model) -> int:
    return sum(p.numel() for p in model.parameters())


@pytest.mark.parametrize("name", zoo.list_models())
def test_builds_on_meta_at_native_and_other_resolution(name):
    spec = zoo.get_spec(name)
    for size in (spec.native_size, other_resolution(spec)):
        model = zoo.create_model(name, img_size=size, device="meta")
        assert all(p.is_meta for p in model.parameters())
        out = model(torch.empty(2, 3, size, size, device="meta"))
        assert tuple(out.shape) == (2, 1000)


@pytest.mark.parametrize("name", zoo.list_models())
def test_num_classes_and_dtype(name):
    model = zoo.create_model(name, num_classes=10, device="meta", dtype=torch.bfloat16)
    spec = zoo.get_spec(name)
    out = model(torch.empty(1, 3, spec.native_size, spec.native_size, device="meta", dtype=torch.bfloat16))
    assert tuple(out.shape) == (1, 10)
    assert {p.dtype for p in model.parameters()} == {torch.bfloat16}


SMALL_MODELS = [n for n in zoo.list_models() if n_params(zoo.create_model(n, device="meta")) < SMALL]


def test_small_model_list_is_what_we_expect():
    assert {"vit_ti16", "vit_s16", "deit_s", "swin_t", "convnext_t", "resnet50"} <= set(SMALL_MODELS)


@pytest.mark.parametrize("name", SMALL_MODELS)
def test_small_models_run_on_cpu_at_two_resolutions(name):
    spec = zoo.get_spec(name)
    torch.manual_seed(0)
    for size in (spec.rule.nearest(Size.of(160))[0].side if not spec.rule.accepts(Size.of(160)) else 160, spec.native_size):
        model = zoo.create_model(name, img_size=size)
        with torch.inference_mode():
            out = model(torch.randn(1, 3, size, size))
        assert tuple(out.shape) == (1, 1000) and torch.isfinite(out).all()
