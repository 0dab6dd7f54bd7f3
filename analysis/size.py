"""An input size, made once where it enters (the command line, `create_model`) and handed down as is.

`Size(height, width)`; `Size.of(224)` and `Size.of((800, 1344))` take the forms users write,
`Size.parse("800x1344")` the command line's; `label` is the one way a size is printed ("224", "800x1344").
"""
from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True, order=True)
class Size:
    height: int
    width: int

    def __post_init__(self):
        for name, side in (("height", self.height), ("width", self.width)):
            if not isinstance(side, int) or isinstance(side, bool) or side < 1:
                raise ValueError(f"a size's {name} is a positive integer, not {side!r}")

    @classmethod
    def of(cls, value: Size | int | tuple[int, int] | list[int]) -> Size:
        """A Size from a side (square), an (H, W) pair, or a Size (returned as is)."""
        if isinstance(value, Size):
            return value
        if isinstance(value, int) and not isinstance(value, bool):
            return cls(value, value)
        if isinstance(value, (tuple, list)) and len(value) == 2:
            return cls(*value)
        raise TypeError(f"a size is an integer or an (H, W) pair of integers, not {value!r}")

    @classmethod
    def parse(cls, text: str) -> Size:
        """"224" (a side) or "800x1344" (HEIGHTxWIDTH); ValueError otherwise, saying what is wrong (the
        command line's message: zoo.options.values.sizes prefixes the option)."""
        parts = [p.strip() for p in str(text).lower().split("x")]
        if len(parts) > 2:
            raise ValueError(f"{text!r} is not a side or HEIGHTxWIDTH (e.g. 800x1344)")
        sides = []
        for part in parts:
            if not re.fullmatch(r"[+-]?[0-9]+", part):
                raise ValueError(f"{part!r} is not an integer")
            if int(part) <= 0:
                raise ValueError(f"{int(part)} is not positive")
            sides.append(int(part))
        return cls(sides[0], sides[-1])

    @property
    def is_square(self) -> bool:
        return self.height == self.width

    @property
    def side(self) -> int | None:
        """The side of a square size; None for H x W."""
        return self.height if self.is_square else None

    @property
    def hw(self) -> tuple[int, int]:
        return self.height, self.width

    @property
    def compact(self) -> int | tuple[int, int]:
        """What timm's constructors take: the side of a square size, else (H, W)."""
        return self.height if self.is_square else self.hw

    @property
    def pixels(self) -> int:
        return self.height * self.width

    @property
    def label(self) -> str:
        """"224" for a square size, "800x1344" for H x W: the one way a size is printed."""
        return str(self.height) if self.is_square else f"{self.height}x{self.width}"

    def __str__(self) -> str:
        return self.label


SizeLike = Size | int | tuple[int, int]   # what public functions take (Size.of), for users who write 224
