"""MAC counter at the dispatcher (a TorchDispatchMode): every aten op that runs is costed by op_rules.

Dispatcher level means functional calls, `@`, einsum and every attention kernel are seen, not just
nn.Linear/nn.Conv modules (the gap of hook-based counters such as ptflops). Ops without a rule are
listed: matmul- or conv-like ones in `uncounted_ops` (a bug to fix), the rest in `zero_mac_ops` (0
MACs by the convention stated in op_rules). Each MAC is attributed to the innermost running module
and from there to a component (components.py); backward MACs are counted in total only.
"""
from __future__ import annotations

from collections import Counter, defaultdict


from .dispatch import Observer
from .components import ComponentClassifier, ModuleStack, op_kind
from .op_rules import is_matmul_or_conv_like, op_name, rule_for


class MacCounter(Observer):
    """Use inside `ModuleStack(model)`; set `phase = "backward"` before calling backward()."""

    def __init__(self, classifier: ComponentClassifier, stack: ModuleStack):
        super().__init__()
        self.classifier, self.stack = classifier, stack
        self.phase = "forward"
        self.macs_by_phase: Counter = Counter()
        self.macs_by_component: dict[str, int] = defaultdict(int)   # forward only
        self.macs_by_module: dict[str, int] = defaultdict(int)      # forward only, innermost module
        self.attention_ops: Counter = Counter()                     # ops that produced attn_matmul MACs
        self.uncounted_ops: Counter = Counter()
        self.zero_mac_ops: set[str] = set()

    def observe(self, func, args, kwargs, out) -> None:
        """Cost one op that has run (also called by dispatch.ObservingMode)."""
        rule = rule_for(func)
        if rule is None:
            name = op_name(func)
            if is_matmul_or_conv_like(name):
                self.uncounted_ops[name] += 1
            else:
                self.zero_mac_ops.add(name)
            return
        name = op_name(func)
        macs = int(rule(*args, out=out, **kwargs))
        self.macs_by_phase[self.phase] += macs
        if self.phase == "forward":
            path = self.stack.current
            component = self.classifier.component(path, op_kind(func))
            self.macs_by_component[component] += macs
            self.macs_by_module[path] += macs
            if component == "attn_matmul":
                self.attention_ops[name] += 1

    @property
    def forward_macs(self) -> int:
        return self.macs_by_phase["forward"]

    @property
    def backward_macs(self) -> int:
        return self.macs_by_phase["backward"]
