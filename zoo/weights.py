"""Loading state dicts across resolutions: position embeddings are resampled to the model's grid."""
from __future__ import annotations

from typing import Mapping

import torch
from torch import nn

from .vit import resample_pos_embed


def load_weights(model: nn.Module, state_dict: Mapping[str, torch.Tensor], strict: bool = True):
    """load_state_dict, after resampling `pos_embed` when the checkpoint was made at another
    resolution (e.g. a 224 checkpoint into a 384 model), as the ViT paper does for fine-tuning."""
    state_dict = dict(state_dict)
    target = getattr(model, "pos_embed", None)
    source = state_dict.get("pos_embed")
    if isinstance(target, torch.Tensor) and source is not None and source.shape != target.shape:
        prefix = getattr(model, "num_prefix_tokens", 1)
        side = int(round((target.shape[1] - prefix) ** 0.5))
        state_dict["pos_embed"] = resample_pos_embed(source, (side, side), num_prefix_tokens=prefix)
    return model.load_state_dict(state_dict, strict=strict)
