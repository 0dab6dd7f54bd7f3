"""The parts a two-stage detector adds to a backbone, as mmdetection 2.x builds them for the configs
behind Swin's and ConvNeXt's detection tables (configs/_base_/models/{mask,cascade_mask}_rcnn_*_fpn.py
in facebookresearch/ConvNeXt object_detection and SwinTransformer/Swin-Transformer-Object-Detection):
FPN (mmdet.models.necks.FPN), RPNHead, Shared2FCBBoxHead / ConvFCBBoxHead (4 conv, 1 fc), FCNMaskHead;
and as detectron2 builds them for ViTDet (configs/common/models/mask_rcnn_vitdet.py): StandardRPNHead
with 2 convs, FastRCNNConvFCHead 4conv1fc and MaskRCNNConvUpsampleHead with channel LayerNorm ("LN").
Convolutions followed by a norm have no bias (mmcv's ConvModule bias="auto", detectron2's
bias=not conv_norm); all others have one.
"""
from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from ..vitdet import LayerNorm2d

LN_EPS = 1e-6      # detectron2.layers.LayerNorm's default


class FPN(nn.Module):
    """Lin et al. 2017: 1x1 laterals, nearest 2x top-down sum, 3x3 outputs; the extra top level is a
    1x1 stride-2 max pool of the last output (mmdet's num_outs=5 with add_extra_convs=False)."""

    def __init__(self, in_channels: list[int], channels: int = 256, num_outs: int = 5):
        super().__init__()
        self.num_outs = num_outs
        self.lateral_convs = nn.ModuleList(nn.Conv2d(c, channels, 1) for c in in_channels)
        self.fpn_convs = nn.ModuleList(nn.Conv2d(channels, channels, 3, padding=1) for _ in in_channels)

    def forward(self, maps: list[torch.Tensor]) -> list[torch.Tensor]:
        laterals = [conv(m) for conv, m in zip(self.lateral_convs, maps)]            # each (B, 256, H_i, W_i)
        for i in range(len(laterals) - 1, 0, -1):
            laterals[i - 1] = laterals[i - 1] + F.interpolate(laterals[i], size=laterals[i - 1].shape[-2:],
                                                              mode="nearest")
        outs = [conv(m) for conv, m in zip(self.fpn_convs, laterals)]
        return outs + extra_levels(outs[-1], self.num_outs - len(outs))


def extra_levels(top: torch.Tensor, count: int) -> list[torch.Tensor]:
    """P6 (and up): max_pool2d(kernel 1, stride 2) of the level below, as mmdet's FPN and detectron2's
    LastLevelMaxPool (ViTDet's pyramid) make them."""
    levels = []
    for _ in range(count):
        top = F.max_pool2d(top, 1, stride=2)
        levels.append(top)
    return levels


class LastLevelMaxPool(nn.Module):
    """The neck of ViTDet: its simple feature pyramid already gives 256-channel P2-P5; P6 is pooled."""

    def forward(self, maps: list[torch.Tensor]) -> list[torch.Tensor]:
        return list(maps) + extra_levels(maps[-1], 1)


class RPNHead(nn.Module):
    """Shared over levels: `convs` 3x3 conv + ReLU (mmdet's RPNHead 1; detectron2's StandardRPNHead with
    conv_dims=[-1, -1], ViTDet's, 2), then 1x1 objectness (one sigmoid per anchor) and 1x1 deltas
    (3 anchors: ratios 0.5, 1, 2 at one scale)."""

    def __init__(self, channels: int = 256, anchors: int = 3, convs: int = 1):
        super().__init__()
        self.rpn_conv = nn.Sequential(*[m for _ in range(convs) for m in (nn.Conv2d(channels, channels, 3, padding=1),
                                                                          nn.ReLU())])
        self.rpn_cls = nn.Conv2d(channels, anchors, 1)
        self.rpn_reg = nn.Conv2d(channels, 4 * anchors, 1)

    def forward(self, maps: list[torch.Tensor]) -> list[torch.Tensor]:
        outs = []
        for m in maps:
            m = self.rpn_conv(m)
            outs += [self.rpn_cls(m), self.rpn_reg(m)]     # (B, 3, H_i, W_i), (B, 12, H_i, W_i)
        return outs


NORMS = {"bn": nn.BatchNorm2d, "ln": lambda c: LayerNorm2d(c, eps=LN_EPS)}   # mmdet's SyncBN; detectron2's "LN"


def conv_norm_relu(channels: int, norm: str | None) -> nn.Sequential:
    """3x3 conv (no bias before a norm), the norm, ReLU."""
    layers = [nn.Conv2d(channels, channels, 3, padding=1, bias=norm is None)]
    return nn.Sequential(*layers, *([NORMS[norm](channels)] if norm else []), nn.ReLU())


class BoxHead(nn.Module):
    """mmdet ConvFCBBoxHead / detectron2 FastRCNNConvFCHead + FastRCNNOutputLayers: `convs` 3x3 conv-norm-ReLU
    (0 for Shared2FCBBoxHead; BN in mmdet's 4conv1fc, LN in ViTDet's), `fcs` fc-ReLU layers of 1024, then fc_cls
    (classes + background) and fc_reg (4 per class, or 4 when class-agnostic)."""

    ROI_SIZE, FC_DIM = 7, 1024       # RoIAlign's 7x7 output; fc width (mmdet, detectron2 alike)

    def __init__(self, convs: int, fcs: int, channels: int = 256, num_classes: int = 80,
                 class_agnostic: bool = False, norm: str | None = "bn"):
        super().__init__()
        roi_size, fc_dim = self.ROI_SIZE, self.FC_DIM
        self.shared_convs = nn.Sequential(*[conv_norm_relu(channels, norm) for _ in range(convs)])
        dims = [channels * roi_size * roi_size] + [fc_dim] * fcs
        self.shared_fcs = nn.ModuleList(nn.Linear(a, b) for a, b in zip(dims, dims[1:]))
        self.fc_cls = nn.Linear(fc_dim, num_classes + 1)
        self.fc_reg = nn.Linear(fc_dim, 4 if class_agnostic else 4 * num_classes)

    def forward(self, rois: torch.Tensor) -> list[torch.Tensor]:     # (R, 256, 7, 7)
        x = self.shared_convs(rois).flatten(1)                         # (R, 12544)
        for fc in self.shared_fcs:
            x = F.relu(fc(x))                                          # (R, 1024)
        return [self.fc_cls(x), self.fc_reg(x)]                        # (R, 81), (R, 320)


class MaskHead(nn.Module):
    """mmdet FCNMaskHead / detectron2 MaskRCNNConvUpsampleHead: 4 x (3x3 conv, `norm` (none in mmdet's, LN in
    ViTDet's), ReLU), a 2x2 stride-2 deconvolution + ReLU, 1x1 logits per class."""

    def __init__(self, channels: int = 256, convs: int = 4, num_classes: int = 80, norm: str | None = None):
        super().__init__()
        self.convs = nn.Sequential(*[conv_norm_relu(channels, norm) for _ in range(convs)])
        self.upsample = nn.ConvTranspose2d(channels, channels, 2, stride=2)
        self.conv_logits = nn.Conv2d(channels, num_classes, 1)

    def forward(self, rois: torch.Tensor) -> torch.Tensor:           # (R, 256, 14, 14)
        x = F.relu(self.upsample(self.convs(rois)))                    # (R, 256, 28, 28)
        return self.conv_logits(x)                                     # (R, 80, 28, 28)
