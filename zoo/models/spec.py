"""Model specs and the input-resolution rules they carry; the rules apply to each side of a Size."""
from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Any

from analysis.size import Size

from ..errors import UnsupportedResolutionError
from .configs import ViTConfig, ViTDetConfig

__all__ = ["AnySize", "AtLeast", "ModelSpec", "MultipleOf", "ResolutionRule", "Size", "cannot_take"]


class _PerSide:
    """A size is valid when both its sides are."""

    def accepts(self, size: Size | int | tuple[int, int]) -> bool:
        size = Size.of(size)
        return self.accepts_side(size.height) and self.accepts_side(size.width)

    def nearest(self, size: Size | int | tuple[int, int]) -> list[Size]:
        """The valid sizes made of the nearest valid side of each side (a square size stays square)."""
        size = Size.of(size)
        if size.is_square:
            return [Size(s, s) for s in self.nearest_side(size.height)]
        return [Size(h, w) for h, w in itertools.product(self.nearest_side(size.height), self.nearest_side(size.width))]

    def refusal(self, size: Size | int | tuple[int, int]) -> str | None:
        """Why this rule refuses `size` (cannot_take: the side or sides that break it, the rule, the nearest
        valid sizes), or None when it accepts it."""
        size = Size.of(size)
        if self.accepts(size):
            return None
        bad = ["side"] if size.is_square else [label for label, side in (("height", size.height), ("width", size.width))
                                                if not self.accepts_side(side)]
        nearest = ", ".join(n.label for n in self.nearest(size))
        return cannot_take(size, f"the {' and the '.join(bad)} must be {self.describe()}; nearest: {nearest}")


def cannot_take(size: Size, why: str) -> str:
    """The one sentence for a size a model refuses (a model's name may lead it): 'cannot take 800x1333 px: why'."""
    return f"cannot take {size.label} px: {why}"


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
    def native(self) -> Size:
        return Size.of(self.native_size)

    @property
    def is_token_model(self) -> bool:
        """One global token sequence (ViT-like); Swin, ViTDet (windows) and CNNs have none."""
        return self.patch_size is not None and self.family not in ("swin", "vitdet")

    def tokens(self, img_size: Size | None = None) -> int | None:
        """Sequence length (H/P)(W/P) plus class/distillation tokens; None where there is no global one."""
        if not self.is_token_model:
            return None
        h, w = (img_size or self.native).hw
        return (h // self.patch_size) * (w // self.patch_size) + self.num_prefix_tokens

    def check_resolution(self, img_size: Size) -> None:
        """UnsupportedResolutionError stating the rule, the side and the nearest valid sizes."""
        refusal = self.rule.refusal(img_size)
        if refusal is not None:
            raise UnsupportedResolutionError(f"{self.name} {refusal}")
