"""One interface for every model: list, describe, create (at any supported resolution, on any device)."""
from __future__ import annotations

import dataclasses
import fnmatch

import torch
from torch import nn

from .catalog import catalog
from .hybrid import hybrid_vit
from .spec import AnySize, DuplicateModelError, ModelSpec, UnknownModelError, ZooError
from .vit import VisionTransformer

TIMM_PREFIX = "timm:"
_REGISTRY: dict[str, ModelSpec] = {}


def register(spec: ModelSpec) -> ModelSpec:
    if spec.name in _REGISTRY:
        raise DuplicateModelError(f"model {spec.name!r} is already registered")
    _REGISTRY[spec.name] = spec
    return spec


def list_models(pattern: str = "*") -> list[str]:
    """Registered names matching an fnmatch pattern (`swin_*`, `vit_?16`), sorted."""
    return sorted(n for n in _REGISTRY if fnmatch.fnmatchcase(n, pattern))


def get_spec(name: str) -> ModelSpec:
    if name.startswith(TIMM_PREFIX):
        return _adhoc_timm_spec(name)
    try:
        return _REGISTRY[name]
    except KeyError:
        raise UnknownModelError(name, list(_REGISTRY)) from None


def _adhoc_timm_spec(name: str) -> ModelSpec:
    import timm

    timm_name = name[len(TIMM_PREFIX):]
    if not timm.is_model(timm_name):
        raise UnknownModelError(name, [TIMM_PREFIX + n for n in timm.list_models()])
    cfg = timm.get_pretrained_cfg(timm_name)
    native = cfg.input_size[-1] if cfg and cfg.input_size else 224
    return ModelSpec(name=name, family="timm", source="timm", native_size=native, paper="(ad hoc timm model)",
                     rule=AnySize(), timm_name=timm_name)


def create_model(name: str, img_size: int | None = None, num_classes: int = 1000,
                 device: torch.device | str | None = None, dtype: torch.dtype | None = None,
                 **kwargs) -> nn.Module:
    """Build `name` with random weights at `img_size` (default: its native one).

    device="meta" allocates nothing (for counting). Extra keyword arguments go to the ViT config
    for scratch models (attn_impl="math", pool="gap", pre_logits_dim=768) and to timm otherwise.
    """
    spec = get_spec(name)
    img_size = spec.native_size if img_size is None else img_size
    spec.check_resolution(img_size)
    with torch.device(device or "cpu"):
        if spec.source == "scratch":
            model = _build_scratch(spec, img_size, num_classes, kwargs)
        else:
            model = _build_timm(spec, img_size, num_classes, kwargs)
    model.eval()
    return model.to(dtype=dtype) if dtype is not None else model


def _build_scratch(spec: ModelSpec, img_size: int, num_classes: int, overrides: dict) -> VisionTransformer:
    try:
        cfg = dataclasses.replace(spec.vit_config, img_size=img_size, num_classes=num_classes, **overrides)
    except TypeError as e:  # an override the config does not have
        raise ZooError(f"{spec.name}: {e}") from None
    return hybrid_vit(cfg) if spec.family == "hybrid" else VisionTransformer(cfg)


def _build_timm(spec: ModelSpec, img_size: int, num_classes: int, overrides: dict) -> nn.Module:
    import timm

    args = dict(spec.timm_kwargs, num_classes=num_classes, **overrides)
    if spec.accepts_img_size and not isinstance(spec.rule, AnySize):
        args["img_size"] = img_size
    return timm.create_model(spec.timm_name, pretrained=False, **args)


for _spec in catalog():
    register(_spec)
