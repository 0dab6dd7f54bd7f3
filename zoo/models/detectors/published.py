"""Whole-detector params and FLOPs as published at 1280 x 800 (mmcv's get_flops: its "FLOPs" are
multiply-accumulates of conv/linear modules plus bias, norm, activation and pooling elements, and
functional matmuls such as attention's QK^T and AV are not seen), with where each was published, and
what was searched where no published figure could be opened."""
from __future__ import annotations

SWIN_DET = ("SwinTransformer/Swin-Transformer-Object-Detection@c7b2011 README.md, Results and Models, "
            "Swin-T ImageNet-1K 3x rows")
CONVNEXT_DET = "facebookresearch/ConvNeXt@048efce object_detection/README.md, ConvNeXt-T ImageNet-1K 3x rows"
SWIN_PAPER = ("UNVERIFIED: Liu et al. 2021 (arXiv:2103.14030) Table 2(b), R50 row, not opened here; no official "
              "source that could be opened carries it (the Swin and ConvNeXt detection READMEs above have no "
              "ResNet row; mmdetection's configs/cascade_rcnn/README.md, as in Swin-Transformer-Object-Detection"
              "@c7b2011, gives memory, fps and AP, no params/FLOPs); (82M, 739G) as third-party notes on that "
              "table restate it")

# (backbone, detector) -> (params in millions, GFLOPs as mmcv counts them, source)
PUBLISHED = {
    ("swin_t", "maskrcnn"): (48, 267, SWIN_DET),
    ("swin_t", "cascade_maskrcnn"): (86, 745, SWIN_DET),
    ("convnext_t", "maskrcnn"): (48, 262, CONVNEXT_DET),
    ("convnext_t", "cascade_maskrcnn"): (86, 741, CONVNEXT_DET),
    ("resnet50", "cascade_maskrcnn"): (82, 739, SWIN_PAPER),
}
PUBLISHED_SIZE = (800, 1280)   # H x W; the tables' "1280 x 800" is mmcv's (H, W) = (1280, 800), the same MACs

# Backbones with no openable published whole-detector (or backbone-at-1024) params/FLOPs, and what was searched.
NOT_PUBLISHED = {
    "vitdet": ("ViTDet-B/L/H: no published params or FLOPs could be opened. facebookresearch/detectron2@02b5c4e "
               "projects/ViTDet/README.md lists train/inference time, train memory and AP only; "
               "open-mmlab/mmdetection@f749743 projects/ViTDet/README.md AP only; the paper's tables (Li et al. "
               "2022, arXiv:2203.16527) were not openable here, so the ViTDet rows have no published column."),
}
