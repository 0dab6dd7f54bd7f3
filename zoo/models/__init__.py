"""The model zoo: one registry for every architecture of the comparison (specs, cards, the scratch ViT).
Names load on first use (PEP 562, through lazy_loader), so reading specs and cards does not import torch."""
import lazy_loader

__getattr__, __dir__, __all__ = lazy_loader.attach(__name__, submod_attrs={  # submodule: the names it defines
    "accuracy": ["accuracy_entries", "top1_at"],
    "registry": ["TIMM_PREFIX", "create_model", "feature_shapes", "get_spec", "list_models", "register"],
    "spec": ["ModelSpec", "Size"],
    "vit": ["ViTConfig", "VisionTransformer", "resample_pos_embed"],
    "weights": ["load_weights"],
})
