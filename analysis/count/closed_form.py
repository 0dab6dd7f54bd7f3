"""Closed-form MAC and parameter counts: ViT, Swin, and the attention crossover N*.

Conventions as in op_rules (MACs of matmuls/linear/conv and attention's QK^T, AV; nothing else).
ViT: Dosovitskiy et al. 2021 (arXiv:2010.11929) Sec. 3.1, eqs. 1-4, N = HW/P^2 patches; per layer
3Nd^2 (qkv) + N^2 d (QK^T) + N^2 d (AV) + Nd^2 (out proj) + 2 N d d_mlp (MLP), N counting the
class/distillation tokens; patch embedding N_patches * 3P^2 * d; head d * classes per head. The
seed notes' worked example (ViT-B/16 at 224) gives 17,563,828,224 MACs and the textbook parameter
count 86,482,408. Swin: Liu et al. 2021 (arXiv:2103.14030) Sec. 3.2, eq. 1, W-MSA
4hwC^2 + 2M^2 hwC, MLP 8hwC^2, patch merging 4C -> 2C on hw/4 tokens; timm pads a grid to a
multiple of the window (attention runs on the padded grid) and shrinks the window to a smaller grid.
Sizes are an int (square) or (H, W): ViT patches (H/P)(W/P); Swin pads and shrinks per side.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from ..size import Size, SizeLike


def _total(parts: dict[str, int]) -> dict[str, int]:
    return {**parts, "total": sum(parts.values())}




@dataclass(frozen=True)
class ViTShape:
    """What the closed form needs of a ViT: width, depth, MLP width, patch, prefix tokens, heads out."""
    embed_dim: int
    depth: int
    mlp_dim: int
    patch_size: int
    num_prefix_tokens: int = 1     # 1 class token; 2 for DeiT's class + distillation tokens
    num_classes: int = 1000
    num_head_layers: int = 1       # DeiT-distilled has head and head_dist
    in_chans: int = 3

    def patches(self, img_size: SizeLike) -> int:
        h, w = Size.of(img_size).hw
        return (h // self.patch_size) * (w // self.patch_size)

    def tokens(self, img_size: SizeLike) -> int:
        return self.patches(img_size) + self.num_prefix_tokens


def vit_macs(vit: ViTShape, img_size: SizeLike, batch_size: int = 1) -> dict[str, int]:
    """Per-component MACs of one forward pass; keys match components.COMPONENTS."""
    d, depth, patches = vit.embed_dim, vit.depth, vit.patches(img_size)
    n = patches + vit.num_prefix_tokens
    parts = {
        "patch_embed": patches * vit.in_chans * vit.patch_size ** 2 * d,
        "attn_proj": depth * 4 * n * d * d,                 # 3Nd^2 qkv + Nd^2 output projection
        "attn_matmul": depth * 2 * n * n * d,               # N^2 d for QK^T, N^2 d for AV
        "mlp": depth * 2 * n * d * vit.mlp_dim,             # 8Nd^2 when d_mlp = 4d
        "head": vit.num_head_layers * d * vit.num_classes,
    }
    return _total({k: v * batch_size for k, v in parts.items()})


def vit_textbook_params(vit: ViTShape, img_size: SizeLike) -> dict[str, int]:
    """The seed notes' table (ex. 3.5.2): weights without the qkv/proj/MLP biases, class token, final norm."""
    d, patches = vit.embed_dim, vit.patches(img_size)
    per_layer = 3 * d * d + d * d + 2 * d * vit.mlp_dim + 2 * 2 * d
    return _total({
        "patch_embed": vit.in_chans * vit.patch_size ** 2 * d + d,
        "pos_embed": (patches + vit.num_prefix_tokens) * d,
        "blocks": vit.depth * per_layer,
        "head": vit.num_head_layers * (d * vit.num_classes + vit.num_classes),
    })


def vit_params_beyond_textbook(vit: ViTShape) -> dict[str, int]:
    """Parameters a timm-style ViT has that the textbook table leaves out, each named with its size."""
    d, depth = vit.embed_dim, vit.depth
    return {
        "qkv biases": depth * 3 * d,
        "attention output projection biases": depth * d,
        "MLP biases (fc1 + fc2)": depth * (vit.mlp_dim + d),
        "class/distillation tokens": vit.num_prefix_tokens * d,
        "final LayerNorm (weight + bias)": 2 * d,
    }


def vit_params(vit: ViTShape, img_size: SizeLike) -> int:
    return vit_textbook_params(vit, img_size)["total"] + sum(vit_params_beyond_textbook(vit).values())


@dataclass(frozen=True)
class SwinShape:
    embed_dim: int
    depths: tuple[int, ...]
    window_size: int = 7
    patch_size: int = 4
    mlp_ratio: float = 4.0
    num_classes: int = 1000
    in_chans: int = 3


def swin_macs(swin: SwinShape, img_size: SizeLike, batch_size: int = 1) -> dict[str, int]:
    """Per-component MACs of one forward pass; patch merging is reported as `other`."""
    h, w = (side // swin.patch_size for side in Size.of(img_size).hw)
    channels = swin.embed_dim
    parts = dict.fromkeys(("patch_embed", "attn_proj", "attn_matmul", "mlp", "other", "head"), 0)
    parts["patch_embed"] = h * w * swin.in_chans * swin.patch_size ** 2 * channels
    for stage, depth in enumerate(swin.depths):
        if stage > 0:                                      # merge 2x2 tokens: 4C -> 2C on (h/2)(w/2) tokens
            parts["other"] += (h // 2) * (w // 2) * 4 * channels * 2 * channels
            h, w, channels = h // 2, w // 2, channels * 2
        win_h, win_w = min(swin.window_size, h), min(swin.window_size, w)    # timm shrinks each side apart
        hw_padded = math.ceil(h / win_h) * win_h * math.ceil(w / win_w) * win_w  # attention runs padded
        parts["attn_proj"] += depth * 4 * hw_padded * channels ** 2
        parts["attn_matmul"] += depth * 2 * win_h * win_w * hw_padded * channels
        parts["mlp"] += depth * 2 * h * w * channels * int(swin.mlp_ratio * channels)
    parts["head"] = channels * swin.num_classes
    return _total({k: v * batch_size for k, v in parts.items()})


def global_attention_layer_macs(tokens: int, dim: int, mlp_ratio: float = 4.0) -> dict[str, int]:
    """One ViT layer split into the term linear in N and the quadratic attention term 2N^2 d."""
    linear = 4 * tokens * dim * dim + 2 * tokens * dim * int(mlp_ratio * dim)
    return {"linear": linear, "quadratic": 2 * tokens * tokens * dim}


def attention_crossover_tokens(dim: int, mlp_ratio: float = 4.0) -> float:
    """N* where 2N^2 d = (4 + 2 r) N d^2, i.e. N* = (2 + r) d: 6d for r = 4 (seed notes, ex. 3.5.1)."""
    return (2 + mlp_ratio) * dim
