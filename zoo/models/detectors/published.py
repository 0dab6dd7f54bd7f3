"""Whole-detector params and FLOPs as published at 1280 x 800 (mmcv's get_flops: its "FLOPs" are
multiply-accumulates of conv/linear modules plus bias, norm, activation and pooling elements, and
functional matmuls such as attention's QK^T and AV are not seen), with where each was published."""
from __future__ import annotations

SWIN_DET = "SwinTransformer/Swin-Transformer-Object-Detection README.md (3x schedules)"
CONVNEXT_DET = "facebookresearch/ConvNeXt object_detection/README.md (3x schedules)"
SWIN_PAPER = ("Liu et al. 2021 (arXiv:2103.14030) Table 2(b), Cascade Mask R-CNN backbones; the PDF was not "
              "opened here: the row (82M, 739G) as restated by several public notes on that table")

# (backbone, detector) -> (params in millions, GFLOPs as mmcv counts them, source)
PUBLISHED = {
    ("swin_t", "maskrcnn"): (48, 267, SWIN_DET),
    ("swin_t", "cascade_maskrcnn"): (86, 745, SWIN_DET),
    ("convnext_t", "maskrcnn"): (48, 262, CONVNEXT_DET),
    ("convnext_t", "cascade_maskrcnn"): (86, 741, CONVNEXT_DET),
    ("resnet50", "cascade_maskrcnn"): (82, 739, SWIN_PAPER),
}
PUBLISHED_SIZE = (800, 1280)   # H x W; the tables' "1280 x 800" is mmcv's (H, W) = (1280, 800), the same MACs
