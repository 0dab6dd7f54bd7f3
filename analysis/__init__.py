"""archzoo's measurement layer: exact cost of a module (analysis.count) and its speed (analysis.timing).

Everything here takes an `nn.Module` and the few facts it needs (input Size, batch, dtype, device);
turning model names into modules is the zoo's job (`zoo.create_model`). Names load on first use (PEP 562,
through lazy_loader): importing a torch-free part (analysis.size, analysis.count.closed_form) does not import torch.
"""
import lazy_loader

__getattr__, __dir__, __all__ = lazy_loader.attach(__name__, submod_attrs={  # submodule: the names it defines
    "count": ["ActivationMemoryTracker", "CostRecord", "MAC_RULES", "MacCounter", "SwinShape", "ViTShape",
              "attention_crossover_tokens", "cost_record", "flop_counter_mode_comparison", "fvcore_comparison",
              "largest_batch", "max_batch_for_budget", "param_counts", "register_macs", "swin_macs", "vit_macs",
              "vit_param_reconciliation", "vit_params", "vit_textbook_params"],
    "size": ["Size"],
    "timing": ["DEFAULT_PROTOCOL", "EagerBackend", "QUICK_PROTOCOL", "TimingProtocol", "TimingResult",
               "TimingSetting", "backend_named", "environment_fingerprint", "measure_peak_flops",
               "model_flops_utilisation", "time_model"],
    "vocab": ["COMPONENTS", "DEVICES", "DTYPES", "resolve_device"],
})
