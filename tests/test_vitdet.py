"""ViTDet from scratch: the paper's global blocks, the pyramid's strides, the closed form, timm's SAM blocks."""
import pytest
import torch
from timm.models.vision_transformer_sam import Block as SamBlock

import zoo
from closed_form_vitdet import ViTDetShape, vitdet_macs, vitdet_params
from analysis.count.cost import cost_record
from zoo.models.vitdet import Block, ViTDetConfig

# detectron2 projects/ViTDet: configs/common/models/mask_rcnn_vitdet.py ("2, 5, 8 11 for global
# attention"), COCO/mask_rcnn_vitdet_l_100ep.py ("5, 11, 17, 23"), COCO/mask_rcnn_vitdet_h_75ep.py ("7, 15, 23, 31")
PAPER = {"vitdet_b16": (768, 12, 12, (2, 5, 8, 11)), "vitdet_l16": (1024, 24, 16, (5, 11, 17, 23)),
         "vitdet_h16": (1280, 32, 16, (7, 15, 23, 31))}


def shape_from_paper(name: str) -> ViTDetShape:
    dim, depth, heads, global_blocks = PAPER[name]
    return ViTDetShape(embed_dim=dim, depth=depth, num_heads=heads, global_blocks=global_blocks)


@pytest.mark.parametrize("name", sorted(PAPER))
def test_global_blocks_are_the_papers(name):
    model = zoo.create_model(name, device="meta")
    dim, depth, heads, global_blocks = PAPER[name]
    assert [i for i, b in enumerate(model.blocks) if b.window == 0] == list(global_blocks)
    assert {b.window for b in model.blocks} == {0, 14} and len(model.blocks) == depth
    assert model.blocks[0].attn.qkv.in_features == dim and model.blocks[0].attn.num_heads == heads


def test_pyramid_gives_four_maps_at_strides_4_to_32():
    assert zoo.feature_shapes("vitdet_b16", 1024) == [[256, 256, 256], [256, 128, 128], [256, 64, 64], [256, 32, 32]]
    assert zoo.feature_shapes("vitdet_l16", (800, 1344)) == [[256, 800 // s, 1344 // s] for s in (4, 8, 16, 32)]


@pytest.mark.parametrize("size", [224, 1024, (800, 1344), (640, 960)])
def test_counted_macs_and_params_equal_the_closed_form_b16(size):
    net = shape_from_paper("vitdet_b16")
    for features in (True, False):
        model = zoo.create_model("vitdet_b16", img_size=size, device="meta", features=features)
        record = cost_record(model, size, train=False)
        expected = vitdet_macs(net, size, features=features)
        assert record.macs == expected["total"]
        assert record.attn_macs == expected["attn_matmul"]
        assert {k: v for k, v in record.macs_by_component.items() if v} == {   # component by component
            k: v for k, v in expected.items() if k != "total" and v}
        assert record.params == vitdet_params(net, size, features=features)
        assert type(vitdet_params(net, size, features=features)) is int          # a count, never 1.0e8
        assert record.uncounted_ops == []


@pytest.mark.parametrize("name", ["vitdet_l16", "vitdet_h16"])
def test_counted_macs_equal_the_closed_form_large(name):
    size = (800, 1344)
    model = zoo.create_model(name, img_size=size, device="meta", features=True)
    assert cost_record(model, size, train=False).macs == vitdet_macs(shape_from_paper(name), size)["total"]


def test_closed_form_by_hand_at_1024_one_window_block():
    """One window block of ViT-B at 1024: grid 64 padded to 70 (5 x 5 windows of 14 x 14)."""
    one = ViTDetShape(embed_dim=768, depth=1, num_heads=12, global_blocks=())
    n, padded, d = 64 * 64, 70 * 70, 768
    block = 4 * padded * d * d + 2 * padded * 196 * d + padded * 28 * d + 2 * n * d * 4 * d
    assert vitdet_macs(one, 1024, features=False, num_classes=0)["total"] == n * 3 * 256 * d + block


@pytest.mark.parametrize("window,grid", [(14, (20, 24)), (0, (6, 10))])
@pytest.mark.parametrize("impl", ["math", "sdpa"])
def test_block_matches_timms_sam_block(window, grid, impl):
    """A randomly initialised timm SAM ViT block's weights (relative position included) give the same output."""
    torch.manual_seed(0)
    dim, heads = 64, 4
    theirs = SamBlock(dim, heads, use_rel_pos=True, window_size=window,
                      input_size=(window, window) if window else grid).eval()
    for p in (theirs.attn.rel_pos_h, theirs.attn.rel_pos_w):
        torch.nn.init.normal_(p, std=0.5)
    cfg = ViTDetConfig(img_size=(grid[0] * 16, grid[1] * 16),
                       embed_dim=dim, depth=1, num_heads=heads, global_blocks=() if window else (0,),
                       window_size=window or 14, attn_impl=impl)
    ours = Block(cfg, window).eval()
    ours.load_state_dict(theirs.state_dict(), strict=True)
    x = torch.randn(2, *grid, dim)
    with torch.no_grad():
        torch.testing.assert_close(ours(x), theirs(x), rtol=1e-5, atol=1e-5)


def test_tiny_vitdet_runs_on_cpu_with_padding():
    cfg = ViTDetConfig(img_size=(160, 224), embed_dim=64, depth=2, num_heads=4, global_blocks=(1,))
    from zoo.models.vitdet import ViTDet

    maps = ViTDet(cfg, features=True)(torch.randn(1, 3, 160, 224))
    assert [tuple(m.shape) for m in maps] == [(1, 256, 160 // s, 224 // s) for s in (4, 8, 16, 32)]
    assert all(torch.isfinite(m).all() for m in maps)


def test_compare_gives_four_maps_at_strides_4_to_32_and_the_closed_form(capsys):
    """The issue's first 'done when': the command line, JSON out."""
    import json

    from zoo.compare.cli import main

    argv = ["--models", "vitdet_b16", "--resolutions", "1024", "--metrics", "cost,memory", "--features",
            "--no-save", "--format", "json"]
    assert main(argv) == 0
    (row,) = json.loads(capsys.readouterr().out)
    assert row["features"] == [[256, 1024 // s, 1024 // s] for s in (4, 8, 16, 32)]
    assert row["feature_strides"] == [4, 8, 16, 32]
    assert row["macs"] == vitdet_macs(shape_from_paper("vitdet_b16"), 1024)["total"]
    assert row["act_peak_bytes"] > 0 and row["serve_bytes"] > row["act_peak_bytes"]
