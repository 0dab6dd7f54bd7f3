"""The architecture as the code has it: analysis never imports zoo, no module imports one that imports it
back (imports inside functions included), no source file over 400 lines, test scaffolding out of the wheel."""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
PACKAGES = ("zoo", "analysis")
MAX_LINES = 400


def module_name(path: Path) -> str:
    parts = list(path.relative_to(REPO).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def sources() -> dict[str, Path]:
    return {module_name(p): p for package in PACKAGES for p in (REPO / package).rglob("*.py")}


def imports_of(name: str, path: Path, known: set[str]) -> set[str]:
    """Project modules `name` imports anywhere in its file (module level or inside functions)."""
    is_package = path.name == "__init__.py"
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = name.split(".") if is_package else name.split(".")[:-1]
                anchor = anchor[:len(anchor) - node.level + 1]
                base = ".".join(anchor + ([base] if base else []))
            targets = [base] + [f"{base}.{alias.name}" for alias in node.names]
        else:
            continue
        for target in targets:
            while target and target not in known:   # `from pkg import module` or `import pkg.module.attr`
                target = target.rpartition(".")[0]
            if target and target != name:
                found.add(target)
    return found


def import_graph() -> dict[str, set[str]]:
    modules = sources()
    return {name: imports_of(name, path, set(modules)) for name, path in modules.items()}


def test_the_analysis_layer_imports_nothing_from_the_zoo():
    offenders = {m: sorted(t for t in targets if t.split(".")[0] == "zoo")
                 for m, targets in import_graph().items() if m.split(".")[0] == "analysis"}
    assert {m: t for m, t in offenders.items() if t} == {}


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan). A package importing its own
    submodules (an __init__ re-exporting them) is not a ring unless a submodule imports the package back."""
    index, low, stack, on_stack, found = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in graph:
        if v not in index:
            visit(v)
    return found


def test_no_import_rings():
    graph = import_graph()
    # a package's __init__ re-exports its children; only a child importing its parent back is a ring
    for name in graph:
        graph[name] = {t for t in graph[name] if not (t.startswith(name + ".") and name in PACKAGES + tuple(
            n for n in graph if (REPO / n.replace(".", "/") / "__init__.py").exists()))}
    assert _cycles(graph) == []


def test_a_ring_would_be_found():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


@pytest.mark.parametrize("path", sorted(p for package in PACKAGES for p in (REPO / package).rglob("*.py")),
                         ids=lambda p: str(p.relative_to(REPO)))
def test_no_source_file_is_over_400_lines(path):
    assert len(path.read_text(encoding="utf-8").splitlines()) <= MAX_LINES


def test_test_scaffolding_is_not_in_the_package():
    assert not (REPO / "zoo" / "ray_cluster.py").exists() and (REPO / "tests" / "ray_cluster.py").exists()
