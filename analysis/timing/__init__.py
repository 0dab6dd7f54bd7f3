"""Speed of a module: timing backends (eager, ONNX Runtime) and the one harness that times any of them with
one protocol; the device's GEMM peak and MFU, the machine's fingerprint and other processes' share of its CPU."""
from .backends import EagerBackend, TimingBackend, TimingSetting, is_out_of_memory
from .fingerprint import environment_fingerprint
from .harness import backend_named, time_model
from .latency import DEFAULT_PROTOCOL, QUICK_PROTOCOL, TimingProtocol, latency_stats, timed_loop
from .peak import datasheet_peak_flops, measure_peak_flops, model_flops_utilisation
from .result import TimingResult
