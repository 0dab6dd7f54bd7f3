"""The detectors as data (no torch): their heads as the configs behind the published detection tables define
them (the mmdetection configs of Swin's and ConvNeXt's tables; detectron2's ViTDet configs), the fixed RoI
counts mmdetection's get_flops and detectron2's inference run them with, and which recipe a name means on
which backbone (`resolve_detector`)."""
from __future__ import annotations

from dataclasses import dataclass

CONVNEXT_CONFIGS = "facebookresearch/ConvNeXt object_detection/configs"
DETECTRON2 = "facebookresearch/detectron2@02b5c4e"


@dataclass(frozen=True)
class DetectorSpec:
    name: str
    stages: int                  # box heads in sequence: 1, or Cascade's 3
    box_convs: int               # 3x3 conv-norm-ReLU layers of each box head before its fcs
    box_fcs: int                 # fc layers of 1024
    config: str                  # where the heads are defined
    proposals: int = 1000        # RoIs per image through each box head
    mask_rois: int = 100         # RoIs per image through each mask head
    num_classes: int = 80        # COCO
    box_roi: int = 7
    mask_roi: int = 14
    rpn_convs: int = 1           # 3x3 conv + ReLU layers of the RPN head (detectron2's ViTDet: 2)
    norm: str = "bn"             # the box head convs' norm: mmdet's SyncBN ("bn") or detectron2's channel LN ("ln")
    mask_norm: str | None = None     # the mask head convs' norm (mmdet: none; ViTDet: "ln")
    mask_heads: int | None = None    # mask heads (on the last stages); None = one per stage (mmdet's cascade)
    class_agnostic: bool = False     # box deltas: 4 per RoI instead of 4 per class

    @property
    def mask_head_count(self) -> int:
        return self.stages if self.mask_heads is None else self.mask_heads


VITDET_HEADS = ("StandardRPNHead conv_dims=[-1, -1] (2 convs), FastRCNNConvFCHead 4conv1fc conv_norm='LN', "
                "MaskRCNNConvUpsampleHead conv_norm='LN'")
DETECTORS = {
    "maskrcnn": DetectorSpec("maskrcnn", 1, 0, 2, f"{CONVNEXT_CONFIGS}/_base_/models/mask_rcnn_convnext_fpn.py "
                                                  "(Shared2FCBBoxHead, FCNMaskHead)"),
    "cascade_maskrcnn": DetectorSpec("cascade_maskrcnn", 3, 4, 1,
                                     f"{CONVNEXT_CONFIGS}/convnext/cascade_mask_rcnn_convnext_tiny_patch4_window7_"
                                     "mstrain_480-800_giou_4conv1f_adamw_3x_coco_in1k.py (3 x ConvFCBBoxHead 4conv1fc, "
                                     "3 x FCNMaskHead: mmdet's CascadeRoIHead repeats one mask head per stage)"),
    "vitdet_maskrcnn": DetectorSpec("vitdet_maskrcnn", 1, 4, 1,
                                    f"{DETECTRON2} configs/common/models/mask_rcnn_vitdet.py ({VITDET_HEADS})",
                                    rpn_convs=2, norm="ln", mask_norm="ln"),
    "vitdet_cascade_maskrcnn": DetectorSpec("vitdet_cascade_maskrcnn", 3, 4, 1,
                                            f"{DETECTRON2} projects/ViTDet/configs/COCO/cascade_mask_rcnn_vitdet_b_"
                                            f"100ep.py (CascadeROIHeads: 3 x FastRCNNConvFCHead 4conv1fc LN with "
                                            f"class-agnostic boxes, one MaskRCNNConvUpsampleHead LN after the last "
                                            f"stage; RPN as mask_rcnn_vitdet.py: 2 convs)",
                                            rpn_convs=2, norm="ln", mask_norm="ln", mask_heads=1, class_agnostic=True),
}
# --detector names that are not a DetectorSpec's own: the mmdetection heads asked for by name on any backbone
ALIASES = {"mmdet_maskrcnn": "maskrcnn", "mmdet_cascade_maskrcnn": "cascade_maskrcnn"}
# a backbone family's own recipe: what a bare maskrcnn / cascade_maskrcnn means on it
OWN_RECIPE = {"vitdet": {"maskrcnn": "vitdet_maskrcnn", "cascade_maskrcnn": "vitdet_cascade_maskrcnn"}}
DETECTOR_NAMES = (*DETECTORS, *ALIASES)


def resolve_detector(model: str, name: str) -> str:
    """The DETECTORS key a --detector name means on `model`: a ViTDet backbone takes detectron2's ViTDet heads
    for maskrcnn / cascade_maskrcnn (the recipe behind its published AP); mmdet_* names the Swin/ConvNeXt
    (mmdetection) heads on any backbone; every other name means itself."""
    if name in ALIASES:
        return ALIASES[name]
    own = next((names for family, names in OWN_RECIPE.items() if model.startswith(family)), {})
    return own.get(name, name)
