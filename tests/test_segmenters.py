"""Whole segmenters: UperNet's parts by hand, and params/MACs/mIoU beside the published ADE20K tables."""
import json

import pytest
import torch

from analysis.count.cost import cost_record, macs_by_module
from cli import call_main
from zoo.models.registry import create_model
from zoo.models.stages import feature_layout
from zoo.models.segmenters import ADE20K, SegmenterSpec, UperNet, create_segmenter, segmenter_fields, task_fields
from zoo.errors import ZooError
from zoo.runs.tasks import count

SIZE = (512, 2048)      # H x W at which the 512-crop rows' FLOPs reproduce (the READMEs do not say)
SWIN = "SwinTransformer/Swin-Transformer-Semantic-Segmentation@8fdda7b README.md, ADE20K"
CONVNEXT = "facebookresearch/ConvNeXt@089ca24 semantic_segmentation/README.md"
# Published UperNet, 512x512 crop, 160K, ImageNet-1K: (mIoU, mIoU ms+flip, #params in M, FLOPs in G), typed
# from the two READMEs' tables as opened (SWIN Swin-T/S/B rows, CONVNEXT ConvNeXt-T/S/B ImageNet-1K rows).
PUBLISHED = {
    "swin_t": (44.51, 45.81, 60, 945), "swin_s": (47.64, 49.47, 81, 1038), "swin_b": (48.13, 49.72, 121, 1188),
    "convnext_t": (46.0, 46.7, 60, 939), "convnext_s": (48.7, 49.6, 82, 1027), "convnext_b": (49.1, 49.9, 122, 1170),
}
# Tolerance: params are published rounded to 1M; GMACs within 1%: mmcv's counter adds bias, norm, ReLU and
# pooling elements and leaves out attention matmuls and F.interpolate (Swin-T: 3.3 GMACs of attention, 0.3%).
GMACS_TOLERANCE = 0.01


@pytest.mark.parametrize("backbone", sorted(PUBLISHED))
def test_params_and_macs_are_within_tolerance_of_the_published_tables(backbone):
    miou, miou_ms, params_m, gflops = PUBLISHED[backbone]
    net = create_segmenter(backbone, "upernet", SIZE, device="meta")
    record = cost_record(net, SIZE, train=False)
    assert abs(record.params / 1e6 - params_m) <= 0.5
    assert abs(record.macs / 1e9 / gflops - 1) <= GMACS_TOLERANCE
    assert record.uncounted_ops == []
    fields = task_fields(backbone, "upernet", SIZE)
    assert (fields["miou"], fields["miou_ms"]) == (miou, miou_ms)
    assert (fields["seg_published"]["params_m"], fields["seg_published"]["gflops"]) == (params_m, gflops)


def test_the_shipped_table_is_the_readmes():
    """Every row of both official tables (and Swin's MoBY row, ConvNeXt's ImageNet-22K rows), typed
    independently above; mmsegmentation's rows: tests/test_segmentation_published.py."""
    official = [r for r in ADE20K if r.official]
    in1k = {r.model: (r.miou, r.miou_ms, r.params_m, r.gflops) for r in official if r.pretraining == "IN-1K supervised"}
    assert in1k == PUBLISHED
    others = {(r.model, r.pretraining, r.crop): (r.miou, r.miou_ms, r.params_m, r.gflops) for r in official
              if r.pretraining != "IN-1K supervised"}
    assert others == {("swin_t", "IN-1K MoBY self-supervised", 512): (44.06, 45.58, 60, 945),
                      ("convnext_b", "IN-22K supervised", 640): (52.6, 53.1, 122, 1828),
                      ("convnext_l", "IN-22K supervised", 640): (53.2, 53.7, 235, 2458),
                      ("convnext_xl", "IN-22K supervised", 640): (53.6, 54.0, 391, 3335)}
    assert all(r.source.startswith(("SwinTransformer/", "facebookresearch/ConvNeXt@")) for r in official)


def by_module(size):
    return lambda net: macs_by_module(net, size)


def grids(h: int, w: int, strides=(4, 8, 16, 32)) -> list[int]:
    return [(h // s) * (w // s) for s in strides]


def upernet_decode_macs(px: list[int], chans: list[int], ch: int = 512, classes: int = 150) -> int:
    """UPerHead by hand: PPM 1x1 convs on 1, 4, 9, 36 pooled px; the 3x3 bottleneck over the last map and the
    four pooled maps; 1x1 laterals and 3x3 FPN convs on the other three; the 3x3 fpn_bottleneck over the four
    levels concatenated at stride 4; the 1x1 classifier."""
    ppm = sum(s * s for s in (1, 2, 3, 6)) * chans[3] * ch
    bottleneck = px[3] * (chans[3] + 4 * ch) * ch * 9
    fpn = sum(p * (c * ch + ch * ch * 9) for p, c in zip(px[:3], chans[:3]))
    return ppm + bottleneck + fpn + px[0] * (4 * ch * ch * 9 + ch * classes)


def test_each_part_of_upernet_on_convnext_t_by_hand():
    net = create_segmenter("convnext_t", "upernet", SIZE, device="meta")
    fields = segmenter_fields(net, "convnext_t", by_module(SIZE))
    parts, px, chans = fields["segmenter_macs_by_part"], grids(*SIZE), [96, 192, 384, 768]
    assert parts["decode_head"] == upernet_decode_macs(px, chans)
    assert parts["auxiliary_head"] == px[2] * (384 * 256 * 9 + 256 * 150)      # FCNHead on stage 3
    assert parts["neck"] == 0
    backbone = create_model("convnext_t", SIZE, device="meta", features=True)
    assert parts["backbone"] == cost_record(backbone, SIZE, train=False).macs
    # inference (what mmseg's get_flops runs) has no auxiliary head; its params count
    assert cost_record(net, SIZE, train=False).macs == parts["backbone"] + parts["decode_head"]
    params = fields["segmenter_params_by_part"]
    assert params["auxiliary_head"] == 384 * 256 * 9 + 2 * 256 + 256 * 150 + 150
    assert params["decode_head"] == (4 * 768 * 512 + (768 + 2048) * 512 * 9 + (96 + 192 + 384) * 512
                                     + 3 * 512 * 512 * 9 + 2048 * 512 * 9 + 12 * 2 * 512 + 512 * 150 + 150)  # 12 BNs


def test_a_plain_vit_goes_through_the_multilevel_neck():
    """DeiT-S at 512: blocks 2, 5, 8, 11 (384 channels, a 32 x 32 grid) -> 1x1 laterals, resized x4, x2, x1,
    x0.5, 3x3 convs (mmseg's MultiLevelNeck, with bias); UperNet then takes four 384-channel maps."""
    net = create_segmenter("deit_s", "upernet", 512, device="meta")
    assert feature_layout(net.backbone) == ([16] * 4, ["blocks.2", "blocks.5", "blocks.8", "blocks.11"])
    parts = segmenter_fields(net, "deit_s", by_module(512))["segmenter_macs_by_part"]
    c, px = 384, grids(512, 512)
    assert parts["neck"] == 4 * 32 * 32 * c * c + sum(px) * c * c * 9
    assert parts["decode_head"] == upernet_decode_macs(px, [c] * 4)


def test_no_published_row_of_another_recipe_is_matched():
    """At 512 x 2048 ConvNeXt-B's row is the ImageNet-1K 512 one (not 22K 640); Swin-T's the supervised one (not
    MoBY); Swin-L has none in these tables; the cost fields of a count carry no published figure."""
    fields = {m: task_fields(m, "upernet", SIZE) for m in ("convnext_b", "swin_t", "swin_l")}
    assert fields["convnext_b"]["miou"] == 49.1 and fields["convnext_b"]["seg_published"]["crop"] == 512
    assert fields["swin_t"]["miou"] == 44.51
    assert fields["swin_l"]["miou"] is None and "no published ADE20K row" in fields["swin_l"]["seg_unmatched"]
    counted = segmenter_fields(create_segmenter("swin_t", "upernet", 256, device="meta"), "swin_t", by_module(256))
    assert "miou" not in counted and "seg_published" not in counted


def test_a_tiny_upernet_runs_on_cpu_and_trains_its_auxiliary_head():
    torch.manual_seed(0)
    backbone = create_model("resnet50", 64, features=True)
    spec = SegmenterSpec("tiny", config="test", channels=16, aux_channels=8, num_classes=5)
    net = UperNet(backbone, [256, 512, 1024, 2048], spec).eval()
    with torch.no_grad():
        outs = net(torch.randn(2, 3, 64, 96))
    assert [tuple(o.shape) for o in outs] == [(2, 5, 64, 96)] and torch.isfinite(outs[0]).all()
    net.train()
    outs = net(torch.randn(1, 3, 64, 96))       # batch 1: the PPM's 1x1 map has one value per channel
    assert [tuple(o.shape) for o in outs] == [(1, 5, 64, 96)] * 2
    sum(o.sum() for o in outs).backward()
    assert net.auxiliary_head.convs[0].weight.grad is not None


def test_segmenter_row_counts_training_with_frozen_stages():
    free = count("resnet50", 128, train=True, segmenter="upernet")
    frozen = count("resnet50", 128, train=True, segmenter="upernet", frozen_stages=1)
    assert free["params"] - frozen["trainable_params"] == 9408 + 128 + 215_808     # conv1, bn1, layer1
    assert free["backbone_params"] == 23_508_032                                    # torchvision's 25,557,032 - fc
    assert free["train_act_peak_bytes"] > free["act_peak_bytes"] and free["uncounted_ops"] == []


def test_compare_shows_the_published_miou_beside_the_count():
    result = call_main("zoo.compare", "--models", "convnext_t", "--segmenter", "upernet", "--resolutions", "512",
                       "--metrics", "cost", "--no-save", "--format", "json")
    assert result.returncode == 0, result.stderr
    record, = json.loads(result.stdout)
    assert (record["miou"], record["miou_ms"]) == (46.0, 46.7)
    assert record["published_gflops"] == "939 at 512x2048"
    assert record["gmacs_vs_published"] is None          # counted at 512 x 512: not the published size
    assert record["settings"]["segmenter"] == "upernet"


@pytest.mark.parametrize("args,message", [
    (["--models", "resnet50", "--segmenter", "segformer"], "unknown segmenter"),
    (["--models", "resnet50", "--segmenter", "upernet", "--detector", "maskrcnn"], "one task head at a time"),
    (["--models", "deit_s", "--segmenter", "upernet", "--frozen-stages", "1"], "blocks, not stages"),
    (["--models", "resnet50", "--segmenter", "upernet", "--features"], "drop --features"),
])
def test_bad_segmenter_options_exit_2(args, message):
    result = call_main("zoo.compare", *args, "--metrics", "cost", "--no-save")
    assert result.returncode == 2 and message in result.stderr and result.stdout == ""


def test_the_count_key_and_the_row_settings_tell_segmenters_apart():
    from zoo.runs import count_cache
    from zoo.runs.request import Request
    from zoo.runs.tasks import Task

    plain = Request("resnet50", 224)
    assert count_cache.count_key(plain.replace(segmenter="upernet")) != count_cache.count_key(plain)
    assert Task.named("cost", "resnet50", 224, segmenter="upernet").settings["segmenter"] == "upernet"
    assert "segmenter" not in Task.named("cost", "resnet50", 224).settings       # earlier rows keep their key


def test_the_report_table_puts_each_count_beside_its_recipe_and_lists_every_other_published_row():
    from zoo.report.rows import in_tables
    from zoo.report.segmentation import segmenter_table
    from zoo.runs.tasks import Task, run_task

    row = run_task(Task.named("cost", "convnext_t", 512, segmenter="upernet"))
    assert not in_tables(row)                        # not a classifier: its own section
    table, sources = segmenter_table([row])
    lines = table.splitlines()[2:]
    counted = [line for line in lines if "| 60.24 (60) |" in line]     # our params (published): the counted row
    assert len(counted) == 1 and " (939 at 512x2048) | - |" in counted[0] and "| 46.0 (46.7) |" in counted[0]
    assert len(sources) == len(ADE20K) and all(f"[{i}]" in table for i in range(1, len(ADE20K) + 1))
    assert len(lines) == len(ADE20K)                 # ConvNeXt-T's published row once, beside its count
    assert sum("(not counted here)" in line for line in lines) == len(ADE20K) - 1


def test_select_ranks_segmenters_by_the_published_miou_of_their_recipe():
    result = call_main("zoo.select", "--models", "resnet50,swin_t,convnext_t", "--segmenter", "upernet",
                       "--resolution", "512", "--rank", "miou", "--format", "json", "--no-save")
    assert result.returncode == 0, result.stderr
    answer = json.loads(result.stdout)
    assert [(r["model"], r["miou"]) for r in answer["shortlist"]] == [("convnext_t", 46.0), ("swin_t", 44.51),
                                                                      ("resnet50", 42.05)]     # mmseg's R-50
    assert answer["pareto"] == {"in1k": ["convnext_t"]}     # the ADE20K recipe's pretraining, not the checkpoint's
    assert answer["query"]["segmenter"] == "upernet"


@pytest.mark.parametrize("args,message", [
    (["--rank", "miou"], "needs --segmenter"),
    (["--segmenter", "upernet", "--features"], "drop --features"),
    (["--segmenter", "fcn"], "unknown segmenter"),
])
def test_bad_select_segmenter_options_exit_2(args, message):
    result = call_main("zoo.select", "--models", "resnet50", *args, "--no-save")
    assert result.returncode == 2 and message in result.stderr and result.stdout == ""


@pytest.mark.parametrize("backbone", ["convnext_t", "swin_t", "deit_s"])
def test_torchs_own_flop_counter_agrees_on_the_whole_segmenter(backbone):
    """torch.utils.flop_counter (its own rule per aten op, independent of ours) over UperNet's inference forward."""
    from torch.utils.flop_counter import FlopCounterMode

    net = create_segmenter(backbone, "upernet", (256, 512), device="meta")
    with FlopCounterMode(display=False) as counter:
        net(torch.empty(1, 3, 256, 512, device="meta"))
    assert counter.get_total_flops() // 2 == cost_record(net, (256, 512), train=False).macs


def test_semantic_fpn_on_resnet50_by_hand():
    """mmseg's neck FPN (1x1 laterals and 3x3 convs to 256, with bias) and FPNHead (128 channels; per level 1, 1, 2,
    3 3x3 conv-BN-ReLU, the later ones after each x2 upsample, so at the next finer grid), no auxiliary head."""
    size = (128, 256)
    net = create_segmenter("resnet50", "sem_fpn", size, device="meta")
    parts = segmenter_fields(net, "resnet50", by_module(size))["segmenter_macs_by_part"]
    px, chans = grids(*size), [256, 512, 1024, 2048]
    assert parts["neck"] == sum(p * c * 256 for p, c in zip(px, chans)) + sum(px) * 256 * 256 * 9
    first = sum(px) * 256 * 128 * 9                                   # each level's first conv, at its own grid
    later = 128 * 128 * 9 * (px[1] + (px[2] + px[1]))                 # stride 16: one more at /8; 32: at /16, /8
    assert parts["decode_head"] == first + later + px[0] * 128 * 150
    assert parts["auxiliary_head"] == 0 and net.auxiliary_head is None
    params = segmenter_fields(net, "resnet50", by_module(size))["segmenter_params_by_part"]
    assert params["neck"] == sum(c * 256 + 256 for c in chans) + 4 * (256 * 256 * 9 + 256)
    assert params["decode_head"] == (4 * 256 * 128 * 9 + 3 * 128 * 128 * 9 + 7 * 2 * 128   # 7 ConvModules' BNs
                                     + 128 * 150 + 150)


def test_torchs_flop_counter_agrees_on_semantic_fpn_and_a_plain_vit_is_refused():
    from torch.utils.flop_counter import FlopCounterMode
    from zoo.errors import ZooError

    net = create_segmenter("resnet50", "sem_fpn", (128, 256), device="meta")
    with FlopCounterMode(display=False) as counter:
        net(torch.empty(1, 3, 128, 256, device="meta"))
    assert counter.get_total_flops() // 2 == cost_record(net, (128, 256), train=False).macs
    with pytest.raises(ZooError, match="plain ViT"):
        create_segmenter("deit_s", "sem_fpn", 256, device="meta")


def test_the_refusal_of_a_timm_model_says_why():
    """Issue 42, defect 10: "needs maps at strides 4, 8, 16, 32; its features are at strides [2, 4, 8, 16, 32]" read
    as if it had them. timm's own resnet18 gives five features_only maps, the stem's at stride 2 first."""
    import timm

    strides = timm.create_model("resnet18", features_only=True, pretrained=False).feature_info.reduction()
    assert strides == [2, 4, 8, 16, 32]
    with pytest.raises(ZooError) as refused:
        create_segmenter("timm:resnet18", "upernet", 224, device="meta")
    assert f"its features are at {strides}: an extra map at stride 2; archzoo takes a timm: model's maps as timm's " \
           "features_only gives them" in str(refused.value)
