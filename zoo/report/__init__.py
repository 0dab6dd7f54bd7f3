"""`python -m zoo.report`: markdown tables, plots and one HTML page, built from results/ alone."""
from .build import build_reports
from .deterministic import check, refresh

__all__ = ["build_reports", "check", "refresh"]
