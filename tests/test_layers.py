"""The import graph: no cycles, and the views a leaf (issue 14).

Imports are read from the source (``ast``), at module level and inside functions alike: a
lazy import inside a method is still a dependency, and a cycle of them is still a tangle.
"""

from __future__ import annotations

import ast
from pathlib import Path

import networkx as nx

import loom_nb

PACKAGE = Path(loom_nb.__file__).parent


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def import_graph(module_level_only: bool = False) -> nx.DiGraph:
    graph = nx.DiGraph()
    modules = {module_name(p): p for p in PACKAGE.rglob("*.py")}
    for name, path in modules.items():
        graph.add_node(name)
        tree = ast.parse(path.read_text(encoding="utf-8"))
        package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
        nodes = tree.body if module_level_only else ast.walk(tree)
        for node in nodes:
            if isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    anchor = package.split(".")
                    anchor = anchor[: len(anchor) - node.level + 1]
                    base = ".".join(anchor + ([base] if base else []))
                targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in modules else base for a in node.names]
            elif isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            else:
                continue
            for target in targets:
                if target in modules and target != name:
                    graph.add_edge(name, target)
    return graph


def test_the_import_graph_resolves_relative_imports():
    graph = import_graph()
    assert graph.has_edge("loom_nb.engine", "loom_nb.store")
    assert graph.has_edge("loom_nb.views", "loom_nb.engine")


def test_the_views_are_a_leaf_of_the_module_level_imports():
    graph = import_graph(module_level_only=True)
    importers = {a for a, b in graph.edges if b.startswith("loom_nb.views") and not a.startswith("loom_nb.views")}
    assert importers <= {"loom_nb"}, importers  # the package imports them once, to register their renderers


def test_no_module_level_import_cycles():
    cycles = list(nx.simple_cycles(import_graph(module_level_only=True)))
    assert cycles == []


FACADE = {("loom_nb.engine", "loom_nb.views")}
"""The one cycle left through lazy imports: ``Loom.graph_view``, ``Loom.export_report``,
``QueryResult.contributions_figure`` … load their view when called, so that the README's
one-object API keeps working. Issue 14 moves these conveniences out of the engine."""


def test_no_import_cycles_but_the_display_facade():
    tangled = [tuple(sorted(c)) for c in nx.strongly_connected_components(import_graph()) if len(c) > 1]
    assert set(tangled) <= FACADE, tangled
