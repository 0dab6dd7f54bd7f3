"""Building a model on the meta device faster: its in-place weight initialisation is skipped.

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
