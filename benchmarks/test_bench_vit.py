"""From-scratch vit_b16 against timm's vit_base_patch16_224 with the same weights, and sdpa against
math attention: batch 8 at 224, fp32 and bf16 (autocast).

Run: pytest benchmarks --benchmark-only   (ARCHZOO_BENCH_ROUNDS sets the rounds, default 5)
The per-model tables are pytest-benchmark's; the side-by-side ratios (median of interleaved rounds,
> 1 means the first-named model is faster) are printed at the end and stored in extra_info.
"""

import os

import pytest
import timm
import torch

import zoo
from analysis.size import Size
from analysis.timing.steps import make_inference_step, random_input
from side_by_side import interleaved_speed_ratio

BATCH_SIZE, IMG_SIZE = 8, 224
ROUNDS = int(os.environ.get("ARCHZOO_BENCH_ROUNDS", "5"))
DTYPES = ("fp32", "bf16")
VARIANTS = ("timm_sdpa", "scratch_sdpa", "scratch_math")


@pytest.fixture(scope="module")
def models(device):
    """timm's ViT-B/16 and the scratch one (sdpa and math) sharing timm's random weights (strict load)."""
    torch.manual_seed(0)
    timm_vit = timm.create_model("vit_base_patch16_224", pretrained=False).eval()
    assert all(block.attn.fused_attn for block in timm_vit.blocks), "timm should use its fused (sdpa) path"
    built = {"timm_sdpa": timm_vit}
    for impl in ("sdpa", "math"):
        scratch = zoo.create_model("vit_b16", attn_impl=impl).eval()
        scratch.load_state_dict(timm_vit.state_dict(), strict=True)
        built[f"scratch_{impl}"] = scratch
    return {name: model.to(device) for name, model in built.items()}


@pytest.fixture(scope="module")
def images(device):
    torch.manual_seed(1)
    return random_input(BATCH_SIZE, Size.of(IMG_SIZE), device, channels_last=False)


def _step(models, name, images, device, dtype):
    return make_inference_step(models[name], images, device, dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("variant", VARIANTS)
def test_vit_b16_forward(benchmark, models, images, device, variant, dtype):
    benchmark.group = f"vit_b16 bs{BATCH_SIZE} {IMG_SIZE}px {dtype} {device.type}"
    benchmark.extra_info.update(batch_size=BATCH_SIZE, img_size=IMG_SIZE, dtype=dtype, threads=torch.get_num_threads())
    benchmark.pedantic(_step(models, variant, images, device, dtype), rounds=ROUNDS, warmup_rounds=1, iterations=1)
    benchmark.extra_info["imgs_per_s"] = BATCH_SIZE / benchmark.stats.stats.mean


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("candidate, reference", [("scratch_sdpa", "timm_sdpa"), ("scratch_sdpa", "scratch_math")])
def test_side_by_side_ratio(benchmark, models, images, device, report_ratio, candidate, reference, dtype):
    """One run, interleaved rounds: speed of `candidate` relative to `reference` (goal for scratch/timm: >= 1)."""
    benchmark.group = f"vit_b16 side-by-side {dtype}"
    result = benchmark.pedantic(
        interleaved_speed_ratio,
        args=(_step(models, candidate, images, device, dtype), _step(models, reference, images, device, dtype),
              device, ROUNDS),
        rounds=1, iterations=1)
    benchmark.extra_info.update(result, dtype=dtype, candidate=candidate, reference=reference)
    report_ratio(f"{candidate} / {reference} speed, vit_b16 bs{BATCH_SIZE} {IMG_SIZE}px {dtype} {device.type}: "
                 f"{result['speed_ratio']:.3f} (rounds {result['speed_ratio_min']:.3f}..{result['speed_ratio_max']:.3f}, "
                 f"others' CPU {result['foreign_cpu_share']})")
