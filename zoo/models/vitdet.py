"""ViTDet (Li et al. 2022, "Exploring Plain Vision Transformer Backbones for Object Detection",
arXiv:2203.16527), from scratch: the plain ViT as detectron2's projects/ViTDet builds it.

Blocks run 14x14 window attention (the token grid padded to a multiple of the window) except a few
global blocks evenly spaced (Sec. 3: B 2,5,8,11; L 5,11,17,23; H 7,15,23,31, detectron2's
configs/common/models/mask_rcnn_vitdet.py and COCO/mask_rcnn_vitdet_{l,h}_*.py); every attention
adds decomposed relative position (MViTv2's, Sec. 4.1: rel_h[q, k_h] + rel_w[q, k_w], each an
einsum of q with a table); the absolute position embedding of the 224 pre-training grid (with its
class-token slot) is interpolated to the grid. The simple feature pyramid (Sec. 3, Fig. 2c) builds
strides 4, 8, 16, 32 from the stride-16 map with deconvolutions and a max pool, then 1x1 and 3x3
convs to 256 channels with channel LayerNorm. Parameter names follow detectron2 and timm's SAM ViT
(`timm.models.vision_transformer_sam.Block`), so a block's state dict loads either way.
"""
from __future__ import annotations


import torch
import torch.nn.functional as F
from torch import nn

from .configs import VITDET_VARIANTS, ViTDetConfig, vitdet_config  # noqa: F401  re-exported

PYRAMID_SCALES = (4.0, 2.0, 1.0, 0.5)     # strides 4, 8, 16, 32 from the stride-16 map


def rel_pos_table(rel_pos: torch.Tensor, q_size: int, k_size: int) -> torch.Tensor:
    """(q_size, k_size, head_dim) relative-position embeddings for every query/key offset, the table
    linearly resized when it was made for another size (detectron2's get_rel_pos)."""
    max_dist = 2 * max(q_size, k_size) - 1
    if rel_pos.shape[0] != max_dist:
        rel_pos = F.interpolate(rel_pos.T[None], size=max_dist, mode="linear")[0].T
    q = torch.arange(q_size, device=rel_pos.device)[:, None] * max(k_size / q_size, 1.0)
    k = torch.arange(k_size, device=rel_pos.device)[None, :] * max(q_size / k_size, 1.0)
    offsets = (q - k) + (k_size - 1) * max(q_size / k_size, 1.0)
    return rel_pos[offsets.long()]


def decomposed_rel_pos(q: torch.Tensor, rel_pos_h: torch.Tensor, rel_pos_w: torch.Tensor,
                       size: tuple[int, int]) -> torch.Tensor:
    """(B*heads, hw, hw) additive bias rel_h + rel_w (MViTv2 eq. 4): q (B*heads, hw, hd)."""
    h, w = size
    table_h, table_w = rel_pos_table(rel_pos_h, h, h), rel_pos_table(rel_pos_w, w, w)  # (h, h, hd), (w, w, hd)
    r_q = q.reshape(q.shape[0], h, w, q.shape[-1])                                    # (B*heads, h, w, hd)
    rel_h = torch.einsum("bhwc,hkc->bhwk", r_q, table_h)                              # (B*heads, h, w, h)
    rel_w = torch.einsum("bhwc,wkc->bhwk", r_q, table_w)                              # (B*heads, h, w, w)
    return (rel_h[:, :, :, :, None] + rel_w[:, :, :, None, :]).reshape(q.shape[0], h * w, h * w)


class Attention(nn.Module):
    """Multi-head attention over a (B, h, w, D) grid with decomposed relative position."""

    def __init__(self, dim: int, num_heads: int, grid: tuple[int, int], impl: str):
        super().__init__()
        self.num_heads, self.impl = num_heads, impl
        head_dim = dim // num_heads
        self.scale = head_dim ** -0.5
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)
        self.rel_pos_h = nn.Parameter(torch.zeros(2 * grid[0] - 1, head_dim))
        self.rel_pos_w = nn.Parameter(torch.zeros(2 * grid[1] - 1, head_dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        B, h, w, D = x.shape
        qkv = self.qkv(x).reshape(B, h * w, 3, self.num_heads, -1).permute(2, 0, 3, 1, 4)
        q, k, v = qkv.reshape(3, B * self.num_heads, h * w, -1).unbind(0)   # each (B*heads, hw, hd)
        bias = decomposed_rel_pos(q, self.rel_pos_h, self.rel_pos_w, (h, w))  # (B*heads, hw, hw)
        if self.impl == "sdpa":
            x = F.scaled_dot_product_attention(q, k, v, attn_mask=bias)     # (B*heads, hw, hd)
        else:
            attn = (q * self.scale) @ k.transpose(-2, -1) + bias           # (B*heads, hw, hw)
            x = attn.softmax(dim=-1) @ v                                   # (B*heads, hw, hd)
        x = x.view(B, self.num_heads, h, w, -1).permute(0, 2, 3, 1, 4).reshape(B, h, w, D)
        return self.proj(x)


def window_partition(x: torch.Tensor, window: int) -> tuple[torch.Tensor, tuple[int, int]]:
    """(B, h, w, D) -> (B * windows, window, window, D), the grid zero-padded to a multiple of `window`."""
    B, h, w, D = x.shape
    pad_h, pad_w = (window - h % window) % window, (window - w % window) % window
    x = F.pad(x, (0, 0, 0, pad_w, 0, pad_h))
    hp, wp = h + pad_h, w + pad_w
    x = x.view(B, hp // window, window, wp // window, window, D).permute(0, 1, 3, 2, 4, 5)
    return x.reshape(-1, window, window, D), (hp, wp)


def window_unpartition(x: torch.Tensor, window: int, padded: tuple[int, int], size: tuple[int, int]) -> torch.Tensor:
    """The inverse of window_partition: (B * windows, window, window, D) -> (B, h, w, D)."""
    (hp, wp), (h, w) = padded, size
    B = x.shape[0] // (hp * wp // window // window)
    x = x.view(B, hp // window, wp // window, window, window, -1).permute(0, 1, 3, 2, 4, 5)
    return x.reshape(B, hp, wp, -1)[:, :h, :w].contiguous()


class Mlp(nn.Module):
    def __init__(self, dim: int, hidden: int):
        super().__init__()
        self.fc1, self.act, self.fc2 = nn.Linear(dim, hidden), nn.GELU(), nn.Linear(hidden, dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc2(self.act(self.fc1(x)))


class Block(nn.Module):
    """Pre-LN block; window blocks partition (with padding) around the attention only."""

    def __init__(self, cfg: ViTDetConfig, window: int):
        super().__init__()
        self.window = window
        self.norm1 = nn.LayerNorm(cfg.embed_dim, eps=cfg.norm_eps)
        self.attn = Attention(cfg.embed_dim, cfg.num_heads, (window, window) if window else cfg.grid_size,
                              cfg.attn_impl)
        self.norm2 = nn.LayerNorm(cfg.embed_dim, eps=cfg.norm_eps)
        self.mlp = Mlp(cfg.embed_dim, cfg.mlp_dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:   # (B, h, w, D)
        shortcut, x = x, self.norm1(x)
        if self.window:
            h, w = x.shape[1:3]
            x, padded = window_partition(x, self.window)
            x = window_unpartition(self.attn(x), self.window, padded, (h, w))
        else:
            x = self.attn(x)
        x = shortcut + x
        return x + self.mlp(self.norm2(x))


class LayerNorm2d(nn.LayerNorm):
    """LayerNorm over the channels of an NCHW map (detectron2's "LN" norm for convs)."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return super().forward(x.permute(0, 2, 3, 1)).permute(0, 3, 1, 2)


class SimpleFeaturePyramid(nn.Module):
    """Strides 4, 8, 16, 32 from the stride-16 map (Fig. 2c): 2x/4x deconvolutions, identity, 2x2 max
    pool; then 1x1 and 3x3 convs (no bias) to `out_dim` channels, each with channel LayerNorm."""

    def __init__(self, dim: int, out_dim: int, eps: float = 1e-6):
        super().__init__()
        self.stages = nn.ModuleList()
        for scale in PYRAMID_SCALES:
            if scale == 4.0:
                layers = [nn.ConvTranspose2d(dim, dim // 2, 2, stride=2), LayerNorm2d(dim // 2, eps=eps), nn.GELU(),
                          nn.ConvTranspose2d(dim // 2, dim // 4, 2, stride=2)]
                width = dim // 4
            elif scale == 2.0:
                layers, width = [nn.ConvTranspose2d(dim, dim // 2, 2, stride=2)], dim // 2
            elif scale == 1.0:
                layers, width = [], dim
            else:
                layers, width = [nn.MaxPool2d(2, stride=2)], dim
            layers += [nn.Conv2d(width, out_dim, 1, bias=False), LayerNorm2d(out_dim, eps=eps),
                       nn.Conv2d(out_dim, out_dim, 3, padding=1, bias=False), LayerNorm2d(out_dim, eps=eps)]
            self.stages.append(nn.Sequential(*layers))

    def forward(self, x: torch.Tensor) -> list[torch.Tensor]:   # (B, D, h, w) -> 4 x (B, out_dim, ., .)
        return [stage(x) for stage in self.stages]


class ViTDet(nn.Module):
    """The ViTDet backbone. `features=True`: forward returns the pyramid's four maps (strides 4-32);
    otherwise a classifier form (average-pooled tokens, LayerNorm, head, as MAE fine-tunes)."""

    strides = (4, 8, 16, 32)

    def __init__(self, cfg: ViTDetConfig, features: bool = False):
        super().__init__()
        self.cfg, self.features, self.in_chans = cfg, features, cfg.in_chans
        self.patch_embed = nn.Conv2d(cfg.in_chans, cfg.embed_dim, cfg.patch_size, stride=cfg.patch_size)
        self.pos_embed = nn.Parameter(torch.zeros(1, cfg.pretrain_grid ** 2 + 1, cfg.embed_dim))
        self.blocks = nn.Sequential(*[Block(cfg, cfg.window_of(i)) for i in range(cfg.depth)])
        if features:
            self.pyramid = SimpleFeaturePyramid(cfg.embed_dim, cfg.pyramid_dim, cfg.norm_eps)
        else:
            self.fc_norm = nn.LayerNorm(cfg.embed_dim, eps=cfg.norm_eps)
            self.head = nn.Linear(cfg.embed_dim, cfg.num_classes) if cfg.num_classes else nn.Identity()
            self.num_classes = cfg.num_classes        # timm's attribute: the head's classes, 0 for none
        if not self.pos_embed.is_meta:
            nn.init.trunc_normal_(self.pos_embed, std=0.02)

    def abs_pos(self, grid: tuple[int, int]) -> torch.Tensor:
        """(1, h, w, D): the pre-training grid's embedding (class slot dropped), bicubic to `grid`."""
        side = self.cfg.pretrain_grid
        table = self.pos_embed[:, 1:].reshape(1, side, side, -1).permute(0, 3, 1, 2)   # (1, D, 14, 14)
        if (side, side) != tuple(grid):
            table = F.interpolate(table, size=tuple(grid), mode="bicubic", align_corners=False)
        return table.permute(0, 2, 3, 1)

    def forward_maps(self, x: torch.Tensor) -> torch.Tensor:
        """(B, C, H, W) -> the last block's (B, D, H/16, W/16) map."""
        x = self.patch_embed(x).permute(0, 2, 3, 1)                     # (B, h, w, D)
        x = self.blocks(x + self.abs_pos(x.shape[1:3]))
        return x.permute(0, 3, 1, 2)                                    # (B, D, h, w)

    def forward(self, x: torch.Tensor):
        x = self.forward_maps(x)
        if self.features:
            return self.pyramid(x)                                      # 4 x (B, 256, H/s, W/s)
        return self.head(self.fc_norm(x.mean(dim=(2, 3))))              # (B, classes)
