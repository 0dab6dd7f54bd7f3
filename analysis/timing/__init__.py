"""Speed of a module: timing backends (eager, ONNX Runtime) and the one harness that times any of them with
one protocol; the device's GEMM peak and MFU, the machine's fingerprint and other processes' share of its CPU.
Names load on first use (PEP 562, through lazy_loader)."""
import lazy_loader

__getattr__, __dir__, __all__ = lazy_loader.attach(__name__, submod_attrs={  # submodule: the names it defines
    "backends": ["EagerBackend", "TimingBackend", "TimingSetting", "is_out_of_memory"],
    "fingerprint": ["environment_fingerprint"],
    "harness": ["backend_named", "time_model"],
    "latency": ["latency_stats", "timed_loop"],
    "peak": ["datasheet_peak_flops", "measure_peak_flops", "model_flops_utilisation"],
    "protocol": ["DEFAULT_PROTOCOL", "QUICK_PROTOCOL", "TimingProtocol"],
    "result": ["TimingResult"],
})
