"""Exact cost of a module, counted at PyTorch's dispatcher: params, MACs per component, attention
share, activation memory (forward and training step), and other counters beside ours.
Names load on first use (PEP 562, through lazy_loader): the closed forms (closed_form.py) need no torch."""
import lazy_loader

__getattr__, __dir__, __all__ = lazy_loader.attach(__name__, submod_attrs={  # submodule: the names it defines
    "closed_form": ["SwinShape", "ViTShape", "attention_crossover_tokens", "swin_macs", "vit_macs", "vit_params",
                    "vit_textbook_params"],
    "cost": ["cost_record", "max_batch_for_budget", "run_forward", "run_train_step", "weight_bytes"],
    "counter": ["MacCounter"],
    "memory": ["ActivationMemoryTracker", "largest_batch"],
    "op_rules": ["MAC_RULES", "register_macs"],
    "other_counters": ["flop_counter_mode_comparison", "fvcore_comparison"],
    "params": ["param_counts", "vit_param_reconciliation"],
    "record": ["CostRecord"],
})
