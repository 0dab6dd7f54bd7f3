"""The Vision Transformer of Dosovitskiy et al. 2021 ("An Image is Worth 16x16 Words"), from scratch.

Exactly the paper's model (Sec. 3.1, Eq. 1-4): a PxP stride-P patch projection, a [class] token,
learnable 1-D position embeddings, pre-LN encoder blocks (MSA, then an MLP with GELU), a final
LayerNorm and a linear head on the class token. Parameter names follow timm's VisionTransformer,
so its state dicts load with strict=True. Inputs may be H x W (img_size=(H, W)); ViTFeatureMaps is
the encoder as a feature extractor (patch tokens as (B, D, H/P, W/P) maps).
"""
from __future__ import annotations

import dataclasses
import math
from typing import Sequence

import torch
import torch.nn.functional as F
from torch import nn

from analysis.size import Size

from .configs import ViTConfig  # noqa: F401  re-exported; the config is torch-free (zoo.models.configs)


class PatchEmbed(nn.Module):
    """x_p E of Eq. 1: a PxP, stride-P convolution is the linear projection of flattened patches."""

    def __init__(self, patch_size: int, in_chans: int, embed_dim: int):
        super().__init__()
        self.proj = nn.Conv2d(in_chans, embed_dim, kernel_size=patch_size, stride=patch_size)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.proj(x)                     # (B, D, H/P, W/P)
        return x.flatten(2).transpose(1, 2)  # (B, N, D)


class Attention(nn.Module):
    """Multi-head self-attention; both implementations give the same result."""

    def __init__(self, dim: int, num_heads: int, qkv_bias: bool, impl: str):
        super().__init__()
        self.num_heads = num_heads
        self.head_dim = dim // num_heads
        self.scale = self.head_dim**-0.5
        self.impl = impl
        self.qkv = nn.Linear(dim, 3 * dim, bias=qkv_bias)
        self.proj = nn.Linear(dim, dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        B, N, C = x.shape
        qkv = self.qkv(x).reshape(B, N, 3, self.num_heads, self.head_dim).permute(2, 0, 3, 1, 4)
        q, k, v = qkv.unbind(0)                              # each (B, h, N, hd)
        if self.impl == "sdpa":
            x = F.scaled_dot_product_attention(q, k, v)      # (B, h, N, hd)
        else:
            attn = (q * self.scale) @ k.transpose(-2, -1)    # (B, h, N, N)
            x = attn.softmax(dim=-1) @ v                     # (B, h, N, hd)
        x = x.transpose(1, 2).reshape(B, N, C)               # (B, N, D)
        return self.proj(x)


class Mlp(nn.Module):
    def __init__(self, dim: int, hidden: int):
        super().__init__()
        self.fc1 = nn.Linear(dim, hidden)
        self.act = nn.GELU()
        self.fc2 = nn.Linear(hidden, dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc2(self.act(self.fc1(x)))               # (B, N, D) -> (B, N, 4D) -> (B, N, D)


class Block(nn.Module):
    """Eq. 2-3: z' = MSA(LN(z)) + z;  z = MLP(LN(z')) + z'."""

    def __init__(self, cfg: ViTConfig):
        super().__init__()
        self.norm1 = nn.LayerNorm(cfg.embed_dim, eps=cfg.norm_eps)
        self.attn = Attention(cfg.embed_dim, cfg.num_heads, cfg.qkv_bias, cfg.attn_impl)
        self.norm2 = nn.LayerNorm(cfg.embed_dim, eps=cfg.norm_eps)
        self.mlp = Mlp(cfg.embed_dim, cfg.mlp_dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.attn(self.norm1(x))
        return x + self.mlp(self.norm2(x))


class VisionTransformer(nn.Module):
    def __init__(self, cfg: ViTConfig, patch_embed: nn.Module | None = None):
        """`patch_embed` replaces the patch projection (the hybrid feeds CNN features through it);
        it must map (B, C, H, W) to (B, (H/P)(W/P), D)."""
        super().__init__()
        self.cfg = cfg
        self.patch_embed = patch_embed or PatchEmbed(cfg.patch_size, cfg.in_chans, cfg.embed_dim)
        if cfg.pool == "token":
            self.cls_token = nn.Parameter(torch.zeros(1, 1, cfg.embed_dim))
        self.pos_embed = nn.Parameter(torch.randn(1, cfg.num_tokens, cfg.embed_dim) * 0.02)
        self.blocks = nn.Sequential(*[Block(cfg) for _ in range(cfg.depth)])
        self.norm = nn.LayerNorm(cfg.embed_dim, eps=cfg.norm_eps)
        head_in = cfg.embed_dim
        if cfg.pre_logits_dim:
            self.pre_logits = nn.Sequential()
            self.pre_logits.add_module("fc", nn.Linear(cfg.embed_dim, cfg.pre_logits_dim))
            self.pre_logits.add_module("act", nn.Tanh())
            head_in = cfg.pre_logits_dim
        self.head = nn.Linear(head_in, cfg.num_classes) if cfg.num_classes else nn.Identity()
        self.num_classes = cfg.num_classes            # timm's attribute: the head's classes, 0 for none
        self._init_weights()

    def _init_weights(self):
        if self.pos_embed.is_meta:
            return
        nn.init.trunc_normal_(self.pos_embed, std=0.02)
        if self.cfg.pool == "token":
            nn.init.normal_(self.cls_token, std=1e-6)
        for m in self.modules():
            if isinstance(m, nn.Linear):
                nn.init.trunc_normal_(m.weight, std=0.02)
                nn.init.zeros_(m.bias)

    @property
    def num_prefix_tokens(self) -> int:
        return self.cfg.num_prefix_tokens

    def _check_input(self, x: torch.Tensor) -> None:
        expected, got = self.cfg.img_size.hw, tuple(x.shape[-2:])
        if got != expected:
            raise ValueError(f"input is {got}, model was built for {expected}; build it with "
                             f"img_size={Size(*got).compact} to resample the position embeddings")

    def _embed(self, x: torch.Tensor) -> torch.Tensor:
        self._check_input(x)
        x = self.patch_embed(x)                                       # (B, N, D)
        if self.cfg.pool == "token":
            cls = self.cls_token.expand(x.shape[0], -1, -1)           # (B, 1, D)
            x = torch.cat([cls, x], dim=1)                            # (B, N+1, D)
        return x + self.pos_embed

    def forward_features(self, x: torch.Tensor) -> torch.Tensor:
        x = self.blocks(self._embed(x))
        return self.norm(x)                                           # (B, N+1, D)

    def forward_feature_maps(self, x: torch.Tensor, indices: int | Sequence[int] = (-1,)) -> list[torch.Tensor]:
        """Patch tokens of the blocks in `indices` as (B, D, H/P, W/P) maps, one per index.

        `indices` as timm's forward_intermediates: a sequence of block indices (negative from the
        end), or an int n for the last n blocks. Each output goes through the final norm (timm's
        norm=True) and drops the class token; blocks after the last index are not run.
        """
        take = take_indices(len(self.blocks), indices)
        x = self._embed(x)                                            # (B, N+1, D)
        maps, (h, w) = [], self.cfg.grid_size
        for i, block in enumerate(self.blocks[:max(take) + 1]):
            x = block(x)
            if i in take:
                tokens = self.norm(x)[:, self.num_prefix_tokens:]     # (B, N, D)
                maps.append(tokens.transpose(1, 2).reshape(x.shape[0], -1, h, w))  # (B, D, H/P, W/P)
        return maps

    def forward_head(self, x: torch.Tensor) -> torch.Tensor:
        x = x[:, 0] if self.cfg.pool == "token" else x.mean(dim=1)    # (B, D)
        if self.cfg.pre_logits_dim:
            x = self.pre_logits(x)                                    # (B, D_pre)
        return self.head(x)                                           # (B, classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.forward_head(self.forward_features(x))


def take_indices(depth: int, indices: int | Sequence[int]) -> list[int]:
    """Block indices, as timm's feature_take_indices: an int n is the last n blocks."""
    if isinstance(indices, int):
        if not 0 < indices <= depth:
            raise ValueError(f"cannot take the last {indices} of {depth} blocks")
        return list(range(depth - indices, depth))
    taken = [i % depth if -depth <= i < depth else None for i in indices]
    if not taken or None in taken:
        raise ValueError(f"block indices {tuple(indices)} out of range for {depth} blocks")
    return sorted(set(taken))


class ViTFeatureMaps(VisionTransformer):
    """The ViT as a feature extractor: forward returns `forward_feature_maps(x, indices)`, a list
    of (B, D, H/P, W/P) maps; by default one, the last block's patch tokens after the final norm
    (class token dropped). Built without a head; blocks after the last index are dropped.

    NB: parameter names are the classifier's, so a classifier's state dict loads with strict=False
    (its head, and any dropped blocks, are left over).
    """

    def __init__(self, cfg: ViTConfig, patch_embed: nn.Module | None = None,
                 indices: int | Sequence[int] = (-1,)):
        if cfg.num_classes or cfg.pre_logits_dim:
            cfg = dataclasses.replace(cfg, num_classes=0, pre_logits_dim=None)
        super().__init__(cfg, patch_embed)
        self.indices = take_indices(cfg.depth, indices)
        self.blocks = self.blocks[:max(self.indices) + 1]

    def forward(self, x: torch.Tensor) -> list[torch.Tensor]:
        return self.forward_feature_maps(x, self.indices)


def resample_pos_embed(pos_embed: torch.Tensor, new_grid: tuple[int, int], num_prefix_tokens: int = 1,
                       old_grid: tuple[int, int] | None = None, interpolation: str = "bicubic",
                       antialias: bool = True) -> torch.Tensor:
    """Resample (1, prefix + h*w, D) position embeddings to a new patch grid by 2-D interpolation,
    keeping the prefix (class/distillation) tokens as they are: the paper's recipe for fine-tuning
    at a higher resolution (Sec. 3.2). Bicubic with antialias matches timm's checkpoint_filter_fn."""
    prefix, grid = pos_embed[:, :num_prefix_tokens], pos_embed[:, num_prefix_tokens:]
    if old_grid is None:
        side = math.isqrt(grid.shape[1])
        if side * side != grid.shape[1]:
            raise ValueError(f"{grid.shape[1]} position tokens are not a square grid; pass old_grid")
        old_grid = (side, side)
    if tuple(old_grid) == tuple(new_grid):
        return pos_embed
    dim = grid.shape[-1]
    grid = grid.float().reshape(1, *old_grid, dim).permute(0, 3, 1, 2)           # (1, D, h, w)
    grid = F.interpolate(grid, size=tuple(new_grid), mode=interpolation, antialias=antialias)
    grid = grid.permute(0, 2, 3, 1).reshape(1, -1, dim).to(pos_embed.dtype)      # (1, h'w', D)
    return torch.cat([prefix, grid], dim=1)
