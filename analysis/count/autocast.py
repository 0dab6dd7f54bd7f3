"""What a CUDA GPU runs under torch.autocast, emulated at the dispatcher for a model held in fp32 (on meta).

torch.autocast on CUDA (torch docs, "Automatic Mixed Precision package", CUDA op-specific behaviour)
casts the inputs of matmul-like ops (convolutions, mm/addmm/bmm/baddbmm, SDPA) to the low-precision
dtype and those of an fp32 list (layer_norm, group_norm, softmax, log_softmax, sum, prod, cumsum,
exp, log, pow, rsqrt, reciprocal, norms, losses) to float32; every other op runs in the dtype its
inputs promote to (an fp32 residual stream plus a bf16 branch is an fp32 add). Weights stay fp32 and
are cast per use. Meta tensors carry no autocast dispatch key, so this mode does the casts itself,
one aten op at a time: each cast is an `_to_copy` op the counters below it see
(data movement: read at the old dtype, written at the new one) and an allocation the memory tracker
sees. batch_norm is in neither list (cuDNN takes half input with fp32 statistics), as in torch.
NB: autocast acts on the op Python calls, this mode on the aten ops it decomposes into; the lists are
written in aten names (native_layer_norm, _softmax, linalg_vector_norm) so the two agree for the ops
these models call. An internal reduction of a decomposed op may be cast where autocast would not.

Convolutions are cast where Python calls them (F.conv*, as autocast does): conv2d checks that input and
bias dtypes agree before the dispatcher is reached.

Also emulated (`cuda_copies`): native_layer_norm reads a contiguous input (ATen's layer_norm calls
`expect_contiguous`), so a permuted input (ConvNeXt's channels-first LayerNorm) costs a copy first.
"""
from __future__ import annotations

import torch
import torch.nn.functional as F
from torch.overrides import TorchFunctionMode
from torch.utils._python_dispatch import TorchDispatchMode

from .op_rules import op_name

LOW_PRECISION_OPS = frozenset({
    "convolution", "_convolution", "conv2d", "conv1d", "conv3d", "conv_transpose2d", "addmm", "mm", "bmm",
    "baddbmm", "addbmm", "addmv", "mv", "addr", "prelu", "_scaled_dot_product_flash_attention_for_cpu",
    "_scaled_dot_product_flash_attention", "_scaled_dot_product_efficient_attention",
    "_scaled_dot_product_cudnn_attention", "_efficient_attention_forward", "_flash_attention_forward"})
FP32_OPS = frozenset({
    "native_layer_norm", "layer_norm", "native_group_norm", "group_norm", "_fused_rms_norm", "_softmax",
    "_log_softmax", "sum", "prod", "cumsum", "cumprod", "exp", "expm1", "log", "log1p", "log2", "log10", "pow",
    "reciprocal", "rsqrt", "acos", "asin", "cosh", "sinh", "tan", "erfinv", "softplus", "linalg_vector_norm",
    "norm", "frobenius_norm", "logsumexp", "cdist", "dist", "renorm", "mse_loss", "nll_loss", "l1_loss",
    "binary_cross_entropy_with_logits", "smooth_l1_loss", "kl_div"})
_HALF = (torch.float16, torch.bfloat16)


def _copy_as(t: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """A cast as its own op (`_to_copy`: `Tensor.to` reaches a dispatch mode as `aten.to`, an alias)."""
    return torch.ops.aten._to_copy.default(t, dtype=dtype)


def policy(func) -> str:
    """'low' (cast fp32 inputs down), 'fp32' (cast half inputs up) or 'promote' (run as the inputs are)."""
    name = op_name(func)
    return "low" if name in LOW_PRECISION_OPS else "fp32" if name in FP32_OPS else "promote"


class CudaAutocastEmulation(TorchDispatchMode):
    """Enter after (inside) the observing mode: casts each op's inputs as autocast on CUDA would."""

    def __init__(self, dtype: torch.dtype | None, cuda_copies: bool = True):
        super().__init__()
        self.dtype, self.cuda_copies = dtype, cuda_copies
        self.casts = 0                      # how many cast ops were added (for tests and notes)

    def _cast(self, t, to: torch.dtype, when):
        if isinstance(t, torch.Tensor) and when(t.dtype):
            self.casts += 1
            return _copy_as(t, to)
        if isinstance(t, (list, tuple)):
            return type(t)(self._cast(x, to, when) for x in t)
        return t

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        rule = policy(func) if self.dtype is not None else "promote"
        if rule == "low":
            args, kwargs = self._cast_all(args, kwargs, self.dtype, lambda d: d == torch.float32)
        elif rule == "fp32":
            args, kwargs = self._cast_all(args, kwargs, torch.float32, lambda d: d in _HALF)
        if self.cuda_copies and op_name(func) == "native_layer_norm" and not args[0].is_contiguous():
            args = (args[0].contiguous(), *args[1:])
        return func(*args, **kwargs)

    def _cast_all(self, args, kwargs, to, when):
        return (tuple(self._cast(a, to, when) for a in args),
                {k: self._cast(v, to, when) for k, v in kwargs.items()})


_CONV_FUNCTIONS = (F.conv1d, F.conv2d, F.conv3d, F.conv_transpose1d, F.conv_transpose2d, F.conv_transpose3d)


class CastConvolutions(TorchFunctionMode):
    """The Python-level half of the emulation: F.conv* inputs, weights and biases cast to `dtype`."""

    def __init__(self, dtype: torch.dtype):
        super().__init__()
        self.dtype = dtype

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func in _CONV_FUNCTIONS:
            cast = lambda t: _copy_as(t, self.dtype) if isinstance(t, torch.Tensor) and t.dtype == torch.float32 else t
            args, kwargs = tuple(cast(a) for a in args), {k: cast(v) for k, v in kwargs.items()}
        return func(*args, **kwargs)
