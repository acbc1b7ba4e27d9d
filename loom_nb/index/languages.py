"""What differs per language for the tree-sitter outlines of C, C++, C#, Ruby, Kotlin, Swift, Bash,
Lua, Scala and SQL (issue 18).

:mod:`.symbols` owns the outline machinery: walking a tree for definitions, signatures, doc
comments above a definition, call references, the repair of broken files and the fall back to
windows. This module owns the tables that machinery reads for these ten languages, one
:class:`Spec` each: the grammar wheel, which node types are definitions and of what kind, where
a definition's name and body are, which nodes are walked through, which wrap a definition, and
the call and import queries.

Every grammar is a per-language PyPI wheel with the compiled parser inside (``tree-sitter-c``,
``-cpp``, ``-c-sharp``, ``-ruby``, ``-kotlin``, ``-swift``, ``-bash``, ``-lua``, ``-scala``,
``-sql``), loaded with the installed ``tree-sitter``; nothing is downloaded at run time, unlike
``tree-sitter-language-pack`` 1.x. A wheel that is missing or will not load makes
:func:`.symbols.grammar` return None, and files of that language are windowed.

Known limits, each measured on the wheels named in ``pyproject.toml``: the Kotlin grammar wants
a newline between class members, so ``class A { fun f() = 1 }`` on one line parses with a MISSING
node and its outline is marked partial (the symbols are still found); a ``.h`` header is parsed
as C++ when its text uses C++ (:func:`.symbols.header_language`), else as C; SQL is parsed with one grammar for every dialect
(PL/pgSQL bodies and MySQL table options can be partial).

Size: ten languages' tables and their naming rules; each is short, and there are ten.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Callable, Mapping

CONTAINERS = frozenset({"class", "interface", "struct", "enum", "trait", "impl", "module"})
"""Kinds whose body holds members (the same set as :mod:`.symbols`)."""


@dataclass(frozen=True)
class Found:
    """A definition as a language reports it, before :mod:`.symbols` makes a ``Symbol`` of it.

    Attributes
    ----------
    kind, name : str
        One of ``symbols.KINDS``, and the bare name.
    decl : Node
        Where the signature starts.
    body : Node or None
        Where the signature stops (None: the whole declaration is the signature).
    members : Node or None
        The node whose children are this definition's members.
    owner : str or None
        The type a definition names outside its own body: C++ ``bool Store::expired()``, Lua
        ``function M.f()``. It becomes the parent, as a Go method's receiver does.
    outer : Node or None
        The node whose lines are the symbol, when not the node walked (a Lua assignment).
    """

    kind: str
    name: str
    decl: object
    body: object | None
    members: object | None = None
    owner: str | None = None
    outer: object | None = None


Describe = Callable[[object, bytes, str, object], list[Found]]
"""``describe(node, src, kind, outer)``: the definitions ``node`` introduces; ``kind`` is its
entry in :attr:`Spec.defs` (or None)."""


@dataclass(frozen=True)
class Spec:
    """One language's tables.

    Attributes
    ----------
    language : str
        The canonical name (``"cpp"``, ``"csharp"``, ``"bash"``).
    module, function : str
        The grammar wheel's module and the function returning its language capsule.
    family : str
        Languages of one family share definitions and naming (C and C++).
    defs : mapping of str to str
        Node type -> kind; a ``function`` directly in a class-like symbol becomes a ``method``.
    transparent : frozenset of str
        Node types walked through in place when looking for definitions (``extern "C" {}``,
        ``#ifdef``, Ruby's ``class << self``); never function bodies.
    wrappers : frozenset of str
        Node types that hold one definition and lend it their lines (a C++ ``template <…>``, an
        SQL ``statement`` with its ``;``): the definition is their last named child.
    comments : frozenset of str
        Comment node types, for the doc comment above a definition.
    calls, imports : tuple of str
        Query patterns capturing ``@ref`` (callee names) and ``@imp`` (imported paths). A pattern
        the grammar does not know is dropped alone (:func:`.symbols._query`).
    describe : Describe or None
        Naming rules where the ``name``/``body`` fields are not enough.
    clean_import : callable or None
        ``str -> str`` applied to each ``@imp`` text (strip keywords, quotes, ``;``).
    aliases : tuple of str
        Other names for the language (``"c++"``, ``"shell"``).
    comment_outside_body : bool
        The grammar puts a comment above a body's first member beside the body, not in it (Ruby:
        ``module A`` / ``# doc`` / ``class B``): that comment is still the member's doc.
    """

    language: str
    module: str
    defs: Mapping[str, str]
    function: str = "language"
    family: str = ""
    transparent: frozenset[str] = frozenset()
    wrappers: frozenset[str] = frozenset()
    comments: frozenset[str] = frozenset({"comment"})
    calls: tuple[str, ...] = ()
    imports: tuple[str, ...] = ()
    describe: Describe | None = None
    clean_import: Callable[[str], str] | None = None
    aliases: tuple[str, ...] = field(default=())
    comment_outside_body: bool = False


def _text(node, src: bytes) -> str:
    return src[node.start_byte:node.end_byte].decode("utf-8", "replace")


def _field_text(node, name: str, src: bytes) -> str:
    child = node.child_by_field_name(name)
    return _text(child, src).strip("'\"`") if child is not None else ""


def _child_of_type(node, types) -> object | None:
    return next((c for c in node.named_children if c.type in types), None)


def _plain(node, src: bytes, kind: str, outer) -> list[Found]:
    """The common case: a ``name`` field, and a ``body`` field that holds the members."""
    name = _field_text(node, "name", src)
    body = node.child_by_field_name("body")
    if not name:
        return []
    return [Found(kind, name, node, body, body if kind in CONTAINERS else None)]


# --------------------------------------------------------------------------------------------
# C and C++

_C_SPECIFIERS = {"struct_specifier": "struct", "union_specifier": "struct", "class_specifier": "class",
                 "enum_specifier": "enum"}
_C_NAMES = {"identifier", "field_identifier", "qualified_identifier", "destructor_name", "operator_name",
            "type_identifier", "template_function"}


def _c_function_declarator(declarator):
    """The ``function_declarator`` a declarator names, through pointers and references
    (``char *name(void)``); None for a variable, or a pointer to a function (``int (*fp)(int)``)."""
    while declarator is not None and declarator.type in ("pointer_declarator", "reference_declarator"):
        declarator = declarator.child_by_field_name("declarator") or _child_of_type(
            declarator, ("function_declarator",))
    if declarator is None or declarator.type != "function_declarator":
        return None
    inner = declarator.child_by_field_name("declarator")
    return declarator if inner is not None and inner.type in _C_NAMES else None


def _c_name(function_declarator, src: bytes) -> tuple[str, str | None]:
    """``(name, owner)`` of a function: ``Store::expired`` -> ``("expired", "Store")``."""
    node = function_declarator.child_by_field_name("declarator")
    owner = None
    while node.type == "qualified_identifier":
        scope = node.child_by_field_name("scope")
        owner = _text(scope, src) if scope is not None else owner
        node = node.child_by_field_name("name")
        if node is None:
            return "", None
    if node.type == "template_function":
        node = node.child_by_field_name("name") or node
    return _text(node, src), owner


def _c_function(node, src: bytes, outer, body) -> list[Found]:
    declarator = _c_function_declarator(node.child_by_field_name("declarator"))
    if declarator is None:
        return []
    name, owner = _c_name(declarator, src)
    if not name:
        return []
    decl = outer if outer.type == "template_declaration" else node
    return [Found("method" if owner else "function", name, decl, body, owner=owner)]


def _c_specifier(node, src: bytes, decl) -> list[Found]:
    body = node.child_by_field_name("body")
    name = _field_text(node, "name", src)
    if body is None or not name:  # a use (`struct token *t`) or an anonymous struct
        return []
    kind = _C_SPECIFIERS[node.type]
    return [Found(kind, name, decl, body, body if kind in ("class", "struct") else None)]


def _c_describe(node, src: bytes, kind: str | None, outer) -> list[Found]:  # noqa: C901 - one C/C++ declaration form per branch
    ntype = node.type
    if ntype == "function_definition":
        return _c_function(node, src, outer, node.child_by_field_name("body"))
    if ntype in ("declaration", "field_declaration"):  # prototypes: int f(int); in a class: methods
        found = _c_function(node, src, outer, None)
        typ = node.child_by_field_name("type")
        if not found and typ is not None and typ.type in _C_SPECIFIERS:  # struct s {…} x;
            found = _c_specifier(typ, src, node)
        return found
    if ntype in _C_SPECIFIERS:
        return _c_specifier(node, src, outer if outer.type == "template_declaration" else node)
    if ntype == "type_definition":  # typedef struct {…} stats_t;
        name = _field_text(node, "declarator", src)
        typ = node.child_by_field_name("type")
        if typ is not None and typ.type in _C_SPECIFIERS and typ.child_by_field_name("body") is not None:
            kind = _C_SPECIFIERS[typ.type]
        return [Found(kind or "type", name, node, None)] if name.isidentifier() else []
    if ntype == "namespace_definition" and node.child_by_field_name("name") is None:
        return []  # an anonymous namespace is walked through (it is transparent)
    return _plain(node, src, kind, outer) if kind else []


_C_DEFS = {"function_definition": "function", "declaration": "function", "field_declaration": "method",
           "struct_specifier": "struct", "union_specifier": "struct", "class_specifier": "class",
           "enum_specifier": "enum", "type_definition": "type", "namespace_definition": "module",
           "alias_declaration": "type"}
_C_TRANSPARENT = frozenset({"preproc_if", "preproc_ifdef", "preproc_else", "preproc_elif", "preproc_elifdef",
                            "linkage_specification", "declaration_list", "namespace_definition"})
_C_CALLS = (
    "(call_expression function: (identifier) @ref)",
    "(call_expression function: (field_expression field: (field_identifier) @ref))",
)
_CPP_CALLS = _C_CALLS + (
    "(call_expression function: (qualified_identifier name: (identifier) @ref))",
    "(call_expression function: (template_function name: (identifier) @ref))",
    "(call_expression function: (qualified_identifier name: (template_function name: (identifier) @ref)))",
    "(new_expression type: (type_identifier) @ref)",
)
_C_IMPORTS = ("(preproc_include path: (string_literal (string_content) @imp))",
              "(preproc_include path: (system_lib_string) @imp)")


# --------------------------------------------------------------------------------------------
# C#, Kotlin, Swift, Scala: class-based languages with name and body fields (mostly)


def _strip_words(*words: str) -> Callable[[str], str]:
    """An import cleaner: drop the leading keywords, an alias (``X =``, ``as Y``) and a ``;``."""
    def clean(text: str) -> str:
        parts = text.strip().rstrip(";").split()
        while parts and parts[0] in words:
            parts = parts[1:]
        if "=" in parts:  # using Json = Newtonsoft.Json;
            parts = parts[parts.index("=") + 1:]
        if "as" in parts:  # import a.b.C as D
            parts = parts[:parts.index("as")]
        return " ".join(parts)
    return clean


_KOTLIN_KINDS = {"interface": "interface", "enum": "enum"}


def _kotlin_describe(node, src: bytes, kind: str | None, outer) -> list[Found]:
    if kind is None:
        return []
    body = _child_of_type(node, ("class_body", "enum_class_body", "function_body"))
    name = _field_text(node, "name", src)
    if node.type == "class_declaration":
        words = {_text(c, src) for c in node.children if not c.is_named}
        words |= {_text(c, src) for m in node.named_children if m.type == "modifiers" for c in m.named_children}
        kind = next((k for w, k in _KOTLIN_KINDS.items() if w in words), kind)
    elif node.type == "companion_object":
        name = name or "Companion"
    elif node.type == "secondary_constructor":
        name, body = "constructor", _child_of_type(node, ("block",))
    elif node.type == "type_alias":
        name = _field_text(node, "type", src)
    if not name:
        return []
    return [Found(kind, name, node, body, body if kind in CONTAINERS else None)]


_SWIFT_KINDS = {"class": "class", "actor": "class", "struct": "struct", "enum": "enum", "extension": "impl"}


def _swift_describe(node, src: bytes, kind: str | None, outer) -> list[Found]:
    if node.type == "class_declaration":
        kind = _SWIFT_KINDS.get(_field_text(node, "declaration_kind", src), "class")
    elif node.type in ("init_declaration", "deinit_declaration"):
        body = node.child_by_field_name("body")
        return [Found("method", node.type.split("_")[0], node, body)]
    return _plain(node, src, kind, outer) if kind else []


# --------------------------------------------------------------------------------------------
# Ruby, Lua, Bash, SQL


@dataclass(frozen=True)
class _Stop:
    """Where a signature stops when no body node starts there: :mod:`.symbols` reads only a
    body's ``start_byte``."""

    start_byte: int


def _ruby_describe(node, src: bytes, kind: str | None, outer) -> list[Found]:
    """A Ruby body starts after any comment below the header, so the signature stops at the
    header's last part instead: ``class TokenStore < Store``, ``def expired?(now)``."""
    found = _plain(node, src, kind, outer) if kind else []
    header = [c for c in map(node.child_by_field_name, ("name", "superclass", "parameters")) if c is not None]
    return [replace(found[0], body=_Stop(max(c.end_byte for c in header)))] if found and header else found


def _lua_name(name_node, src: bytes) -> tuple[str, str | None, str]:
    """``(name, owner, kind)`` of a Lua function name: ``M.f`` is a function of table ``M``,
    ``M:f`` a method (it takes ``self``)."""
    if name_node.type in ("dot_index_expression", "method_index_expression"):
        table = name_node.child_by_field_name("table")
        leaf = name_node.child_by_field_name("field") or name_node.child_by_field_name("method")
        kind = "method" if name_node.type == "method_index_expression" else "function"
        return (_text(leaf, src) if leaf is not None else "", _text(table, src) if table is not None else None, kind)
    return _text(name_node, src), None, "function"


def _lua_describe(node, src: bytes, kind: str | None, outer) -> list[Found]:
    if node.type == "function_declaration":
        name_node = node.child_by_field_name("name")
        if name_node is None:
            return []
        name, owner, kind = _lua_name(name_node, src)
        return [Found(kind, name, node, node.child_by_field_name("body"), owner=owner)] if name else []
    # M.helper = function(x) … end, local g = function() … end: a function by assignment
    if node.type not in ("assignment_statement", "variable_declaration"):
        return []
    assign = node if node.type == "assignment_statement" else _child_of_type(node, ("assignment_statement",))
    if assign is None:
        return []
    targets = _child_of_type(assign, ("variable_list",))
    values = _child_of_type(assign, ("expression_list",))
    if targets is None or values is None or len(targets.named_children) != 1 or len(values.named_children) != 1:
        return []
    value = values.named_children[0]
    if value.type != "function_definition":
        return []
    name, owner, kind = _lua_name(targets.named_children[0], src)
    return [Found(kind, name, node, value.child_by_field_name("body"), owner=owner)] if name else []


def _sql_describe(node, src: bytes, kind: str | None, outer) -> list[Found]:
    if kind is None:
        return []
    ref = _child_of_type(node, ("object_reference",))
    name = _text(ref, src) if ref is not None else ""
    if node.type == "create_index":  # CREATE INDEX name ON table: the name is the `column` field
        name = _field_text(node, "column", src) or name
    elif node.type == "create_schema":
        name = _text(_child_of_type(node, ("identifier",)) or node, src)
    body = _child_of_type(node, ("create_query", "function_body", "procedure_body"))
    name = ".".join(part.strip("\"`[]") for part in name.split("."))
    return [Found(kind, name, outer, body)] if name else []


_SQL_DEFS = {"create_table": "table", "create_view": "view", "create_materialized_view": "view",
             "create_function": "function", "create_procedure": "function", "create_index": "index",
             "create_type": "type", "create_trigger": "trigger", "create_schema": "module"}


# --------------------------------------------------------------------------------------------
# the specs

SPECS: tuple[Spec, ...] = (
    Spec("c", "tree_sitter_c", _C_DEFS, family="c", transparent=_C_TRANSPARENT, describe=_c_describe,
         calls=_C_CALLS, imports=_C_IMPORTS, clean_import=lambda t: t.strip("<>\""), aliases=("h",)),
    Spec("cpp", "tree_sitter_cpp", _C_DEFS, family="c", transparent=_C_TRANSPARENT,
         wrappers=frozenset({"template_declaration"}), describe=_c_describe, calls=_CPP_CALLS,
         imports=_C_IMPORTS, clean_import=lambda t: t.strip("<>\""), aliases=("c++", "cxx", "cc", "hpp")),
    Spec("csharp", "tree_sitter_c_sharp", {
        "class_declaration": "class", "record_declaration": "class", "struct_declaration": "struct",
        "record_struct_declaration": "struct", "interface_declaration": "interface", "enum_declaration": "enum",
        "method_declaration": "method", "constructor_declaration": "method", "destructor_declaration": "method",
        "delegate_declaration": "type", "namespace_declaration": "module"},
        calls=("(invocation_expression function: (identifier) @ref)",
               "(invocation_expression function: (member_access_expression name: (identifier) @ref))",
               "(object_creation_expression type: (identifier) @ref)",
               "(object_creation_expression type: (generic_name (identifier) @ref))"),
        imports=("(using_directive) @imp",), clean_import=_strip_words("global", "using", "static"),
        aliases=("c#", "cs", "c_sharp")),
    Spec("ruby", "tree_sitter_ruby", {"class": "class", "module": "module", "method": "function",
                                      "singleton_method": "method"},
         transparent=frozenset({"singleton_class", "body_statement"}), describe=_ruby_describe,
         calls=("(call method: (identifier) @ref)",),
         imports=('((call method: (identifier) @fn arguments: (argument_list . (string (string_content) @imp)))'
                  ' (#any-of? @fn "require" "require_relative" "load"))',),
         aliases=("rb",), comment_outside_body=True),
    Spec("kotlin", "tree_sitter_kotlin", {
        "class_declaration": "class", "object_declaration": "class", "companion_object": "class",
        "function_declaration": "function", "secondary_constructor": "method", "type_alias": "type"},
        comments=frozenset({"line_comment", "block_comment", "comment"}), describe=_kotlin_describe,
        calls=("(call_expression . (identifier) @ref)",
               "(call_expression . (navigation_expression (identifier) @ref .))"),
        imports=("(import (qualified_identifier) @imp)",), aliases=("kt", "kts")),
    Spec("swift", "tree_sitter_swift", {
        "class_declaration": "class", "protocol_declaration": "interface", "function_declaration": "function",
        "protocol_function_declaration": "method", "init_declaration": "method", "deinit_declaration": "method",
        "typealias_declaration": "type"},
        comments=frozenset({"comment", "multiline_comment"}), describe=_swift_describe,
        calls=("(call_expression . (simple_identifier) @ref)",
               "(call_expression . (navigation_expression suffix: (navigation_suffix suffix: (simple_identifier) @ref)))"),
        imports=("(import_declaration (identifier) @imp)",)),
    Spec("bash", "tree_sitter_bash", {"function_definition": "function"},
         calls=("(command name: (command_name (word) @ref))",),
         imports=('((command name: (command_name (word) @fn) . argument: (_) @imp) (#any-of? @fn "source" "."))',),
         clean_import=lambda t: t.strip("'\""), aliases=("shell", "sh")),
    Spec("lua", "tree_sitter_lua", {"function_declaration": "function"}, describe=_lua_describe,
         calls=("(function_call name: (identifier) @ref)",
                "(function_call name: (dot_index_expression field: (identifier) @ref))",
                "(function_call name: (method_index_expression method: (identifier) @ref))"),
         imports=('((function_call name: (identifier) @fn arguments: (arguments . (string content: (string_content) @imp)))'
                  ' (#eq? @fn "require"))',)),
    Spec("scala", "tree_sitter_scala", {
        "class_definition": "class", "object_definition": "class", "trait_definition": "trait",
        "enum_definition": "enum", "function_definition": "function", "function_declaration": "function",
        "type_definition": "type"},
        transparent=frozenset({"package_clause", "template_body"}),
        comments=frozenset({"comment", "block_comment"}),
        calls=("(call_expression function: (identifier) @ref)",
               "(call_expression function: (field_expression field: (identifier) @ref))",
               "(instance_expression (type_identifier) @ref)"),
        imports=("(import_declaration) @imp",), clean_import=_strip_words("import"), aliases=("sc", "sbt")),
    Spec("sql", "tree_sitter_sql", _SQL_DEFS, wrappers=frozenset({"statement"}),
         comments=frozenset({"comment", "marginalia"}), describe=_sql_describe,
         calls=("(invocation (object_reference name: (identifier) @ref))",
                "(relation (object_reference name: (identifier) @ref))",
                "(column_definition (object_reference name: (identifier) @ref))",
                "(create_index (object_reference name: (identifier) @ref))"),
         aliases=("psql", "plsql", "mysql", "sqlite")),
)
"""The languages this module adds, in the order the README lists them."""

BY_LANGUAGE: dict[str, Spec] = {spec.language: spec for spec in SPECS}
ALIASES: dict[str, str] = {alias: spec.language for spec in SPECS for alias in spec.aliases}
FAMILIES: dict[str, Spec] = {spec.family or spec.language: spec for spec in SPECS}
"""Family -> a spec of it (the tables are shared within a family)."""
COMMENT_TYPES: frozenset[str] = frozenset().union(*(spec.comments for spec in SPECS))
COMMENT_OUTSIDE_BODY: frozenset[str] = frozenset(family for family, spec in FAMILIES.items() if spec.comment_outside_body)


def describe(family: str, node, src: bytes, outer) -> list[Found]:
    """The definitions ``node`` introduces in a language of ``family``; ``[]`` when none."""
    spec = FAMILIES[family]
    kind = spec.defs.get(node.type)
    if spec.describe is not None:
        return spec.describe(node, src, kind, outer)
    return _plain(node, src, kind, outer) if kind else []


def clean_import(language: str, text: str) -> str:
    """An ``@imp`` capture's text as the language writes an import target."""
    spec = BY_LANGUAGE.get(language)
    return spec.clean_import(text) if spec is not None and spec.clean_import is not None else text
