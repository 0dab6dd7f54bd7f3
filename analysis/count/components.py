"""Which part of a backbone a module path belongs to, and a stack of the modules now running.

Components: patch_embed (patch embedding or CNN stem), attn_proj (qkv / q,k,v and output
projections), attn_matmul (QK^T and AV, any SDPA kernel), mlp, conv (convolutions of CNN stages),
head (classifier), other (e.g. Swin patch merging). Names follow timm's module naming, which the
from-scratch ViT shares.
"""
from __future__ import annotations

from torch import nn

from .op_rules import ATTENTION_OPS, op_name

_STEM_NAMES = {"patch_embed", "stem", "conv_stem", "conv1", "bn1", "act1", "maxpool", "bn_stem"}
# feature-extractor wrappers (timm's FeatureGetterNet, the zoo's ChannelsFirst) hold the model as `model`,
# detectors as `backbone`
_WRAPPERS = ("model", "backbone")


def top_name(path: str) -> str:
    """The top-level module a path belongs to, seen through feature-extractor wrappers: "model.stem.0", and
    timm's flattened "stem_0" or "stem_conv" (features_only), are all the stem."""
    parts = path.split(".") if path else []
    while len(parts) > 1 and parts[0] in _WRAPPERS:
        parts = parts[1:]
    top = parts[0] if parts else ""
    return "stem" if top.startswith("stem_") else top      # features_only flattens stem.0 / stem.conv
_HEAD_PREFIXES = ("head", "fc", "classifier", "pre_logits", "fc_norm")   # top-level names only
_WEIGHTED_LEAVES = (nn.Linear, nn.Conv1d, nn.Conv2d, nn.Conv3d)


class ComponentClassifier:
    """Maps (module path, op kind) to a component of `root`; cached per path."""

    def __init__(self, root: nn.Module):
        self.root = root
        self.modules = dict(root.named_modules(remove_duplicate=False))
        classifier = getattr(root, "pretrained_cfg", None) or {}
        head = classifier.get("classifier") if isinstance(classifier, dict) else None
        self.head_names = {h.split(".")[0] for h in ([head] if isinstance(head, str) else head or [])}
        self._cache: dict[tuple[str, bool, bool], str] = {}

    def _is_head(self, top: str) -> bool:
        return top in self.head_names or top.startswith(_HEAD_PREFIXES)

    def component(self, path: str, op_kind: str = "other") -> str:
        """`path` is the innermost running module ('' for the root); `op_kind` from `op_kind()`."""
        key = (path, op_kind)
        if key not in self._cache:
            self._cache[key] = self._classify(path, op_kind)
        return self._cache[key]

    def _classify(self, path: str, op_kind: str) -> str:
        if op_kind == "attention":
            return "attn_matmul"
        parts = path.split(".") if path else []
        top = top_name(path)
        if top and self._is_head(top):
            return "head"
        if top in _STEM_NAMES:
            return "patch_embed"
        for depth in range(len(parts), 0, -1):
            prefix = ".".join(parts[:depth])
            module = self.modules.get(prefix)
            # timm's Attention, WindowAttention (Swin), EvaAttention, the scratch ViT's `attn`
            if module is not None and (type(module).__name__.endswith("Attention") or parts[depth - 1] == "attn"):
                leaf = self.modules.get(path)
                in_weighted_leaf = depth < len(parts) and isinstance(leaf, _WEIGHTED_LEAVES)
                # NB: a functional F.linear on a weight (BEiT's qkv) is a projection, not QK^T/AV
                return "attn_proj" if in_weighted_leaf or op_kind == "weight_matmul" else "attn_matmul"
        if "mlp" in parts or any(p.startswith("mlp") for p in parts):
            return "mlp"
        return "conv" if op_kind == "conv" else "other"

    def param_component(self, param_name: str) -> str:
        """Parameters: as for ops, plus position/class tokens and norms of their own."""
        path, _, leaf_name = param_name.rpartition(".")
        module = self.modules.get(path)
        if not path and leaf_name in {"pos_embed", "cls_token", "dist_token", "reg_token", "absolute_pos_embed"}:
            return "pos_embed" if "pos" in leaf_name else "tokens"
        if "relative_position" in leaf_name:
            return "attn_proj" if path else "other"
        if isinstance(module, (nn.LayerNorm, nn.GroupNorm, nn.modules.batchnorm._BatchNorm)) or \
                type(module).__name__.endswith("Norm") or "norm" in type(module).__name__.lower():
            top = top_name(path)
            return "patch_embed" if top in _STEM_NAMES else ("head" if self._is_head(top) else "norm")
        return self.component(path, "conv" if isinstance(module, (nn.Conv1d, nn.Conv2d, nn.Conv3d)) else "other")


class ModuleStack:
    """Context manager: `current` is the qualified name of the innermost module running forward."""

    def __init__(self, root: nn.Module):
        self.names = {id(m): n for n, m in reversed(list(root.named_modules(remove_duplicate=False)))}
        self.stack: list[str] = []
        self._handles: list = []

    @property
    def current(self) -> str:
        return self.stack[-1] if self.stack else ""

    def _pre(self, module, _inputs):
        name = self.names.get(id(module))
        if name is not None:
            self.stack.append(name)

    def _post(self, module, _inputs, _output):
        name = self.names.get(id(module))
        if name is not None and self.stack and self.stack[-1] == name:
            self.stack.pop()

    def __enter__(self):
        self._handles = [nn.modules.module.register_module_forward_pre_hook(self._pre),
                         nn.modules.module.register_module_forward_hook(self._post, always_call=True)]
        return self

    def __exit__(self, *exc):
        for handle in self._handles:
            handle.remove()
        self.stack.clear()


_WEIGHT_MATMULS = {"mm", "addmm", "_addmm_activation", "linear", "mv", "addmv"}


def op_kind(func) -> str:
    """'attention' (an SDPA kernel), 'conv', 'weight_matmul' (2-D mm: x @ W), 'matmul' (batched), 'other'."""
    name = op_name(func)
    if func.overloadpacket in ATTENTION_OPS:
        return "attention"
    if "conv" in name:
        return "conv"
    if name in _WEIGHT_MATMULS:
        return "weight_matmul"
    return "matmul" if "mm" in name or "matmul" in name or "dot" in name else "other"
