"""Closed-form MACs of ViTDet (Li et al. 2022, arXiv:2203.16527) with its simple feature pyramid: the independent
figures tests/test_vitdet.py checks the counter against (a test oracle: nothing in zoo or analysis runs it).

Conventions as in analysis.count.op_rules. Grid h x w = H/P x W/P, N = hw tokens, width d, MLP width m. A window
block (window s) runs its projections and attention on the grid zero-padded to multiples of s,
N_p = ceil(h/s)s ceil(w/s)s tokens: 4 N_p d^2 (qkv, out) + 2 N_p s^2 d (QK^T, AV) + 2 N_p s d
(decomposed relative position: one einsum of q with an s-long table per axis, MViTv2 eq. 4); a
global block the same with N and h x w in place of N_p and s x s: 4 N d^2 + 2 N^2 d + N(h + w) d.
The MLP runs unpadded, 2 N d m. Patch embedding N 3P^2 d. Pyramid (Fig. 2c; a transposed conv costs
each input element C_out k^2): stride 4: N d (d/2) 4 + 4N (d/2)(d/4) 4, stride 8: N d (d/2) 4, then
per level of n_l tokens and c_l channels a 1x1 conv n_l c_l c and a 3x3 conv 9 n_l c^2 (c = 256).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from analysis.count.closed_form import _total
from analysis.size import Size


@dataclass(frozen=True)
class ViTDetShape:
    embed_dim: int
    depth: int
    num_heads: int
    global_blocks: tuple[int, ...]
    window_size: int = 14
    patch_size: int = 16
    mlp_dim: int | None = None      # 4d when None
    pyramid_dim: int = 256
    in_chans: int = 3


def vitdet_macs(net: ViTDetShape, img_size: int | tuple[int, int], features: bool = True,
                num_classes: int = 1000, batch_size: int = 1) -> dict[str, int]:
    """Per-component MACs of one forward; `features`: the pyramid (as `conv`), else the classifier head."""
    d, s, c = net.embed_dim, net.window_size, net.pyramid_dim
    m = net.mlp_dim or 4 * d
    h, w = (side // net.patch_size for side in Size.of(img_size).hw)
    n = h * w
    padded = math.ceil(h / s) * s * math.ceil(w / s) * s
    parts = dict.fromkeys(("patch_embed", "attn_proj", "attn_matmul", "mlp", "conv", "head"), 0)
    parts["patch_embed"] = n * net.in_chans * net.patch_size ** 2 * d
    for block in range(net.depth):
        if block in net.global_blocks:
            parts["attn_proj"] += 4 * n * d * d
            parts["attn_matmul"] += 2 * n * n * d + n * (h + w) * d
        else:
            parts["attn_proj"] += 4 * padded * d * d
            parts["attn_matmul"] += 2 * padded * s * s * d + padded * 2 * s * d
        parts["mlp"] += 2 * n * d * m
    if features:
        deconvs = n * d * (d // 2) * 4 + 4 * n * (d // 2) * (d // 4) * 4 + n * d * (d // 2) * 4
        levels = [(16 * n, d // 4), (4 * n, d // 2), (n, d), ((h // 2) * (w // 2), d)]   # (tokens, channels)
        parts["conv"] = deconvs + sum(tokens * ch * c + 9 * tokens * c * c for tokens, ch in levels)
    else:
        parts["head"] = d * num_classes
    return _total({k: v * batch_size for k, v in parts.items()})


def vitdet_params(net: ViTDetShape, img_size: int | tuple[int, int], features: bool = True,
                  num_classes: int = 1000, pretrain_grid: int = 14) -> int:
    """Parameters: relative-position tables are (2s - 1) x head_dim per axis in window blocks and
    (2h - 1), (2w - 1) in global ones; the position embedding keeps the 224 grid and class slot."""
    d, s, c = net.embed_dim, net.window_size, net.pyramid_dim
    m, hd = net.mlp_dim or 4 * d, net.embed_dim // net.num_heads
    h, w = (side // net.patch_size for side in Size.of(img_size).hw)
    total = net.in_chans * net.patch_size ** 2 * d + d + (pretrain_grid ** 2 + 1) * d
    for block in range(net.depth):
        rel = (2 * h - 1 + 2 * w - 1) if block in net.global_blocks else 2 * (2 * s - 1)
        total += 4 * d + (3 * d * d + 3 * d) + (d * d + d) + rel * hd + (d * m + m) + (m * d + d)
    if not features:
        return total + 2 * d + d * num_classes + num_classes
    deconvs = (d * (d // 2) * 4 + d // 2) + d + (d // 2 * (d // 4) * 4 + d // 4) + (d * (d // 2) * 4 + d // 2)
    convs = sum(ch * c + 2 * c + 9 * c * c + 2 * c for ch in (d // 4, d // 2, d, d))
    return total + deconvs + convs
