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
    modules = {module_name(p): p for p in PACKAGE.rglob("*.py") if "_data" not in p.parts}  # _data: samples' files
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


LAYER = {"core": 0, "embed": 1, "ollama": 1, "index": 1, "chat": 2, "evaluation": 3, "cli": 4, "demo": 4}
"""Each subpackage's layer: a module imports only its own layer and the ones below
(``core`` ← ``embed``/``ollama``/``index`` ← ``chat`` ← ``evaluation`` ← the CLI and demo).
``evaluation`` sits above ``chat`` because a follow-up case runs through the chat's planner.
``views`` is a leaf, checked on its own: it imports only the core."""


def layer_of(module: str) -> str | None:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else None


FACADE = {
    ("loom_nb.core.engine", "loom_nb.embed"): "Loom() and Loom.open pick the default or the saved embedder",
    ("loom_nb.core.engine", "loom_nb.index"): "Loom.index and Loom.outline call the indexer",
    ("loom_nb.core.engine", "loom_nb.views"): "Loom.graph_view, export_report and the result figures",
    ("loom_nb.core.engine", "loom_nb.views.figures"): "QueryResult.contributions_figure and friends",
    ("loom_nb.core.engine", "loom_nb.views.graph_view"): "Loom.graph_view",
    ("loom_nb.core.engine", "loom_nb.views.report"): "Loom.export_report",
    ("loom_nb.core.engine", "loom_nb.views.widgets"): "Loom.tuner",
    ("loom_nb.core.engine", "loom_nb.ollama.context_window"): "Loom.query(model=..., ask_ollama=True) asks the server",
    ("loom_nb.core.engine", "loom_nb.index.background"): "Loom.open goes on embedding what a save left pending",
    ("loom_nb.core.engine", "loom_nb.index.documents"): "Loom.add_file cuts a PDF or HTML document into sections",
    ("loom_nb.core.engine", "loom_nb.index.notebooks"): "Loom.skeleton outlines a notebook's cells as indexing does (IPython magics blank)",
}
"""Lazy imports that reach up a layer, each with the call that needs it: the one-object
``Loom`` API of the README is a facade over every layer, and loads each on first use."""


def upward(graph: nx.DiGraph) -> set[tuple[str, str]]:
    out = set()
    for a, b in graph.edges:
        la, lb = layer_of(a), layer_of(b)
        if la == "views" or lb is None or la is None or la == "_moved":
            continue
        if (lb == "views" and LAYER[la] < LAYER["cli"]) or LAYER.get(lb, 0) > LAYER[la]:
            out.add((a, b))
    return out


def test_the_import_graph_resolves_relative_imports():
    graph = import_graph()
    assert graph.has_edge("loom_nb.core.engine", "loom_nb.core.store")
    assert graph.has_edge("loom_nb.views", "loom_nb.core.engine")
    assert graph.has_edge("loom_nb.chat.session", "loom_nb.ollama")


def test_every_module_sits_in_a_layer():
    internal = {"loom_nb._moved"}  # the old module paths' finder: imports nothing of the package
    unplaced = [m for m in import_graph() if m != "loom_nb" and m not in internal and layer_of(m) not in LAYER and layer_of(m) != "views"]
    assert unplaced == []


def test_module_level_imports_never_reach_up_a_layer():
    assert upward(import_graph(module_level_only=True)) == set()


def test_lazy_imports_reach_up_only_for_the_facade():
    assert upward(import_graph()) <= set(FACADE), upward(import_graph()) - set(FACADE)


def test_the_rule_sees_an_upward_import():
    graph = nx.DiGraph([("loom_nb.core.rank", "loom_nb.chat.session"), ("loom_nb.chat.session", "loom_nb.core.rank"),
                        ("loom_nb.core.pack", "loom_nb.views.text")])
    assert upward(graph) == {("loom_nb.core.rank", "loom_nb.chat.session"), ("loom_nb.core.pack", "loom_nb.views.text")}


def test_the_views_import_only_the_core():
    graph = import_graph()
    reached = {b for a, b in graph.edges if layer_of(a) == "views" and layer_of(b) not in ("views", None)}
    assert {layer_of(b) for b in reached} <= {"core"}, reached


def test_the_views_are_a_leaf_of_the_module_level_imports():
    graph = import_graph(module_level_only=True)
    importers = {a for a, b in graph.edges if b.startswith("loom_nb.views") and not a.startswith("loom_nb.views")}
    assert importers <= {"loom_nb"}, importers  # the package imports them once, to register their renderers


def test_no_module_level_import_cycles():
    cycles = list(nx.simple_cycles(import_graph(module_level_only=True)))
    assert cycles == []


def test_no_import_cycles_but_the_display_facade():
    tangled = [sorted(c) for c in nx.strongly_connected_components(import_graph()) if len(c) > 1]
    allowed = {a for a, _ in FACADE} | {b for _, b in FACADE}
    assert all(set(c) <= allowed | {m for m in c if layer_of(m) == "views"} for c in tangled), tangled


def test_old_module_paths_warn_and_give_the_moved_module():
    import importlib
    import sys

    import pytest

    from loom_nb._moved import MOVED
    from loom_nb.core import store

    sys.modules.pop("loom_nb.store", None)
    with pytest.warns(DeprecationWarning, match="loom_nb.store moved to loom_nb.core.store"):
        old = importlib.import_module("loom_nb.store")
    assert old is store
    with pytest.warns(DeprecationWarning, match="loom_nb.session moved to loom_nb.chat.session"):
        from loom_nb.session import Session
    assert Session is loom_nb.Session
    for old_path, new_path in MOVED.items():
        assert importlib.util.find_spec(new_path) is not None, new_path
    with pytest.raises(AttributeError):
        loom_nb.no_such_module


def test_an_old_path_never_shadows_the_function_of_the_same_name():
    import importlib

    import loom_nb.core.rank

    importlib.import_module("loom_nb.rank")
    import loom_nb.classify  # noqa: F401

    assert importlib.import_module("loom_nb.rank") is loom_nb.core.rank
    assert callable(loom_nb.rank) and callable(loom_nb.classify)  # the public functions, still
