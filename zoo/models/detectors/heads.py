"""The parts a two-stage detector adds to a backbone, as mmdetection 2.x builds them for the configs
behind Swin's and ConvNeXt's detection tables (configs/_base_/models/{mask,cascade_mask}_rcnn_*_fpn.py
in facebookresearch/ConvNeXt object_detection and SwinTransformer/Swin-Transformer-Object-Detection):
FPN (mmdet.models.necks.FPN), RPNHead, Shared2FCBBoxHead / ConvFCBBoxHead (4 conv, 1 fc), FCNMaskHead.
Convolutions followed by a norm have no bias (mmcv's ConvModule bias="auto"); all others have one.
"""
from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn


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
    """Shared over levels: 3x3 conv + ReLU, then 1x1 objectness (one sigmoid per anchor) and 1x1 deltas
    (3 anchors: ratios 0.5, 1, 2 at one scale)."""

    def __init__(self, channels: int = 256, anchors: int = 3):
        super().__init__()
        self.rpn_conv = nn.Conv2d(channels, channels, 3, padding=1)
        self.rpn_cls = nn.Conv2d(channels, anchors, 1)
        self.rpn_reg = nn.Conv2d(channels, 4 * anchors, 1)

    def forward(self, maps: list[torch.Tensor]) -> list[torch.Tensor]:
        outs = []
        for m in maps:
            m = F.relu(self.rpn_conv(m))
            outs += [self.rpn_cls(m), self.rpn_reg(m)]     # (B, 3, H_i, W_i), (B, 12, H_i, W_i)
        return outs


def conv_bn_relu(channels: int) -> nn.Sequential:
    return nn.Sequential(nn.Conv2d(channels, channels, 3, padding=1, bias=False), nn.BatchNorm2d(channels),
                         nn.ReLU())


class BoxHead(nn.Module):
    """mmdet ConvFCBBoxHead: `convs` 3x3 conv-BN-ReLU (0 for Shared2FCBBoxHead), `fcs` fc-ReLU layers of
    1024, then fc_cls (classes + background) and fc_reg (4 per class, or 4 when class-agnostic)."""

    def __init__(self, convs: int, fcs: int, channels: int = 256, roi_size: int = 7, fc_dim: int = 1024,
                 num_classes: int = 80, class_agnostic: bool = False):
        super().__init__()
        self.shared_convs = nn.Sequential(*[conv_bn_relu(channels) for _ in range(convs)])
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
    """mmdet FCNMaskHead: 4 x (3x3 conv + ReLU), a 2x2 stride-2 deconvolution + ReLU, 1x1 logits per class."""

    def __init__(self, channels: int = 256, convs: int = 4, num_classes: int = 80):
        super().__init__()
        self.convs = nn.Sequential(*[m for _ in range(convs) for m in (nn.Conv2d(channels, channels, 3, padding=1),
                                                                        nn.ReLU())])
        self.upsample = nn.ConvTranspose2d(channels, channels, 2, stride=2)
        self.conv_logits = nn.Conv2d(channels, num_classes, 1)

    def forward(self, rois: torch.Tensor) -> torch.Tensor:           # (R, 256, 14, 14)
        x = F.relu(self.upsample(self.convs(rois)))                    # (R, 256, 28, 28)
        return self.conv_logits(x)                                     # (R, 80, 28, 28)
