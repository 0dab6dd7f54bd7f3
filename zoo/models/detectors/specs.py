"""The detectors as data (no torch): their heads as the mmdetection configs behind Swin's and ConvNeXt's
published detection tables define them, and the fixed RoI counts mmdetection's get_flops runs them with."""
from __future__ import annotations

from dataclasses import dataclass

CONVNEXT_CONFIGS = "facebookresearch/ConvNeXt object_detection/configs"


@dataclass(frozen=True)
class DetectorSpec:
    name: str
    stages: int                  # box heads (and mask heads) in sequence: 1, or Cascade's 3
    box_convs: int               # 3x3 conv-BN-ReLU layers of each box head before its fcs
    box_fcs: int                 # fc layers of 1024
    config: str                  # where the heads are defined
    proposals: int = 1000        # RoIs per image through each box head
    mask_rois: int = 100         # RoIs per image through each mask head
    num_classes: int = 80        # COCO
    box_roi: int = 7
    mask_roi: int = 14


DETECTORS = {
    "maskrcnn": DetectorSpec("maskrcnn", 1, 0, 2, f"{CONVNEXT_CONFIGS}/_base_/models/mask_rcnn_convnext_fpn.py "
                                                  "(Shared2FCBBoxHead, FCNMaskHead)"),
    "cascade_maskrcnn": DetectorSpec("cascade_maskrcnn", 3, 4, 1,
                                     f"{CONVNEXT_CONFIGS}/convnext/cascade_mask_rcnn_convnext_tiny_patch4_window7_"
                                     "mstrain_480-800_giou_4conv1f_adamw_3x_coco_in1k.py (3 x ConvFCBBoxHead 4conv1fc, "
                                     "3 x FCNMaskHead: mmdet's CascadeRoIHead repeats one mask head per stage)"),
}
