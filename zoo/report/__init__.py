"""`python -m zoo.report`: markdown tables, plots and one HTML page, built from results/ alone.
Names load on first use (PEP 562): building reads results only; check and refresh count (torch)."""
import importlib

_LAZY = {"build_reports": ".build", "check": ".deterministic", "refresh": ".deterministic"}
__all__ = list(_LAZY)


def __getattr__(name: str):
    if name not in _LAZY:
        raise AttributeError(f"module 'zoo.report' has no attribute {name!r}")
    value = getattr(importlib.import_module(_LAZY[name], __name__), name)
    globals()[name] = value
    return value
