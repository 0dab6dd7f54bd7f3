"""archzoo: compare vision backbones on exact cost, memory and measured speed.

Layers, each importing only those below it: `zoo.models` (names -> modules), `analysis` (modules ->
numbers), `zoo.runs` (tasks, executors), `zoo.store` (the results store), `zoo.predict` (predicted rows), then
the commands on top (`zoo.compare`, `zoo.select`, `zoo.report`). `import zoo` is cheap: torch, timm and pandas load on first use. For notebooks:
`zoo.count(module, input_size)` (the cost record of any module), `zoo.compare(models=[...], ...)` (the comparison
as a DataFrame), `zoo.load_frame(dir, kind)` (stored rows as a DataFrame); docs/models.md shows them.
"""
import importlib

from ._version import __version__ as __version__
from .errors import DuplicateModelError, UnknownModelError, UnsupportedResolutionError, ZooError
from .console.signals import arm_for_commands

arm_for_commands()      # a command's own process: a signal during its start-up imports is one line, 130 or 143

_LAZY = {  # public name -> the module that defines it, imported on first access (PEP 562)
    **dict.fromkeys(["TIMM_PREFIX", "ModelSpec", "Size", "ViTConfig", "VisionTransformer", "accuracy_entries",
                     "create_model", "feature_shapes", "get_spec", "list_models", "load_weights", "register",
                     "resample_pos_embed", "top1_at"], ".models"),
    "load_frame": ".store.store",
    "count": ".counting",
}

__all__ = [
    "TIMM_PREFIX", "create_model", "get_spec", "list_models", "register", "load_weights", "load_frame", "store",
    "count", "compare",
    "accuracy_entries", "top1_at", "feature_shapes",
    "ModelSpec", "Size", "ViTConfig", "VisionTransformer", "resample_pos_embed",
    "ZooError", "UnknownModelError", "UnsupportedResolutionError", "DuplicateModelError",
]


def __getattr__(name: str):
    if name in ("store", "compare"):     # modules; zoo.compare is callable (zoo/compare/__init__.py)
        value = importlib.import_module("." + name, __name__)
    elif name in _LAZY:
        value = getattr(importlib.import_module(_LAZY[name], __name__), name)
    else:
        raise AttributeError(f"module 'zoo' has no attribute {name!r}")
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
