"""The model zoo: one registry for every architecture of the comparison (specs, cards, the scratch ViT)."""
from .accuracy import accuracy_entries, top1_at
from .registry import TIMM_PREFIX, create_model, feature_shapes, get_spec, list_models, register
from .spec import ModelSpec, Size
from .vit import ViTConfig, VisionTransformer, resample_pos_embed
from .weights import load_weights
