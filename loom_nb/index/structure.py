"""Code-structure edges: which indexed file an import names, and the import, reference and
part edges between units that ranking's density signal reads."""

from __future__ import annotations

import posixpath
import re
from collections import defaultdict

__all__ = ["ImportResolver", "MAX_SHARED_DEFINITIONS", "STRUCTURE_VERSION", "link_structure", "part_edges", "resolve_import",
           "structure_edges"]

STRUCTURE_VERSION = 3
"""How the edges are worked out. A session linked by another version is linked again on its
next refresh, without cutting its files again (2: the parts of a unit cut by size are joined,
:func:`part_edges`; 3: parts of module code too, each titled by its own first line)."""

MAX_SHARED_DEFINITIONS = 3
"""A name defined in more places than this (``get``, ``run``) draws no reference edges."""

FILE_INCLUDES: dict[str, tuple[str, ...]] = {
    "c": ("",), "cpp": ("",), "ruby": (".rb", ""), "shell": ("", ".sh"), "bash": ("", ".sh"),
}
"""Languages whose imports name a file (``#include "io/buf.h"``, ``require_relative "util"``,
``source ./lib.sh``), with the extensions to try: next to the importing file first, then from
the workspace root, then as the unique path that ends so."""

DOTTED_MODULES: dict[str, tuple[str, ...]] = {
    "rust": (".rs", "/mod.rs"), "java": (".java",), "php": (".php",), "kotlin": (".kt",),
    "scala": (".scala",), "lua": (".lua", "/init.lua"),
}
"""Languages whose imports name a module path (``a.b.C``, ``a::b``, ``a\\B``): the path's
file with these endings, or the unique path that ends so. C#'s ``using``, Swift's ``import``
and SQL name namespaces or modules, not files, and draw no import edges."""


_SHELL_PREFIX = re.compile(r"""^(?:["']?(?:\$\{[^}]*\}|\$\((?:[^()]|\([^()]*\))*\)|\$\w+)["']?/?)+""")


def _file_include(folder: str, spec: str, exts: tuple[str, ...]) -> list[str]:
    """Where a file-naming import may point: beside the importer, then from the root. A
    shell variable before the path (``"$DIR/lib.sh"``, ``${0%/*}/x``) is dropped."""
    spec = _SHELL_PREFIX.sub("", spec.strip().strip("'\"")).strip("'\"").removeprefix("./")
    if not spec or spec.startswith("/"):
        return []
    return [posixpath.join(folder, spec + ext) for ext in exts] + [spec + ext for ext in exts]


class ImportResolver:
    """Finds the indexed file an import names, with lookups built once per set of paths.

    Relative imports resolve against the importing file; module paths (Python packages,
    Java/PHP/Rust paths) match a unique path suffix; a Go import path ends with the folder
    of its package.
    """

    def __init__(self, paths: set[str]):
        self.paths = paths
        self.by_suffix: dict[str, list[str]] = defaultdict(list)
        self.go_folders: dict[str, str] = {}
        for path in sorted(paths):
            parts = path.split("/")
            for k in range(1, len(parts)):
                self.by_suffix["/".join(parts[k:])].append(path)
            if path.endswith(".go"):
                folder = posixpath.dirname(path)
                self.go_folders.setdefault(folder, path)

    def _unique_suffix(self, candidate: str) -> str | None:
        matches = self.by_suffix.get(candidate, [])
        return matches[0] if len(matches) == 1 else None

    def resolve(self, importer: str, spec: str, language: str) -> str | None:  # noqa: C901 - one import form per language
        folder = posixpath.dirname(importer)
        if language == "go":
            parts = spec.strip("/").split("/")
            for k in range(len(parts)):  # the longest tail of the import path that is a folder
                tail = "/".join(parts[k:])
                if tail in self.go_folders:
                    return self.go_folders[tail]
            return None
        candidates: list[str] = []
        if language == "python":
            dots = len(spec) - len(spec.lstrip("."))
            rest = spec.lstrip(".").replace(".", "/")
            if dots:
                base = folder
                for _ in range(dots - 1):
                    base = posixpath.dirname(base)
                stem = posixpath.join(base, rest) if rest else base
            else:
                stem = rest
            candidates = [f"{stem}.py", f"{stem}/__init__.py"]
            suffix_ok = not dots
        elif language in ("javascript", "typescript", "tsx"):
            if not spec.startswith("."):
                return None  # a package from node_modules
            stem = posixpath.normpath(posixpath.join(folder, spec))
            exts = (".ts", ".tsx", ".js", ".jsx", ".mjs", ".cjs")
            candidates = [stem] + [stem + e for e in exts] + [f"{stem}/index{e}" for e in exts]
            suffix_ok = False
        elif language in FILE_INCLUDES:
            candidates, suffix_ok = _file_include(folder, spec, FILE_INCLUDES[language]), True
        else:
            cleaned = spec.replace("\\", "/").replace("::", "/").replace(".", "/").strip("/")
            for prefix in ("crate/", "self/", "super/"):
                cleaned = cleaned.removeprefix(prefix)
            if "/{" in cleaned:  # Scala's a.b.{C, D => E}: the first name
                base, names = cleaned.split("/{", 1)
                cleaned = f"{base}/{names.strip('}').split(',')[0].split('=>')[0].strip()}"
            exts = DOTTED_MODULES.get(language)
            if exts is None:
                return None
            candidates = [cleaned + ext for ext in exts]
            suffix_ok = True
        for candidate in candidates:
            candidate = posixpath.normpath(candidate)
            if candidate in self.paths:
                return candidate
        if suffix_ok:
            for candidate in candidates:
                found = self._unique_suffix(posixpath.normpath(candidate))
                if found:
                    return found
        return None


def resolve_import(importer: str, spec: str, language: str, paths: set[str]) -> str | None:
    """The indexed file an import names, if any (see :class:`ImportResolver`).

    >>> resolve_import("pkg/a.py", ".b", "python", {"pkg/b.py"})
    'pkg/b.py'
    >>> resolve_import("src/app.ts", "./util", "typescript", {"src/util.ts"})
    'src/util.ts'
    >>> resolve_import("pkg/a.py", "pkg.sub", "python", {"pkg/sub/__init__.py"})
    'pkg/sub/__init__.py'
    """
    return ImportResolver(paths).resolve(importer, spec, language)


PACKAGE_FOLDERS = frozenset({"go"})
"""Languages whose package is a folder: a name defined in the caller's folder is the one a
bare call reaches (Go needs no import inside a package)."""


def _in_scope(defined: dict[str, list[str]], path: str, imported: set[str], language: str) -> list[str]:
    """The definitions of a called name that the caller can see first: its own file's, else
    those of the files it imports; in Go, whose package is a folder, its own package's before
    those of the packages it imports (an import names one file of a package's folder, and
    every file there is the package). Else all of them. ``defined`` maps each file that
    defines the name to the defining units.

    A bare name joins every unit that defines it, so ``parse`` called in ``a/parser.py``
    would link to a ``parse`` in an unrelated module as strongly as to its neighbour. The
    scoped definitions are the ones the language would bind first; a method call on an
    object (``self.parse()``) has no such scope and keeps every definition.

    >>> defs = {"a/x.py": ["n1"], "b/y.py": ["n2"], "a/z.py": ["n3"]}
    >>> _in_scope(defs, "a/x.py", set(), "python"), _in_scope(defs, "a/w.py", {"b/y.py"}, "python")
    (['n1'], ['n2'])
    >>> _in_scope({"b/y.go": ["n2"], "a/z.go": ["n3"]}, "a/w.go", set(), "go")
    ['n3']
    >>> _in_scope({"b/y.go": ["n2"], "c/q.go": ["n4"]}, "a/w.go", {"b/x.go"}, "go")
    ['n2']
    >>> _in_scope(defs, "c/v.py", set(), "python")
    ['n1', 'n2', 'n3']
    """
    if path in defined:
        return defined[path]
    if language in PACKAGE_FOLDERS:  # a package is a folder: its own first, then the ones imported
        folder = posixpath.dirname(path)
        same_package = [n for p, ids in defined.items() if posixpath.dirname(p) == folder for n in ids]
        if same_package:
            return same_package
        folders = {posixpath.dirname(p) for p in imported}
        in_scope = [n for p, ids in defined.items() if posixpath.dirname(p) in folders for n in ids]
    else:
        in_scope = [n for p in imported if p in defined for n in defined[p]]
    return in_scope or [n for ids in defined.values() for n in ids]


def structure_edges(graph, files: dict[str, dict]) -> list[tuple[str, str, str]]:
    """Every import and reference edge the nodes' metadata implies, as ``(source, target,
    kind)``; reads the graph, changes nothing (so it needs no lock).

    Imports join the first node of the importing file to the first node of the imported
    file; references join a unit that calls a name to the unit(s) defining it, as aider's
    repository map does: the definitions in scope (:func:`_in_scope`: the same file, an
    imported file, in Go the package's folder and then the imported packages') when there are
    any, and names defined in too many places to mean anything join nothing. The parts of one
    unit cut by size join in order (:func:`part_edges`).
    """
    resolver = ImportResolver(set(files))
    first_node = {path: info["nodes"][0] for path, info in files.items() if info["nodes"]}
    definitions: dict[str, dict[str, list[str]]] = defaultdict(dict)  # name -> file -> units
    metas = []
    for path, info in files.items():
        for node_id in info["nodes"]:
            meta = graph.node(node_id).meta
            metas.append((node_id, meta))
            for name in meta.get("defines", ()):
                definitions[name].setdefault(path, []).append(node_id)
    edges = []
    imported: dict[str, set[str]] = defaultdict(set)  # file -> the files it imports
    for node_id, meta in metas:
        path = meta.get("path", "")
        for spec in meta.get("imports", ()):
            target = resolver.resolve(path, spec, meta.get("language", ""))
            if target and target != path and target in first_node:
                edges.append((node_id, first_node[target], "imports"))
                imported[path].add(target)
    scoped: dict[tuple[str, str], list[str]] = {}  # (name, calling file): the units in scope
    for node_id, meta in metas:
        path = meta.get("path", "")
        for name in meta.get("references", ()):
            defined = definitions.get(name)
            if not defined:
                continue
            targets = scoped.get((name, path))
            if targets is None:
                targets = scoped[name, path] = _in_scope(defined, path, imported.get(path, set()), meta.get("language", ""))
            if len(targets) <= MAX_SHARED_DEFINITIONS:
                edges.extend((node_id, target_id, "references") for target_id in targets if target_id != node_id)
    return edges + _file_part_edges(graph, files)


def _file_part_edges(graph, files: dict[str, dict]) -> list[tuple[str, str, str]]:
    """:func:`part_edges` of every file."""
    return [edge for info in files.values() for edge in part_edges([(node_id, graph.node(node_id)) for node_id in info["nodes"]])]


def part_edges(nodes) -> list[tuple[str, str, str]]:
    """``(part, next part, "continues")`` for the parts of one unit that
    :func:`~loom_nb.index.units.split_large` cut by size, from one file's ``(id, node)`` pairs.

    A part after the first keeps its unit's kind and defines nothing, and starts where the one
    before ended (blank lines between them aside); a symbol's parts keep its name, and parts of
    module code are titled by their own first line (``split_large``), so for them the name may
    differ (module code between two symbols is one unit before it is cut, so two module units
    side by side are parts of one). Nothing else said that
    ``Weights`` at lines 65-90 (loom-nb's own ``core/config.py``) is the middle of the class
    whose head is at 36-51: the head had its callers, the middle, which calls nothing, had no
    neighbour at all, and a question on the class ranked the middle 90th while the head came
    first.

    >>> from types import SimpleNamespace as N
    >>> def unit(name, start, end, defines=()):
    ...     return N(meta={"name": name, "kind": "class", "defines": list(defines)}, reference=N(lines=(start, end)))
    >>> part_edges([("n1", unit("Weights", 36, 51, ["Weights"])), ("n2", unit("Weights", 52, 64)),
    ...             ("n3", unit("Weights", 65, 90)), ("n4", unit("seed", 92, 99, ["seed"]))])
    [('n1', 'n2', 'continues'), ('n2', 'n3', 'continues')]
    >>> part_edges([("n1", unit("f", 1, 5, ["f"])), ("n2", unit("f", 6, 9, ["f"]))])  # an overload is not a part
    []
    >>> table = [N(meta={"name": name, "kind": "module"}, reference=N(lines=span))
    ...          for name, span in (("codes: # informational", (10, 41)), ("codes: # client error", (42, 72)))]
    >>> part_edges([("n1", table[0]), ("n2", table[1])])
    [('n1', 'n2', 'continues')]

    A notebook's lines are counted within each cell: only parts of one cell join.

    >>> def cell(name, cell_id, start, end):
    ...     return N(meta={"name": name, "kind": "window"}, reference=N(lines=(start, end), cell=cell_id))
    >>> part_edges([("n1", cell("run", "a", 1, 40)), ("n2", cell("run", "a", 41, 60)), ("n3", cell("run", "b", 61, 70))])
    [('n1', 'n2', 'continues')]
    """
    spans = []
    for node_id, node in nodes:
        ref = getattr(node, "reference", None)
        if ref is not None and len(ref.lines) and node.meta.get("name"):
            spans.append((str(getattr(ref, "cell", None) or ""), int(ref.lines[0]), int(ref.lines[-1]), node_id, node.meta))
    spans.sort(key=lambda span: span[:3])
    return [(a[3], b[3], "continues") for a, b in zip(spans, spans[1:])
            if a[0] == b[0] and b[4].get("kind") == a[4].get("kind") and (b[4]["name"] == a[4]["name"] or a[4].get("kind") == "module")
            and not b[4].get("defines") and 0 < b[1] - a[2] <= _PART_GAP]


_PART_GAP = 3
"""Lines from a part's end to the next part's start: 1, or more where blank lines between
them were left out (a part is never only blank lines)."""


def link_structure(graph, files: dict[str, dict]) -> int:
    """Recompute every import and reference edge from the nodes' metadata (:func:`structure_edges`);
    returns the count."""
    return graph.replace_structure(structure_edges(graph, files))
