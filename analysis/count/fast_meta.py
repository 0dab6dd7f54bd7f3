"""Shape-only kernels for the norm and activation ops whose meta implementations are slow Python.

On the meta device torch runs LayerNorm, GroupNorm and BatchNorm (and their backwards), and
elementwise ops, through Python decompositions costing ~0.1-1 ms a call, over half the time of
costing the whole zoo. These ops
cost 0 MACs by our convention; only their outputs' shapes, dtypes and strides matter (for memory
and for the ops after them). This mode, entered outside the counter and tracker, answers them with
empty tensors of exactly the layout torch's meta kernels produce (tests/test_fast_meta.py checks
each against torch), for contiguous inputs only; anything else falls through to torch.
"""
from __future__ import annotations

import torch

aten = torch.ops.aten


def _stat_dtype(x: torch.Tensor) -> torch.dtype:
    """Mean/rstd are kept in float32 for half-precision inputs (opmath), else in the input dtype."""
    return torch.float32 if x.dtype in (torch.float16, torch.bfloat16) else x.dtype


def _empty(shape, like: torch.Tensor, dtype=None) -> torch.Tensor:
    return torch.empty(shape, dtype=dtype or like.dtype, device=like.device)


def _maybe(flag: bool, make):
    return make() if flag else None


def layer_norm(x, normalized_shape, weight, bias, eps):
    stat_shape = tuple(x.shape[: x.dim() - len(normalized_shape)]) + (1,) * len(normalized_shape)
    return _empty(x.shape, x), _empty(stat_shape, x, _stat_dtype(x)), _empty(stat_shape, x, _stat_dtype(x))


def layer_norm_backward(grad, x, normalized_shape, mean, rstd, weight, bias, mask):
    return (_maybe(mask[0], lambda: _empty(x.shape, x)),
            _maybe(mask[1] and weight is not None, lambda: _empty(weight.shape, weight)),
            _maybe(mask[2] and bias is not None, lambda: _empty(bias.shape, bias)))


def group_norm(x, weight, bias, n, c, hw, groups, eps):
    return _empty(x.shape, x), _empty((n, groups), x), _empty((n, groups), x)


def group_norm_backward(grad, x, mean, rstd, weight, n, c, hw, groups, mask):
    return (_maybe(mask[0], lambda: _empty(x.shape, x)),
            _maybe(mask[1], lambda: _empty((c,), x)), _maybe(mask[2], lambda: _empty((c,), x)))


def batch_norm(x, weight, bias, running_mean, running_var, training, momentum, eps):
    channels = x.shape[1]
    return _empty(x.shape, x), _empty((channels,), x, _stat_dtype(x)), _empty((channels,), x, _stat_dtype(x))


def batch_norm_backward(grad, x, weight, running_mean, running_var, save_mean, save_invstd, train, eps, mask):
    channels = x.shape[1]
    like = weight if weight is not None else x
    return (_maybe(mask[0], lambda: _empty(x.shape, x)),
            _maybe(mask[1], lambda: _empty((channels,), like)), _maybe(mask[2], lambda: _empty((channels,), like)))


def softmax(x, dim, half_to_float):
    return _empty(x.shape, x, torch.float32 if half_to_float else None)


def safe_softmax(x, dim, dtype=None):
    return _empty(x.shape, x, dtype)


def softmax_backward(grad, output, dim, input_dtype):
    return _empty(grad.shape, grad, input_dtype)


def unary(x, *args, **kwargs):
    return _empty(x.shape, x)


def grad_like_second(grad, x, *args, **kwargs):
    return _empty(x.shape, grad)


def addmm(bias, mat1, mat2):
    return _empty((mat1.shape[0], mat2.shape[1]), mat1)


def binary(a, b):
    """add/mul/sub/div where `a` already has the broadcast shape and the result dtype."""
    return _empty(a.shape, a)


def binary_inplace(a, b):
    return a


FAST_BINARY = {aten.add.Tensor: binary, aten.mul.Tensor: binary, aten.sub.Tensor: binary,
               aten.div.Tensor: binary, aten.add_.Tensor: binary_inplace, aten.mul_.Tensor: binary_inplace}

FAST_KERNELS = {
    aten.native_layer_norm.default: layer_norm,
    aten.native_layer_norm_backward.default: layer_norm_backward,
    aten.native_group_norm.default: group_norm,
    aten.native_group_norm_backward.default: group_norm_backward,
    aten.native_batch_norm.default: batch_norm,
    aten.native_batch_norm_backward.default: batch_norm_backward,
    aten._softmax.default: softmax,
    aten._safe_softmax.default: safe_softmax,
    aten._softmax_backward_data.default: softmax_backward,
    aten.gelu.default: unary,
    aten.gelu_backward.default: grad_like_second,
    aten.threshold_backward.default: grad_like_second,
}


def try_fast(func, args, kwargs):
    """The op's outputs from a shape-only kernel, or None where torch must run it."""
    if kwargs:
        return None
    kernel = FAST_KERNELS.get(func)
    if kernel is not None and _eligible(args):
        return kernel(*args)
    if func is aten.addmm.default and _addmm_eligible(*args):
        return addmm(*args)
    kernel = FAST_BINARY.get(func)
    if kernel is not None and len(args) == 2 and _binary_eligible(*args):
        return kernel(*args)
    return None


def _eligible(args) -> bool:
    tensors = [a for a in args if isinstance(a, torch.Tensor)]
    return bool(tensors) and all(t.device.type == "meta" and t.is_contiguous() and t.is_floating_point()
                                 for t in tensors)


def _binary_eligible(a, b) -> bool:
    return (isinstance(b, torch.Tensor) and _eligible((a, b)) and b.dim() <= a.dim()
            and torch.broadcast_shapes(a.shape, b.shape) == a.shape
            and torch.result_type(a, b) == a.dtype)


def _addmm_eligible(bias, mat1, mat2) -> bool:
    """Any strides (weights arrive transposed); the output is always a fresh contiguous matrix."""
    tensors = (bias, mat1, mat2)
    return (all(t.device.type == "meta" and t.dtype == mat1.dtype and t.is_floating_point() for t in tensors)
            and mat1.dim() == mat2.dim() == 2 and bias.dim() <= 2
            and torch.broadcast_shapes(bias.shape, (mat1.shape[0], mat2.shape[1])) == (mat1.shape[0], mat2.shape[1]))
