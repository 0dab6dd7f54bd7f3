"""Speed of a module: the timed loop and its protocol, the two timed steps, the device's GEMM peak
and MFU, the machine's fingerprint and other processes' share of its CPU."""
from .fingerprint import FINGERPRINT_FIELDS, environment_fingerprint
from .harness import is_out_of_memory, measure_throughput
from .latency import DEFAULT_PROTOCOL, QUICK_PROTOCOL, TimingProtocol, latency_stats, timed_loop
from .peak import datasheet_peak_flops, measure_peak_flops, model_flops_utilisation
