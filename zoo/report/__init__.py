"""`python -m zoo.report`: markdown tables, plots and one HTML page, built from results/ alone.
Names load on first use (PEP 562, through lazy_loader): building reads results only. Refreshing and checking the
committed results (which count, with torch): zoo.reference."""
import lazy_loader

__getattr__, __dir__, __all__ = lazy_loader.attach(__name__, submod_attrs={  # submodule: the names it defines
    "build": ["build_reports"],
})
