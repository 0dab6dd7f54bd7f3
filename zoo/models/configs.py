"""The scratch models' configs as plain data (no torch): the ViT of Dosovitskiy et al. 2021 (zoo.models.vit)
and ViTDet (Li et al. 2022, zoo.models.vitdet); specs and the catalog hold them without building anything."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from analysis.size import Size


@dataclass(frozen=True)
class ViTConfig:
    img_size: Size | int | tuple[int, int] = 224   # a Size, a side or (H, W); each side a multiple of patch_size
    patch_size: int = 16         # P: each token is one PxP patch (N = HW / P^2)
    embed_dim: int = 768         # D: token width through the whole encoder
    depth: int = 12              # L: number of encoder blocks
    num_heads: int = 12          # heads of each MSA; head_dim = D / heads
    mlp_ratio: float = 4.0       # MLP hidden = ratio * D (the paper's "MLP size": 3072 for B)
    in_chans: int = 3
    num_classes: int = 1000      # 0 gives the pooled features (no head)
    pool: Literal["token", "gap"] = "token"  # class token, or global average pooling (App. D.3)
    pre_logits_dim: int | None = None  # pre-training head: one tanh hidden layer (Sec. 3.1)
    attn_impl: Literal["sdpa", "math"] = "sdpa"  # fused kernel, or explicit QK^T, softmax, AV
    qkv_bias: bool = True
    norm_eps: float = 1e-6       # timm's and big_vision's LayerNorm epsilon

    def __post_init__(self):
        object.__setattr__(self, "img_size", Size.of(self.img_size))
        if any(side % self.patch_size for side in self.img_size.hw):
            raise ValueError(f"img_size {self.img_size.label} is not a multiple of patch_size {self.patch_size}")
        if self.embed_dim % self.num_heads:
            raise ValueError(f"embed_dim {self.embed_dim} is not divisible by num_heads {self.num_heads}")
        if self.pool not in ("token", "gap"):
            raise ValueError(f"pool must be 'token' or 'gap', not {self.pool!r}")
        if self.attn_impl not in ("sdpa", "math"):
            raise ValueError(f"attn_impl must be 'sdpa' or 'math', not {self.attn_impl!r}")

    @property
    def grid_size(self) -> tuple[int, int]:
        """Patch grid (H/P, W/P)."""
        h, w = self.img_size.hw
        return h // self.patch_size, w // self.patch_size

    @property
    def num_patches(self) -> int:
        """N = HW / P^2."""
        h, w = self.grid_size
        return h * w

    @property
    def num_prefix_tokens(self) -> int:
        return 1 if self.pool == "token" else 0

    @property
    def num_tokens(self) -> int:
        """Sequence length the encoder sees: N patches plus the class token."""
        return self.num_patches + self.num_prefix_tokens

    @property
    def mlp_dim(self) -> int:
        return int(self.embed_dim * self.mlp_ratio)


# width, depth, heads, global-attention blocks (detectron2's ViTDet configs, cited above)
VITDET_VARIANTS = {
    "b": (768, 12, 12, (2, 5, 8, 11)),
    "l": (1024, 24, 16, (5, 11, 17, 23)),
    "h": (1280, 32, 16, (7, 15, 23, 31)),
}


@dataclass(frozen=True)
class ViTDetConfig:
    img_size: Size | int | tuple[int, int] = 1024              # input side or (H, W); each a multiple of 2 x patch (the stride-32 level)
    patch_size: int = 16
    embed_dim: int = 768
    depth: int = 12
    num_heads: int = 12
    global_blocks: tuple[int, ...] = (2, 5, 8, 11)   # the others use window attention
    window_size: int = 14              # 224 / 16: the pre-training grid
    mlp_ratio: float = 4.0
    pretrain_grid: int = 14            # absolute position embedding as pre-trained (224 / 16), + class slot
    pyramid_dim: int = 256             # simple feature pyramid's output channels
    num_classes: int = 1000            # classifier form: average-pooled tokens, LayerNorm, linear head
    in_chans: int = 3
    attn_impl: Literal["math", "sdpa"] = "math"   # detectron2's explicit softmax, or SDPA with the bias as mask
    norm_eps: float = 1e-6

    def __post_init__(self):
        object.__setattr__(self, "img_size", Size.of(self.img_size))
        object.__setattr__(self, "global_blocks", tuple(self.global_blocks))
        if any(side % (2 * self.patch_size) for side in self.img_size.hw):
            raise ValueError(f"img_size {self.img_size.label} is not a multiple of 2 x patch_size {self.patch_size}")
        if self.embed_dim % self.num_heads or self.embed_dim % 4:
            raise ValueError(f"embed_dim {self.embed_dim} must divide by num_heads and by 4 (the pyramid)")
        if any(not 0 <= i < self.depth for i in self.global_blocks):
            raise ValueError(f"global_blocks {self.global_blocks} out of range for depth {self.depth}")
        if self.attn_impl not in ("math", "sdpa"):
            raise ValueError(f"attn_impl must be 'math' or 'sdpa', not {self.attn_impl!r}")

    @property
    def grid_size(self) -> tuple[int, int]:
        h, w = self.img_size.hw
        return h // self.patch_size, w // self.patch_size

    @property
    def mlp_dim(self) -> int:
        return int(self.embed_dim * self.mlp_ratio)

    def window_of(self, block: int) -> int:
        """0 for a global block, else the window side."""
        return 0 if block in self.global_blocks else self.window_size


def vitdet_config(variant: str, **overrides) -> ViTDetConfig:
    dim, depth, heads, global_blocks = VITDET_VARIANTS[variant]
    return ViTDetConfig(embed_dim=dim, depth=depth, num_heads=heads, global_blocks=global_blocks, **overrides)
