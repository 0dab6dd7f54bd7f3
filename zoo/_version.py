"""The package version, stamped on every results row."""
__version__ = "0.2.0"
