"""What a CUDA GPU runs, counted on meta: autocast's casts (torch's CUDA op lists) and the fused SDPA kernels.

Expected bytes are worked out by hand from the autocast rules (docs: "CUDA Ops that can autocast to
float16" / "to float32") and from what a fused attention kernel reads and writes."""
import torch
import torch.nn.functional as F
from torch import nn

from analysis.count.autocast import policy
from analysis.count.cost import GpuEmulation, run_forward


class LinearNormSoftmax(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc, self.norm = nn.Linear(8, 16), nn.LayerNorm(16)

    def forward(self, x):                          # (2, 8) fp32
        return self.norm(self.fc(x)).softmax(-1)


def _traffic(module, x, gpu):
    counter, memory, _ = run_forward(module, x, traffic=True, gpu=gpu)
    return counter.traffic


def test_autocast_casts_matmul_inputs_down_and_norm_softmax_up():
    module = LinearNormSoftmax().to("meta")
    x = torch.empty(2, 8, device="meta")
    traffic = _traffic(module, x, GpuEmulation(torch.bfloat16))
    # casts: x 2x8 fp32->bf16 (64 read, 32 written), weight 16x8 (512, 256), bias 16 (64, 32),
    # then the bf16 linear output 2x16 -> fp32 for layer_norm (64, 128); softmax's input is already fp32
    assert traffic.bytes_by_class["data_movement"] == (64 + 32) + (512 + 256) + (64 + 32) + (64 + 128)
    # layer_norm in fp32: reads x 128 + weight 64 + bias 64, writes out 128 + mean 8 + rstd 8
    assert traffic.bytes_by_class["norm"] == 128 + 64 + 64 + 128 + 8 + 8
    # the linear: reads bf16 bias 32 + x 32 + weight 256, writes 2x16 bf16 = 64
    assert traffic.bytes_by_class["matmul_conv"] == 32 + 32 + 256 + 64
    # softmax in fp32: reads 128, writes 128
    assert traffic.bytes_by_class["attention"] == 256


def test_without_autocast_nothing_is_cast():
    module = LinearNormSoftmax().to("meta")
    traffic = _traffic(module, torch.empty(2, 8, device="meta"), GpuEmulation(None))
    assert traffic.bytes_by_class.get("data_movement", 0) == 0


def test_policy_names_torchs_lists():
    assert policy(F.linear) == "low" and policy(torch.bmm) == "low" and policy(torch.Tensor.__matmul__) == "low"
    assert policy(F.layer_norm) == "fp32" and policy(torch.Tensor.softmax) == "fp32" and policy(torch.sum) == "fp32"
    # not in either list: batch_norm (cuDNN takes half input), gelu, add, mean
    assert {policy(op) for op in (F.batch_norm, F.gelu, torch.Tensor.__add__, torch.Tensor.mean)} == {"promote"}


class MaskedAttention(nn.Module):
    """q, k, v (1, 2, 4, 8) with a per-head additive bias (2, 4, 4): a 3-d mask, which the CPU flash kernel
    refuses (math path: a 1x2x4x4 score matrix) and CUDA's memory-efficient kernel takes."""

    def __init__(self):
        super().__init__()
        self.bias = nn.Parameter(torch.zeros(2, 4, 4))

    def forward(self, q):
        return F.scaled_dot_product_attention(q, q * 1.0, q * 2.0, attn_mask=self.bias)


def test_cuda_target_runs_attention_fused_without_a_score_matrix():
    module = MaskedAttention().to("meta")
    q = torch.empty(1, 2, 4, 8, device="meta")
    cuda = _traffic(module, q, GpuEmulation(None))
    # fused: reads q, k, v (3 x 256 bytes) and the bias once (2x4x4 fp32 = 128), writes O (256) and the
    # per-row logsumexp (1x2x4 fp32 = 32)
    assert cuda.bytes_by_class["attention"] == 3 * 256 + 128 + 256 + 32
    cpu = _traffic(module, q, None)
    assert cpu.bytes_by_class["matmul_conv"] > 0        # the math path's QK^T and AV bmm on a CPU


def test_a_training_step_with_a_learned_attention_mask_runs_on_the_cuda_target():
    """BEiT's relative position bias is a mask that requires grad: the CPU flash stand-in cannot differentiate
    it, so the step runs the math path (the (1, 2, 4, 4) fp32 scores, 128 bytes, kept for backward) instead of
    failing, and the bias gets its gradient."""
    from analysis.count.cost import run_train_step

    module = MaskedAttention().to("meta")
    q = torch.empty(1, 2, 4, 8, device="meta", requires_grad=True)
    _, memory, _ = run_train_step(module, q, gpu=GpuEmulation(None))
    assert memory.peak_bytes >= 128


def test_training_memory_recipe_parts_follow_mixed_precision_training():
    """fp32 master weights (4 B), fp32 gradients (4 B) and AdamW's two fp32 states (8 B) per trainable
    parameter, whatever the autocast dtype; autocast's activations sit between half and all of fp32's
    (norm and softmax outputs and the residual stream stay fp32; casts of weights are saved for backward)."""
    from zoo.runs.gpu_memory import gpu_train_bytes
    from zoo.runs.request import Request

    fp32 = gpu_train_bytes(Request("vit_ti16", 224, 8, "fp32", train=True, optimizer="adamw"))   # activations > weights
    amp = gpu_train_bytes(Request("vit_ti16", 224, 8, "bf16", train=True, optimizer="adamw"))
    n, tensors = fp32["trainable_params"], 152               # vit_ti16: 12 blocks x 12 tensors + 8 (each a 512-B block)
    for r in (fp32, amp):
        assert 4 * n <= r["grad_bytes"] < 4 * n + 512 * tensors and r["optimizer_bytes"] == 2 * r["grad_bytes"]
        assert r["weight_bytes"] >= r["grad_bytes"] and r["input_bytes"] == 8 * 3 * 224 * 224 * 4
    assert fp32["train_act_peak_bytes"] / 2 < amp["train_act_peak_bytes"] < fp32["train_act_peak_bytes"]
