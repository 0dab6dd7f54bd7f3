"""One TorchDispatchMode that runs each op once and shows it to several observers.

Stacking the MAC counter and the memory tracker as separate modes costs a Python dispatch layer
each per op; this mode runs the op (on meta, through fast_meta's shape-only kernels where they
apply) and calls `observe(func, args, kwargs, out)` on each observer in turn.

Observers see what runs, whatever the grad mode: a CompositeImplicitAutograd op (einsum, matmul,
scaled_dot_product_attention, linear) that reaches a mode whole is run decomposed inside it where autograd's
dispatch would run it so, in grad mode or under no_grad. Under torch.inference_mode autograd is skipped, so the mode
meets the composite op itself, and running it outside the mode would hide the ops it is made of (einsum's
bmm: its MACs lost). torch's FlopCounterMode decomposes the same way (`func.decompose()` inside the mode).
"""
from __future__ import annotations

import torch
from torch.utils._python_dispatch import TorchDispatchMode

from .fast_meta import try_fast

_KEYS = torch._C.DispatchKey
_BACKEND_KEYS = {"cpu": "CPU", "cuda": "CUDA", "meta": "Meta"}     # other device types: their name upper-cased
_kernels_cache: dict = {}


def _runs_decomposed(func, device: str, nested: bool) -> bool:
    """Whether autograd's dispatch runs `func` on a `device` (nested) tensor as the ops it is made of: it has a
    CompositeImplicitAutograd kernel and no kernel of its own for that backend (CPU, CUDA, Meta, NestedTensorCPU,
    ...) nor a CompositeExplicitAutograd one (c10's dispatch table: the composite serves an autograd key only
    then; silu_backward has a CPU kernel, einsum none). NB: metadata queries (dim, size: no tensor out) run whole,
    as in FlopCounterMode."""
    key = (func, device, nested)
    found = _kernels_cache.get(key)
    if found is None:
        try:
            has = torch._C._dispatch_has_kernel_for_dispatch_key
            backend = getattr(_KEYS, ("NestedTensor" if nested else "") + _BACKEND_KEYS.get(device, device.upper()),
                              None)
            own = [k for k in (backend, _KEYS.CompositeExplicitAutograd, _KEYS.CompositeExplicitAutogradNonFunctional,
                               _KEYS.CompositeImplicitAutogradNestedTensor if nested else None) if k is not None]
            found = (any("Tensor" in str(r.type) for r in func._schema.returns)
                     and has(func.name(), _KEYS.CompositeImplicitAutograd)
                     and not any(has(func.name(), k) for k in own))
        except (RuntimeError, AttributeError):    # not an op of the C++ dispatcher (prim::layout): runs whole
            found = False
        _kernels_cache[key] = found
    return found


def decomposed(mode: TorchDispatchMode, func, args, kwargs):
    """`func` run as the ops it is made of, each seen by `mode`, where autograd's dispatch would run it so
    (_runs_decomposed); NotImplemented where it runs whole."""
    tensors = [t for a in args for t in (a if isinstance(a, (list, tuple)) else (a,)) if isinstance(t, torch.Tensor)]
    device = tensors[0].device.type if tensors else "cpu"
    if not _runs_decomposed(func, device, any(t.is_nested for t in tensors)):
        return NotImplemented
    with mode:
        return func.decompose(*args, **kwargs)


class Observer(TorchDispatchMode):
    """A mode on its own, or one of ObservingMode's observers: subclasses define `observe`."""
    fast_meta = False       # run ops on meta through fast_meta's shape-only kernels where they apply

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        out = decomposed(self, func, args, kwargs)
        if out is not NotImplemented:
            return out
        out = try_fast(func, args, kwargs) if self.fast_meta else None
        if out is None:
            out = func(*args, **kwargs)
        self.observe(func, args, kwargs, out)
        return out

    def observe(self, func, args, kwargs, out) -> None:
        raise NotImplementedError


class ObservingMode(Observer):
    """Each op run once and shown to every observer in turn."""

    def __init__(self, observers, fast_meta: bool = False):
        super().__init__()
        self.observers, self.fast_meta = list(observers), fast_meta

    def observe(self, func, args, kwargs, out) -> None:
        for observer in self.observers:
            observer.observe(func, args, kwargs, out)
