"""Other counters beside ours on the same module, with the difference explained (evidence, not hidden).

fvcore (facebookresearch/fvcore, flop_count.py) counts one multiply-add as one "flop", i.e. MACs,
by jit-tracing a real forward: it needs materialised weights and a real input. It has no handle for
aten::scaled_dot_product_attention, so fused attention's QK^T and AV go uncounted (listed in its
unsupported_ops), and it adds elementwise counts for norms, pooling and upsampling, which our
convention leaves out. So: ours = fvcore's matmul/conv part + the attention it missed.
"""
from __future__ import annotations

import torch
from torch import nn

from ..size import Size, SizeLike
from .cost import cost_record, image_batch

# fvcore handle names (by_operator keys) that our convention also counts.
_MATMUL_CONV_HANDLES = {"addmm", "bmm", "conv", "einsum", "linear", "matmul", "mm", "baddbmm", "_convolution"}


def fvcore_comparison(module: nn.Module, img_size: SizeLike, batch_size: int = 1) -> dict:
    """Both counts on the same real (CPU) module: fvcore cannot run on meta. Use small models.

    NB: fvcore is imported here, not at module level, so nothing else needs it installed.
    """
    from fvcore.nn import FlopCountAnalysis

    img_size = Size.of(img_size)
    ours = cost_record(module, img_size, batch_size=batch_size, train=False).as_dict()
    x = image_batch(module, batch_size, img_size)
    analysis = FlopCountAnalysis(module.eval(), x)
    analysis.unsupported_ops_warnings(False)
    analysis.uncalled_modules_warnings(False)
    by_operator = dict(analysis.by_operator())
    fvcore_total = int(analysis.total())
    matmul_conv = sum(v for k, v in by_operator.items() if k in _MATMUL_CONV_HANDLES)
    unsupported = dict(analysis.unsupported_ops())
    missed = ours["macs"] * batch_size - matmul_conv
    sdpa_unsupported = any("scaled_dot_product_attention" in op for op in unsupported)
    return {
        "img_size": img_size.label, "batch_size": batch_size,
        "macs": ours["macs"] * batch_size, "attn_macs": ours["attn_macs"] * batch_size, "attn_path": ours["attn_path"],
        "fvcore_total": fvcore_total, "fvcore_by_operator": by_operator, "fvcore_unsupported_ops": unsupported,
        "fvcore_matmul_conv": matmul_conv, "fvcore_outside_convention": fvcore_total - matmul_conv,
        "missed_by_fvcore": missed, "fvcore_error": (fvcore_total - ours["macs"] * batch_size) / (ours["macs"] * batch_size),
        "explained": missed == (ours["attn_macs"] * batch_size if sdpa_unsupported else 0),
        "explanation": (f"fvcore has no rule for aten::scaled_dot_product_attention: it misses QK^T + AV "
                        f"({ours['attn_macs'] * batch_size:,} MACs) and adds {fvcore_total - matmul_conv:,} for norms/pooling"
                        if sdpa_unsupported else
                        f"{'attention ran as explicit matmuls, which fvcore counts' if ours['attn_macs'] else 'no attention'}"
                        f"; it adds {fvcore_total - matmul_conv:,} for norms/pooling"),
    }


def flop_counter_mode_comparison(module: nn.Module, img_size: SizeLike, batch_size: int = 1) -> dict:
    """torch.utils.flop_counter.FlopCounterMode beside ours on the module's (real) device.

    NB: on CPU, SDPA runs as aten._scaled_dot_product_flash_attention_for_cpu, for which torch
    2.14's FlopCounterMode has no formula: it reads ViT-B/16 at 16.85 GMACs instead of 17.56.
    """
    from torch.utils.flop_counter import FlopCounterMode

    img_size = Size.of(img_size)
    ours = cost_record(module, img_size, batch_size=batch_size, train=False).as_dict()
    x = image_batch(module, batch_size, img_size)
    with torch.no_grad(), FlopCounterMode(display=False) as counter:
        module(x)
    torch_macs = counter.get_total_flops() // 2            # FlopCounterMode counts 2 FLOPs per MAC
    return {"img_size": img_size.label, "batch_size": batch_size, "macs": ours["macs"] * batch_size,
            "attn_macs": ours["attn_macs"] * batch_size, "attn_path": ours["attn_path"],
            "flop_counter_macs": torch_macs, "missed_by_flop_counter": ours["macs"] * batch_size - torch_macs}
