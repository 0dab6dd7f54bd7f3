"""Model specs and the input-resolution rules they carry; errors the registry raises."""
from __future__ import annotations

import difflib
from dataclasses import dataclass, field
from typing import Any

from .vit import ViTConfig


class ZooError(ValueError):
    """Bad input to the registry; the message says what was wrong and what would be right."""


class UnknownModelError(ZooError, KeyError):
    def __init__(self, name: str, known: list[str]):
        close = difflib.get_close_matches(name, known, n=3, cutoff=0.5)
        hint = f"; closest: {', '.join(close)}" if close else "; see zoo.list_models()"
        super().__init__(f"unknown model {name!r}{hint}")

    __str__ = ValueError.__str__  # KeyError would quote the message


class UnsupportedResolutionError(ZooError):
    pass


class DuplicateModelError(ZooError):
    pass


@dataclass(frozen=True)
class MultipleOf:
    """Square inputs whose side is a positive multiple of `step` (a ViT's patch, Swin's stride)."""
    step: int
    why: str

    def accepts(self, size: int) -> bool:
        return size >= self.step and size % self.step == 0

    def nearest(self, size: int) -> list[int]:
        if self.accepts(size):
            return [size]
        if size < self.step:
            return [self.step]
        lower = size // self.step * self.step
        return [lower, lower + self.step]

    def describe(self) -> str:
        return f"a multiple of {self.step} ({self.why})"


@dataclass(frozen=True)
class AtLeast:
    """CNNs: any side down to the size at which the last stage still has one pixel."""
    minimum: int
    why: str

    def accepts(self, size: int) -> bool:
        return size >= self.minimum

    def nearest(self, size: int) -> list[int]:
        return [max(size, self.minimum)]

    def describe(self) -> str:
        return f"at least {self.minimum} ({self.why})"


@dataclass(frozen=True)
class AnySize:
    """Ad-hoc timm models: timm itself decides."""

    def accepts(self, size: int) -> bool:
        return size >= 1

    def nearest(self, size: int) -> list[int]:
        return [max(size, 1)]

    def describe(self) -> str:
        return "whatever timm accepts (ad-hoc model, no rule recorded)"


ResolutionRule = MultipleOf | AtLeast | AnySize


@dataclass(frozen=True)
class ModelSpec:
    name: str
    family: str                       # vit, hybrid, deit, swin, convnext, bit, resnet, beit, eva, regnet, efficientnet
    source: str                       # "scratch" or "timm"
    native_size: int                  # the resolution its paper reports at (and its checkpoint uses)
    paper: str
    rule: ResolutionRule = field(repr=False)
    timm_name: str | None = None      # the timm model it builds (scratch: the one it is weight-compatible with)
    patch_size: int | None = None     # pixels per token side; None for CNNs
    num_prefix_tokens: int = 0        # class (+ distillation) tokens in the sequence
    vit_config: ViTConfig | None = field(default=None, repr=False)   # scratch models only
    timm_kwargs: tuple[tuple[str, Any], ...] = ()                  # extra args for timm.create_model
    accepts_img_size: bool = True     # whether the timm constructor takes img_size (CNNs do not)

    @property
    def resolution_rule(self) -> str:
        return self.rule.describe()

    @property
    def is_token_model(self) -> bool:
        """One global token sequence (ViT-like); Swin and CNNs have none."""
        return self.patch_size is not None and self.family != "swin"

    def tokens(self, img_size: int | None = None) -> int | None:
        """Sequence length including class/distillation tokens; None where there is no global one."""
        if not self.is_token_model:
            return None
        side = (img_size or self.native_size) // self.patch_size
        return side * side + self.num_prefix_tokens

    def check_resolution(self, img_size: int) -> None:
        if isinstance(img_size, bool) or not isinstance(img_size, int):
            raise UnsupportedResolutionError(f"{self.name}: resolution must be an integer, not {img_size!r}")
        if not self.rule.accepts(img_size):
            nearest = ", ".join(map(str, self.rule.nearest(img_size)))
            raise UnsupportedResolutionError(
                f"{self.name} cannot take {img_size}x{img_size}: the side must be {self.rule.describe()}; "
                f"nearest valid: {nearest}")
