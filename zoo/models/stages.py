"""What a feature extractor's maps are (stride, the stage or block that makes each) and frozen stages
as detectors set them (mmdetection's `frozen_stages=K`: no gradients for the stem and stages 1..K).

Stages of a hierarchical model are the modules timm's `feature_info` names at strides >= 4; the stem
is everything before the first of them (ResNet's conv1/bn1, ConvNeXt's stem, Swin's patch embedding),
and parameters between two stage modules belong to the later stage. NB: timm puts Swin's patch
merging at the start of the next stage, mmdetection at the end of the previous one.
"""
from __future__ import annotations

from torch import nn

from ..errors import ZooError
from .features import ChannelsFirst
from .vit import ViTFeatureMaps
from .vitdet import ViTDet

STEM_MAX_STRIDE = 2      # maps at stride <= 2 are the stem's (ResNet's act1, BiT's stem.conv)


def _inner(extractor: nn.Module) -> nn.Module:
    return extractor.model if isinstance(extractor, ChannelsFirst) else extractor


def feature_layout(extractor: nn.Module) -> tuple[list[int], list[str]]:
    """(strides, the module or block producing each map) of a built extractor, in output order."""
    if isinstance(extractor, ViTDet):
        return list(extractor.strides), [f"pyramid.stages.{i}" for i in range(len(extractor.strides))]
    if isinstance(extractor, ViTFeatureMaps):
        return [extractor.cfg.patch_size] * len(extractor.indices), [f"blocks.{i}" for i in extractor.indices]
    info = getattr(_inner(extractor), "feature_info", None)
    if info is None:
        raise ZooError(f"{type(extractor).__name__} does not say which stages its maps come from")
    return list(info.reduction()), list(info.module_name())


def _stage_modules(extractor: nn.Module) -> list[str]:
    """Names of the stage modules (every feature_info entry at stride > 2, selected or not)."""
    info = getattr(_inner(extractor), "feature_info", None)
    if info is None or isinstance(extractor, (ViTDet, ViTFeatureMaps)):
        raise ZooError("--frozen-stages: only hierarchical backbones (CNNs, Swin) have stages to freeze; "
                       "ViT-like models have blocks")
    return [entry["module"] for entry in info.info if entry["reduction"] > STEM_MAX_STRIDE]


def stage_of_params(extractor: nn.Module) -> dict[str, int]:
    """Each parameter's stage: 0 the stem, 1.. the stages; parameters after the last stage get len + 1."""
    stages, current, found = _stage_modules(extractor), 0, {}
    for name, _ in _inner(extractor).named_parameters():
        inside = [i for i, module in enumerate(stages, start=1)
                  if name.startswith((module + ".", module.replace(".", "_") + "."))]
        if inside:
            current = inside[0]
            found[name] = current
        else:                    # before the first stage: the stem; between two: the later one
            found[name] = current + 1 if current else 0
    return found


def freeze_stages(extractor: nn.Module, frozen: int) -> int:
    """requires_grad False for the stem and stages 1..`frozen` (-1: none, as mmdetection's frozen_stages=-1);
    returns how many parameters it froze."""
    stages = len(_stage_modules(extractor))
    if not -1 <= frozen <= stages:
        raise ZooError(f"--frozen-stages {frozen}: this backbone has a stem and {stages} stages (-1..{stages})")
    params = dict(_inner(extractor).named_parameters())
    count = 0
    for name, stage in stage_of_params(extractor).items():
        if stage <= frozen:
            params[name].requires_grad_(False)
            count += params[name].numel()
    return count
