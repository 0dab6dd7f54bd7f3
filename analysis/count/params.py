"""Parameter counts: total, trainable, per component; and the ViT textbook-vs-implementation ledger.

The textbook count is the seed notes' table (ex. 3.5.2, 86,482,408 for ViT-B/16), which leaves out
the qkv/proj/MLP biases, the class token and the final LayerNorm; timm's implementation (and the
scratch ViT) has them: 86,567,656. `vit_param_reconciliation` names each difference with its size,
counted from the module and from the closed form (closed_form.vit_params_beyond_textbook).
"""
from __future__ import annotations

import re
from collections import defaultdict

from torch import nn

from .closed_form import vit_params_beyond_textbook, vit_textbook_params
from .components import ComponentClassifier
from .shapes import vit_shape_of


def param_counts(model: nn.Module, classifier: ComponentClassifier | None = None) -> dict:
    """Unique parameters (shared ones once); works on meta."""
    classifier = classifier or ComponentClassifier(model)
    by_component: dict[str, int] = defaultdict(int)
    total = trainable = 0
    for name, param in model.named_parameters():
        total += param.numel()
        trainable += param.numel() if param.requires_grad else 0
        by_component[classifier.param_component(name)] += param.numel()
    return {"params": total, "trainable_params": trainable, "params_by_component": dict(by_component)}


# Parameter names (timm's, shared by the scratch ViT) behind each named textbook difference.
_BEYOND_TEXTBOOK = {
    "qkv biases": r"blocks\.\d+\.attn\.qkv\.bias",
    "attention output projection biases": r"blocks\.\d+\.attn\.proj\.bias",
    "MLP biases (fc1 + fc2)": r"blocks\.\d+\.mlp\.fc[12]\.bias",
    "class/distillation tokens": r"(cls|dist)_token",
    "final LayerNorm (weight + bias)": r"norm\.(weight|bias)",
}


def vit_param_reconciliation(model: nn.Module, img_size: int) -> dict:
    """Textbook count + each named difference = the implementation's count, for a timm-style ViT."""
    shape = vit_shape_of(model)
    textbook = vit_textbook_params(shape, img_size)["total"]
    expected = vit_params_beyond_textbook(shape)
    named = dict(model.named_parameters())
    differences = []
    for item, pattern in _BEYOND_TEXTBOOK.items():
        counted = sum(p.numel() for n, p in named.items() if re.fullmatch(pattern, n))
        differences.append({"item": item, "params": counted, "closed_form": expected[item]})
    implementation = sum(p.numel() for p in named.values())
    explained = textbook + sum(d["params"] for d in differences)
    return {"textbook": textbook, "implementation": implementation, "differences": differences,
            "unexplained": implementation - explained}
