"""MAC counter at the dispatcher (a TorchDispatchMode): every aten op that runs is costed by op_rules.

Dispatcher level means functional calls, `@`, einsum and every attention kernel are seen, not just
nn.Linear/nn.Conv modules (the gap of hook-based counters such as ptflops), whatever the grad mode
(dispatch.py), in their out= forms and on nested tensors too (op_rules.call_macs). Matmul- or conv-like
ops without a rule are listed in `uncounted_ops` (a bug to fix); any other op without a rule costs
0 MACs by the convention stated in op_rules. Each forward MAC is attributed, through the innermost running
module, to a component (components.py); backward MACs are counted in total only.
"""
from __future__ import annotations

from collections import Counter, defaultdict
from contextlib import contextmanager

from torch import nn

from ..vocab import attention_path
from .dispatch import ObservingMode, Observer
from .components import ComponentClassifier, ModuleStack, op_kind
from .op_rules import call_macs, is_matmul_or_conv_like, op_name, rule_for


class MacCounter(Observer):
    """Use inside `ModuleStack(model)`; set `phase = "backward"` before calling backward()."""

    def __init__(self, classifier: ComponentClassifier, stack: ModuleStack):
        super().__init__()
        self.classifier, self.stack = classifier, stack
        self.phase = "forward"
        self.macs_by_phase: Counter = Counter()
        self.macs_by_component: dict[str, int] = defaultdict(int)   # forward only
        self.macs_by_module: Counter = Counter()                   # forward only, by innermost module path
        self.fused_attention_ops: set[str] = set()                 # SDPA kernels that produced attn_matmul MACs
        self.math_attention_ops: set[str] = set()                  # plain matmuls that did (explicit QK^T, AV)
        self.uncounted_ops: Counter = Counter()

    def observe(self, func, args, kwargs, out) -> None:
        """Cost one op that has run (also called by dispatch.ObservingMode)."""
        rule = rule_for(func)
        name = op_name(func)
        if rule is None:
            if is_matmul_or_conv_like(name):
                self.uncounted_ops[name] += 1
            return
        macs = call_macs(rule, args, kwargs, out)
        self.macs_by_phase[self.phase] += macs
        if self.phase == "forward":
            path, kind = self.stack.current, op_kind(func)
            component = self.classifier.component(path, kind)
            self.macs_by_component[component] += macs
            self.macs_by_module[path] += macs
            if component == "attn_matmul":
                (self.fused_attention_ops if kind == "attention" else self.math_attention_ops).add(name)

    @property
    def forward_macs(self) -> int:
        return self.macs_by_phase["forward"]

    @property
    def backward_macs(self) -> int:
        return self.macs_by_phase["backward"]


class AttentionPathWatch:
    """Which kernels computed attention in a forward of `module` on its own device: `with watch():` around one
    forward (no_grad, inference_mode or a timed inference step; a backward inside would be read too) sets `path`
    (analysis.vocab.attention_path's format) when it finishes; None until one has."""

    def __init__(self, module: nn.Module):
        self.module, self.path = module, None

    @contextmanager
    def __call__(self):
        self.path = None
        with ModuleStack(self.module) as modules:
            counter = MacCounter(ComponentClassifier(self.module), modules)
            with ObservingMode([counter]):
                yield
        self.path = attention_path(counter.fused_attention_ops, counter.math_attention_ops)
