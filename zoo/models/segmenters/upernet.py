"""UperNet on a zoo backbone, for counting: the mmsegmentation EncoderDecoder behind Swin's and ConvNeXt's
published ADE20K tables (heads.py), at any H x W.

backbone -> maps at strides 4-32 (Swin, ConvNeXt, ResNet: their stages; ViTDet: its simple pyramid of
256-channel maps; a plain ViT/DeiT: blocks at the end of each quarter through mmseg's MultiLevelNeck) ->
UPerHead -> logits resized to the input. The auxiliary FCNHead on stage 3 runs in training only, as in mmseg
(its `forward_dummy`, which get_flops counts, and its inference skip it): a row's `macs` are inference MACs,
`train_macs` include the auxiliary head, and `segmenter_macs_by_part` gives its forward MACs on their own.
"""
from __future__ import annotations

from typing import Callable

import torch
from torch import nn

from ...errors import ZooError
from ..registry import create_model, get_spec, map_shapes
from ..spec import Size
from ..stages import feature_layout, freeze_stages
from .heads import FCNHead, FPNHead, FPNNeck, MultiLevelNeck, UPerHead, resize
from .specs import SEGMENTERS, SegmenterSpec, vit_levels

PYRAMID_STRIDES = [4, 8, 16, 32]
PARTS = ("backbone", "neck", "decode_head", "auxiliary_head")


class UperNet(nn.Module):
    """backbone (-> neck) -> decode_head -> (B, classes, H, W); in training also auxiliary_head's logits."""

    def __init__(self, backbone: nn.Module, channels: list[int], spec: SegmenterSpec, plain_vit: bool = False):
        super().__init__()
        self.spec = spec
        self.backbone = backbone
        if spec.decode == "fpn":        # semantic FPN: mmseg's neck FPN, then FPNHead on its 256-channel maps
            self.neck = FPNNeck(channels, spec.neck_channels)
            self.decode_head = FPNHead(tuple(PYRAMID_STRIDES), [spec.neck_channels] * 4, spec.channels,
                                       spec.num_classes, spec.dropout)
        else:
            self.neck = MultiLevelNeck(channels, channels[0], spec.vit_neck_scales) if plain_vit else None
            self.decode_head = UPerHead(channels, spec.channels, spec.pool_scales, spec.num_classes, spec.dropout)
        self.auxiliary_head = FCNHead(channels[spec.aux_index], spec.aux_channels, spec.num_classes,
                                      spec.dropout) if spec.auxiliary else None
        self.run_auxiliary = False       # True: run the auxiliary head in eval mode too (to count it on its own)

    def forward(self, x: torch.Tensor) -> list[torch.Tensor]:
        maps = self.backbone(x)                                            # 4 maps, strides 4-32 (or 16 x 4)
        if self.neck is not None:
            maps = self.neck(maps)
        outs = [resize(self.decode_head(maps), x.shape[-2:])]              # (B, 150, H, W)
        if (self.training or self.run_auxiliary) and self.auxiliary_head is not None:   # mmseg: its loss only
            outs.append(resize(self.auxiliary_head(maps[self.spec.aux_index]), x.shape[-2:]))
        return outs


def _plain_vit_levels(model: str) -> tuple[int, ...]:
    spec = get_spec(model)
    depth = spec.vit_config.depth if spec.vit_config is not None else len(create_model(model, device="meta").blocks)
    return vit_levels(depth)


def _why_not_a_pyramid(model: str, strides: list[int]) -> str:
    extra = [s for s in strides if s not in PYRAMID_STRIDES]
    missing = [s for s in PYRAMID_STRIDES if s not in strides]
    why = [f"no map at stride {', '.join(map(str, missing))}"] if missing else []
    if extra:
        why.append(f"an extra map at stride {', '.join(map(str, extra))}")
    if model.startswith("timm:"):      # NB: features_only with timm's default out_indices: every stage, the stem's too
        why.append("archzoo takes a timm: model's maps as timm's features_only gives them (use a registry model, "
                   "e.g. resnet50: stages 1-4)")
    return "; ".join(why) or "not one map per stride"


def create_segmenter(model: str, segmenter: str, img_size: Size, device=None, dtype=None,
                     frozen_stages: int | None = None, **overrides) -> UperNet:
    """`segmenter` (a SEGMENTERS name) on the registry backbone `model` at `img_size` (overrides: to
    create_model, as create_detector takes them)."""
    if segmenter not in SEGMENTERS:
        raise ZooError(f"unknown segmenter {segmenter!r}; expected one of {', '.join(SEGMENTERS)}")
    img_size = Size.of(img_size)
    plain_vit = get_spec(model).is_token_model
    if plain_vit and SEGMENTERS[segmenter].decode == "fpn":
        raise ZooError(f"{segmenter}: {model} is a plain ViT; semantic FPN takes maps at strides 4-32 (mmseg "
                       f"publishes no plain-ViT semantic FPN config)")
    overrides = {**overrides, "out_indices": _plain_vit_levels(model)} if plain_vit else overrides
    backbone = create_model(model, img_size=img_size, device=device, dtype=dtype, features=True, **overrides)
    strides, _ = feature_layout(backbone)
    if strides != ([strides[0]] * 4 if plain_vit else PYRAMID_STRIDES):
        raise ZooError(f"{model}: a segmenter takes four maps at strides 4, 8, 16, 32 (or four ViT blocks); its "
                       f"features are at {strides}: {_why_not_a_pyramid(model, strides)}")
    if frozen_stages is not None:
        freeze_stages(backbone, frozen_stages)
    channels = [c for c, _, _ in map_shapes(backbone, img_size)]
    with torch.device(device or "cpu"):
        net = UperNet(backbone, channels, SEGMENTERS[segmenter], plain_vit)
    net.eval()
    return net.to(dtype=dtype) if dtype is not None else net


def _by_part(values: dict[str, int]) -> dict[str, int]:
    return {part: sum(v for path, v in values.items() if path == part or path.startswith(part + "."))
            for part in PARTS}


def segmenter_fields(net: UperNet, model: str, macs_by_module: Callable[[nn.Module], dict[str, int]]) -> dict:
    """Row fields: forward MACs and params per part (per image; the auxiliary head's as it runs in training),
    the backbone's share of the inference MACs and the config (the published row: published.task_fields, data
    looked up fresh for each row, never cached with the count).
    macs_by_module(net): forward MACs per image of each module path (analysis.count.cost.macs_by_module)."""
    net.run_auxiliary = True
    try:
        macs = _by_part(macs_by_module(net))
    finally:
        net.run_auxiliary = False
    params = _by_part({name: p.numel() for name, p in net.named_parameters()})
    inference = macs["backbone"] + macs["neck"] + macs["decode_head"]
    spec = net.spec
    return {
        "segmenter_macs_by_part": macs,
        "segmenter_params_by_part": params,
        "backbone_macs": macs["backbone"],
        "backbone_share": macs["backbone"] / inference if inference else 0.0,
        "backbone_params": params["backbone"],
        "segmenter_config": spec.config,
    }
