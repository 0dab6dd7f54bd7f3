"""archzoo's measurements: exact cost (params, MACs, attention share, activation memory) and timing."""
from .closed_form import (SwinShape, ViTShape, attention_crossover_tokens, swin_macs, vit_macs,
                          vit_params, vit_textbook_params)
from .cost import RECORD_FIELDS, cost_record, max_batch_for_budget
from .counter import MacCounter
from .fingerprint import FINGERPRINT_FIELDS, environment_fingerprint
from .fvcore_compare import flop_counter_mode_comparison, fvcore_comparison
from .memory import ActivationMemoryTracker, largest_batch
from .op_rules import MAC_RULES, register_macs
from .params import param_counts, vit_param_reconciliation
from .peak import measure_peak_flops, model_flops_utilisation
from .progress import progress_tracker
from .timing import measure_throughput, sweep_throughput
