"""archzoo: compare vision backbones on exact cost, memory and measured speed.

Layers, each importing only those below it: `zoo.models` (names -> modules), `analysis` (modules ->
numbers), `zoo.runs` (tasks, executors, the results store), then the commands on top
(`zoo.compare`, `zoo.report`).
"""
from ._version import __version__
from .errors import DuplicateModelError, UnknownModelError, UnsupportedResolutionError, ZooError
from .models import (TIMM_PREFIX, ModelSpec, Size, ViTConfig, VisionTransformer, accuracy_entries, create_model,
                     feature_shapes, get_spec, list_models, load_weights, register, resample_pos_embed, top1_at)
from .runs import store
from .runs.store import load_frame

__all__ = [
    "TIMM_PREFIX", "create_model", "get_spec", "list_models", "register", "load_weights", "load_frame", "store",
    "accuracy_entries", "top1_at", "feature_shapes",
    "ModelSpec", "Size", "ViTConfig", "VisionTransformer", "resample_pos_embed",
    "ZooError", "UnknownModelError", "UnsupportedResolutionError", "DuplicateModelError",
]
