"""Each word the commands share is defined once (zoo/options.py) and both commands use that definition."""
import ast
from pathlib import Path

import zoo.compare
import zoo.options
import zoo.select
import zoo.shortlist

ROOT = Path(__file__).resolve().parents[1]
SHARED = {"FORMATS", "SELECT_FORMATS", "BACKENDS", "COMPILE_MODES"}


def assigned_names(path: Path) -> set[str]:
    """Names a module binds at its top level by assignment (an import is not a definition)."""
    found = set()
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        targets = node.targets if isinstance(node, ast.Assign) else \
            [node.target] if isinstance(node, ast.AnnAssign) else []
        found |= {t.id for t in targets if isinstance(t, ast.Name)}
    return found


def test_the_shared_vocabularies_are_assigned_only_in_zoo_options():
    where = {str(p.relative_to(ROOT)): sorted(assigned_names(p) & SHARED) for p in (ROOT / "zoo").rglob("*.py")}
    assert {p: names for p, names in where.items() if names} == {"zoo/options.py": sorted(SHARED)}


def test_both_commands_use_the_one_definition():
    assert zoo.compare.BACKENDS is zoo.shortlist.BACKENDS is zoo.select.BACKENDS is zoo.options.BACKENDS
    assert zoo.compare.COMPILE_MODES is zoo.shortlist.COMPILE_MODES is zoo.options.COMPILE_MODES
    assert zoo.compare.FORMATS == ("table", "markdown", "csv", "json")
    assert zoo.select.FORMATS == ("table", "markdown", "json")      # select writes no CSV
    assert zoo.shortlist.pretraining_option is zoo.compare.pretraining_option is zoo.options.pretraining_option
