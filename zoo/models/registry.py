"""One interface for every model: list, describe, create (at any supported resolution, on any device)."""
from __future__ import annotations

import dataclasses
import fnmatch
import re
from contextlib import nullcontext
from typing import TYPE_CHECKING

from .catalog import catalog
from ..errors import DuplicateModelError, UnknownModelError, UnsupportedResolutionError, ZooError
from .spec import AnySize, ModelSpec, Size

if TYPE_CHECKING:
    import torch
    from torch import nn
# NB: torch and the model code load when a model is built, not with the names: reading specs (the report,
# a warm zoo.select) needs neither.

TIMM_PREFIX = "timm:"
_REGISTRY: dict[str, ModelSpec] = {}


def register(spec: ModelSpec) -> ModelSpec:
    if spec.name in _REGISTRY:
        raise DuplicateModelError(f"model {spec.name!r} is already registered")
    _REGISTRY[spec.name] = spec
    return spec


def natural_key(name: str) -> list:
    """"vit_b8" < "vit_b16" < "vit_b32": digit runs compare as numbers."""
    return [int(part) if part.isdigit() else part for part in re.split(r"(\d+)", name)]


def list_models(pattern: str = "*") -> list[str]:
    """Registered names matching an fnmatch pattern (`swin_*`, `vit_?16`), in natural order."""
    return sorted((n for n in _REGISTRY if fnmatch.fnmatchcase(n, pattern)), key=natural_key)


def get_spec(name: str) -> ModelSpec:
    if name.startswith(TIMM_PREFIX):
        return _adhoc_timm_spec(name)
    try:
        return _REGISTRY[name]
    except KeyError:
        raise UnknownModelError(name, list(_REGISTRY)) from None


def _timm_sources_refuse(timm_name: str) -> UnknownModelError | None:
    """The refusal of a timm name whose architecture appears nowhere in the installed timm's model sources,
    found without importing timm (8-20 s with torch on a loaded machine): the sources are read as text (about
    4 MB, a tenth of a second) and the closest `@register_model` names offered. None: timm must decide (the
    name appears, e.g. a deprecated alias, or timm's sources are not at hand)."""
    import importlib.util
    import re
    import sys
    from pathlib import Path

    if "timm" in sys.modules:        # already imported: asking it is cheaper than reading its sources
        return None
    found = importlib.util.find_spec("timm")
    if found is None or not found.origin:
        return None
    arch = timm_name.split(".", 1)[0]
    word = re.compile(rf"(?<![\w]){re.escape(arch)}(?!\w)")
    registered: list[str] = []
    for source in sorted((Path(found.origin).parent / "models").rglob("*.py")):
        try:
            text = source.read_text(encoding="utf-8", errors="replace")
        except OSError:
            return None
        if arch and word.search(text):
            return None
        registered += re.findall(r"@register_model\s*\n\s*def\s+(\w+)\s*\(", text)
    if not registered:              # not timm's layout: let timm say
        return None
    return UnknownModelError(TIMM_PREFIX + timm_name, [TIMM_PREFIX + n for n in registered])


def _adhoc_timm_spec(name: str) -> ModelSpec:
    timm_name = name[len(TIMM_PREFIX):]
    refusal = _timm_sources_refuse(timm_name)
    if refusal is not None:
        raise refusal
    import timm

    if not timm.is_model(timm_name):
        raise UnknownModelError(name, [TIMM_PREFIX + n for n in timm.list_models()])
    cfg = timm.get_pretrained_cfg(timm_name)
    native = cfg.input_size[-1] if cfg and cfg.input_size else 224
    return ModelSpec(name=name, family="timm", source="timm", native_size=native, paper="(ad hoc timm model)",
                     rule=AnySize(), timm_name=timm_name)


def create_model(name: str, img_size: Size | int | tuple[int, int] | None = None, num_classes: int | None = None,
                 device: torch.device | str | None = None, dtype: torch.dtype | None = None,
                 *, features: bool = False, **kwargs) -> nn.Module:
    """Build `name` with random weights at `img_size`, a Size, a side or (H, W) (default: its native one).

    num_classes None: a registry model's ImageNet-1k head (1000 classes, as its paper reports), and a `timm:NAME`
    model's own default head, as timm's default config has it (none, num_classes 0, for eva02 / dinov2 style
    checkpoints; the built model's `num_classes` says which).

    device="meta" allocates nothing (for counting). Extra keyword arguments go to the ViT config
    for scratch models (attn_impl="math", pool="gap", pre_logits_dim=768) and to timm otherwise.
    features=True builds the backbone as a feature extractor (no pooling, no head; `num_classes`
    is ignored) whose forward returns a list of NCHW maps; `out_indices` picks stages or blocks
    (see zoo/models/features.py).
    """
    spec = get_spec(name)
    try:
        img_size = spec.native if img_size is None else Size.of(img_size)
    except (TypeError, ValueError):
        raise UnsupportedResolutionError(f"{name}: resolution must be a positive integer or an (H, W) pair of "
                                         f"them, not {img_size!r}") from None
    spec.check_resolution(img_size)          # the public API's guard; zoo.compare checked it when planning
    import torch

    from .features import build_scratch_features, build_timm_features
    from .meta_init import MetaInitShortcut

    # NB: on meta, in-place weight initialisation changes nothing; skipping it makes building ~2x faster
    with torch.device(device or "cpu"), MetaInitShortcut() if str(device) == "meta" else nullcontext():
        if features:
            build = build_scratch_features if spec.source == "scratch" else build_timm_features
            model = build(spec, img_size, kwargs)
        elif spec.source == "scratch":
            model = _build_scratch(spec, img_size, num_classes, kwargs)
        else:
            model = _build_timm(spec, img_size, num_classes, kwargs)
    model.eval()
    return model.to(dtype=dtype) if dtype is not None else model


def _build_scratch(spec: ModelSpec, img_size: Size, num_classes: int | None, overrides: dict) -> nn.Module:
    try:
        cfg = dataclasses.replace(spec.vit_config, img_size=img_size, num_classes=1000 if num_classes is None
                                  else num_classes, **overrides)
    except TypeError as e:  # an override the config does not have
        raise ZooError(f"{spec.name}: {e}") from None
    from .hybrid import hybrid_vit
    from .vit import VisionTransformer
    from .vitdet import ViTDet

    if spec.family == "vitdet":
        return ViTDet(cfg)
    return hybrid_vit(cfg) if spec.family == "hybrid" else VisionTransformer(cfg)


def _build_timm(spec: ModelSpec, img_size: Size, num_classes: int | None, overrides: dict) -> nn.Module:
    import timm

    args = dict(spec.timm_kwargs, **overrides)
    if num_classes is not None or not isinstance(spec.rule, AnySize):    # ad hoc, None: timm's default head
        args["num_classes"] = 1000 if num_classes is None else num_classes
    if isinstance(spec.rule, AnySize):       # an ad-hoc timm: model: give timm the size where it takes one
        try:
            return timm.create_model(spec.timm_name, pretrained=False, img_size=img_size.compact, **args)
        except TypeError as e:               # a CNN's constructor has no img_size: it takes any input size
            if "img_size" not in str(e):
                raise
        return timm.create_model(spec.timm_name, pretrained=False, **args)
    if spec.accepts_img_size:
        args["img_size"] = img_size.compact  # timm ViT-likes and Swin take an int or (H, W)
    return timm.create_model(spec.timm_name, pretrained=False, **args)


def feature_shapes(model_name: str, img_size: Size | int | tuple[int, int] | None = None, **kwargs) -> list[list[int]]:
    """[C, H, W] of each map of `create_model(model_name, img_size, features=True)`, from a forward
    on the meta device (nothing is allocated or computed)."""
    img_size = get_spec(model_name).native if img_size is None else Size.of(img_size)
    model = create_model(model_name, img_size=img_size, device="meta", features=True, **kwargs)
    return map_shapes(model, img_size, kwargs.get("in_chans", 3))


def map_shapes(extractor: nn.Module, img_size: Size, in_chans: int = 3) -> list[list[int]]:
    """[C, H, W] of each map a built feature extractor returns, from one batch-1 forward on its device
    (nothing is computed when it was built on meta), in the extractor's own dtype."""
    import torch

    weight = next(extractor.parameters())
    x = torch.empty(1, in_chans, *Size.of(img_size).hw, device=weight.device, dtype=weight.dtype)
    with torch.no_grad():
        return [list(f.shape[1:]) for f in extractor(x)]


for _spec in catalog():
    register(_spec)
