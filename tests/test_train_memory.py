"""Training memory as the GPU holds it: the caching allocator's booking, the task's loss, the step's parts."""
import torch
from torch import nn

from analysis.count.allocator import block_bytes
from analysis.count.cost import GpuEmulation, run_train_step
from analysis.count.losses import classification_loss, segmentation_loss

MIB = 1 << 20


def test_allocator_books_512_byte_blocks_and_keeps_a_large_segment_tail():
    """c10/cuda/CUDACachingAllocator.cpp: round_size to 512 B; a request over 10 MiB gets a segment rounded to
    2 MiB, and keeps it whole when the tail would be 1 MiB or less (the large pool splits only a larger tail)."""
    assert block_bytes(0) == 0
    assert block_bytes(1) == 512 and block_bytes(512) == 512 and block_bytes(513) == 1024
    assert block_bytes(5 * MIB + 1) == 5 * MIB + 512          # 1-10 MiB: split off a 20 MiB segment
    assert block_bytes(11 * MIB + 1) == 12 * MIB              # tail just under 1 MiB: the segment is the block
    assert block_bytes(10 * MIB + 1) == 10 * MIB + 512        # tail of nearly 2 MiB is split off


def test_tracker_books_what_the_allocator_books():
    """Ten 100-byte activations saved for backward: each booked as a 512-byte block."""
    class Ten(nn.Module):
        def __init__(self):
            super().__init__()
            self.w = nn.Parameter(torch.empty(25, device="meta"))

        def forward(self, x):
            for _ in range(10):
                x = x * self.w
            return x

    x = torch.empty(25, device="meta")
    _, asked, _ = run_train_step(Ten(), x, gpu=GpuEmulation(None))
    _, booked, _ = run_train_step(Ten(), x, gpu=GpuEmulation(None, block_bytes))
    assert asked.peak_bytes >= 10 * 100 and booked.peak_bytes % 512 == 0
    assert booked.peak_bytes >= 512 * (asked.peak_bytes // 100)


def test_cross_entropy_keeps_log_softmax_for_backward():
    """Per-pixel cross-entropy over C classes on (B, C, H, W) fp32 logits: log_softmax's output (B*C*H*W*4 bytes)
    is saved, and the backward writes two gradients of that size; a sum saves nothing that size."""
    B, C, H, W = 2, 150, 16, 16
    logits_bytes = B * C * H * W * 4

    class Head(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = nn.Conv2d(4, C, 1, device="meta")

        def forward(self, x):
            return [self.conv(x)]

    x = torch.empty(B, 4, H, W, device="meta")
    _, summed, _ = run_train_step(Head(), x)
    _, ce, _ = run_train_step(Head(), x, loss=segmentation_loss)
    assert ce.peak_bytes - summed.peak_bytes >= 2 * logits_bytes


def test_classification_loss_runs_on_meta_logits():
    logits = torch.empty(4, 10, device="meta", requires_grad=True)
    assert classification_loss(logits).shape == ()


def test_step_parts_recipe_and_the_optimizer_step_peak():
    """fp32 weights, gradients and AdamW's 2 states per trainable parameter, each its own 512-byte block; the
    foreach step's temporaries (one fp32 set) set the peak when the activations are small."""
    from analysis.predict.memory import step_parts

    layer = nn.Linear(1000, 1000, device="meta")             # 1,000,000 + 1,000 params
    x = torch.empty(1, 1000, device="meta")
    weight, bias = 7813 * 512, 4_096                         # 4,000,000 B -> 7,813 blocks of 512; 4,000 B -> 8
    r = step_parts(layer, x, act_peak_bytes=1024, optimizer="adamw")
    assert r["grad_bytes"] == weight + bias and r["optimizer_bytes"] == 2 * (weight + bias)
    assert r["optimizer_step_temp_bytes"] == weight + bias and r["peak_phase"] == "optimizer step"
    loop = step_parts(layer, x, act_peak_bytes=1024, optimizer="sgd", foreach=False)
    assert loop["optimizer_bytes"] == weight + bias and loop["optimizer_step_temp_bytes"] == weight
    assert loop["train_bytes"] == 3 * (weight + bias) + 4096 + weight     # + the input's block, + one weight


def test_training_rois_are_the_sampled_ones():
    """detectron2's defaults (ROI_HEADS.BATCH_SIZE_PER_IMAGE 512, POSITIVE_FRACTION 0.25)."""
    from analysis.predict.memory import TRAIN_ROIS

    assert TRAIN_ROIS == {"proposals": 512, "mask_rois": 512 // 4}


def test_validation_builds_vitdet_rows_with_vitdet_heads():
    import importlib.util
    from pathlib import Path

    # by its path: benchmarks/ is not an installed package (a clean clone installs archzoo non-editable)
    path = Path(__file__).resolve().parent.parent / "benchmarks" / "train_memory_vs_published.py"
    spec = importlib.util.spec_from_file_location("train_memory_vs_published", path)
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)

    for name, model, task, *_ in bench.RECIPES:
        assert not model.startswith("vitdet") or task.startswith("vitdet_"), name


def test_segmenter_backbone_takes_the_math_attention_it_is_asked_for():
    """fused_attention=False reaches a scratch ViT inside UperNet: the softmax scores (B, heads, N, N) are
    saved, so the step holds at least depth x B x heads x N^2 x 4 bytes more than with fused SDPA."""
    from zoo.runs.gpu_memory import gpu_train_bytes
    from zoo.runs.request import Request

    request = Request("vit_ti16", 64, 1, "fp32", train=True, segmenter="upernet", optimizer="adamw")
    fused, math = gpu_train_bytes(request), gpu_train_bytes(request, fused_attention=False)
    tokens = (64 // 16) ** 2 + 1
    assert math["train_act_peak_bytes"] - fused["train_act_peak_bytes"] >= 12 * 3 * tokens ** 2 * 4


def test_ddp_buckets_close_at_1_then_25_mib_and_are_booked_as_blocks():
    """torch's DDP: the first bucket closes at 1 MiB, the others at 25 MiB (a bucket closes once it reaches its
    cap). 60 fp32 parameters of 1 MiB each: buckets of 1, 25, 25 and 9 MiB; the allocator books a 25 MiB request
    as its whole 26 MiB segment (a 1 MiB tail is not split off), so 1 + 26 + 26 + 9 = 62 MiB."""
    from analysis.predict.memory import ddp_bucket_bytes, ddp_buckets

    params = [torch.empty(MIB // 4, device="meta") for _ in range(60)]
    assert ddp_buckets(params) == [MIB, 25 * MIB, 25 * MIB, 9 * MIB]
    assert ddp_bucket_bytes(params) == 62 * MIB
    assert ddp_bucket_bytes([]) == 0


def test_data_parallel_step_holds_the_buckets_beside_the_gradients():
    """DistributedDataParallel (gradient_as_bucket_view=False) keeps a flat copy of every gradient: the step
    holds at least 4 bytes per trainable parameter more, and a single-GPU step holds none of it."""
    from analysis.predict.memory import step_parts

    layer = nn.Linear(1000, 1000, device="meta")
    x = torch.empty(1, 1000, device="meta")
    alone = step_parts(layer, x, act_peak_bytes=1024, optimizer="adamw")
    ddp = step_parts(layer, x, act_peak_bytes=1024, optimizer="adamw", data_parallel=True)
    assert alone["ddp_bucket_bytes"] == 0
    assert ddp["ddp_bucket_bytes"] >= 4 * 1_001_000
    assert ddp["train_bytes"] - alone["train_bytes"] == ddp["ddp_bucket_bytes"]


def test_3x_ms_crop_largest_batch_is_a_portrait_crop_beside_a_wide_image():
    """mmdetection's 3x ms-crop pipeline: a landscape image resized to short side 600, cropped to 600 x 384
    (h and w each drawn from [384, 600]), then rescaled into (1333, 800): factor min(1333 / 600, 800 / 384).
    GroupSampler groups by the original aspect ratio, so it shares a batch with a 1333-wide landscape image;
    both padded to 32 and then to the batch's largest height and width."""
    import importlib.util
    import math
    from pathlib import Path

    path = Path(__file__).resolve().parent.parent / "benchmarks" / "train_memory_vs_published.py"
    spec = importlib.util.spec_from_file_location("train_memory_vs_published", path)
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)

    factor = min(1333 / 600, 800 / 384)
    tall = int(600 * factor + 0.5)                              # mmcv _scale_size: int(x * factor + 0.5)
    assert tall == 1250
    assert bench.MS_CROP_3X == (math.ceil(tall / 32) * 32, math.ceil(1333 / 32) * 32)
    three_x = [r for r in bench.RECIPES if "3x" in r[0]]
    assert three_x and all(r[3] == bench.MS_CROP_3X for r in three_x)
