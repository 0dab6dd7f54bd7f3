"""TiledRandomInit (the timed model's random weights at memory speed): the distributions nn.init asks for, the
model's own buffers untouched, nothing subnormal or non-finite. Expected moments are closed forms (U(a, b): mean
(a + b) / 2, sd (b - a) / sqrt(12)) or timm's own initialisation of the same model."""
import math

import pytest
import torch

from zoo.models.meta_init import TiledRandomInit
from zoo.models.registry import create_model


def test_uniform_and_normal_fills_have_the_asked_distributions():
    with TiledRandomInit():
        uniform = torch.empty(3_000_000).uniform_(-3.0, 5.0)     # longer than the block: tiled past its end
        normal = torch.empty(500, 700).normal_(2.0, 0.5)
    assert uniform.min() >= -3.0 and uniform.max() < 5.0
    assert uniform.mean().item() == pytest.approx(1.0, abs=0.02)
    assert uniform.std().item() == pytest.approx(8 / math.sqrt(12), rel=0.01)
    assert normal.mean().item() == pytest.approx(2.0, abs=0.01) and normal.std().item() == pytest.approx(0.5, rel=0.01)


def test_an_explicit_generator_is_honoured():
    expected = torch.empty(1000).normal_(generator=torch.Generator().manual_seed(7))
    with TiledRandomInit():
        got = torch.empty(1000).normal_(generator=torch.Generator().manual_seed(7))
    assert torch.equal(got, expected)


def test_a_model_built_under_it_keeps_its_buffers_and_its_init_scale():
    torch.manual_seed(0)
    reference_model = create_model("swin_t", 224)                  # timm's own initialisation
    with TiledRandomInit():
        built_model = create_model("swin_t", 224)
    reference, built = reference_model.state_dict(), built_model.state_dict()
    assert list(built) == list(reference)
    tiny = torch.finfo(torch.float32).tiny
    for name, value in built.items():
        assert torch.isfinite(value.float()).all() and not ((value != 0) & (value.abs() < tiny)).any(), name
        if value.is_floating_point() and value.numel() >= 100_000:     # the big weights: timm's scale
            assert value.std().item() == pytest.approx(reference[name].std().item(), rel=0.05), name
    buffers, expected = dict(built_model.named_buffers()), dict(reference_model.named_buffers())
    # swin_t (depths 2, 2, 6, 2): 12 relative-position indices and a shift mask on every second block but in the
    # last stage, whose 7 x 7 grid is one window (no shift): 1 + 1 + 3
    assert buffers.keys() == expected.keys() and len(buffers) == 12 + 5
    assert all(torch.equal(buffers[n], expected[n]) for n in buffers)      # computed, not drawn: unchanged
