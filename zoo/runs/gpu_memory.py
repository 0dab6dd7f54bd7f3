"""Memory on a CUDA GPU, counted on meta with what the GPU runs (analysis.count.autocast): serving (weights as
held + the forward's activation peak + the input) and a mixed-precision training step.

Training under torch.autocast (bf16/fp16): fp32 master weights, one fp32 gradient and the optimizer's fp32
states per trainable parameter, and the step's activation peak counted with autocast's casts, so the
activations autocast keeps in fp32 (norm and softmax outputs, the fp32 residual stream, the low-precision
weight copies saved for backward) are counted at 4 bytes. fp32 training: the same without casts.
NB: the caching allocator's rounding and fragmentation, cuDNN/cuBLAS workspaces and the CUDA context are not
counted; published memory columns (torch.cuda.max_memory_allocated) exclude the context too.
"""
from __future__ import annotations

from analysis.count.cost import GpuEmulation, image_batch, run_forward, run_train_step, weight_bytes
from analysis.vocab import DTYPES

from .counted import OPTIMIZER_STATES, build
from .request import Request


def _module(request: Request, fused_attention: bool = True):
    """The request's fp32 module on meta; without `fused_attention`, attention written op by op (the scratch
    models' attn_impl="math", timm's fused_attn switched off while the model is built)."""
    if fused_attention:
        return build(request, "meta", "fp32")
    from timm.layers import config as timm_config

    from ..models.registry import get_spec

    overrides = {"attn_impl": "math"} if get_spec(request.model).source == "scratch" else {}
    before = timm_config._USE_FUSED_ATTN
    timm_config.set_fused_attn(False)
    try:
        return build(request, "meta", "fp32", **overrides)
    finally:
        timm_config._USE_FUSED_ATTN = before


def _emulation(dtype: str) -> GpuEmulation:
    return GpuEmulation(None if dtype == "fp32" else DTYPES[dtype])


def gpu_serving_bytes(request: Request) -> dict:
    """Serving memory of one batch on a GPU: fp32 weights (autocast keeps them) or fp32 for fp32, the
    forward's activation peak with autocast's casts, and the fp32 input."""
    module = _module(request)
    x = image_batch(module, request.batch_size, request.img_size)
    _, memory, _ = run_forward(module, x, gpu=_emulation(request.dtype))
    weights, inputs = weight_bytes(module), x.numel() * x.element_size()
    return {"weight_bytes": weights, "act_peak_bytes": memory.peak_bytes, "input_bytes": inputs,
            "serve_bytes": weights + memory.peak_bytes + inputs}


def gpu_train_bytes(request: Request, fused_attention: bool = True) -> dict:
    """Memory of one training step of `request` on a GPU (module docstring): the recipe's parts and their sum,
    with the request's optimizer's state (None: AdamW, as the detection and segmentation recipes train).
    fused_attention=False counts attention as written op by op (q @ k^T, softmax, @ v: the score matrix
    saved for backward), as mmdetection's Swin and detectron2's ViTDet write it."""
    module = _module(request, fused_attention)
    x = image_batch(module, request.batch_size, request.img_size)
    _, memory, _ = run_train_step(module, x, gpu=_emulation(request.dtype))
    trainable = sum(p.numel() for p in module.parameters() if p.requires_grad)
    name, states = OPTIMIZER_STATES[request.optimizer or "adamw"]
    weights, inputs = weight_bytes(module), x.numel() * x.element_size()
    parts = {"weight_bytes": weights, "grad_bytes": 4 * trainable, "optimizer_bytes": 4 * states * trainable,
             "train_act_peak_bytes": memory.peak_bytes, "input_bytes": inputs}
    return {**parts, "train_bytes": sum(parts.values()), "optimizer": name, "trainable_params": trainable}
