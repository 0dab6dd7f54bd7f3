"""Activation memory by allocation tracking: hand computations for tiny models, meta == CPU, N x N maps."""
import pytest
import torch
import torch.nn.functional as F
from torch import nn

import zoo
from analysis.count.components import ComponentClassifier
from analysis.count.cost import max_batch_for_budget, run_forward, run_train_step
from analysis.count.memory import ActivationMemoryTracker, largest_batch
from analysis.count.meta_sdpa import FusedSdpaOnMeta
from zoo_cost import cost_of

FP32 = 4


def _tiny_mlp():
    return nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 4))


@pytest.mark.parametrize("device", ["cpu", "meta"])
@pytest.mark.parametrize("batch", [1, 2, 5])
def test_tiny_mlp_inference_peak_by_hand(device, batch):
    model = _tiny_mlp().to(device)
    x = torch.empty(batch, 8, device=device)
    _, memory, _ = run_forward(model, x, ComponentClassifier(model))
    hidden, out = batch * 16 * FP32, batch * 4 * FP32
    # Linear 1's output and ReLU's output are both alive while ReLU runs; then ReLU's + the logits.
    assert memory.peak_bytes == max(2 * hidden, hidden + out) == 2 * hidden
    assert memory.live_bytes == 0                         # everything freed once the logits are dropped


class ExplicitAttention(nn.Module):
    def forward(self, x):                                  # x: (B, H, N, E) used as q, k and v
        return (x @ x.transpose(-2, -1)).softmax(dim=-1) @ x


class FusedAttention(nn.Module):
    def forward(self, x):
        return F.scaled_dot_product_attention(x, x, x)


B, H, N, E = 2, 3, 16, 4


@pytest.mark.parametrize("device", ["cpu", "meta"])
def test_explicit_attention_materialises_two_n_by_n_maps(device):
    x = torch.randn(B, H, N, E, device=device)
    model = ExplicitAttention()
    tracker = ActivationMemoryTracker()
    with torch.no_grad(), tracker:
        model(x)
    scores = probs = B * H * N * N * FP32                  # QK^T, then softmax(QK^T) while QK^T is alive
    assert tracker.peak_bytes == max(scores + probs, probs + B * H * N * E * FP32) == 2 * scores


@pytest.mark.parametrize("device", ["cpu", "meta"])
def test_fused_attention_keeps_only_output_and_logsumexp(device):
    x = torch.randn(B, H, N, E, device=device)
    tracker = ActivationMemoryTracker()
    with torch.no_grad(), FusedSdpaOnMeta(), tracker:
        FusedAttention()(x)
    assert tracker.peak_bytes == B * H * N * E * FP32 + B * H * N * FP32    # out + logsumexp, no N x N


def test_meta_without_routing_shows_the_math_decomposition():
    x = torch.empty(B, H, N, E, device="meta")
    tracker = ActivationMemoryTracker()
    with torch.no_grad(), tracker:                         # no FusedSdpaOnMeta: meta decomposes SDPA
        FusedAttention()(x)
    maps, small = B * H * N * N * FP32, B * H * N * E * FP32      # QK^T and its softmax; one (B, H, N, E) tensor
    assert 2 * maps <= tracker.peak_bytes <= 2 * maps + 2 * small   # both maps alive, at most q and k scaled


def test_vit_attention_maps_show_only_with_math_attention():
    img, heads, tokens = 448, 3, (448 // 16) ** 2 + 1
    one_map = heads * tokens * tokens * FP32
    math = cost_of("vit_ti16", img_size=img, train=False, attn_impl="math")
    fused = cost_of("vit_ti16", img_size=img, train=False)
    qkv_one = tokens * 192 * FP32                                  # one (N, D) tensor of ViT-Ti (D = 192)
    assert 2 * one_map <= math["act_peak_by_component"]["attn_matmul"] <= 2 * one_map + qkv_one
    assert fused["act_peak_by_component"].get("attn_matmul", 0) < one_map
    assert math["act_peak_bytes"] - fused["act_peak_bytes"] >= one_map


def test_peak_is_linear_in_batch_and_halves_in_bfloat16():
    one = cost_of("resnet50", img_size=64, batch_size=1, train=False)["act_peak_bytes"]
    four = cost_of("resnet50", img_size=64, batch_size=4, train=False)["act_peak_bytes"]
    assert four == 4 * one
    half = cost_of("vit_ti16", img_size=64, dtype=torch.bfloat16, train=False)["act_peak_bytes"]
    full = cost_of("vit_ti16", img_size=64, dtype=torch.float32, train=False)["act_peak_bytes"]
    assert 2 * half == full                                      # every activation at 2 bytes instead of 4


def test_training_step_keeps_saved_activations():
    model = _tiny_mlp()
    x = torch.randn(3, 8)
    _, memory, _ = run_train_step(model, x, ComponentClassifier(model))
    # At least ReLU's saved output (3 x 16) and the logits (3 x 4) are alive together.
    assert memory.peak_bytes >= (3 * 16 + 3 * 4) * FP32
    assert all(p.grad is None for p in model.parameters())      # pre-allocated grads removed again
    record = cost_of("vit_ti16", img_size=64)
    assert record["train_act_peak_bytes"] > record["act_peak_bytes"]


def test_largest_batch_on_an_affine_profile():
    probed = []
    found = largest_batch(lambda b: probed.append(b) or 1000 + 300 * b, budget_bytes=10_000, fixed_bytes=100)
    assert found == {"batch": 29, "bytes": 100 + 1000 + 300 * 29, "bytes_per_sample": 300}   # (10000 - 1100) // 300
    assert probed == [1, 2, 29, 30]     # affine: two probes guess it, two confirm it (each probe is a forward)
    assert largest_batch(lambda b: 1000 + 300 * b, budget_bytes=1000)["batch"] == 0
    assert largest_batch(lambda b: 1000 + 300 * b, budget_bytes=1599)["batch"] == 1     # 2 would need 1600


def test_max_batch_for_budget_fits_and_one_more_does_not():
    budget = 64 * 2**20
    found = max_batch_for_budget(zoo.create_model("vit_ti16", device="meta"), 224, budget)
    assert found["batch"] >= 1 and found["bytes"] <= budget
    more = cost_of("vit_ti16", img_size=224, batch_size=found["batch"] + 1, train=False)
    input_bytes = (found["batch"] + 1) * 3 * 224 * 224 * FP32
    assert found["weight_bytes"] + more["act_peak_bytes"] + input_bytes > budget


def test_max_batch_for_budget_by_hand_on_a_1x1_conv():
    """Weights 3 x 4 fp32 (48 bytes, twice when training: + gradients); per image the (3, 2, 2) input and the
    conv's (4, 2, 2) output, its only activation: 48 + 64 bytes. A budget of 7 images and change fits 7."""
    model = nn.Conv2d(3, 4, kernel_size=1, bias=False).to("meta")
    weights, per_image = 3 * 4 * FP32, (3 + 4) * 2 * 2 * FP32
    found = max_batch_for_budget(model, 2, weights + 7 * per_image + per_image // 2)
    assert found["batch"] == 7 and found["bytes"] == weights + 7 * per_image
    assert found["weight_bytes"] == found["fixed_bytes"] == weights and found["budget_bytes"] == weights + 7.5 * per_image
    trained = max_batch_for_budget(model, 2, 10_000, train=True)
    assert trained["train"] is True and trained["fixed_bytes"] == 2 * weights
