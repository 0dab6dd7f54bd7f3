"""archzoo's measurement layer: exact cost of a module (analysis.count) and its speed (analysis.timing).

Everything here takes an `nn.Module` and the few facts it needs (input Size, batch, dtype, device);
turning model names into modules is the zoo's job (`zoo.create_model`).
"""
from .count import (MAC_RULES, ActivationMemoryTracker, CostRecord, MacCounter, SwinShape, ViTShape,
                    attention_crossover_tokens, cost_record, flop_counter_mode_comparison, fvcore_comparison,
                    largest_batch, max_batch_for_budget, param_counts, register_macs, swin_macs, vit_macs,
                    vit_param_reconciliation, vit_params, vit_textbook_params)
from .size import Size
from .timing import (DEFAULT_PROTOCOL, QUICK_PROTOCOL, EagerBackend, TimingProtocol, TimingResult, TimingSetting,
                     backend_named, environment_fingerprint, measure_peak_flops, model_flops_utilisation, time_model)
from .vocab import COMPONENTS, DEVICES, DTYPES, resolve_device

__all__ = [
    "MAC_RULES", "ActivationMemoryTracker", "CostRecord", "MacCounter", "SwinShape", "ViTShape",
    "attention_crossover_tokens", "cost_record", "flop_counter_mode_comparison", "fvcore_comparison",
    "largest_batch", "max_batch_for_budget", "param_counts", "register_macs", "swin_macs", "vit_macs",
    "vit_param_reconciliation", "vit_params", "vit_textbook_params", "Size", "DEFAULT_PROTOCOL", "QUICK_PROTOCOL",
    "EagerBackend", "TimingProtocol", "TimingResult", "TimingSetting", "backend_named", "environment_fingerprint",
    "measure_peak_flops", "model_flops_utilisation", "time_model", "COMPONENTS", "DEVICES", "DTYPES",
    "resolve_device",
]
