"""Whole two-stage detectors on a zoo backbone, for counting: Mask R-CNN and Cascade Mask R-CNN as the
configs behind Swin's and ConvNeXt's published detection tables define them, and as detectron2's ViTDet
configs do (heads.py, specs.py), with fixed RoI counts as mmdetection's get_flops (`forward_dummy`) runs
them: 1000 proposals through every box head, the first 100 through every mask head (detectron2's
inference: post_nms_topk 1000 proposals, at most 100 detections through its one mask head).
The neck: ViTDet's own simple pyramid (+ pooled P6) on a ViTDet backbone, mmdet's FPN on any other.

NB: proposal selection, NMS and box decoding are not run (data-dependent; no MACs by our convention);
every RoI is pooled from the finest level (RoIAlign's output, hence the heads' cost, does not depend on
the level mmdet would assign); RoIAlign's bilinear sampling counts 0 MACs (a pooling) and its
shape-derived cost is listed in the row (`roi_align_macs_2x2`).
"""
from __future__ import annotations

import torch
from torch import nn
from torchvision.ops import roi_align

from ...errors import ZooError
from ..registry import create_model, map_shapes
from ..spec import Size
from ..stages import feature_layout, freeze_stages
from ..vitdet import ViTDet
from .heads import FPN, BoxHead, LastLevelMaxPool, MaskHead, RPNHead
from .specs import ALIASES, DETECTOR_NAMES, DETECTORS, DetectorSpec

PYRAMID_STRIDES = [4, 8, 16, 32]


class TwoStageDetector(nn.Module):
    """backbone -> neck (P2-P6) -> RPN on every level; RoIAlign on P2 -> box heads, mask heads."""

    def __init__(self, backbone: nn.Module, channels: list[int], spec: DetectorSpec):
        super().__init__()
        self.spec = spec
        self.backbone = backbone
        self.neck = LastLevelMaxPool() if isinstance(backbone, ViTDet) else FPN(channels)
        self.rpn = RPNHead(convs=spec.rpn_convs)
        self.box_heads = nn.ModuleList(BoxHead(spec.box_convs, spec.box_fcs, num_classes=spec.num_classes,
                                               class_agnostic=spec.class_agnostic, norm=spec.norm)
                                       for _ in range(spec.stages))
        self.mask_heads = nn.ModuleList(MaskHead(num_classes=spec.num_classes, norm=spec.mask_norm)
                                        for _ in range(spec.mask_head_count))

    def _rois(self, batch: int, per_image: int, like: torch.Tensor) -> torch.Tensor:
        """(batch * per_image, 5): image index, then a fixed 64 x 64 px box (values do not change the cost)."""
        index = torch.arange(batch, device=like.device, dtype=like.dtype).repeat_interleave(per_image)
        box = torch.tensor([0.0, 0.0, 64.0, 64.0], device=like.device, dtype=like.dtype)
        return torch.cat([index[:, None], box.expand(batch * per_image, 4)], dim=1)

    def forward(self, x: torch.Tensor) -> list[torch.Tensor]:
        levels = self.neck(self.backbone(x))                              # P2-P6, each (B, 256, H/s, W/s)
        outs = self.rpn(levels)
        finest, scale = levels[0], 1.0 / PYRAMID_STRIDES[0]
        box_rois = self._rois(x.shape[0], self.spec.proposals, finest)
        mask_rois = self._rois(x.shape[0], self.spec.mask_rois, finest)
        first_mask_stage = len(self.box_heads) - len(self.mask_heads)     # mask heads follow the last stages
        for stage, box_head in enumerate(self.box_heads):
            outs += box_head(roi_align(finest, box_rois, self.spec.box_roi, scale, 0, True))    # (B*1000, 256, 7, 7)
            if stage >= first_mask_stage:      # NB: the pooled RoIs stay unnamed, so freed once the head has read them
                mask_head = self.mask_heads[stage - first_mask_stage]                # on (B*100, 256, 14, 14)
                outs.append(mask_head(roi_align(finest, mask_rois, self.spec.mask_roi, scale, 0, True)))
        return outs


def _hint(strides: list[int]) -> str:
    """What to use instead, for the backbone's kind of feature maps."""
    if len(set(strides)) == 1:
        return "a plain ViT: use vitdet_*"
    extra = [s for s in strides if s not in PYRAMID_STRIDES]
    if extra and set(PYRAMID_STRIDES) <= set(strides):
        return (f"its map at stride {', '.join(map(str, extra))} is not a pyramid level: use a registry backbone "
                f"with exactly these four, e.g. resnet50, convnext_t, swin_t")
    return "use a registry backbone with these four levels, e.g. resnet50, convnext_t, swin_t"


def create_detector(model: str, detector: str, img_size: Size, device=None, dtype=None,
                    frozen_stages: int | None = None, **overrides) -> TwoStageDetector:
    """`detector` (a DETECTORS name) on the registry backbone `model` at `img_size` (overrides: to create_model)."""
    detector = ALIASES.get(detector, detector)
    if detector not in DETECTORS:
        raise ZooError(f"unknown detector {detector!r}; expected one of {', '.join(DETECTOR_NAMES)}")
    backbone = create_model(model, img_size=img_size, device=device, dtype=dtype, features=True, **overrides)
    strides, _ = feature_layout(backbone)
    if strides != PYRAMID_STRIDES:
        raise ZooError(f"{model}: a detector needs maps at strides 4, 8, 16, 32; its features are at strides "
                       f"{strides} ({_hint(strides)})")
    if frozen_stages is not None:
        freeze_stages(backbone, frozen_stages)
    channels = [c for c, _, _ in map_shapes(backbone, img_size)]
    with torch.device(device or "cpu"):
        net = TwoStageDetector(backbone, channels, DETECTORS[detector])
    net.eval()
    return net.to(dtype=dtype) if dtype is not None else net


def roi_align_macs_2x2(spec: DetectorSpec) -> int:
    """Per image: RoIAlign's bilinear multiply-adds if each bin took 2 x 2 samples (4 neighbours each):
    16 per pooled element; with mmdet's sampling_ratio=0 the count depends on each RoI's size."""
    elements = 256 * (spec.stages * spec.proposals * spec.box_roi ** 2 + spec.mask_head_count * spec.mask_rois
                      * spec.mask_roi ** 2)
    return 16 * elements


PARTS = ("backbone", "neck", "rpn", "box_heads", "mask_heads")


def detector_fields(macs_by_module: dict[str, int], net: TwoStageDetector) -> dict:
    """Row fields: MACs per part (per image), the backbone's share, params, the RoI counts and what is not counted."""
    macs = {part: sum(m for path, m in macs_by_module.items() if path == part or path.startswith(part + "."))
            for part in PARTS}
    total = sum(macs_by_module.values())
    spec = net.spec
    return {
        "detector_macs_by_part": macs,
        "backbone_macs": macs["backbone"],
        "backbone_share": macs["backbone"] / total if total else 0.0,
        "backbone_params": sum(p.numel() for p in net.backbone.parameters()),
        "detector_rois": {"box_head": spec.proposals, "mask_head": spec.mask_rois, "stages": spec.stages,
                          **({"mask_heads": spec.mask_head_count} if spec.mask_heads is not None else {})},
        "detector_config": spec.config,
        "detector_uncounted": {"roi_align_macs_2x2": roi_align_macs_2x2(spec),
                               "nms": "not run (fixed RoI counts, as mmdet's forward_dummy)"},
    }
