"""`python -m zoo.compare`: measure a list of backbones and print the comparison.

`cli` parses the options into a plan of tasks (zoo.runs.plan) and runs them; `display` turns the rows into the
console table, markdown, CSV or JSON. Names load on first use (PEP 562, through lazy_loader)."""
import lazy_loader

__getattr__, __dir__, __all__ = lazy_loader.attach(__name__, submod_attrs={  # submodule: the names it defines
    "cli": ["main", "parse", "build_parser", "BACKENDS", "COMPILE_MODES", "FORMATS", "pretraining_option"],
})
