"""archzoo's measurement layer: exact cost of a module (analysis.count) and its speed (analysis.timing).

Everything here takes an `nn.Module` and the few facts it needs (input size, batch, dtype, device);
turning model names into modules is the zoo's job (`zoo.create_model`).
"""
from .count import (MAC_RULES, ActivationMemoryTracker, MacCounter, SwinShape, ViTShape, attention_crossover_tokens,
                    cost_record, flop_counter_mode_comparison, fvcore_comparison, largest_batch, macs_by_module,
                    max_batch_for_budget, param_counts, register_macs, swin_macs, vit_macs, vit_param_reconciliation,
                    vit_params, vit_textbook_params)
from .timing import (DEFAULT_PROTOCOL, FINGERPRINT_FIELDS, QUICK_PROTOCOL, TimingProtocol, environment_fingerprint,
                     measure_peak_flops, measure_throughput, model_flops_utilisation)
from .vocab import COMPONENTS, DEVICES, DTYPES, resolve_device

__all__ = [
    "MAC_RULES", "ActivationMemoryTracker", "MacCounter", "SwinShape", "ViTShape", "attention_crossover_tokens",
    "cost_record", "flop_counter_mode_comparison", "fvcore_comparison", "largest_batch", "macs_by_module",
    "max_batch_for_budget", "param_counts", "register_macs", "swin_macs", "vit_macs", "vit_param_reconciliation",
    "vit_params", "vit_textbook_params", "DEFAULT_PROTOCOL", "FINGERPRINT_FIELDS", "QUICK_PROTOCOL",
    "TimingProtocol", "environment_fingerprint", "measure_peak_flops", "measure_throughput",
    "model_flops_utilisation", "COMPONENTS", "DEVICES", "DTYPES", "resolve_device",
]
