"""Cost of one module at one input size: params, MACs (per component), attention share, activation memory.

`cost_record(module, img_size)` takes any nn.Module (as fvcore and FlopCounterMode do) and returns
a CostRecord (analysis.count.record); turning model names into modules is the zoo's job. MAC convention: see op_rules
(matmuls, linear, conv, attention QK^T and AV; FLOPs = 2 x MACs). MACs are per image; activation
peaks are per batch (they are what the batch needs at once). Runs on whatever device the module is
on (one with no parameters or buffers: torch's default device); on meta no weights exist and no arithmetic
is done, so ViT-H at 1024 costs what it costs at 224.
On meta, SDPA is routed to the fused kernel a CPU would run (meta_sdpa), so memory matches a real
CPU; MACs agree either way.
"""
from __future__ import annotations

from contextlib import ExitStack, nullcontext
from dataclasses import dataclass
from typing import Callable

import torch
from torch import nn

from ..size import Size, SizeLike
from ..vocab import COMPONENTS, attention_path, dtype_name
from .autocast import CudaAutocastEmulation
from .components import ComponentClassifier, ModuleStack
from .counter import MacCounter
from .dispatch import ObservingMode
from .memory import ActivationMemoryTracker, CudaPeak, largest_batch
from .meta_sdpa import FusedSdpaOnMeta
from .params import param_counts
from .record import CostRecord
from .traffic import TrafficCounter


def home_of(module: nn.Module) -> tuple[torch.device, torch.dtype]:
    """The device and dtype of the module's first floating-point parameter or buffer (of its first tensor where
    none is floating point); a module with none (AdaptiveAvgPool2d, Identity) runs where torch makes tensors by
    default, in the default dtype."""
    tensors = [*module.parameters(), *module.buffers()]
    first = next((t for t in tensors if t.is_floating_point()), tensors[0] if tensors else None)
    if first is None:
        return torch.get_default_device(), torch.get_default_dtype()
    return first.device, first.dtype if first.is_floating_point() else torch.get_default_dtype()


def image_batch(module: nn.Module, batch_size: int, img_size: Size,
                dtype: torch.dtype | None = None, in_chans: int | None = None) -> torch.Tensor:
    """A (B, C, H, W) input on the module's device, empty on meta, random elsewhere."""
    device, own_dtype = home_of(module)
    dtype = dtype or own_dtype
    shape = (batch_size, in_chans or getattr(module, "in_chans", None) or 3, *img_size.hw)
    return torch.empty(shape, device=device, dtype=dtype) if device.type == "meta" else \
        torch.randn(shape, device=device, dtype=dtype)


def _instrumented(module, classifier, emulate_fused_sdpa: bool, traffic: bool = False, gpu=None):
    """A module stack, a MAC counter and a memory tracker (and with `traffic` a TrafficCounter, kept
    as `counter.traffic`) in one dispatch mode; on meta, fast shape-only kernels and fused-SDPA routing.
    `gpu` (a GpuEmulation) makes the count what a CUDA GPU runs: its SDPA kernels, its autocast casts."""
    stack = ExitStack()
    on_meta = home_of(module)[0].type == "meta"
    modules = stack.enter_context(ModuleStack(module))
    counter = MacCounter(classifier, modules)
    memory = ActivationMemoryTracker(classifier, modules, gpu.block_bytes if gpu is not None else None)
    counter.traffic = TrafficCounter(classifier, modules) if traffic else None
    observers = [counter, memory] + ([counter.traffic] if traffic else [])
    stack.enter_context(ObservingMode(observers, fast_meta=on_meta))
    target = "cuda" if gpu is not None else "cpu"
    stack.enter_context(FusedSdpaOnMeta(target) if on_meta and emulate_fused_sdpa else nullcontext())
    if gpu is not None:
        stack.enter_context(CudaAutocastEmulation(gpu.autocast))
    return stack, counter, memory


@dataclass(frozen=True)
class GpuEmulation:
    """Count what a CUDA GPU runs (analysis.count.autocast): `autocast` the low-precision dtype of
    torch.autocast (None: no autocast, the model's own dtype throughout); `block_bytes` the bytes the
    caching allocator books per request (analysis.count.allocator.block_bytes; None: the bytes asked for)."""
    autocast: torch.dtype | None = None
    block_bytes: Callable[[int], int] | None = None


def run_forward(module: nn.Module, x: torch.Tensor, classifier: ComponentClassifier | None = None,
                emulate_fused_sdpa: bool = True, traffic: bool = False, gpu: GpuEmulation | None = None
                ) -> tuple[MacCounter, ActivationMemoryTracker, int | None]:
    """One inference forward (no_grad): MAC counter (with `traffic`, its bytes in `.traffic`), memory
    tracker, CUDA peak (or None)."""
    stack, counter, memory = _instrumented(module, classifier or ComponentClassifier(module), emulate_fused_sdpa,
                                           traffic, gpu)
    with CudaPeak(x.device) as cuda, torch.no_grad(), stack:
        out = module(x)
        del out
    return counter, memory, cuda.peak_bytes


def _loss(out) -> torch.Tensor:
    """sum of the logits, or of every feature map a feature extractor returns."""
    if isinstance(out, (list, tuple)):
        return sum(o.float().sum() for o in out)
    return out.float().sum()


def run_train_step(module: nn.Module, x: torch.Tensor, classifier: ComponentClassifier | None = None,
                   emulate_fused_sdpa: bool = True, gpu: GpuEmulation | None = None,
                   loss: Callable[[object], torch.Tensor] | None = None, traffic: bool = False,
                   optimizer: Callable[[list], torch.optim.Optimizer] | None = None
                   ) -> tuple[MacCounter, ActivationMemoryTracker, int | None]:
    """Forward + backward of `loss` of the outputs (None: their sum; analysis.count.losses has the tasks'
    losses), gradients pre-allocated (so not counted as activations). With `traffic`, the kernels of both
    passes in `counter.traffic` (a TrafficCounter), the gradients' accumulation included. `optimizer` (made
    from the trainable parameters) also runs zero_grad() before and step() after, as a training loop does,
    its state made by one step before counting (a steady-state step, not the first)."""
    was_training = module.training
    params = [p for p in module.parameters() if p.requires_grad]
    for p in params:
        p.grad = torch.zeros_like(p)
    module.train()
    try:
        opt = optimizer(params) if optimizer is not None else None
        if opt is not None:
            opt.step()                                               # its state exists before the counted step
        stack, counter, memory = _instrumented(module, classifier or ComponentClassifier(module),
                                               emulate_fused_sdpa, traffic, gpu=gpu)
        with CudaPeak(x.device) as cuda, torch.enable_grad(), stack:
            if opt is not None:
                opt.zero_grad(set_to_none=False)
            value = (loss or _loss)(module(x))
            counter.phase = "backward"
            if value.requires_grad:          # NB: no parameter that requires grad (AdaptiveAvgPool2d): no backward
                value.backward()
            del value
            if opt is not None:
                counter.phase = "optimizer"
                opt.step()
    finally:
        module.train(was_training)
        for p in params:
            p.grad = None
    return counter, memory, cuda.peak_bytes


def per_image(macs: int, batch_size: int) -> int:
    """MACs of these models are exactly linear in the batch; a remainder would be a counting bug."""
    if macs % batch_size:
        raise ArithmeticError(f"{macs:,} MACs at batch {batch_size} are not a whole number per image")
    return macs // batch_size


def cost_record(module: nn.Module, img_size: SizeLike, batch_size: int = 1,
                dtype: torch.dtype | None = None, train: bool = True, emulate_fused_sdpa: bool = True,
                in_chans: int | None = None) -> CostRecord:
    """Params, per-image MACs (total, attention, per component), attention path, activation peak
    of the batch, and with `train` the same for one training step (forward + backward)."""
    return cost_and_ops(module, img_size, batch_size, dtype, train, emulate_fused_sdpa, in_chans)[0]


def cost_and_ops(module: nn.Module, img_size: SizeLike, batch_size: int = 1,
                 dtype: torch.dtype | None = None, train: bool = True, emulate_fused_sdpa: bool = True,
                 in_chans: int | None = None) -> tuple[CostRecord, list[tuple[str, int, int, int]]]:
    """cost_record and, from the same inference forward of the batch, its op list (TrafficCounter.op_list:
    (op_class, FLOPs, bytes, count)), which analysis.predict.roofline reads."""
    classifier = ComponentClassifier(module)
    x = image_batch(module, batch_size, Size.of(img_size), dtype, in_chans)
    counter, memory, cuda_peak = run_forward(module, x, classifier, emulate_fused_sdpa, traffic=True)
    macs = per_image(counter.forward_macs, batch_size)
    attn_macs = per_image(counter.macs_by_component.get("attn_matmul", 0), batch_size)
    record = CostRecord(
        **param_counts(module, classifier),
        macs=macs, attn_macs=attn_macs, attn_share=attn_macs / macs if macs else 0.0,
        macs_by_component={c: per_image(counter.macs_by_component.get(c, 0), batch_size) for c in COMPONENTS},
        attn_path=attention_path(counter.fused_attention_ops, counter.math_attention_ops),
        act_peak_bytes=memory.peak_bytes, act_peak_by_component=memory.peak_by_component,
        cuda_peak_bytes=cuda_peak, weight_bytes=weight_bytes(module), dtype=dtype_label(x.dtype),
        head_classes=head_classes(module),
        **counter.traffic.record())
    uncounted = set(counter.uncounted_ops)
    if train:
        train_counter, train_memory, train_cuda_peak = run_train_step(module, x, classifier, emulate_fused_sdpa)
        record.train_macs = per_image(train_counter.forward_macs + train_counter.backward_macs, batch_size)
        record.train_backward_macs = per_image(train_counter.backward_macs, batch_size)
        record.train_act_peak_bytes, record.train_cuda_peak_bytes = train_memory.peak_bytes, train_cuda_peak
        uncounted |= set(train_counter.uncounted_ops)
    record.uncounted_ops = sorted(uncounted)
    return record, counter.traffic.op_list()


def head_classes(module: nn.Module) -> int | None:
    """The module's `num_classes` (timm's models and the scratch ViT say it; 0: no head), None where it has none."""
    classes = getattr(module, "num_classes", None)
    return classes if isinstance(classes, int) and not isinstance(classes, bool) else None


def dtype_label(dtype: torch.dtype) -> str:
    """fp32 / bf16 / fp16 (analysis.vocab), or torch's own name of any other dtype ("float64")."""
    try:
        return dtype_name(dtype)
    except ValueError:
        return str(dtype).removeprefix("torch.")


def macs_by_module(module: nn.Module, img_size: SizeLike, dtype: torch.dtype | None = None) -> dict[str, int]:
    """Forward MACs per image of each innermost module that ran ("blocks.3.mlp.fc1": ...), like fvcore's
    `by_module`; the root's own functional ops are under ""."""
    counter, _, _ = run_forward(module, image_batch(module, 1, Size.of(img_size), dtype))
    return dict(sorted(counter.macs_by_module.items()))


def weight_bytes(module: nn.Module) -> int:
    """Bytes of the parameters and buffers as they are stored (a shared tensor once)."""
    seen, total = set(), 0
    for tensor in [*module.parameters(), *module.buffers()]:
        if id(tensor) not in seen:
            seen.add(id(tensor))
            total += tensor.numel() * tensor.element_size()
    return total


def max_batch_for_budget(module: nn.Module, img_size: SizeLike, budget_bytes: int,
                         dtype: torch.dtype | None = None, train: bool = False) -> dict:
    """Largest batch whose weights (+ gradients when training), input and activation peak fit the budget."""
    classifier = ComponentClassifier(module)
    weights = weight_bytes(module)
    fixed = weights * (2 if train else 1)
    step = run_train_step if train else run_forward

    size = Size.of(img_size)

    def peak_at(batch: int) -> int:
        x = image_batch(module, batch, size, dtype)
        return step(module, x, classifier)[1].peak_bytes + x.numel() * x.element_size()

    found = largest_batch(peak_at, budget_bytes, fixed_bytes=fixed)
    return {"budget_bytes": budget_bytes, "train": train, "weight_bytes": weights, "fixed_bytes": fixed, **found}
