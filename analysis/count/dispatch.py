"""One TorchDispatchMode that runs each op once and shows it to several observers.

Stacking the MAC counter and the memory tracker as separate modes costs a Python dispatch layer
each per op; this mode runs the op (on meta, through fast_meta's shape-only kernels where they
apply) and calls `observe(func, args, kwargs, out)` on each observer in turn.

Observers see what runs, whatever the grad mode: a CompositeImplicitAutograd op (einsum, matmul,
scaled_dot_product_attention, linear) that reaches a mode whole is run decomposed inside it, as autograd's
dispatch runs it in grad mode or under no_grad. Under torch.inference_mode autograd is skipped, so the mode
meets the composite op itself, and running it outside the mode would hide the ops it is made of (einsum's
bmm: its MACs lost). torch's FlopCounterMode decomposes the same way (`func.decompose()` inside the mode).
"""
from __future__ import annotations

import torch
from torch.utils._python_dispatch import TorchDispatchMode

from .fast_meta import try_fast

_KEYS = torch._C.DispatchKey
_COMPOSITE = _KEYS.CompositeImplicitAutograd
# kernels a nested tensor takes instead of the dense composite (matmul_nested, linear's, reshape's own composite)
_NESTED_OWN = (_KEYS.NestedTensorCPU, _KEYS.NestedTensorCUDA, _KEYS.CompositeImplicitAutogradNestedTensor)
_kernels_cache: dict = {}


def _kernels(func) -> tuple[bool, bool]:
    """(whether `func` makes tensors with a CompositeImplicitAutograd kernel, whether nested tensors have a kernel
    of their own). NB: metadata queries (dim, size, is_contiguous: no tensor out) run whole, as in FlopCounterMode."""
    found = _kernels_cache.get(func)
    if found is None:
        try:
            has = torch._C._dispatch_has_kernel_for_dispatch_key
            makes_tensors = any("Tensor" in str(r.type) for r in func._schema.returns)
            found = (makes_tensors and has(func.name(), _COMPOSITE),     # NB: not py_kernels (tracing's decompositions)
                     any(has(func.name(), key) for key in _NESTED_OWN))
        except (RuntimeError, AttributeError):    # not an op of the C++ dispatcher (prim::layout): runs whole
            found = (False, False)
        _kernels_cache[func] = found
    return found


def decomposed(mode: TorchDispatchMode, func, args, kwargs):
    """`func` run as the ops it is made of, each seen by `mode`, where autograd's dispatch would run it so: a
    CompositeImplicitAutograd op, unless its inputs are nested tensors and it has a nested kernel of its own.
    NotImplemented where it runs whole."""
    composite, nested_own = _kernels(func)
    if not composite or (nested_own and any(isinstance(a, torch.Tensor) and a.is_nested for a in args)):
        return NotImplemented
    with mode:
        return func.decompose(*args, **kwargs)


class Observer(TorchDispatchMode):
    """A mode on its own, or one of ObservingMode's observers: subclasses define `observe`."""

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        out = decomposed(self, func, args, kwargs)
        if out is not NotImplemented:
            return out
        out = func(*args, **kwargs)
        self.observe(func, args, kwargs, out)
        return out

    def observe(self, func, args, kwargs, out) -> None:
        raise NotImplementedError


class ObservingMode(TorchDispatchMode):
    def __init__(self, observers, fast_meta: bool = False):
        super().__init__()
        self.observers, self.fast_meta = list(observers), fast_meta

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        out = decomposed(self, func, args, kwargs)
        if out is not NotImplemented:
            return out
        out = try_fast(func, args, kwargs) if self.fast_meta else None
        if out is None:
            out = func(*args, **kwargs)
        for observer in self.observers:
            observer.observe(func, args, kwargs, out)
        return out
