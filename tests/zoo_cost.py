"""Tests' shorthand: the cost record of a registry model, built by the zoo and counted by analysis."""
from __future__ import annotations

import torch

import zoo
from analysis.count.cost import cost_record
from analysis.size import Size


def build(name: str, img_size: int | None = None, device: str = "meta", dtype: torch.dtype | None = None, **kwargs):
    """(module, spec, img_size) of a registry model with random weights."""
    spec = zoo.get_spec(name)
    img_size = spec.native_size if img_size is None else img_size
    return zoo.create_model(name, img_size=img_size, device=device, dtype=dtype, **kwargs), spec, img_size


def cost_of(name: str, img_size: int | None = None, batch_size: int = 1, device: str = "meta",
            dtype: torch.dtype | None = None, train: bool = True, **kwargs) -> dict:
    module, spec, img_size = build(name, img_size, device, dtype, **kwargs)
    return {"model": name, "family": spec.family, "tokens": spec.tokens(Size.of(img_size)),
            **cost_record(module, img_size, batch_size=batch_size, dtype=dtype, train=train).as_dict()}
