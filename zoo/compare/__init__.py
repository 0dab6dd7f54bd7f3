"""`python -m zoo.compare`: measure a list of backbones and print the comparison; `zoo.compare(models=[...], ...)`:
the same comparison as a pandas DataFrame (this package is callable: zoo.compare.frame.compare).

`cli` parses the options into a plan of tasks (zoo.runs.plan) and runs them; `display` turns the rows into the
console table, markdown, CSV or JSON; `frame` into a DataFrame. Names load on first use (PEP 562, through
lazy_loader)."""
import sys
import types

import lazy_loader

__getattr__, __dir__, __all__ = lazy_loader.attach(__name__, submod_attrs={  # submodule: the names it defines
    "cli": ["main", "parse", "build_parser", "BACKENDS", "COMPILE_MODES", "FORMATS", "pretraining_option"],
})


class _CallablePackage(types.ModuleType):
    """`zoo.compare` is this package whether or not the command has been imported, so the function is the
    package's call (a module's class may be a ModuleType subclass: the Python data model, "Customizing module
    attribute access")."""

    def __call__(self, models, **options):
        from .frame import compare

        return compare(models, **options)


sys.modules[__name__].__class__ = _CallablePackage
