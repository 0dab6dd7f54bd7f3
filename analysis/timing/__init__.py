"""Speed of a module: timing backends (eager, ONNX Runtime) and the one harness that times any of them with
one protocol; the device's GEMM peak and MFU, the machine's fingerprint and other processes' share of its CPU.
Names load on first use (PEP 562)."""
import importlib

_LAZY = {  # public name -> the submodule that defines it
    **dict.fromkeys(["EagerBackend", "TimingBackend", "TimingSetting", "is_out_of_memory"], ".backends"),
    "environment_fingerprint": ".fingerprint",
    **dict.fromkeys(["backend_named", "time_model"], ".harness"),
    **dict.fromkeys(["latency_stats", "timed_loop"], ".latency"),
    **dict.fromkeys(["DEFAULT_PROTOCOL", "QUICK_PROTOCOL", "TimingProtocol"], ".protocol"),
    **dict.fromkeys(["datasheet_peak_flops", "measure_peak_flops", "model_flops_utilisation"], ".peak"),
    "TimingResult": ".result",
}
__all__ = list(_LAZY)


def __getattr__(name: str):
    if name not in _LAZY:
        raise AttributeError(f"module 'analysis.timing' has no attribute {name!r}")
    value = getattr(importlib.import_module(_LAZY[name], __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
