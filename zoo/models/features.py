"""Backbones as multi-scale feature extractors (`create_model(..., features=True)`): no pooling, no
head; forward returns a list of (B, C, H_i, W_i) maps, NCHW for every model.

- hierarchical timm models (Swin, ConvNeXt, ResNet/BiT, RegNet, EfficientNet): timm's
  `features_only=True`, each stage's output at strides 4, 8, 16, 32 as detectors take them (C2-C5;
  `out_indices` chooses stages, 0 being the stride-2 stem of ResNet/BiT/RegNet/EfficientNet);
- timm ViT-likes (DeiT, BEiT, EVA-02): timm's `forward_intermediates` through timm's
  FeatureGetterNet, by default the last block only, through the final norm as for the scratch ViT
  (`out_indices` chooses blocks);
- the scratch ViT and hybrid: `ViTFeatureMaps`, the last block's patch tokens (see vit.py);
- ViTDet: its simple feature pyramid, four 256-channel maps at strides 4, 8, 16, 32 (vitdet.py);
- ad-hoc "timm:" models: timm's `features_only=True` with timm's defaults (NHWC made NCHW).
"""
from __future__ import annotations

import dataclasses

import torch
from torch import nn

from ..errors import ZooError
from .catalog import FAMILIES
from .hybrid import hybrid_vit
from .spec import AnySize, ModelSpec, Size
from .vit import ViTFeatureMaps
from .vitdet import ViTDet

LAST_BLOCK = (-1,)
# timm's features_only puts the stem's stride-2 map first for these; detectors take C2-C5 (strides 4-32)
DETECTOR_STAGES = (1, 2, 3, 4)


class ChannelsFirst(nn.Module):
    """timm feature models whose maps come out NHWC (Swin's FeatureListNet, output_fmt "NHWC"),
    permuted to NCHW so that every extractor of the zoo is uniform."""

    def __init__(self, model: nn.Module):
        super().__init__()
        self.model = model
        self.feature_info = getattr(model, "feature_info", None)
        self.pretrained_cfg = getattr(model, "pretrained_cfg", None)

    def forward(self, x: torch.Tensor) -> list[torch.Tensor]:
        # (B, H_i, W_i, C_i) -> (B, C_i, H_i, W_i); NB: a view with channels_last strides, no copy
        return [f.permute(0, 3, 1, 2) for f in self.model(x)]


def build_scratch_features(spec: ModelSpec, img_size: Size, overrides: dict) -> nn.Module:
    overrides = dict(overrides)
    indices = overrides.pop("out_indices", LAST_BLOCK)
    try:
        cfg = dataclasses.replace(spec.vit_config, img_size=img_size, num_classes=0, **overrides)
    except TypeError as e:  # an override the config does not have
        raise ZooError(f"{spec.name}: {e}") from None
    if spec.family == "vitdet":
        return ViTDet(cfg, features=True)
    if spec.family == "hybrid":
        return hybrid_vit(cfg, feature_indices=indices)
    return ViTFeatureMaps(cfg, indices=indices)


def build_timm_features(spec: ModelSpec, img_size: Size, overrides: dict) -> nn.Module:
    import timm
    from timm.layers import Format
    from timm.models._features import FeatureGetterNet

    args = dict(spec.timm_kwargs, **overrides)
    if spec.accepts_img_size and not isinstance(spec.rule, AnySize):
        args["img_size"] = img_size.compact
    if spec.is_token_model:         # a plain token sequence: its blocks' outputs, reshaped to the grid
        indices = args.pop("out_indices", LAST_BLOCK)
        model = timm.create_model(spec.timm_name, pretrained=False, **args)
        # NB: prunes the head (and the blocks after the last index); BEiT's and EVA-02's `norm` is an
        # Identity in timm (their final norm is fc_norm, after pooling), so their maps are un-normed
        return FeatureGetterNet(model, out_indices=list(indices), norm=True, prune=True)
    if spec.family in FAMILIES and FAMILIES[spec.family].stem_first:        # the stem only on request (out_indices=(0, 1, 2, 3, 4))
        args.setdefault("out_indices", DETECTOR_STAGES)
    model = timm.create_model(spec.timm_name, pretrained=False, features_only=True, **args)
    if Format(getattr(model, "output_fmt", "NCHW")) is Format.NHWC:
        model = ChannelsFirst(model)
    return model
