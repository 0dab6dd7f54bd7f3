"""The published ADE20K rows of every backbone a segmenter offers, which one a cost row shows (--pretraining,
--weights), and mmseg's sliding-window test against its closed form."""
import json

import pytest
from hypothesis import given, settings, strategies as st

from cli import call_main
from zoo.models.segmenters import ADE20K, published_row, task_fields
from zoo.models.segmenters.slide import grid, windows
from zoo.runs.tasks import Task, count, run_task

# mmsegmentation's UperNet / semantic FPN ADE20K rows, typed from the READMEs as opened (configs/vit/README.md
# @08272b6, configs/upernet/README.md and configs/sem_fpn/README.md @0b127a5): (backbone as the table writes
# it, heads, schedule) -> (mIoU, mIoU ms+flip)
MMSEG = {("ViT-B + MLN", "upernet", "80k"): (47.71, 49.51), ("ViT-B + MLN", "upernet", "160k"): (46.75, 48.46),
         ("ViT-B + LN + MLN", "upernet_ln_mln", "160k"): (47.73, 49.95),
         ("DeiT-S", "upernet_no_neck", "80k"): (42.96, 43.79), ("DeiT-S", "upernet_no_neck", "160k"): (42.87, 43.79),
         ("DeiT-S + MLN", "upernet", "160k"): (43.82, 45.07),
         ("DeiT-S + LN + MLN", "upernet_ln_mln", "160k"): (43.52, 45.01),
         ("DeiT-B", "upernet_no_neck", "80k"): (45.24, 46.73), ("DeiT-B", "upernet_no_neck", "160k"): (45.36, 47.16),
         ("DeiT-B + MLN", "upernet", "160k"): (45.46, 47.16),
         ("DeiT-B + LN + MLN", "upernet_ln_mln", "160k"): (45.37, 47.23),
         ("R-50", "upernet", "80k"): (40.70, 41.81), ("R-50", "upernet", "160k"): (42.05, 42.78),
         ("R-50", "sem_fpn", "160k"): (37.49, 39.09)}


def test_the_shipped_mmsegmentation_rows_are_the_readmes():
    shipped = {(r.published_name, r.segmenter, r.schedule): (r.miou, r.miou_ms) for r in ADE20K if not r.official}
    assert shipped == MMSEG
    assert all(r.crop == 512 and r.params_m is None and r.gflops is None for r in ADE20K if not r.official)
    assert {r.source for r in ADE20K if r.model == "vit_b16"} == {
        "open-mmlab/mmsegmentation@08272b6 configs/vit/README.md:58",
        "open-mmlab/mmsegmentation@08272b6 configs/vit/README.md:59",
        "open-mmlab/mmsegmentation@08272b6 configs/vit/README.md:60"}
    assert len({r.source for r in ADE20K}) == len(ADE20K)          # one row per line of a table


@pytest.mark.parametrize("model,size,groups,weights,expected", [
    ("convnext_b", (640, 2560), None, "default", 52.6),       # the 640-crop recipe is the one tested at 640x2560
    ("convnext_b", (512, 2048), None, "default", 49.1),
    ("convnext_b", (512, 2048), ["in21k"], "default", 52.6),  # --pretraining in21k: ImageNet-22K's row
    ("convnext_b", (640, 2560), ["in1k"], "default", 49.1),
    ("swin_t", (512, 2048), None, "default", 44.51),          # supervised before MoBY
    ("vit_b16", (512, 2048), None, "default", 46.75),         # mmseg's ViT-B + MLN, the longest schedule
    ("vit_b16", (512, 2048), None, "best", 47.71),            # its 80k row is the better one
    ("vit_b16", (512, 2048), None, "paper", None),            # no row from the ViT authors
    ("vit_b16", (512, 2048), ["in1k"], "default", None),
    ("deit_s", (512, 2048), None, "default", 43.82),          # the + MLN row: the no-neck and LN rows are other heads
    ("resnet50", (512, 2048), None, "default", 42.05),
    ("swin_l", (512, 2048), None, "default", None),
])
def test_the_row_a_cost_row_shows(model, size, groups, weights, expected):
    row = published_row(model, "upernet", size, groups, weights)
    assert (row.miou if row else None) == expected


def test_sem_fpn_rows_never_show_beside_an_upernet_and_back():
    assert published_row("resnet50", "sem_fpn").miou == 37.49
    assert published_row("resnet50", "upernet").segmenter == "upernet"
    fields = task_fields("vit_b16", "upernet", (512, 2048), None, "paper")
    assert fields["miou"] is None and "ViT-B + MLN upernet 80k" in fields["seg_unmatched"]


def test_compare_names_the_recipe_and_its_pretraining_beside_the_miou():
    result = call_main("zoo.compare", "--models", "convnext_b,vit_b16", "--segmenter", "upernet", "--resolutions",
                       "128", "--metrics", "cost", "--pretraining", "in21k", "--no-save", "--format", "json")
    assert result.returncode == 0, result.stderr
    records = {r["model"]: r for r in json.loads(result.stdout)}
    assert (records["convnext_b"]["miou"], records["convnext_b"]["seg_published"]["line"]) == (52.6, 15)
    assert "640x640 crop" in records["convnext_b"]["seg_recipe"] and "ConvNeXt@089ca24" in \
        records["convnext_b"]["seg_recipe"]
    assert records["vit_b16"]["miou"] == 46.75 and "mmsegmentation@08272b6" in records["vit_b16"]["seg_recipe"]
    # the pretraining column is the recipe's, and no classifier top-1 stands beside a task metric
    assert [(r["pretraining"], r["top1"], r["weights_label"]) for r in records.values()] == [("in21k", None, None)] * 2


@pytest.mark.parametrize("side,crop,stride,expected", [
    (2048, 512, 341, 6), (512, 512, 341, 1), (300, 512, 341, 1), (2560, 640, 426, 6), (853, 512, 341, 2),
    (854, 512, 341, 3)])
def test_the_window_count_is_mmsegs_formula(side, crop, stride, expected):
    """h_grids = max(h_img - h_crop + h_stride - 1, 0) // h_stride + 1, worked by hand: (2048 - 512 + 340) //
    341 + 1 = 6; 853 = 512 + 341 fits two windows exactly, one px more needs a third."""
    assert grid(side, crop, stride) == expected


@settings(deadline=None, max_examples=60)
@given(st.integers(1, 900), st.integers(1, 900), st.integers(16, 300), st.data())
def test_windows_cover_the_image_and_the_last_is_flush_with_the_edge(height, width, crop, data):
    stride = data.draw(st.integers(crop // 4, crop))
    found = windows(height, width, crop, stride)
    covered_h = set().union(*(range(y1, y2) for y1, y2, _, _ in found))
    covered_w = set().union(*(range(x1, x2) for _, _, x1, x2 in found))
    assert covered_h == set(range(height)) and covered_w == set(range(width))
    assert found[-1][1] == height and found[-1][3] == width
    assert {(y2 - y1, x2 - x1) for y1, y2, x1, x2 in found} == {(min(crop, height), min(crop, width))}


def test_slide_counts_its_windows_at_the_window_size():
    """128 x 512 in windows of 128 every 85 px: 1 x 6 windows (the ADE20K 512,341 test scaled by 1/4), so the
    slide MACs are exactly 6 x the whole segmenter's MACs at 128 x 128, counted on its own."""
    row = run_task(Task.named("cost", "convnext_t", (128, 512), segmenter="upernet", slide=(128, 85)))
    window = count("convnext_t", 128, train=False, segmenter="upernet")["macs"]
    assert row["slide_windows"] == [1, 6] and row["slide_window_macs"] == window
    assert row["slide_macs"] == 6 * window and row["settings"]["slide"] == "128,85"
    assert row["macs"] == count("convnext_t", (128, 512), train=False, segmenter="upernet")["macs"]


@pytest.mark.parametrize("args,message", [
    (["--slide", "512"], "expected CROP,STRIDE"),
    (["--slide", "512,0"], "is not positive"),
    (["--slide", "a,341"], "is not an integer"),
    (["--slide", "341,512"], "larger than the crop"),
    (["--slide", "512,341", "--metrics", "cost,throughput"], "counted, not timed"),
])
def test_bad_slide_values_exit_2(args, message):
    result = call_main("zoo.compare", "--models", "convnext_t", "--segmenter", "upernet", *args, "--no-save")
    assert result.returncode == 2 and message in result.stderr and result.stdout == ""
    assert len(result.stderr.strip().splitlines()) == 1


def test_slide_needs_a_segmenter():
    result = call_main("zoo.compare", "--models", "convnext_t", "--slide", "512,341", "--no-save")
    assert result.returncode == 2 and "needs --segmenter" in result.stderr and result.stdout == ""


def test_the_report_shows_whole_and_slide_inference_and_training_at_the_crop():
    """One backbone's rows (tiny sizes): inference at 128 x 512 with the slide test, a training step at the 128 crop,
    batch 2; the report's one line for it reads each from its own row."""
    from zoo.report.segmentation import segmenter_table

    inference = run_task(Task.named("cost", "convnext_t", (128, 512), segmenter="upernet", slide=(128, 85)))
    trained = run_task(Task.named("cost", "convnext_t", 128, 2, train=True, segmenter="upernet"))
    table, sources = segmenter_table([trained, inference])
    line, = [line for line in table.splitlines() if line.startswith("| convnext_t |") and "128x512" in line]
    assert f"| 6 of 128/85, {inference['slide_macs'] / 1e9:.1f} |" in line
    assert f"| 128, 2, {trained['train_act_peak_bytes'] / 2 ** 20:,.1f} |" in line
    assert "tested slide 512/341" in line and sources[0].endswith("semantic_segmentation/README.md:12")


def test_the_deterministic_rows_count_each_recipe_at_its_test_scale_and_crop():
    """Every built backbone and heads with a published row: inference at crop x 4 crop with the slide test at
    crop, 2/3 crop (ConvNeXt's 512/341, 640/426), training at the crop with the recipe's images per GPU."""
    from zoo.report.deterministic import segmenter_tasks

    tasks = {(t.request.model, t.request.train): t for t in segmenter_tasks()}
    assert (tasks["convnext_l", False].request.img_size.hw, tasks["convnext_l", False].slide) == ((640, 2560), (640, 426))
    assert (tasks["convnext_t", True].request.img_size.hw, tasks["convnext_t", True].request.batch_size) == ((512, 512), 2)
    assert (tasks["resnet50", True].request.batch_size, tasks["vit_b16", False].slide) == (4, (512, 341))
    assert "deit_s" in {m for m, _ in tasks} and "swin_l" not in {m for m, _ in tasks}


def test_compare_counts_semantic_fpn_beside_mmsegs_row_and_refuses_a_plain_vit():
    result = call_main("zoo.compare", "--models", "resnet50", "--segmenter", "sem_fpn", "--resolutions", "128",
                       "--metrics", "cost", "--no-save", "--format", "json")
    assert result.returncode == 0, result.stderr
    record, = json.loads(result.stdout)
    assert record["miou"] == 37.49 and record["seg_published"]["source"].endswith("configs/sem_fpn/README.md:39")
    refused = call_main("zoo.compare", "--models", "deit_s", "--segmenter", "sem_fpn", "--metrics", "cost",
                        "--no-save")
    assert refused.returncode == 2 and "plain ViT" in refused.stderr and refused.stdout == ""
