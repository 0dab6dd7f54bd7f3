"""The ViT paper's hybrid (Sec. 3.1, "Hybrid Architecture"): a ResNet stem feeds the ViT encoder.

As in the paper's R50+ViT-B/16, the backbone is a BiT ResNet-50 (GroupNorm, weight-standardised
convolutions) cut after stage 3, whose stride-16 feature map is projected to tokens by 1x1 patches
(P = 1 on the feature map, so 16 pixels per token). The CNN comes from timm's ResNetV2 with the
configuration of timm's vit_base_r50_s16_224, so timm's state dicts load with strict=True.
"""
from __future__ import annotations

from typing import Sequence

import torch
from torch import nn

from .vit import ViTConfig, ViTFeatureMaps, VisionTransformer

STEM_LAYERS = (3, 4, 9)  # ResNet-50's first three stages; the paper drops stage 4 and keeps 9 blocks in stage 3
STEM_CHANNELS = 1024     # width of the stage-3 output
STEM_STRIDE = 16


class HybridEmbed(nn.Module):
    """CNN feature map (B, 1024, H/16, W/16) -> 1x1 projection -> tokens (B, N, D)."""

    def __init__(self, backbone: nn.Module, embed_dim: int):
        super().__init__()
        self.backbone = backbone
        self.proj = nn.Conv2d(STEM_CHANNELS, embed_dim, kernel_size=1, stride=1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.backbone(x)                     # (B, 1024, H/16, W/16)
        x = self.proj(x)                         # (B, D, H/16, W/16)
        return x.flatten(2).transpose(1, 2)      # (B, N, D)


def resnet50_stem() -> nn.Module:
    from functools import partial

    from timm.layers import StdConv2dSame
    from timm.models.resnetv2 import ResNetV2

    # eps=1e-8 in the weight standardisation, as in the original JAX code (and timm's hybrid)
    return ResNetV2(layers=STEM_LAYERS, num_classes=0, global_pool="", in_chans=3, preact=False,
                    stem_type="same", conv_layer=partial(StdConv2dSame, eps=1e-8))


def hybrid_vit(cfg: ViTConfig, feature_indices: int | Sequence[int] | None = None) -> VisionTransformer:
    """cfg.patch_size is the effective patch in pixels (16); the projection itself is 1x1.
    With `feature_indices`, the feature extractor (ViTFeatureMaps) of those blocks."""
    if cfg.patch_size != STEM_STRIDE:
        raise ValueError(f"the R50 stem has stride {STEM_STRIDE}; patch_size must be {STEM_STRIDE}")
    embed = HybridEmbed(resnet50_stem(), cfg.embed_dim)
    if feature_indices is not None:
        return ViTFeatureMaps(cfg, patch_embed=embed, indices=feature_indices)
    return VisionTransformer(cfg, patch_embed=embed)
