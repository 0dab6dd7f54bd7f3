"""archzoo's model zoo: one registry for every architecture of the comparison."""
from .registry import TIMM_PREFIX, create_model, get_spec, list_models, register
from .spec import (DuplicateModelError, ModelSpec, UnknownModelError, UnsupportedResolutionError,
                   ZooError)
from .vit import ViTConfig, VisionTransformer, resample_pos_embed
from .weights import load_weights

__all__ = [
    "TIMM_PREFIX", "create_model", "get_spec", "list_models", "register", "load_weights",
    "ModelSpec", "ViTConfig", "VisionTransformer", "resample_pos_embed",
    "ZooError", "UnknownModelError", "UnsupportedResolutionError", "DuplicateModelError",
]
__version__ = "0.1.0"
