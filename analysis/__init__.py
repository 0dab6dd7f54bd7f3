"""archzoo's measurement layer: exact cost of a module (analysis.count) and its speed (analysis.timing).

Everything here takes an `nn.Module` and the few facts it needs (input Size, batch, dtype, device);
turning model names into modules is the zoo's job (`zoo.create_model`). Names load on first use (PEP 562):
importing a torch-free part (analysis.size, analysis.count.closed_form) does not import torch.
"""
import importlib

_LAZY = {  # public name -> the module that defines it
    **dict.fromkeys(["MAC_RULES", "ActivationMemoryTracker", "CostRecord", "MacCounter", "SwinShape", "ViTShape",
                     "attention_crossover_tokens", "cost_record", "flop_counter_mode_comparison", "fvcore_comparison",
                     "largest_batch", "max_batch_for_budget", "param_counts", "register_macs", "swin_macs", "vit_macs",
                     "vit_param_reconciliation", "vit_params", "vit_textbook_params"], ".count"),
    "Size": ".size",
    **dict.fromkeys(["DEFAULT_PROTOCOL", "QUICK_PROTOCOL", "EagerBackend", "TimingProtocol", "TimingResult",
                     "TimingSetting", "backend_named", "environment_fingerprint", "measure_peak_flops",
                     "model_flops_utilisation", "time_model"], ".timing"),
    **dict.fromkeys(["COMPONENTS", "DEVICES", "DTYPES", "resolve_device"], ".vocab"),
}
__all__ = list(_LAZY)


def __getattr__(name: str):
    if name not in _LAZY:
        raise AttributeError(f"module 'analysis' has no attribute {name!r}")
    value = getattr(importlib.import_module(_LAZY[name], __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
