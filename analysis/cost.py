"""Cost records: params, MACs (per component), attention share, activation memory, training step.

One function, `cost_record`, takes a registry name (or an nn.Module) and returns a plain dict.
MAC convention: see op_rules (matmuls, linear, conv, attention QK^T and AV; FLOPs = 2 x MACs).
Runs on the meta device by default: no weights, no arithmetic, so ViT-H at 1024 costs what it
costs at 224. On meta, SDPA is routed to the fused kernel a CPU would run (meta_sdpa), so memory
matches a real CPU; MACs agree either way.
"""
from __future__ import annotations

from contextlib import ExitStack, nullcontext

import torch
from torch import nn

from .components import COMPONENTS, ComponentClassifier, ModuleStack, is_attention_module
from .counter import MacCounter
from .dispatch import ObservingMode
from .fast_meta import MetaInitShortcut
from .memory import ActivationMemoryTracker, CudaPeak, largest_batch
from .meta_sdpa import FusedSdpaOnMeta
from .params import param_counts

RECORD_FIELDS = ("model", "family", "img_size", "batch_size", "tokens", "params", "macs", "attn_macs",
                 "attn_share", "act_peak_bytes", "train_macs", "uncounted_ops")


def build(model: str | nn.Module, img_size: int | None, device, dtype, spec=None, **model_kwargs):
    """(module, spec or None, img_size) for a registry name ("vit_b16", "timm:<name>") or a module.

    A module may come with its registry `spec` (e.g. a CNN built once and costed at several sizes).
    """
    if isinstance(model, nn.Module):
        if img_size is None:
            raise ValueError("img_size is required when passing a module")
        return model, spec, img_size
    import zoo

    spec = zoo.get_spec(model)
    img_size = spec.native_size if img_size is None else img_size
    with MetaInitShortcut() if str(device) == "meta" else nullcontext():
        module = zoo.create_model(model, img_size=img_size, device=device, dtype=dtype, **model_kwargs)
    return module, spec, img_size


def _input(module: nn.Module, batch_size: int, img_size: int, dtype) -> torch.Tensor:
    param = next(module.parameters())
    device, dtype = param.device, dtype or param.dtype
    in_chans = getattr(module, "in_chans", None) or 3
    shape = (batch_size, in_chans, img_size, img_size)
    return torch.empty(shape, device=device, dtype=dtype) if device.type == "meta" else \
        torch.randn(shape, device=device, dtype=dtype)


def _instrumented(module, classifier, emulate_fused_sdpa: bool):
    """A module stack, a MAC counter and a memory tracker in one dispatch mode; on meta, fast
    shape-only kernels and fused-SDPA routing."""
    stack = ExitStack()
    on_meta = next(module.parameters()).device.type == "meta"
    modules = stack.enter_context(ModuleStack(module))
    counter = MacCounter(classifier, modules)
    memory = ActivationMemoryTracker(classifier, modules)
    stack.enter_context(ObservingMode([counter, memory], fast_meta=on_meta))
    stack.enter_context(FusedSdpaOnMeta("cpu") if on_meta and emulate_fused_sdpa else nullcontext())
    return stack, counter, memory


def run_forward(module: nn.Module, x: torch.Tensor, classifier: ComponentClassifier,
                emulate_fused_sdpa: bool = True) -> tuple[MacCounter, ActivationMemoryTracker, int | None]:
    """One inference forward (no_grad): MAC counter, memory tracker, CUDA peak (or None)."""
    stack, counter, memory = _instrumented(module, classifier, emulate_fused_sdpa)
    with CudaPeak(x.device) as cuda, torch.no_grad(), stack:
        out = module(x)
        del out
    return counter, memory, cuda.peak_bytes


def run_train_step(module: nn.Module, x: torch.Tensor, classifier: ComponentClassifier,
                   emulate_fused_sdpa: bool = True) -> tuple[MacCounter, ActivationMemoryTracker, int | None]:
    """Forward + backward of sum(logits), gradients pre-allocated (so not counted as activations)."""
    was_training = module.training
    params = [p for p in module.parameters() if p.requires_grad]
    for p in params:
        p.grad = torch.zeros_like(p)
    module.train()
    try:
        stack, counter, memory = _instrumented(module, classifier, emulate_fused_sdpa)
        with CudaPeak(x.device) as cuda, torch.enable_grad(), stack:
            loss = module(x).float().sum()
            counter.phase = "backward"
            loss.backward()
            del loss
    finally:
        module.train(was_training)
        for p in params:
            p.grad = None
    return counter, memory, cuda.peak_bytes


def attention_setting(module: nn.Module) -> str:
    """What the model was told to do: timm's per-module `fused_attn` flags or the scratch `impl`."""
    seen = set()
    for name, m in module.named_modules():
        if is_attention_module(m, name):
            if hasattr(m, "fused_attn"):
                seen.add(f"fused_attn={bool(m.fused_attn)}")
            elif hasattr(m, "impl"):
                seen.add(f"impl={m.impl}")
    return ",".join(sorted(seen)) or "none"


def _attn_path(counter: MacCounter) -> str:
    ops = sorted(counter.attention_ops)
    if not ops:
        return "none"
    fused = [o for o in ops if "attention" in o]
    return ("fused:" if fused and len(fused) == len(ops) else "math:" if not fused else "mixed:") + "+".join(ops)


def cost_record(model: str | nn.Module, img_size: int | None = None, batch_size: int = 1,
                dtype: torch.dtype = torch.float32, device: str | torch.device = "meta",
                train: bool = True, emulate_fused_sdpa: bool = True, spec=None, **model_kwargs) -> dict:
    """The cost record of one model at one resolution. See RECORD_FIELDS for the required fields.

    `model` is a registry name, or a module (then `img_size` is required and `spec` optional).
    """
    module, spec, img_size = build(model, img_size, device, dtype, spec, **model_kwargs)
    classifier = ComponentClassifier(module)
    x = _input(module, batch_size, img_size, dtype)
    counter, memory, cuda_peak = run_forward(module, x, classifier, emulate_fused_sdpa)
    macs = counter.forward_macs
    attn_macs = counter.macs_by_component.get("attn_matmul", 0)
    record = {
        "model": spec.name if spec else type(module).__name__,
        "family": spec.family if spec else None,
        "img_size": img_size, "batch_size": batch_size,
        "tokens": spec.tokens(img_size) if spec else None,
        **param_counts(module, classifier),
        "macs": macs, "flops": 2 * macs, "attn_macs": attn_macs,
        "attn_share": attn_macs / macs if macs else 0.0,
        "macs_by_component": {c: counter.macs_by_component.get(c, 0) for c in COMPONENTS},
        "attn_path": _attn_path(counter), "attn_setting": attention_setting(module),
        "act_peak_bytes": memory.peak_bytes, "act_peak_by_component": memory.peak_by_component,
        "cuda_peak_bytes": cuda_peak,
        "dtype": str(dtype).removeprefix("torch."), "device": str(x.device),
    }
    uncounted = dict(counter.uncounted_ops)
    if train:
        train_counter, train_memory, train_cuda_peak = run_train_step(module, x, classifier, emulate_fused_sdpa)
        record.update(train_macs=train_counter.forward_macs + train_counter.backward_macs,
                      train_backward_macs=train_counter.backward_macs,
                      train_act_peak_bytes=train_memory.peak_bytes, train_cuda_peak_bytes=train_cuda_peak)
        for op, n in train_counter.uncounted_ops.items():
            uncounted[op] = uncounted.get(op, 0) + n
    else:
        record.update(train_macs=None, train_backward_macs=None, train_act_peak_bytes=None,
                      train_cuda_peak_bytes=None)
    record["uncounted_ops"] = sorted(uncounted)
    return record


def max_batch_for_budget(model: str | nn.Module, budget_bytes: int, img_size: int | None = None,
                         dtype: torch.dtype = torch.float32, train: bool = False, **model_kwargs) -> dict:
    """Largest batch whose weights (+ gradients when training) and activation peak fit the budget."""
    module, spec, img_size = build(model, img_size, "meta", dtype, **model_kwargs)
    classifier = ComponentClassifier(module)
    weight_bytes = sum(p.numel() * p.element_size() for p in module.parameters())
    fixed = weight_bytes * (2 if train else 1)
    step = run_train_step if train else run_forward

    def peak_at(batch: int) -> int:
        x = _input(module, batch, img_size, dtype)
        return step(module, x, classifier)[1].peak_bytes + x.numel() * x.element_size()

    found = largest_batch(peak_at, budget_bytes, fixed_bytes=fixed)
    return {"model": spec.name if spec else type(module).__name__, "img_size": img_size,
            "dtype": str(dtype).removeprefix("torch."), "train": train, "budget_bytes": budget_bytes,
            "weight_bytes": weight_bytes, "fixed_bytes": fixed, **found}
