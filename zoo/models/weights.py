"""Loading state dicts across resolutions: position embeddings are resampled to the model's grid."""
from __future__ import annotations

import math
from typing import Mapping

import torch
from torch import nn

from analysis.size import Size

from .vit import resample_pos_embed


def _patch_grid(model: nn.Module, patches: int) -> tuple[int, int]:
    """(H/P, W/P) of the model's position embeddings: the scratch ViT's config, timm's patch_embed,
    or else a square grid."""
    cfg = getattr(model, "cfg", None)
    grid = getattr(cfg, "grid_size", None) or getattr(getattr(model, "patch_embed", None), "grid_size", None)
    if grid is not None:
        h, w = Size.of(tuple(grid) if not isinstance(grid, int) else grid).hw
        if h * w == patches:
            return h, w
    side = math.isqrt(patches)
    if side * side != patches:
        raise ValueError(f"cannot tell the grid of a model with {patches} position tokens")
    return side, side


def load_weights(model: nn.Module, state_dict: Mapping[str, torch.Tensor], strict: bool = True,
                 old_grid: tuple[int, int] | None = None):
    """load_state_dict, after resampling `pos_embed` when the checkpoint was made at another
    resolution (e.g. a 224 checkpoint into a 384 or a 224x320 model), as the ViT paper does for
    fine-tuning. A checkpoint's grid is taken as square unless `old_grid` (its (H/P, W/P)) is given."""
    state_dict = dict(state_dict)
    target = getattr(model, "pos_embed", None)
    source = state_dict.get("pos_embed")
    if isinstance(target, torch.Tensor) and source is not None and source.shape != target.shape:
        prefix = getattr(model, "num_prefix_tokens", 1)
        new_grid = _patch_grid(model, target.shape[1] - prefix)
        state_dict["pos_embed"] = resample_pos_embed(source, new_grid, num_prefix_tokens=prefix, old_grid=old_grid)
    return model.load_state_dict(state_dict, strict=strict)
