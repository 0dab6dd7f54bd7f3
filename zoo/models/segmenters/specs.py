"""The segmenters as data (no torch): UperNet as the mmsegmentation 0.x configs behind Swin's and ConvNeXt's
published ADE20K tables define it, and mmseg's semantic FPN (configs/sem_fpn/). Which published row a count
shows: zoo.models.segmenters.published."""
from __future__ import annotations

from dataclasses import dataclass

CONVNEXT_SEG = "facebookresearch/ConvNeXt semantic_segmentation"
MMSEG = "open-mmlab/mmsegmentation"


@dataclass(frozen=True)
class SegmenterSpec:
    name: str
    config: str                             # where the heads are defined
    channels: int = 512                     # UPerHead `channels`: PPM, laterals, FPN outputs, bottlenecks
    pool_scales: tuple = (1, 2, 3, 6)       # PPM adaptive-average-pool output sides, on the last map
    aux_channels: int = 256                 # FCNHead `channels` (one 3x3 conv-BN-ReLU, concat_input=False)
    aux_index: int = 2                      # the map the auxiliary head reads (stage 3, stride 16)
    num_classes: int = 150                  # ADE20K
    dropout: float = 0.1                    # before each head's 1x1 classifier (Dropout2d)
    vit_neck_scales: tuple = (4.0, 2.0, 1.0, 0.5)   # plain ViTs: MultiLevelNeck resizes its four maps by these
    decode: str = "upernet"                 # the decode head: UPerHead, or "fpn": mmseg's FPN neck + FPNHead
    neck_channels: int = 256                # decode "fpn": the FPN neck's out_channels
    auxiliary: bool = True                  # an FCNHead in training (mmseg's fpn_r50.py has none)


SEGMENTERS = {
    "upernet": SegmenterSpec(
        "upernet",
        f"{MMSEG} configs/_base_/models/upernet_swin.py = {CONVNEXT_SEG}/configs/_base_/models/upernet_convnext.py "
        "(UPerHead: PPM 1,2,3,6 + FPN, 512 channels, BN+ReLU, fpn_bottleneck; FCNHead aux on stage 3: 256 "
        "channels, 1 conv; 150 classes in the *_ade20k configs)"),
    "sem_fpn": SegmenterSpec(
        "sem_fpn",
        f"{MMSEG} configs/_base_/models/fpn_r50.py + configs/sem_fpn/fpn_r50_512x512_160k_ade20k.py (neck FPN: 1x1 "
        "laterals and 3x3 convs to 256 channels, with bias, no norm; FPNHead: feature_strides 4-32, 128 channels, "
        "BN+ReLU, dropout 0.1, 150 classes; no auxiliary head)",
        channels=128, decode="fpn", auxiliary=False),
}


def vit_levels(depth: int) -> tuple[int, ...]:
    """The four blocks a plain ViT hands UperNet: the last of each quarter (mmseg's upernet_vit-b16_mln.py takes
    blocks 2, 5, 8, 11 of ViT-B's 12)."""
    return tuple(depth * q // 4 - 1 for q in (1, 2, 3, 4))
