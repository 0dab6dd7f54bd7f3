"""Model specs and the input-resolution rules they carry.

A size is an int (square) or an (H, W) pair; the rules apply to each side.
"""
from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Any

from ..errors import UnsupportedResolutionError
from .vit import Size, ViTConfig, as_hw, canonical_size
from .vitdet import ViTDetConfig

__all__ = ["AnySize", "AtLeast", "ModelSpec", "MultipleOf", "ResolutionRule", "Size", "as_hw", "canonical_size",
           "size_label"]


def size_label(size: Size) -> str:
    """"224" for a square size, "800x1344" for H x W."""
    h, w = as_hw(size)
    return str(h) if h == w else f"{h}x{w}"


class _PerSide:
    """An int size is one side (as before); an (H, W) size is valid when both sides are."""

    def accepts(self, size: Size) -> bool:
        return all(self.accepts_side(s) for s in as_hw(size)) if isinstance(size, (tuple, list)) \
            else self.accepts_side(size)

    def nearest(self, size: Size) -> list[int] | list[tuple[int, int]]:
        """The nearest valid sides of an int; for (H, W), the valid (H, W) from the nearest per side."""
        if not isinstance(size, (tuple, list)):
            return self.nearest_side(size)
        h, w = as_hw(size)
        return list(itertools.product(self.nearest_side(h), self.nearest_side(w)))


@dataclass(frozen=True)
class MultipleOf(_PerSide):
    """Sides that are positive multiples of `step` (a ViT's patch, Swin's stride)."""
    step: int
    why: str

    def accepts_side(self, side: int) -> bool:
        return side >= self.step and side % self.step == 0

    def nearest_side(self, side: int) -> list[int]:
        if self.accepts_side(side):
            return [side]
        if side < self.step:
            return [self.step]
        lower = side // self.step * self.step
        return [lower, lower + self.step]

    def describe(self) -> str:
        return f"a multiple of {self.step} ({self.why})"


@dataclass(frozen=True)
class AtLeast(_PerSide):
    """CNNs: any side down to the size at which the last stage still has one pixel."""
    minimum: int
    why: str

    def accepts_side(self, side: int) -> bool:
        return side >= self.minimum

    def nearest_side(self, side: int) -> list[int]:
        return [max(side, self.minimum)]

    def describe(self) -> str:
        return f"at least {self.minimum} ({self.why})"


@dataclass(frozen=True)
class AnySize(_PerSide):
    """Ad-hoc timm models: timm itself decides."""

    def accepts_side(self, side: int) -> bool:
        return side >= 1

    def nearest_side(self, side: int) -> list[int]:
        return [max(side, 1)]

    def describe(self) -> str:
        return "whatever timm accepts (ad-hoc model, no rule recorded)"


ResolutionRule = MultipleOf | AtLeast | AnySize


@dataclass(frozen=True)
class ModelSpec:
    name: str
    family: str                       # vit, hybrid, vitdet, deit, swin, convnext, bit, resnet, beit, eva, regnet, efficientnet
    source: str                       # "scratch" or "timm"
    native_size: int                  # the resolution its paper reports at (and its checkpoint uses)
    paper: str
    rule: ResolutionRule = field(repr=False)
    timm_name: str | None = None      # the timm model it builds (scratch: the one it is weight-compatible with)
    patch_size: int | None = None     # pixels per token side; None for CNNs
    num_prefix_tokens: int = 0        # class (+ distillation) tokens in the sequence
    vit_config: ViTConfig | ViTDetConfig | None = field(default=None, repr=False)   # scratch models only
    timm_kwargs: tuple[tuple[str, Any], ...] = ()                  # extra args for timm.create_model
    accepts_img_size: bool = True     # whether the timm constructor takes img_size (CNNs do not)

    @property
    def resolution_rule(self) -> str:
        return self.rule.describe()

    @property
    def is_token_model(self) -> bool:
        """One global token sequence (ViT-like); Swin, ViTDet (windows) and CNNs have none."""
        return self.patch_size is not None and self.family not in ("swin", "vitdet")

    def tokens(self, img_size: Size | None = None) -> int | None:
        """Sequence length (H/P)(W/P) plus class/distillation tokens; None where there is no global one."""
        if not self.is_token_model:
            return None
        h, w = as_hw(img_size or self.native_size)
        return (h // self.patch_size) * (w // self.patch_size) + self.num_prefix_tokens

    def check_resolution(self, img_size: Size) -> None:
        try:
            h, w = as_hw(img_size)
        except TypeError:
            raise UnsupportedResolutionError(
                f"{self.name}: resolution must be an integer or an (H, W) pair of integers, not {img_size!r}") from None
        if self.rule.accepts((h, w)):
            return
        if h == w:                                       # one side: (s, s) reads as s does
            nearest = ", ".join(map(str, self.rule.nearest_side(h)))
            raise UnsupportedResolutionError(
                f"{self.name} cannot take {h}x{h}: the side must be {self.rule.describe()}; nearest valid: {nearest}")
        bad = [(label, side) for label, side in (("height", h), ("width", w)) if not self.rule.accepts_side(side)]
        nearest = "; ".join(f"{label} {', '.join(map(str, self.rule.nearest_side(side)))}" for label, side in bad)
        raise UnsupportedResolutionError(
            f"{self.name} cannot take {h}x{w} (H x W): the {' and the '.join(label for label, _ in bad)} must be "
            f"{self.rule.describe()}; nearest valid: {nearest}")
