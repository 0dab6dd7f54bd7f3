"""What a CUDA GPU runs under torch.autocast, emulated for a model held in fp32 (on meta, where autocast
does nothing: meta tensors carry no autocast dispatch key).

torch.autocast on CUDA (torch docs, "Automatic Mixed Precision package", CUDA op-specific behaviour)
casts the inputs of matmul-like ops (linear, conv*, matmul, mm/addmm/bmm/baddbmm, einsum, SDPA) to the
low-precision dtype and those of an fp32 list (layer_norm, group_norm, softmax, log_softmax, sum, prod,
cumsum, exp, log, pow, rsqrt, reciprocal, norms, losses) to float32; every other op runs in the dtype its
inputs promote to (an fp32 residual stream plus a bf16 branch is an fp32 add). Weights stay fp32 and
are cast per use. This mode does the same where Python calls the op (as autocast does, above autograd,
so a training step's backward runs in the dtypes the forward ran in): each cast is a `Tensor.to`, which
the counters see as an `_to_copy` op (data movement: read at the old dtype, written at the new one) and
the memory tracker as an allocation (kept while backward needs it). batch_norm is in neither list (cuDNN
takes half input with fp32 statistics), as in torch. NB: F.normalize is listed (autocast casts the norm
inside it; here the whole function runs in fp32).

Also emulated (`cuda_copies`): layer_norm reads a contiguous input (ATen's layer_norm calls
`expect_contiguous`), so a permuted input (ConvNeXt's channels-first LayerNorm) costs a copy first.
"""
from __future__ import annotations

import torch
from torch.overrides import TorchFunctionMode

LOW_PRECISION_OPS = frozenset({
    "linear", "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d", "matmul",
    "__matmul__", "__rmatmul__", "mm", "addmm", "bmm", "baddbmm", "addbmm", "addmv", "mv", "addr", "einsum",
    "prelu", "scaled_dot_product_attention", "chain_matmul"})
FP32_OPS = frozenset({
    "layer_norm", "group_norm", "rms_norm", "softmax", "log_softmax", "softmin", "sum", "prod", "cumsum",
    "cumprod", "exp", "expm1", "log", "log1p", "log2", "log10", "pow", "__pow__", "__rpow__", "__rtruediv__",
    "__rdiv__", "reciprocal", "rsqrt", "acos", "asin", "cosh", "sinh", "tan", "erfinv", "softplus", "norm",
    "normalize", "cosine_similarity", "logsumexp", "cdist", "dist", "renorm", "mse_loss", "nll_loss",
    "cross_entropy", "l1_loss", "binary_cross_entropy_with_logits", "smooth_l1_loss", "kl_div",
    "roi_align"})                           # torchvision registers roi_align for autocast in fp32
_HALF = (torch.float16, torch.bfloat16)


def policy(func) -> str:
    """'low' (cast fp32 inputs down), 'fp32' (cast half inputs up) or 'promote' (run as the inputs are)."""
    name = getattr(func, "__name__", "")
    return "low" if name in LOW_PRECISION_OPS else "fp32" if name in FP32_OPS else "promote"


class CudaAutocastEmulation(TorchFunctionMode):
    """Casts each call's tensor inputs as autocast on CUDA would (`dtype` None: no casts, only the copies)."""

    def __init__(self, dtype: torch.dtype | None, cuda_copies: bool = True):
        super().__init__()
        self.dtype, self.cuda_copies = dtype, cuda_copies
        self.casts = 0                      # how many cast ops were added (for tests and notes)

    def _cast(self, t, to: torch.dtype, when):
        if isinstance(t, torch.Tensor) and t.is_floating_point() and when(t.dtype):
            self.casts += 1
            return t.to(to)
        if isinstance(t, (list, tuple)) and any(isinstance(x, torch.Tensor) for x in t):
            return type(t)(self._cast(x, to, when) for x in t)
        return t

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        rule = policy(func) if self.dtype is not None else "promote"
        if rule == "low":
            args, kwargs = self._cast_all(args, kwargs, self.dtype, lambda d: d == torch.float32)
        elif rule == "fp32":
            args, kwargs = self._cast_all(args, kwargs, torch.float32, lambda d: d in _HALF)
        if (self.cuda_copies and getattr(func, "__name__", "") == "layer_norm" and args
                and isinstance(args[0], torch.Tensor) and not args[0].is_contiguous()):
            args = (args[0].contiguous(), *args[1:])
        return func(*args, **kwargs)

    def _cast_all(self, args, kwargs, to, when):
        return (tuple(self._cast(a, to, when) for a in args),
                {k: self._cast(v, to, when) for k, v in kwargs.items()})
