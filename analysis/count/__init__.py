"""Exact cost of a module, counted at PyTorch's dispatcher: params, MACs per component, attention
share, activation memory (forward and training step), and other counters beside ours.
Names load on first use (PEP 562): the closed forms (closed_form.py) need no torch."""
import importlib

_LAZY = {  # public name -> the submodule that defines it
    **dict.fromkeys(["SwinShape", "ViTShape", "attention_crossover_tokens", "swin_macs", "vit_macs", "vit_params",
                     "vit_textbook_params"], ".closed_form"),
    **dict.fromkeys(["cost_record", "max_batch_for_budget", "run_forward", "run_train_step", "weight_bytes"], ".cost"),
    "MacCounter": ".counter",
    **dict.fromkeys(["ActivationMemoryTracker", "largest_batch"], ".memory"),
    **dict.fromkeys(["MAC_RULES", "register_macs"], ".op_rules"),
    **dict.fromkeys(["flop_counter_mode_comparison", "fvcore_comparison"], ".other_counters"),
    "CostRecord": ".record",
    **dict.fromkeys(["param_counts", "vit_param_reconciliation"], ".params"),
}
__all__ = list(_LAZY)


def __getattr__(name: str):
    if name not in _LAZY:
        raise AttributeError(f"module 'analysis.count' has no attribute {name!r}")
    value = getattr(importlib.import_module(_LAZY[name], __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
