"""Read the closed-form inputs (ViTShape, SwinShape) off a built model, so any size can be checked."""
from __future__ import annotations

from torch import nn

from .closed_form import SwinShape, ViTShape


def _first(x):
    return x[0] if isinstance(x, (tuple, list)) else x


def vit_shape_of(model: nn.Module, patch_size: int | None = None) -> ViTShape:
    """A timm-style ViT (scratch ViT, DeiT): patch_embed.proj, blocks[i].mlp.fc1, head(s).

    For the hybrid, pass the stem's total stride as `patch_size` (its proj is a 1x1 conv); the
    closed form then holds for everything but the patch embedding (a CNN stem, not a closed form).
    """
    block = model.blocks[0]
    heads = [m for n, m in model.named_children() if n.startswith("head") and isinstance(m, nn.Linear)]
    return ViTShape(embed_dim=model.patch_embed.proj.out_channels, depth=len(model.blocks),
                    mlp_dim=block.mlp.fc1.out_features, patch_size=patch_size or _first(model.patch_embed.proj.kernel_size),
                    num_prefix_tokens=int(model.num_prefix_tokens), num_classes=heads[0].out_features,
                    num_head_layers=len(heads), in_chans=model.patch_embed.proj.in_channels)


def swin_shape_of(model: nn.Module, window_size: int = 7) -> SwinShape:
    """timm's SwinTransformer; `window_size` is the configured one (timm shrinks it per stage)."""
    block = model.layers[0].blocks[0]
    dim = model.patch_embed.proj.out_channels
    return SwinShape(embed_dim=dim, depths=tuple(len(layer.blocks) for layer in model.layers),
                     window_size=window_size, patch_size=_first(model.patch_embed.proj.kernel_size),
                     mlp_ratio=block.mlp.fc1.out_features / dim, num_classes=model.head.fc.out_features,
                     in_chans=model.patch_embed.proj.in_channels)
