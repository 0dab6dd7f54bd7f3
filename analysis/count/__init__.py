"""Exact cost of a module, counted at PyTorch's dispatcher: params, MACs per component, attention
share, activation memory (forward and training step), and other counters beside ours."""
from .closed_form import (SwinShape, ViTShape, attention_crossover_tokens, swin_macs, vit_macs, vit_params,
                          vit_textbook_params)
from .cost import cost_record, max_batch_for_budget, run_forward, run_train_step, weight_bytes
from .counter import MacCounter
from .memory import ActivationMemoryTracker, largest_batch
from .op_rules import MAC_RULES, register_macs
from .other_counters import flop_counter_mode_comparison, fvcore_comparison
from .record import CostRecord
from .params import param_counts, vit_param_reconciliation
