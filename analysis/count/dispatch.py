"""One TorchDispatchMode that runs each op once and shows it to several observers.

Stacking the MAC counter and the memory tracker as separate modes costs a Python dispatch layer
each per op; this mode runs the op (on meta, through fast_meta's shape-only kernels where they
apply) and calls `observe(func, args, kwargs, out)` on each observer in turn.
"""
from __future__ import annotations

from torch.utils._python_dispatch import TorchDispatchMode

from .fast_meta import try_fast


class Observer(TorchDispatchMode):
    """A mode on its own, or one of ObservingMode's observers: subclasses define `observe`."""

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
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
        out = try_fast(func, args, kwargs) if self.fast_meta else None
        if out is None:
            out = func(*args, **kwargs)
        for observer in self.observers:
            observer.observe(func, args, kwargs, out)
        return out


class DecomposingMode(ObservingMode):
    """ObservingMode that shows its observers what a CompositeImplicitAutograd op runs instead of the op itself,
    as autograd's dispatch does in grad mode or under no_grad. Under inference_mode autograd is skipped and a
    mode meets the composite op (scaled_dot_product_attention, matmul) before it decomposes, so it would not
    see which kernel ran; torch's FlopCounterMode decomposes the same way (`func.decompose()` inside the mode)."""

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        with self:
            out = func.decompose(*args, **kwargs)
        if out is not NotImplemented:
            return out
        return super().__torch_dispatch__(func, types, args, kwargs)
