"""The model zoo: one registry for every architecture of the comparison (specs, cards, the scratch ViT).
Names load on first use (PEP 562), so reading specs and cards does not import torch."""
import importlib

_LAZY = {  # public name -> the submodule that defines it
    **dict.fromkeys(["accuracy_entries", "top1_at"], ".accuracy"),
    **dict.fromkeys(["TIMM_PREFIX", "create_model", "feature_shapes", "get_spec", "list_models", "register"],
                    ".registry"),
    **dict.fromkeys(["ModelSpec", "Size"], ".spec"),
    **dict.fromkeys(["ViTConfig", "VisionTransformer", "resample_pos_embed"], ".vit"),
    "load_weights": ".weights",
}
__all__ = list(_LAZY)


def __getattr__(name: str):
    if name not in _LAZY:
        raise AttributeError(f"module 'zoo.models' has no attribute {name!r}")
    value = getattr(importlib.import_module(_LAZY[name], __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
