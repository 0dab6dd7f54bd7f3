"""Bytes each operator moves and the FLOPs it does besides MACs, counted at the dispatcher beside the MACs.

What is counted (also in the README): unfused eager traffic. Each op that runs reads its input tensors
once and writes its outputs once, at their dtype; an input broadcast along a dimension (stride 0) is
read once. Views (view, transpose, permute, expand, slicing, and ops whose output aliases an input)
are free. Weights are inputs of the op that uses them, so they are read once per op per batch. Where
kernels fuse (torch.compile, TensorRT, a fused attention kernel's own internals) DRAM traffic is lower,
so this is an upper bound on it; caches can also serve re-reads. Operator classes: matmul_conv (ops
with a MAC rule), attention (SDPA kernels, and softmax: in these models it normalises attention
scores), norm, data_movement (copies, cat, pad, roll, gather), elementwise (everything else: pointwise
ops, activations, reductions, pooling). The roofline's op list (kernel classes) splits matmul_conv into
matmul (mm, addmm, bmm, linear: cuBLAS, whose fp32 precision is torch.backends.cuda.matmul's), conv (dense
convolutions: cuDNN, torch.backends.cudnn's), grouped_conv and depthwise_conv_k3/_k5/_k7 (by filter size); their
bytes stay under matmul_conv in bytes_by_op_class. NCHW bilinear upsampling is kernel class serial
(serial_steps: its time is a chain of accesses).

Non-MAC FLOPs (a stated convention, not a measurement): norms 5 per input element (fvcore's count for
a norm with an affine: mean, subtract, variance, scale, shift); softmax 5 per element (max, subtract,
exp, sum, divide), also inside fused SDPA kernels (per attention score); elementwise ops 1 per output
element, reductions 1 per input element; matmul/conv and data movement 0 (their MACs count instead).
FLOPs = 2 x MACs + non-MAC FLOPs wherever arithmetic intensity is given.
"""
from __future__ import annotations

import math
from collections import Counter, defaultdict
from dataclasses import dataclass

import torch

from .components import ComponentClassifier, ModuleStack, op_kind
from .dispatch import Observer
from .memory import _real_device_outputs, _storages
from .op_rules import ATTENTION_OPS, call_macs, op_name, rule_for

OP_CLASSES = ("matmul_conv", "attention", "norm", "elementwise", "data_movement")
NORM_FLOPS_PER_ELEMENT = 5
SOFTMAX_FLOPS_PER_ELEMENT = 5

_SOFTMAX = {"_softmax", "_safe_softmax", "_log_softmax", "_softmax_backward_data", "_log_softmax_backward_data"}
_NORM_WORDS = ("layer_norm", "group_norm", "batch_norm", "rms_norm", "instance_norm")
_DATA_MOVEMENT = {"copy_", "_to_copy", "clone", "cat", "stack", "constant_pad_nd", "roll", "index", "gather",
                  "index_select", "slice_scatter", "select_scatter", "repeat", "_unsafe_index", "pad",
                  "reflection_pad2d", "replication_pad2d", "contiguous", "index_put_", "scatter", "flip"}
_REDUCTIONS = {"sum", "mean", "amax", "amin", "max", "min", "var", "std", "var_mean", "norm", "linalg_vector_norm",
               "_adaptive_avg_pool2d", "avg_pool2d", "max_pool2d_with_indices", "adaptive_max_pool2d", "logsumexp"}


# CUDA kernels that launch one thread per output pixel and loop over batch x channels inside each thread, so their
# time is that chain of dependent memory accesses, not their bytes: upsample_bilinear2d_out_frame, the NCHW path of
# bilinear upsampling (num_kernels = output_height * output_width; for n < batchsize, for c < channels; taken unless
# the input is channels-last with at least 16 channels: pytorch/pytorch@fe03cf693c7c774a88c01cd0bc52f80402b8437f,
# aten/src/ATen/native/cuda/UpSampleBilinear2d.cu, upsample_bilinear2d_out_cuda_template). The op list carries
# them as kernel class "serial" with the steps per thread (batch x channels) in place of FLOPs.
_SERIAL_NCHW = {"upsample_bilinear2d"}
_SERIAL_NHWC_MIN_CHANNELS = 16


def serial_steps(func, inputs: list[torch.Tensor]) -> int | None:
    """The steps each thread of a serial-loop kernel runs one after another (None: not such a kernel). NB: one
    wave of threads assumed (an output of at most some 10^5 pixels, below any GPU's resident threads)."""
    if op_name(func) not in _SERIAL_NCHW or not inputs or inputs[0].dim() != 4:
        return None
    x = inputs[0]
    if x.shape[1] >= _SERIAL_NHWC_MIN_CHANNELS and x.is_contiguous(memory_format=torch.channels_last) \
            and not x.is_contiguous():
        return None
    return x.shape[0] * x.shape[1]


@dataclass(frozen=True)
class OpTraffic:
    """One kind of op of a forward pass, for the roofline: its class, work and bytes (per batch)."""
    op_class: str
    flops: int            # 2 x MACs + non-MAC FLOPs (class "serial": the steps per thread, serial_steps)
    bytes: int            # read + written


def tensor_bytes(t: torch.Tensor) -> int:
    """Bytes an op touches to read (or write) `t` once: broadcast (stride-0) dimensions count once."""
    if t.layout != torch.strided or t.is_nested:
        return t.numel() * t.element_size()
    distinct = math.prod(size for size, stride in zip(t.shape, t.stride()) if stride != 0)
    return distinct * t.element_size()


def _tensors(tree, found=None) -> list[torch.Tensor]:
    found = [] if found is None else found
    if isinstance(tree, torch.Tensor):
        found.append(tree)
    elif isinstance(tree, (tuple, list)):
        for item in tree:
            _tensors(item, found)
    elif isinstance(tree, dict):
        _tensors(list(tree.values()), found)
    return found


def op_class(func) -> str:
    name = op_name(func)
    if func.overloadpacket in ATTENTION_OPS or name in _SOFTMAX:
        return "attention"
    if rule_for(func) is not None:
        return "matmul_conv"
    if any(w in name for w in _NORM_WORDS):
        return "norm"
    if name in _DATA_MOVEMENT:
        return "data_movement"
    return "elementwise"


def _kernel_class(func, cls: str, args) -> str:
    """The op class, matmul_conv split as the GPU runs it: cuBLAS's matmuls (matmul), cuDNN's dense convolutions
    (conv), grouped ones (grouped_conv: 1 < groups < input channels, thin GEMMs per group) and depthwise ones
    (groups = input channels: PyTorch's own conv_depthwise2d kernel or cuDNN's, far below the GEMM peak, their
    speed set by the filter: depthwise_conv_k3 for filters up to 3 x 3, _k5 up to 5 x 5, _k7 larger). Under fp32
    the libraries take different precisions by default (TF32 for cuDNN, fp32 for cuBLAS). Convolution's input,
    weight and groups are its arguments 0, 1 and 8; convolution_backward's 1, 2 and 9."""
    if cls != "matmul_conv":
        return cls
    name = op_name(func)
    at = {"convolution": (0, 1, 8), "convolution_backward": (1, 2, 9)}.get(name)
    if at is None:
        return "conv" if "convolution" in name else "matmul"
    x, weight, groups = (args[i] if len(args) > i else None for i in at)
    if not isinstance(groups, int) or groups <= 1:
        return "conv"
    if not (isinstance(x, torch.Tensor) and x.dim() > 1 and x.shape[1] == groups):
        return "grouped_conv"
    side = max(weight.shape[2:], default=1) if isinstance(weight, torch.Tensor) else 3
    return f"depthwise_conv_k{3 if side <= 3 else 5 if side <= 5 else 7}"


def non_mac_flops(func, cls: str, inputs: list[torch.Tensor], outputs: list[torch.Tensor]) -> int:
    """The convention in the module docstring, per op."""
    name = op_name(func)
    first = inputs[0].numel() if inputs else 0
    if cls == "norm":
        return NORM_FLOPS_PER_ELEMENT * first
    if cls == "attention":
        if name in _SOFTMAX:
            return SOFTMAX_FLOPS_PER_ELEMENT * first
        q, k = inputs[0], inputs[1]       # fused SDPA: the softmax over every score, (B.H.Lq) x Lk
        return SOFTMAX_FLOPS_PER_ELEMENT * (q.numel() // q.shape[-1]) * k.shape[-2] if q.dim() >= 2 else 0
    if cls == "elementwise":
        return first if name in _REDUCTIONS else (outputs[0].numel() if outputs else 0)
    return 0


def is_alias(func, inputs: list[torch.Tensor], outputs: list[torch.Tensor]) -> bool:
    """A view, or an op whose output shares an input's storage without writing it (free)."""
    if func.is_view or op_name(func) in ("detach", "alias", "lift_fresh", "_unsafe_view"):
        return True
    if func._schema.is_mutable or not outputs:
        return False
    inside = {id(s) for s in _storages(inputs)}
    return all(id(s) in inside for s in _storages(outputs))


class TrafficCounter(Observer):
    """Bytes read and written, and non-MAC FLOPs, of every op of a forward (use inside a ModuleStack)."""

    def __init__(self, classifier: ComponentClassifier | None = None, stack: ModuleStack | None = None):
        super().__init__()
        self.classifier, self.stack = classifier, stack
        self.active = True                      # off for the backward pass (forward traffic only)
        self.bytes_read = self.bytes_written = self.non_mac_flops = self.mac_flops = 0
        self.bytes_by_class: dict[str, int] = defaultdict(int)
        self.bytes_by_component: dict[str, int] = defaultdict(int)
        self.flops_by_component: dict[str, int] = defaultdict(int)
        self.ops: Counter = Counter()           # OpTraffic -> how many times it ran (a kernel launch each)

    def observe(self, func, args, kwargs, out) -> None:
        if not self.active:
            return
        inputs = _tensors((args, kwargs))
        outputs = _tensors(_real_device_outputs(func, args, out))
        if is_alias(func, inputs, outputs):
            return
        cls = op_class(func)
        rule = rule_for(func)
        macs = call_macs(rule, args, kwargs, out) if rule is not None else 0
        extra = non_mac_flops(func, cls, inputs, outputs)
        read = sum(tensor_bytes(t) for t in (inputs[1:] if op_name(func) == "copy_" else inputs))  # copy_ only writes dst
        written = sum(tensor_bytes(t) for t in outputs)
        self.bytes_read += read
        self.bytes_written += written
        self.mac_flops += 2 * macs
        self.non_mac_flops += extra
        self.bytes_by_class[cls] += read + written
        component = self._component(func)
        self.bytes_by_component[component] += read + written
        self.flops_by_component[component] += 2 * macs + extra
        steps = serial_steps(func, inputs)
        kernel = ("serial", steps) if steps else (_kernel_class(func, cls, args), 2 * macs + extra)
        self.ops[OpTraffic(kernel[0], kernel[1], read + written)] += 1

    def _component(self, func) -> str:
        if self.classifier is None or self.stack is None:
            return "other"
        return self.classifier.component(self.stack.current, op_kind(func))

    @property
    def bytes_moved(self) -> int:
        return self.bytes_read + self.bytes_written

    @property
    def flops(self) -> int:
        """2 x MACs + non-MAC FLOPs of the whole batch."""
        return self.mac_flops + self.non_mac_flops

    def record(self) -> dict:
        """The row fields (bytes and FLOPs per batch)."""
        moved = self.bytes_moved
        return {"bytes_moved": moved, "non_mac_flops": self.non_mac_flops,
                "arithmetic_intensity": self.flops / moved if moved else None,
                "bytes_by_op_class": {c: self.bytes_by_class.get(c, 0) for c in OP_CLASSES},
                "bytes_by_component": {c: b for c, b in sorted(self.bytes_by_component.items()) if b},
                "arithmetic_intensity_by_component": {c: self.flops_by_component[c] / b
                                                      for c, b in sorted(self.bytes_by_component.items()) if b}}

    def op_list(self) -> list[tuple[str, int, int, int]]:
        """[(op_class, flops, bytes, count)]: what analysis.predict.roofline needs, compact (blocks repeat)."""
        return sorted((op.op_class, op.flops, op.bytes, n) for op, n in self.ops.items())
