"""One MAC formula per aten op: pure functions of shapes, registered in one table.

Convention (the project's, stated once here and in the README): MACs are the multiply-accumulates
of matmuls, linear layers, convolutions and attention's QK^T and AV. Biases, norms, softmax,
activations and pooling count 0. FLOPs = 2 x MACs wherever FLOPs are shown. Attention kernels are
counted algorithmically (QK^T + AV forward; dS K, dS^T Q, P^T dO, dO V^T backward) whatever the
kernel does internally, so a fused kernel and its math decomposition give the same number; recompute
inside FlashAttention's backward is not counted. Shapes follow torch/utils/flop_counter.py.
"""
from __future__ import annotations

import math
from typing import Callable

import torch

aten = torch.ops.aten

MacRule = Callable[..., int]
MAC_RULES: dict[object, MacRule] = {}          # OpOverloadPacket -> rule(*args, out=..., **kwargs)
ATTENTION_OPS: set[object] = set()             # packets whose MACs are attention matmuls by definition


class DuplicateRuleError(ValueError):
    pass


def register_macs(*op_names: str, attention: bool = False) -> Callable[[MacRule], MacRule]:
    """Register `rule` for every op in `op_names`; registering an op twice raises."""
    def wrap(rule: MacRule) -> MacRule:
        for packet in (getattr(aten, n) for n in op_names if hasattr(aten, n)):     # ops this build lacks cannot run
            if packet in MAC_RULES:
                raise DuplicateRuleError(f"a MAC rule for {packet} is already registered")
            MAC_RULES[packet] = rule
            if attention:
                ATTENTION_OPS.add(packet)
        return rule
    return wrap


def shape(t) -> tuple[int, ...]:
    return tuple(t.shape)


# ---- matmuls ---------------------------------------------------------------------------------

@register_macs("mm", "_int_mm")
def mm_macs(a, b, *_, **__) -> int:
    (m, k), (_, n) = shape(a), shape(b)
    return m * k * n


@register_macs("addmm", "_addmm_activation")
def addmm_macs(_bias, a, b, *_, **__) -> int:
    return mm_macs(a, b)


@register_macs("bmm")
def bmm_macs(a, b, *_, **__) -> int:
    (batch, m, k), (_, _, n) = shape(a), shape(b)
    return batch * m * k * n


@register_macs("baddbmm", "addbmm")
def baddbmm_macs(_self, a, b, *_, **__) -> int:
    return bmm_macs(a, b)


@register_macs("mv")
def mv_macs(a, x, *_, **__) -> int:
    return math.prod(shape(a))


@register_macs("addmv")
def addmv_macs(_self, a, x, *_, **__) -> int:
    return math.prod(shape(a))


@register_macs("dot", "vdot")
def dot_macs(a, b, *_, **__) -> int:
    return shape(a)[0]


@register_macs("matmul")
def matmul_macs(a, b, *_, out, **__) -> int:
    """Only seen where matmul is not decomposed (it usually is, into mm/bmm): prod(out) x k."""
    k = shape(a)[-1] if a.dim() > 1 else shape(a)[0]
    return math.prod(shape(out)) * k


@register_macs("linear")
def linear_macs(x, w, *_, out, **__) -> int:
    return math.prod(shape(out)) * shape(w)[-1]


# ---- convolutions ----------------------------------------------------------------------------

def conv_macs_from_shapes(x_shape, w_shape, out_shape, transposed: bool) -> int:
    """Each output element of a (grouped) conv costs (C_in / groups) x prod(kernel) MACs.

    w is (C_out, C_in/groups, *k) for a conv and (C_in, C_out/groups, *k) transposed; a transposed
    conv costs the same as the conv it is the gradient of: each input element meets C_out/groups x k.
    """
    return math.prod(x_shape if transposed else out_shape) * w_shape[1] * math.prod(w_shape[2:])


@register_macs("convolution", "_convolution", "convolution_overrideable")
def conv_macs(x, w, _bias, _stride, _padding, _dilation, transposed, *_, out, **__) -> int:
    return conv_macs_from_shapes(shape(x), shape(w), shape(out), bool(transposed))


@register_macs("conv1d", "conv2d", "conv3d")
def conv_nd_macs(x, w, *_, out, **__) -> int:
    """Composite front-ends; normally decomposed into aten.convolution before dispatch."""
    return conv_macs_from_shapes(shape(x), shape(w), shape(out), transposed=False)


@register_macs("conv_transpose1d", "conv_transpose2d", "conv_transpose3d")
def conv_transpose_nd_macs(x, w, *_, out, **__) -> int:
    return conv_macs_from_shapes(shape(x), shape(w), shape(out), transposed=True)


@register_macs("convolution_backward", "convolution_backward_overrideable")
def conv_backward_macs(grad_out, x, w, *schema, **__) -> int:
    """grad_input and grad_weight each cost exactly the forward's MACs; only the requested ones run.
    schema: aten's bias_sizes, stride, padding, dilation, transposed, output_padding, groups, output_mask."""
    transposed, output_mask = schema[4], schema[7]
    forward = conv_macs_from_shapes(shape(x), shape(w), shape(grad_out), bool(transposed))
    return forward * (int(output_mask[0]) + int(output_mask[1]))


# ---- attention: every scaled_dot_product_attention variant ----------------------------------

def sdpa_macs_from_shapes(q_shape, k_shape, v_shape) -> int:
    """QK^T (B.H.Lq.Lk.E) + AV (B.H.Lq.Lk.Ev), with q as (B, H, Lq, E); GQA counted on q's heads."""
    *batch_heads, lq, e = q_shape
    lk, ev = k_shape[-2], v_shape[-1]
    return math.prod(batch_heads) * lq * lk * (e + ev)


@register_macs("scaled_dot_product_attention", "_scaled_dot_product_attention_math",
               "_scaled_dot_product_attention_math_for_mps", "_scaled_dot_product_flash_attention",
               "_scaled_dot_product_flash_attention_for_cpu", "_scaled_dot_product_efficient_attention",
               "_scaled_dot_product_cudnn_attention", "_scaled_dot_product_fused_attention_overrideable",
               attention=True)
def sdpa_macs(q, k, v, *_, **__) -> int:
    return sdpa_macs_from_shapes(shape(q), shape(k), shape(v))


@register_macs("_scaled_dot_product_flash_attention_backward", "_scaled_dot_product_flash_attention_for_cpu_backward",
               "_scaled_dot_product_efficient_attention_backward", "_scaled_dot_product_cudnn_attention_backward",
               "_scaled_dot_product_fused_attention_overrideable_backward", attention=True)
def sdpa_backward_macs(grad_out, q, k, v, *_, **__) -> int:
    """dV = P^T dO, dP = dO V^T, dQ = dS K, dK = dS^T Q: twice the forward's MACs."""
    return 2 * sdpa_macs_from_shapes(shape(q), shape(k), shape(v))


def _varlen_or_dense(q, k, v, cum_q, cum_k) -> int:
    """Low-level kernels take (B, L, H, E) dense or (total, H, E) packed with cumulative offsets."""
    if cum_q is None:                  # (B, L, H, E) -> (B, H, L, E)
        return sdpa_macs_from_shapes(*(s[:-3] + (s[-2], s[-3], s[-1]) for s in map(shape, (q, k, v))))
    if cum_q.device.type == "meta":
        raise NotImplementedError("packed variable-length attention needs real offsets, not meta tensors")
    lengths_q = (cum_q[1:] - cum_q[:-1]).tolist()
    lengths_k = (cum_k[1:] - cum_k[:-1]).tolist()
    heads, e, ev = shape(q)[-2], shape(q)[-1], shape(v)[-1]
    return sum(heads * lq * lk * (e + ev) for lq, lk in zip(lengths_q, lengths_k))


@register_macs("_flash_attention_forward", "_flash_attention_forward_no_dropout_inplace", attention=True)
def flash_forward_macs(q, k, v, cum_q, cum_k, *_, **__) -> int:
    return _varlen_or_dense(q, k, v, cum_q, cum_k)


@register_macs("_efficient_attention_forward", attention=True)
def efficient_forward_macs(q, k, v, _bias, cum_q, cum_k, *_, **__) -> int:
    if cum_q is not None:
        q, k, v = (t.squeeze(0) for t in (q, k, v))
    return _varlen_or_dense(q, k, v, cum_q, cum_k)


@register_macs("_flash_attention_backward", attention=True)
def flash_backward_macs(_grad_out, q, k, v, _out, _lse, cum_q, cum_k, *_, **__) -> int:
    return 2 * _varlen_or_dense(q, k, v, cum_q, cum_k)


@register_macs("_efficient_attention_backward", attention=True)
def efficient_backward_macs(_grad_out, q, k, v, _bias, _out, cum_q, cum_k, *_, **__) -> int:
    if cum_q is not None:
        q, k, v = (t.squeeze(0) for t in (q, k, v))
    return 2 * _varlen_or_dense(q, k, v, cum_q, cum_k)


# ---- ops that look like they do matmul/conv work: a missing rule for one of these is a bug ------

_MATMUL_OR_CONV_WORDS = ("mm", "matmul", "linear", "dot", "mv", "einsum", "conv", "attention", "rnn",
                         "lstm", "gru")
_NOT_MATMUL_OR_CONV = ("upsample", "interp", "convert", "mvlgamma", "grid_sampler")


def is_matmul_or_conv_like(op_name: str) -> bool:
    """By name: 'addmm', '_scaled_dot_product_flash_attention' -> True; 'add', 'upsample_bilinear2d' -> False."""
    return (any(w in op_name for w in _MATMUL_OR_CONV_WORDS)
            and not any(w in op_name for w in _NOT_MATMUL_OR_CONV))


def op_name(func) -> str:
    """'aten.addmm.default' -> 'addmm' (rules are per op, for every overload)."""
    return func.overloadpacket.__name__


def rule_for(func) -> MacRule | None:
    return MAC_RULES.get(func.overloadpacket)


def call_macs(rule: MacRule, args, kwargs, out) -> int:
    """MACs of one call of an op with `rule`: `out` is what the op returned (an out= variant's `out` argument is
    that same tensor, so it is not passed twice); a call on nested tensors costs the sum of its components'."""
    if any(_is_nested(a) for a in (*args, *kwargs.values())):
        return sum(int(rule(*a, **{**k, "out": o})) for a, k, o in _components(args, kwargs, out))
    return int(rule(*args, **{**kwargs, "out": out}))


def _is_nested(value) -> bool:
    return isinstance(value, torch.Tensor) and value.is_nested


def _components(args, kwargs, out):
    """(args, kwargs, out) of each component of a call on nested tensors, the i-th of every nested tensor together
    (a component is one item of the batch: (1, ...)); dense tensors and other arguments as they are, in each."""
    unbound = {}
    for value in (*args, *kwargs.values(), out):
        if _is_nested(value) and id(value) not in unbound:
            if value.device.type == "meta":
                raise NotImplementedError("a nested tensor's components need real offsets, not meta tensors")
            unbound[id(value)] = [c.unsqueeze(0) for c in value.unbind()]
    counts = {len(parts) for parts in unbound.values()}
    if len(counts) != 1:
        raise NotImplementedError(f"nested tensors of {sorted(counts)} components in one call")

    def pick(value, i):
        return unbound[id(value)][i] if id(value) in unbound else value

    for i in range(counts.pop()):
        yield [pick(a, i) for a in args], {k: pick(v, i) for k, v in kwargs.items()}, pick(out, i)
