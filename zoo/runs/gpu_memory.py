"""A training step's memory on a CUDA GPU, counted on meta with what the GPU runs (analysis.count.autocast) as
torch.cuda.max_memory_allocated sees it: analysis.predict.memory has the recipe; this module builds the request's
module and counts it, for the cost row (zoo.runs.counted) and the training prediction (zoo.predict.train)."""
from __future__ import annotations

import dataclasses

from analysis.count.allocator import block_bytes
from analysis.count.cost import GpuEmulation, image_batch, run_train_step
from analysis.vocab import DTYPES

from .module_build import build
from .request import Request
from analysis.predict.memory import TRAIN_ROIS, step_parts, task_loss


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


def gpu_train_bytes(request: Request, fused_attention: bool = True, foreach: bool = True,
                    data_parallel: bool = False, module=None) -> dict:
    """Memory of one training step of `request` on a GPU (analysis.predict.memory): its parts, the peak
    (`train_bytes`) and which phase sets it, with the request's optimizer (None: AdamW, as the detection and
    segmentation recipes train). fused_attention=False counts attention as written op by op (q @ k^T, softmax,
    @ v: the score matrix saved for backward), as mmdetection's Swin and detectron2's ViTDet write it;
    foreach=False steps the optimizer parameter by parameter (torch 1.x's default); data_parallel adds
    DistributedDataParallel's gradient buckets (analysis.predict.memory). `module`: the request's module, fp32 on
    meta, already built (zoo.runs.counted's count hands its own over: no second build)."""
    module = module if module is not None else _module(request, fused_attention)
    if request.detector is not None:                 # training samples RoIs: TRAIN_ROIS, not inference's
        module.spec = dataclasses.replace(module.spec, **TRAIN_ROIS)
    x = image_batch(module, request.batch_size, request.img_size)
    autocast = None if request.dtype == "fp32" else DTYPES[request.dtype]
    _, memory, _ = run_train_step(module, x, gpu=GpuEmulation(autocast, block_bytes),
                                  loss=task_loss(request))
    return step_parts(module, x, memory.peak_bytes, request.optimizer or "adamw", foreach, data_parallel)
