"""Make F.scaled_dot_product_attention on the meta device take the fused kernel a real device takes.

On meta, torch 2.14 decomposes SDPA into its math path (bmm, softmax, bmm), which materialises the
N x N attention map a fused kernel never stores. MACs are the same either way (op_rules counts both
algorithmically) but activation memory is not. This mode routes SDPA on meta tensors to the op the
target device would dispatch to, using the eligibility checks of ATen's sdp_utils_cpp.cpp
(use_flash_attention_cpp) for CPU; anything ineligible keeps the math path, as on the real device.
"""
from __future__ import annotations

import torch
import torch.nn.functional as F
from torch.overrides import TorchFunctionMode

aten = torch.ops.aten
_FLASH_CPU_DTYPES = (torch.float32, torch.float64, torch.bfloat16, torch.float16)


def cpu_flash_eligible(q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None,
                       enable_gqa=False) -> bool:
    """The conditions under which a CPU build runs aten._scaled_dot_product_flash_attention_for_cpu."""
    dense_4d = all(t.dim() == 4 for t in (q, k, v)) and not any(t.is_nested for t in (q, k, v))
    return (torch.backends.cuda.flash_sdp_enabled()          # NB: CPU reads the same global switch
            and dense_4d and dropout_p == 0.0 and q.dtype in _FLASH_CPU_DTYPES
            and q.shape[0] == k.shape[0] == v.shape[0] and q.shape[1] == k.shape[1] == v.shape[1]
            and q.shape[-1] == k.shape[-1] == v.shape[-1]
            and min(q.shape[-2], k.shape[-2]) > 0
            and all(t.stride(-1) == 1 for t in (q, k, v))
            and (attn_mask is None or (attn_mask.dim() in (2, 4)
                                       and not attn_mask.requires_grad)))


def cuda_fused_eligible(q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None,
                        enable_gqa=False) -> bool:
    """Whether a CUDA build runs a fused kernel (flash without a mask, memory-efficient with an additive or
    boolean mask broadcastable to (B, H, Lq, Lk)): dense 4-d inputs of one head size, no GQA ("Both fused
    kernels require query, key and value to be 4 dimensional": a 5-d call, as in Twins' local attention,
    runs the math path on a GPU too). Both read Q, K, V (and the mask) once and write O and a per-row
    logsumexp; no score matrix reaches memory (torch's sdp_utils.cpp, check_tensor_shapes,
    check_batch_size_and_num_heads)."""
    dense = all(t.dim() == 4 for t in (q, k, v)) and not any(t.is_nested for t in (q, k, v))
    return (dense and not enable_gqa
            and q.shape[:-2] == k.shape[:-2] == v.shape[:-2] and q.shape[-1] == k.shape[-1]
            and min(q.shape[-2], k.shape[-2]) > 0)


class FusedSdpaOnMeta(TorchFunctionMode):
    """Within this context, SDPA on meta tensors runs as the target device's fused kernel would.

    target "cpu": the CPU flash kernel under ATen's CPU rules. target "cuda": flash / memory-efficient
    (cuda_fused_eligible), stood in for by the same CPU flash op (it reads and writes what
    they read and write; the mask is broadcast as a view). NB: workspaces stay invisible either way. NB: a mask
    that requires grad in a training step (BEiT's relative position bias) has no differentiable stand-in (the
    CPU flash op refuses it), so it runs the math path: its score matrix is counted, which CUDA's
    memory-efficient kernel would not keep (more, not less).
    """

    def __init__(self, target: str = "cpu"):
        super().__init__()
        self.target = target

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func is F.scaled_dot_product_attention and args and args[0].device.type == "meta":
            q, k, v, *rest = args
            options = dict(zip(("attn_mask", "dropout_p", "is_causal", "scale", "enable_gqa"), rest), **kwargs)
            mask = options.get("attn_mask")
            differentiable = mask is None or not (mask.requires_grad and torch.is_grad_enabled())
            if self.target == "cuda" and differentiable and cuda_fused_eligible(q, k, v, **options):
                return _as_cuda_fused(q, k, v, options)
            if cpu_flash_eligible(q, k, v, **options):
                return aten._scaled_dot_product_flash_attention_for_cpu(
                    q, k, v, options.get("dropout_p", 0.0), options.get("is_causal", False),
                    attn_mask=options.get("attn_mask"), scale=options.get("scale"))[0]
        return func(*args, **kwargs)


def _as_cuda_fused(q, k, v, options):
    mask = options.get("attn_mask")
    if mask is not None:
        mask = mask.expand(q.shape[0], q.shape[1], q.shape[2], k.shape[2])
    return aten._scaled_dot_product_flash_attention_for_cpu(q, k, v, 0.0, options.get("is_causal", False),
                                                             attn_mask=mask, scale=options.get("scale"))[0]
