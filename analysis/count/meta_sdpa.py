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


class FusedSdpaOnMeta(TorchFunctionMode):
    """Within this context, SDPA on meta tensors runs as a CPU's fused kernel would.

    NB: CUDA's kernel choice (flash, memory-efficient, cuDNN) is not emulated: MACs are the same,
    only the memory of that choice differs (its workspaces are invisible here anyway).
    """

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func is F.scaled_dot_product_attention and args and args[0].device.type == "meta":
            q, k, v, *rest = args
            options = dict(zip(("attn_mask", "dropout_p", "is_causal", "scale", "enable_gqa"), rest), **kwargs)
            if cpu_flash_eligible(q, k, v, **options):
                return aten._scaled_dot_product_flash_attention_for_cpu(
                    q, k, v, options.get("dropout_p", 0.0), options.get("is_causal", False),
                    attn_mask=options.get("attn_mask"), scale=options.get("scale"))[0]
        return func(*args, **kwargs)
