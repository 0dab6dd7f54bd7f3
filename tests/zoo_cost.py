"""Tests' shorthand: the cost record of a registry model, built by the zoo and counted by analysis."""
from __future__ import annotations

import torch

import zoo
from analysis.count.cost import cost_record
from analysis.size import Size


def build(name: str, img_size: int | None = None, device: str = "meta", dtype: torch.dtype | None = None, **kwargs):
    """(module, spec, img_size) of a registry model with random weights."""
    spec = zoo.get_spec(name)
    img_size = spec.native_size if img_size is None else img_size
    return zoo.create_model(name, img_size=img_size, device=device, dtype=dtype, **kwargs), spec, img_size


def cost_of(name: str, img_size: int | None = None, batch_size: int = 1, device: str = "meta",
            dtype: torch.dtype | None = None, train: bool = True, **kwargs) -> dict:
    module, spec, img_size = build(name, img_size, device, dtype, **kwargs)
    return {"model": name, "family": spec.family, "tokens": spec.tokens(Size.of(img_size)),
            **cost_record(module, img_size, batch_size=batch_size, dtype=dtype, train=train).as_dict()}


class Call(torch.nn.Module):
    """A module whose forward is `fn` (the peers' suites count bare calls inside their counter's context)."""

    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def forward(self, *inputs):
        return self.fn(*inputs)


def counted_call(module: torch.nn.Module, *inputs, backward: bool = False):
    """The MacCounter (analysis.count.counter) of one call of `module` on `inputs`, and with `backward` of the
    backward of its output's sum, at the dispatcher as every count is made (the grad mode is the caller's)."""
    from analysis.count.components import ComponentClassifier, ModuleStack
    from analysis.count.counter import MacCounter
    from analysis.count.dispatch import ObservingMode

    with ModuleStack(module) as stack:
        counter = MacCounter(ComponentClassifier(module), stack)
        with ObservingMode([counter]):
            out = module(*inputs)
            if backward:
                counter.phase = "backward"
                out.sum().backward()
    return counter


def macs_under(macs_by_module: dict, prefix: str) -> int:
    """MACs of a module and everything inside it, from innermost-module MACs (fvcore's by_module)."""
    return sum(m for path, m in macs_by_module.items() if not prefix or path == prefix or path.startswith(prefix + "."))
