"""`python -m zoo.select` and `zoo.select.select(...)`: the backbones that fit a budget, ranked.

`cli` (the command), `shortlist` (the counted screens and `select`; the Query it answers: zoo.options.select),
`rank` (orders and Pareto fronts), `cost`, `bound`, `evidence` and `timing` (the bounded timing of the survivors),
`predicted` (--predict: a datasheet GPU instead of timing), `plan` (--save-plan / --from-plan) and `answers` (the
worked questions answered); the printed shortlist and the stored answers' format are zoo.answers', which the report
reads too. Names load on first use (PEP 562, through lazy_loader)."""
import lazy_loader

__getattr__, __dir__, __all__ = lazy_loader.attach(__name__, submod_attrs={  # submodule: the names it defines
    "shortlist": ["Query", "Constraints", "select", "BACKENDS", "COMPILE_MODES", "FORMATS", "RANKS", "DEFAULT_BUDGET_S",
                  "num"],
    "cli": ["main", "build_parser", "query_of", "render"],
})
