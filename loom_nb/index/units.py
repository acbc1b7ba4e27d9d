"""From a file's outline to the units that become content nodes.

A unit is a line range worth loading on its own: a top-level function or class (a large
class is split into its header and its methods), a module preamble (imports and module
docstring), a Markdown section, or a bounded window of any other text.

Size: every way a file becomes units (symbols and the code between them, split classes,
Markdown sections, windows, parts of what is still too large), which share their line helpers.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..core.tokens import count_tokens, truncate_to_tokens
from .symbols import Outline, Symbol, text_lines, text_windows

EMBED_TOKENS = 64
"""Tokens of a unit that indexing embeds. MiniLM's time grows with length (measured here:
41 texts/s at 64 tokens, 21 at 128, 14 at 256); a unit's head — path, name, signature,
doc — says what it is, and BM25F reads the whole body. At 64 the three self-referential
queries still find rank.py, store.py and classify.py first."""

CODE_KINDS = frozenset({"function", "method", "class", "interface", "struct", "enum", "trait", "impl", "type", "module",
                        "table", "view", "index", "trigger", "key", "section"})
"""Symbol kinds cut into units by :func:`code_units`: definitions, SQL ``CREATE`` statements, and a
data file's top-level keys and sections (each with the comment block above it)."""


def unit_embed_text(path: str, name: str, doc: str, text: str, max_tokens: int = EMBED_TOKENS) -> str:
    """What indexing embeds of a unit (see :meth:`Unit.embed_text`); a function of the
    node's stored fields, so a re-opened session embeds a pending unit the same way."""
    head = f"{path} {name}".strip()
    doc = f"\n{doc}" if doc and doc not in text else ""
    return truncate_to_tokens(f"{head}{doc}\n{text}", max_tokens)


@dataclass(frozen=True)
class Unit:
    """One indexed piece of a file, with the fields lexical ranking reads."""

    path: str
    language: str
    kind: str
    """"preamble", "function", "class", "method", …, "heading", "window"."""
    name: str
    """Qualified symbol name, "H1 > H2" heading path, or "lines a-b"."""
    signature: str
    doc: str
    start: int
    """First line, 1-based."""
    end: int
    """Last line, inclusive."""
    text: str
    defines: tuple[str, ...] = ()
    """Bare names of the symbols defined in this unit (for reference edges)."""
    references: tuple[str, ...] = ()
    """Names called inside this unit."""
    imports: tuple[str, ...] = ()
    headings: tuple[str, ...] = ()
    cell: str = ""
    """In a notebook, the cell's key (id or ``#index``); ``start``/``end`` count in its text."""
    cell_number: int = 0
    """In a notebook, the cell's position from 1, for titles."""

    @property
    def title(self) -> str:
        where = f"{self.path}[cell {self.cell_number}]" if self.cell else self.path
        if self.kind == "preamble" and self.start == 1:
            return f"{where} (module)"
        if self.kind == "preamble":  # a later part of a preamble too long for one unit
            return f"{where}:{self.start}-{self.end} (module)"
        return f"{where}:{self.start}-{self.end} {self.name}"

    def embed_text(self, max_tokens: int = EMBED_TOKENS) -> str:
        """What is embedded: path, name, signature and doc first, then the body, cut short.

        MiniLM reads 256 tokens at most and costs grow with length; the head of a unit says
        what it is, so indexing embeds at most ``max_tokens`` of it.
        """
        return unit_embed_text(self.path, self.name, self.doc, self.text, max_tokens)

    def fields(self) -> dict[str, str]:
        """Text per lexical field (seed 004: path, symbol, heading, import, content)."""
        fields = {"path": self.path, "content": self.text}
        if self.kind == "preamble" and self.defines:  # its name is the path, already a field
            fields["symbol"] = " ".join(self.defines)
        elif self.defines or (self.kind not in ("window", "heading", "preamble")):
            fields["symbol"] = " ".join((self.name, *self.defines))
        if self.headings:
            fields["heading"] = " ".join(self.headings)
        if self.imports:
            fields["import"] = " ".join(self.imports)
        return fields


def _slice(lines: list[str], start: int, end: int) -> str:
    return "\n".join(lines[start - 1 : end])


def _symbol_unit(path: str, language: str, lines: list[str], sym: Symbol, children: list[Symbol], start: int | None = None, end: int | None = None) -> Unit:
    start = start or sym.start_line
    end = end or sym.end_line
    refs = set(sym.references)
    for child in children:
        refs.update(child.references)
    return Unit(
        path=path, language=language, kind=sym.kind, name=sym.qualname, signature=sym.signature, doc=sym.doc,
        start=start, end=end, text=_slice(lines, start, end),
        defines=tuple(dict.fromkeys([sym.name, *(c.name for c in children)])), references=tuple(sorted(refs)),
    )


_COMMENT = re.compile(r"^\s*(?://|#|/\*|\*|@)")


def outermost(symbols: list[Symbol]) -> list[Symbol]:
    """The symbols no other symbol's lines contain, in line order.

    Nesting is read from line ranges, not from ``parent``: a Go method names its receiver
    type as its parent but sits outside the type's declaration, so it is a unit of its own.
    """
    out: list[Symbol] = []
    for sym in sorted(symbols, key=lambda s: (s.start_line, -s.end_line)):
        if out and out[-1].start_line <= sym.start_line and sym.end_line <= out[-1].end_line:
            continue
        out.append(sym)
    return out


def leading_comment_start(lines: list[str], start: int, floor: int) -> int:
    """The first line of the comment block (or decorators) right above line ``start``,
    not above line ``floor``; ``start`` when there is none.

    >>> leading_comment_start(["x = 1", "", "// Run starts it.", "// It blocks.", "func Run() {"], 5, 0)
    3
    """
    k = start - 1
    while k > floor and lines[k - 1].strip() and _COMMENT.match(lines[k - 1]):
        k -= 1
    return k + 1


def declared_title(declared: list[tuple[str, str]], most: int = 3) -> str:
    """The name of a module-level unit that declares ``(keyword, name)`` pairs: what it holds,
    not its first line (``const (``), each name under its own keyword.

    >>> declared_title([("const", "NotFoundRouteName"), ("const", "MethodNotAllowedRouteName")])
    'const NotFoundRouteName, MethodNotAllowedRouteName'
    >>> declared_title([("var", name) for name in "ABCDE"])
    'var A, B, C and 2 more'
    >>> declared_title([("const", "A"), ("const", "B"), ("var", "Default")])
    'const A, B; var Default'
    """
    keywords = {name: keyword for keyword, name in reversed(declared)}  # the keyword of its first declaration
    names = list(dict.fromkeys(name for _, name in declared))
    runs: list[tuple[str, list[str]]] = []
    for name in names[:most]:
        if runs and runs[-1][0] == keywords[name]:
            runs[-1][1].append(name)
        else:
            runs.append((keywords[name], [name]))
    shown = "; ".join(f"{keyword} {', '.join(group)}" for keyword, group in runs)
    return shown + (f" and {len(names) - most} more" if len(names) > most else "")


def _module_unit(path: str, language: str, lines: list[str], start: int, end: int, outline: Outline,
                 preamble: bool = False, container: str = "") -> Unit:
    """Module-level code: the preamble before the first symbol (titled by the file), or code
    between symbols, named by the names it declares (:attr:`Outline.declarations`), else by its
    first line. Both define the names they declare. Code between the members of a split class
    or namespace is named the same way after its ``container`` (``Router: ROUTES = {``)."""
    declared = [(keyword, name) for line, keyword, name in outline.declarations if start <= line <= end]
    names = tuple(dict.fromkeys(name for _, name in declared))
    body = _slice(lines, start, end)
    if preamble:
        return Unit(path, language, "preamble", path, "", "", start, end, body, defines=names, imports=outline.imports)
    title = declared_title(declared) if declared else _first_code_line(lines, start, end)[:60]
    if container:
        title = f"{container}: {title}"
    return Unit(path, language, "module", title, "", "", start, end, body, defines=names)


_ATTRIBUTE = re.compile(r"^\s*#!?\[")
"""A Rust attribute line (``#[cfg(feature = "json")]``): it says when the code below it is
compiled, not what it is, so a unit is not titled by it."""


def _first_code_line(lines: list[str], start: int, end: int) -> str:
    """The first line from ``start`` to ``end`` that is not blank, an attribute or a rule of
    punctuation (``# ~~~~~~``, ``// -------``), stripped; the first line when every line is one.

    A comment above the code stays the title (``# Only Bash >= 4.4 has the nosort option.``
    over ``_SOURCE_BASH = …``): titled by their first line of code, pydantic's type aliases
    (``GeneralWrapNoInfoSerializerFunction = …``) put those names in the symbol field and
    crowded out a mined case's gold (``pydantic-57d0ad8701``, 0.91 → 0.09 line recall at 8k).

    >>> _first_code_line(['#[cfg(feature = "json")]', "pub use json::Json;"], 1, 2)
    'pub use json::Json;'
    >>> _first_code_line(["# ~~~~~~~~~~", "# Validators", "# ~~~~~~~~~~"], 1, 3)
    '# Validators'
    """
    for line in lines[start - 1 : end]:
        if _WORD.search(line) and not _ATTRIBUTE.match(line):
            return line.strip()
    return lines[start - 1].strip()


_WORD = re.compile(r"[^\W_]")
"""A letter or a digit: a line without one is a rule drawn in punctuation, not a name."""


_CLOSERS = re.compile(r"^\s*(?:[)\]}]+|end)\s*[;,]?\s*(?:(?://|#|--).*|/\*.*\*/\s*)?$", re.I)
"""A line that only closes a block (``}``, ``};``, ``)``, Ruby's and Lua's ``end``), perhaps with a
comment (``}  // namespace geo``): it is kept with the unit above rather than made a unit that
holds nothing else."""


LOOSE_GAP_TOKENS = 40
"""Comments between symbols, or comments and one line that only opens a block, in at most this
many tokens (a section comment ``// ---- helpers ----``, a comment set apart by a blank line,
an ``else:`` between two definitions of one function) join the unit below them, or the one
above at the end: a unit of three tokens is found by every word it shares and tells the model
nothing alone. A statement of one line stays a unit: measured on pydantic's mined commits, a
one-line ``impl_py_gc_traverse!(…);`` joined to the struct below it cost a case 0.63 → 0.13
at 8k."""

_OPENER = re.compile(r"^(?:else|try|finally|if\s.+|elif\s.+|except(?:\s.+)?|with\s.+|for\s.+|while\s.+)\s*:$|^[}\s]*else\s*\{?$")
"""A line that only opens a block: ``else:``, ``if t.TYPE_CHECKING:``, ``} else {``."""


def code_units(path: str, language: str, text: str, outline: Outline, max_unit_tokens: int) -> list[Unit]:  # noqa: C901 - one unit kind per branch (symbol, gap, part)
    """Units of a parsed source file: preamble, top-level symbols (each with the comment
    block right above it), large classes split, and the module-level code between symbols
    (constants, tables, registrations), which would otherwise belong to no node; a loose
    scrap of it (:data:`LOOSE_GAP_TOKENS`) goes with the symbol below it.

    Length: the walk over symbols and its two helpers (a gap, a split class) share the list
    of units being built and the line up to which the file is covered."""
    lines = text_lines(text)
    top = outermost(outline.symbols)
    units: list[Unit] = []
    first = min((s.start_line for s in top), default=len(lines) + 1)
    preamble_end = first - 1
    if preamble_end >= 1 and _slice(lines, 1, preamble_end).strip():
        units.append(_module_unit(path, language, lines, 1, preamble_end, outline, preamble=True))
    covered_to = preamble_end

    def loose(start: int, end: int) -> bool:
        """Whether lines ``start`` to ``end`` are comments, or comments and one line that only
        opens a block (``else:``), in few tokens. A statement is never loose: a one-line
        ``impl_py_gc_traverse!(SerField { … });`` between two structs is what a commit changes."""
        code = [line.strip() for line in lines[start - 1 : end] if line.strip() and not _COMMENT.match(line)]
        return ((not code or (len(code) == 1 and _OPENER.match(code[0]) is not None))
                and not any(start <= line <= end for line, _, _ in outline.declarations)
                and count_tokens(_slice(lines, start, end)) <= LOOSE_GAP_TOKENS)

    def gap(start: int, end: int, container: str = "", below: int | None = None) -> int | None:
        """The code from ``start`` to ``end`` that no symbol holds, as a unit of its own: without
        it those lines would be in no unit, never found and never loaded. A loose scrap of it
        joins the unit that starts at line ``below`` (its new first line is returned), or the
        unit above when nothing follows."""
        while start <= end and not lines[start - 1].strip():  # trim blank lines around it
            start += 1
        while end >= start and not lines[end - 1].strip():
            end -= 1
        if end < start:
            return None
        if below is not None and loose(start, end):
            return start
        if units and (all(_CLOSERS.match(line) for line in lines[start - 1 : end] if line.strip()) or loose(start, end)):
            last = units[-1]  # a closing brace, or a loose scrap with nothing below: with the unit above
            units[-1] = Unit(**{**last.__dict__, "end": end, "text": _slice(lines, last.start, end)})
            return None
        units.append(_module_unit(path, language, lines, start, end, outline, container=container))
        return None

    def cut(sym: Symbol, start: int, pool: tuple[Symbol, ...] | list[Symbol]) -> None:
        children = [s for s in pool if s is not sym and sym.start_line <= s.start_line and s.end_line <= sym.end_line]
        body = _slice(lines, start, sym.end_line)
        if children and count_tokens(body) > max_unit_tokens:
            head_end = min(c.start_line for c in children) - 1
            if head_end >= start:
                units.append(_symbol_unit(path, language, lines, sym, [], start, head_end))
            done = head_end
            for child in outermost(children):  # a function nested in a method stays in the method
                # fields, constants, `private:` between members
                child_start = leading_comment_start(lines, child.start_line, done)
                child_start = gap(done + 1, child_start - 1, sym.qualname, below=child_start) or child_start
                if sym.kind == "module":  # a namespace (C#, C++, Ruby, Rust mod): its members are cut as top-level ones are
                    cut(child, child_start, children)
                else:
                    units.append(_symbol_unit(path, language, lines, child, [c for c in children if c is not child and child.start_line <= c.start_line and c.end_line <= child.end_line], child_start))
                done = max(done, child.end_line)
            gap(done + 1, sym.end_line, sym.qualname)
        else:
            units.append(_symbol_unit(path, language, lines, sym, children, start))

    for sym in top:
        if sym.start_line <= covered_to:  # nested in a symbol already emitted (e.g. a decorator range)
            continue
        start = leading_comment_start(lines, sym.start_line, covered_to)
        start = gap(covered_to + 1, start - 1, below=start) or start
        cut(sym, start, outline.symbols)
        covered_to = sym.end_line
    if top:
        gap(covered_to + 1, len(lines))
    if not units:
        units = window_units(path, language, text)
    return units if units and units[0].kind == "preamble" else _imports_first(units, outline)


def _imports_first(units: list[Unit], outline: Outline) -> list[Unit]:
    """``units`` with the file's imports on the first, where the preamble would hold them: the
    imports edges of a file are drawn from its units, so a file cut into windows (a script with
    no definitions) would otherwise import nothing."""
    if units and outline.imports:
        units[0] = Unit(**{**units[0].__dict__, "imports": outline.imports})
    return units


def markdown_units(path: str, text: str, outline: Outline, max_unit_tokens: int = 800) -> list[Unit]:
    """One unit per heading, from the heading to the next heading of any level; the last
    ends at the file's last line (not one past it, as ``text.split("\\n")`` would count a
    final newline).
    """
    lines = text_lines(text)
    heads = sorted((s for s in outline.symbols if s.kind == "heading"), key=lambda s: s.start_line)
    if not heads:
        return window_units(path, "markdown", text, max_unit_tokens)
    units = []
    starts = [h.start_line for h in heads] + [len(lines) + 1]
    if starts[0] > 1 and _slice(lines, 1, starts[0] - 1).strip():
        units.append(Unit(path, "markdown", "heading", path, "", "", 1, starts[0] - 1, _slice(lines, 1, starts[0] - 1), headings=(path,)))
    for head, end in zip(heads, starts[1:]):
        end = max(head.start_line, end - 1)
        units.append(Unit(path, "markdown", "heading", head.qualname, head.signature, "", head.start_line, end,
                          _slice(lines, head.start_line, end), headings=tuple(head.qualname.split(" > "))))
    return units


def window_units(path: str, language: str, text: str, max_unit_tokens: int = 800) -> list[Unit]:
    """Windows of a file with no outline (:func:`~.symbols.text_windows`), each at most
    ``max_unit_tokens`` tokens unless it is one line: a window is bounded in characters, and
    dense text (base64, HTML, Japanese) has more tokens than characters/4."""
    lines = text_lines(text)
    return [
        Unit(path, language, "window", f"lines {a}-{b}", "", "", a, b, _slice(lines, a, b))
        for start, end in text_windows(text)
        for a, b in _within_tokens(lines, start, end, max_unit_tokens)
        if _slice(lines, a, b).strip()
    ]


PART_LINES, PART_CHARS = 40, 1600
"""Size of the parts a unit over ``max_unit_tokens`` is cut into: at most 40 lines and 1,600
characters (about 400 tokens of code), ending at a blank line where one is near."""


def split_large(unit: Unit, max_unit_tokens: int) -> list[Unit]:
    """``unit`` cut into parts of at most :data:`PART_LINES` lines when it is over
    ``max_unit_tokens`` and could not be split by its symbols (a ``TypedDict`` of 9,000
    tokens of documented fields, a 300-line function, a long Markdown section).

    A whole large unit ranks badly for the one line a question is about: BM25 divides its
    matches by its length, the size signal counts all of it, and when it is loaded the
    budget goes to the rest of it. Each part keeps the unit's name, so its symbol still
    matches, but only the first keeps the signature, the doc and the names it defines (a
    reference to the symbol should lead to its head, not to every part). Module code titled
    by its first line is titled by each part's own first line: httpx's status codes were
    three parts all titled ``codes: # informational``.

    >>> body = "\\n".join(f"    field_{k}: int = {k}" for k in range(100))
    >>> big = Unit("m.py", "python", "class", "Config", "class Config:", "", 1, 101, "class Config:\\n" + body, defines=("Config",))
    >>> [(p.start, p.end, p.defines) for p in split_large(big, 400)]
    [(1, 40, ('Config',)), (41, 80, ()), (81, 101, ())]

    >>> codes = ["# informational"] + [f"CONTINUE_{k} = {k}" for k in range(30)] + ["", "# client error"] + [f"BAD_{k} = {k}" for k in range(30)]
    >>> table = Unit("s.py", "python", "module", "codes: # informational", "", "", 10, 72, "\\n".join(codes))
    >>> [(p.start, p.name) for p in split_large(table, 300)]
    [(10, 'codes: # informational'), (42, 'codes: # client error')]

    A part still over ``max_unit_tokens`` is halved (:func:`_within_tokens`):

    >>> [(p.start, p.end) for p in split_large(big, 300)]
    [(1, 20), (21, 40), (41, 60), (61, 80), (81, 101)]
    """
    if len(unit.text) <= 2 * max_unit_tokens or count_tokens(unit.text) <= max_unit_tokens:
        return [unit]
    lines = unit.text.split("\n")
    parts = []
    # module code titled by its first line (``codes: # informational``) titles each part by
    # its own (``codes: # client error``); a symbol's parts all keep the symbol's name
    own_line = _first_code_line(lines, 1, len(lines))[:60]
    by_line = unit.kind == "module" and bool(own_line) and unit.name.endswith(own_line)
    windows = text_windows(unit.text, max_lines=PART_LINES, max_chars=PART_CHARS)
    for a, b in (piece for a, b in windows for piece in _within_tokens(lines, a, b, max_unit_tokens)):
        body = "\n".join(lines[a - 1 : b])
        if not body.strip():
            continue
        first = not parts
        name = unit.name
        if by_line and not first:
            name = unit.name[: len(unit.name) - len(own_line)] + _first_code_line(lines, a, b)[:60]
        parts.append(Unit(
            path=unit.path, language=unit.language, kind=unit.kind, name=name,
            signature=unit.signature if first else "", doc=unit.doc if first else "",
            start=unit.start + a - 1, end=unit.start + b - 1, text=body,
            defines=unit.defines if first else (),
            references=tuple(r for r in unit.references if r in body),
            imports=unit.imports if first else (), headings=unit.headings,
        ))
    return parts or [unit]


def _within_tokens(lines: list[str], a: int, b: int, max_tokens: int) -> list[tuple[int, int]]:
    """Lines ``a..b`` (1-based, inclusive) halved until each piece is at most ``max_tokens``
    tokens or one line. Character limits alone do not bound tokens: 1,600 characters of
    base64, minified HTML or Japanese prose are 1,000 to 2,000 tokens.

    >>> _within_tokens(["x"] * 4, 1, 4, 100)
    [(1, 4)]
    >>> _within_tokens(["word " * 30] * 4, 1, 4, 40)
    [(1, 1), (2, 2), (3, 3), (4, 4)]
    """
    if a >= b or count_tokens("\n".join(lines[a - 1 : b])) <= max_tokens:
        return [(a, b)]
    mid = (a + b) // 2
    return _within_tokens(lines, a, mid, max_tokens) + _within_tokens(lines, mid + 1, b, max_tokens)


def file_units(path: str, language: str, text: str, outline: Outline, max_unit_tokens: int = 800) -> list[Unit]:
    """The units of one file, whatever its language; never empty for a non-blank file.
    No unit is over ``max_unit_tokens`` unless a single line is (:func:`split_large`)."""
    if language == "markdown":
        units = markdown_units(path, text, outline, max_unit_tokens)
    elif outline.parsed and (any(s.kind in CODE_KINDS for s in outline.symbols) or outline.declarations):
        # a file of constants and variables alone (Go's `var preExecHookFn = …`) is one unit
        # that defines them, not windows that define nothing
        units = code_units(path, language, text, outline, max_unit_tokens)
    else:
        return _imports_first(window_units(path, language, text, max_unit_tokens), outline)
    return [part for unit in units for part in split_large(unit, max_unit_tokens)]
