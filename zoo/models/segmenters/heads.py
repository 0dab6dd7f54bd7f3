"""The parts UperNet and semantic FPN add to a backbone, as mmsegmentation 0.x builds them (mmseg/models/decode_heads/
uper_head.py, psp_head.py's PPM, fcn_head.py, fpn_head.py; necks/multilevel_neck.py, fpn.py) for the configs
behind the Swin, ConvNeXt and mmseg ADE20K tables. ConvModule = conv (no bias before a norm: mmcv's bias="auto")
+ BN + ReLU; every resize is bilinear with align_corners=False but the FPN neck's nearest top-down one (0 MACs
by our convention, as mmcv's counter sees F.interpolate).
"""
from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from ..detectors.heads import FPN


class ContextBatchNorm(nn.BatchNorm2d):
    """BatchNorm2d without F.batch_norm's "more than 1 value per channel" check: the PPM's 1x1 pooled map at
    batch 1 has one value per channel; mmseg trains it with SyncBN over 8 GPUs x 2 images, where it has 16."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.batch_norm(x, self.weight, self.bias, self.running_mean, self.running_var, self.training,
                                self.momentum, self.eps, torch.backends.cudnn.enabled)


def conv_module(c_in: int, c_out: int, kernel: int, norm=nn.BatchNorm2d) -> nn.Sequential:
    """mmcv ConvModule with norm_cfg BN and act_cfg ReLU: conv without bias, BN, ReLU."""
    return nn.Sequential(nn.Conv2d(c_in, c_out, kernel, padding=kernel // 2, bias=False), norm(c_out), nn.ReLU())


def resize(x: torch.Tensor, size) -> torch.Tensor:
    return F.interpolate(x, size=tuple(size), mode="bilinear", align_corners=False)


class Classifier(nn.Sequential):
    """BaseDecodeHead.cls_seg: Dropout2d(0.1), then a 1x1 conv (with bias) to the classes."""

    def __init__(self, channels: int, num_classes: int, dropout: float):
        super().__init__(nn.Dropout2d(dropout), nn.Conv2d(channels, num_classes, 1))


class PPM(nn.ModuleList):
    """Pyramid pooling (Zhao et al. 2017): per scale s an adaptive average pool to s x s, a 1x1 ConvModule,
    and a resize back to the map's size."""

    def __init__(self, scales: tuple, c_in: int, channels: int):
        super().__init__(nn.Sequential(nn.AdaptiveAvgPool2d(s), conv_module(c_in, channels, 1, ContextBatchNorm))
                         for s in scales)

    def forward(self, x: torch.Tensor) -> list[torch.Tensor]:
        return [resize(branch(x), x.shape[-2:]) for branch in self]       # each (B, 512, H/32, W/32)


class UPerHead(nn.Module):
    """Xiao et al. 2018 as mmseg's UPerHead: PPM + 3x3 bottleneck on the last map; 1x1 laterals on the others,
    a bilinear top-down sum, 3x3 FPN convs; every level resized to stride 4, concatenated, a 3x3 fpn_bottleneck,
    then the classifier. Output: (B, classes, H/4, W/4)."""

    def __init__(self, in_channels: list[int], channels: int, pool_scales: tuple, num_classes: int, dropout: float):
        super().__init__()
        self.psp_modules = PPM(pool_scales, in_channels[-1], channels)
        self.bottleneck = conv_module(in_channels[-1] + len(pool_scales) * channels, channels, 3)
        self.lateral_convs = nn.ModuleList(conv_module(c, channels, 1) for c in in_channels[:-1])
        self.fpn_convs = nn.ModuleList(conv_module(channels, channels, 3) for _ in in_channels[:-1])
        self.fpn_bottleneck = conv_module(len(in_channels) * channels, channels, 3)
        self.cls_seg = Classifier(channels, num_classes, dropout)

    def forward(self, maps: list[torch.Tensor]) -> torch.Tensor:
        top = maps[-1]
        laterals = [conv(m) for conv, m in zip(self.lateral_convs, maps)]             # each (B, 512, H_i, W_i)
        laterals.append(self.bottleneck(torch.cat([top, *self.psp_modules(top)], dim=1)))   # (B, 512, H/32, W/32)
        for i in range(len(laterals) - 1, 0, -1):
            laterals[i - 1] = laterals[i - 1] + resize(laterals[i], laterals[i - 1].shape[-2:])
        outs = [conv(m) for conv, m in zip(self.fpn_convs, laterals)] + [laterals[-1]]
        fine = outs[0].shape[-2:]
        outs = [outs[0]] + [resize(o, fine) for o in outs[1:]]
        return self.cls_seg(self.fpn_bottleneck(torch.cat(outs, dim=1)))              # (B, 150, H/4, W/4)


class FCNHead(nn.Module):
    """mmseg FCNHead with num_convs=1, kernel 3, concat_input=False: one 3x3 ConvModule, the classifier."""

    def __init__(self, c_in: int, channels: int, num_classes: int, dropout: float):
        super().__init__()
        self.convs = conv_module(c_in, channels, 3)
        self.cls_seg = Classifier(channels, num_classes, dropout)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.cls_seg(self.convs(x))                                             # (B, 150, H_i, W_i)


class MultiLevelNeck(nn.Module):
    """mmseg MultiLevelNeck (no norm, no activation: convs with bias): a 1x1 lateral per map, a bilinear
    resize by its scale (4, 2, 1, 0.5: strides 4-32 from a plain ViT's stride 16), a 3x3 conv."""

    def __init__(self, in_channels: list[int], channels: int, scales: tuple):
        super().__init__()
        self.scales = scales
        self.lateral_convs = nn.ModuleList(nn.Conv2d(c, channels, 1) for c in in_channels)
        self.convs = nn.ModuleList(nn.Conv2d(channels, channels, 3, padding=1) for _ in scales)

    def forward(self, maps: list[torch.Tensor]) -> list[torch.Tensor]:
        outs = []
        for lateral, conv, m, s in zip(self.lateral_convs, self.convs, maps, self.scales):
            m = lateral(m)
            outs.append(conv(F.interpolate(m, scale_factor=s, mode="bilinear", align_corners=False)))
        return outs


class FPNNeck(FPN):
    """mmseg's neck FPN as configs/_base_/models/fpn_r50.py builds it (mmseg/models/necks/fpn.py: norm_cfg and
    act_cfg None, so convs with bias and nothing after them; num_outs = the 4 inputs, no extra levels): a 1x1
    lateral per map, a nearest-neighbour top-down sum, a 3x3 conv per level -- the detectors' FPN with no extra
    level."""

    def __init__(self, in_channels: list[int], channels: int):
        super().__init__(in_channels, channels, num_outs=len(in_channels))


class FPNHead(nn.Module):
    """Kirillov et al. 2019 (semantic FPN) as mmseg's FPNHead (mmseg/models/decode_heads/fpn_head.py): per level
    max(1, log2(stride / 4)) 3x3 ConvModules, the first from the level's channels, each followed by a x2 bilinear
    upsample on levels coarser than stride 4; the levels summed at stride 4, then the classifier."""

    def __init__(self, strides: tuple, in_channels: list[int], channels: int, num_classes: int, dropout: float):
        super().__init__()
        heads = []
        for stride, c_in in zip(strides, in_channels):
            length = max(1, int(math.log2(stride) - math.log2(strides[0])))
            layers = []
            for k in range(length):
                layers.append(conv_module(c_in if k == 0 else channels, channels, 3))
                if stride != strides[0]:
                    layers.append(nn.Upsample(scale_factor=2, mode="bilinear", align_corners=False))
            heads.append(nn.Sequential(*layers))
        self.scale_heads = nn.ModuleList(heads)
        self.cls_seg = Classifier(channels, num_classes, dropout)

    def forward(self, maps: list[torch.Tensor]) -> torch.Tensor:
        out = self.scale_heads[0](maps[0])                                             # (B, 128, H/4, W/4)
        for head, m in zip(self.scale_heads[1:], maps[1:]):
            out = out + resize(head(m), out.shape[-2:])
        return self.cls_seg(out)                                                       # (B, 150, H/4, W/4)
