"""Building models faster: on the meta device in-place weight initialisation is skipped (MetaInitShortcut);
on CPU for timing, random initialisers fill from pre-drawn values (TiledRandomInit).

NB: on meta no values exist, so nn.init's and timm's in-place initialisers change nothing but take
about half of the build time; this belongs to building models, not to measuring them.
"""
from __future__ import annotations

import torch
from torch.utils._python_dispatch import TorchDispatchMode

aten = torch.ops.aten

# In-place initialisers (nn.init, timm's trunc_normal_) change no metadata; on meta they are no-ops.
_INPLACE_INIT = {getattr(aten, n) for n in ("uniform_", "normal_", "erfinv_", "mul_", "add_", "clamp_", "fill_",
                                             "zero_", "copy_", "sub_", "div_", "exp_", "log_", "bernoulli_")}


class MetaInitShortcut(TorchDispatchMode):
    """While building a model on meta: answer in-place initialisation ops with `self` unchanged."""

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        if func.overloadpacket in _INPLACE_INIT and args and isinstance(args[0], torch.Tensor) \
                and args[0].device.type == "meta":
            return args[0]
        return func(*args, **(kwargs or {}))


class TiledRandomInit(TorchDispatchMode):
    """While building a model on CPU to time it: uniform_ and normal_ fill from one pre-drawn block of random
    values (tiled, from a random offset each call) instead of drawing every element: the same distributions at
    memory speed (drawing takes about 1 s of building vit_b16, swin_t and convnext_t). Timing needs random
    weights, not particular ones: their magnitudes are the model's own (no denormals, nothing non-finite), and
    everything else (erfinv_, fills, computed buffers) runs as usual. An explicit generator is honoured as usual."""

    BLOCK = 1 << 20

    def __init__(self):
        super().__init__()
        self.uniform = torch.rand(self.BLOCK)          # U[0, 1)
        self.normal = torch.randn(self.BLOCK)          # N(0, 1)

    def _tile(self, tensor: torch.Tensor, block: torch.Tensor) -> torch.Tensor:
        flat, n = tensor.view(-1), tensor.numel()
        start = int(torch.randint(self.BLOCK, ()))
        done = 0
        while done < n:
            take = min(n - done, self.BLOCK - start)
            flat[done:done + take].copy_(block[start:start + take])
            done, start = done + take, 0
        return tensor

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        packet = func.overloadpacket
        if packet in (aten.uniform_, aten.normal_) and args and isinstance(args[0], torch.Tensor) \
                and args[0].device.type == "cpu" and args[0].is_floating_point() and args[0].is_contiguous() \
                and kwargs.get("generator") is None and all(isinstance(a, (int, float)) for a in args[1:]):
            tensor, params = args[0], list(args[1:])
            if packet is aten.uniform_:
                low, high = (params + [kwargs.get("from", 0.0), kwargs.get("to", 1.0)][len(params):])[:2]
                return self._tile(tensor, self.uniform).mul_(high - low).add_(low)
            mean, std = (params + [kwargs.get("mean", 0.0), kwargs.get("std", 1.0)][len(params):])[:2]
            return self._tile(tensor, self.normal).mul_(std).add_(mean)
        return func(*args, **kwargs)
