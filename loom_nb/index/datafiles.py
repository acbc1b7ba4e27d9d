"""Data and config files (JSON, YAML, TOML, INI) split by top-level key, with exact line ranges.

A ``pyproject.toml`` or a CI workflow is read one part at a time: the question is about
``[tool.ruff]`` or the ``jobs:`` block, not the whole file. So each top-level key (and each TOML or
INI ``[section]``) becomes one entry from its line to the line before the next one, with the
comment block directly above it as its doc; :func:`.symbols.outline` turns entries into symbols
and :mod:`.units` into units, as it does a code file's definitions.

No parser beyond the standard library: :mod:`json` and :mod:`tomllib` check the file and
:mod:`configparser` an INI file; the lines of each key are then found by a scan that keeps line
numbers (the parsers do not report them). YAML has no standard-library parser, so it is split by
its lines: a key is a line at column 0 (``name:``, ``"quoted": 1``), and a file in which some
other line sits at column 0, a line is indented with a tab, or indented content comes before the
first key, is taken as malformed. That check is a shape test, not a YAML parser: an unclosed
flow collection inside one key's value goes unnoticed (the key's lines are still right).

Nothing here raises: :func:`split` returns an error message for malformed input, and the caller
windows the file. A file with no top-level keys (a JSON array, a YAML list) or more than
:data:`MAX_ENTRIES` of them gives no entries and no error: windows group such a file better.
"""

from __future__ import annotations

import bisect
import configparser
import json
import logging
import re
import tomllib
from dataclasses import dataclass

log = logging.getLogger(__name__)

FORMATS = ("json", "yaml", "toml", "ini")
"""The formats split by top-level key (canonical names)."""

ALIASES = {"yml": "yaml", "config": "ini", "cfg": "ini", "conf": "ini"}
"""Other names for them; ``config`` is what :data:`loom_nb.core.files.LANGUAGES` calls
``.ini``/``.cfg``."""

MAX_ENTRIES = 200
"""More top-level keys than this (a flat translation table, a lock file) and the file is windowed:
a unit per one-line key would flood the graph with nodes a 60-line window holds together."""


@dataclass(frozen=True)
class Entry:
    """One top-level key or section.

    Attributes
    ----------
    kind : str
        ``"section"`` for a TOML table header or an INI section, ``"key"`` otherwise.
    name : str
        The key as written, without quotes; a section's dotted name (``tool.ruff``).
    line : int
        The key's own line (1-based).
    start, end : int
        1-based inclusive lines: from the comment block directly above the key to the line
        before the next entry (blank lines trimmed).
    signature : str
        The key's line, stripped.
    doc : str
        The comment block above, without ``#``/``;`` markers.
    """

    kind: str
    name: str
    line: int
    start: int
    end: int
    signature: str
    doc: str


def text_lines(text: str) -> list[str]:
    """Lines as tree-sitter counts them (``\\n`` only), without a final empty line: a file's
    last line is ``len(text_lines(text))``, whether or not the text ends with a newline.

    >>> text_lines("a\\nb\\n"), text_lines("a\\nb"), text_lines("")
    (['a', 'b'], ['a', 'b'], [])
    """
    if not text:
        return []
    lines = text.split("\n")
    if text.endswith("\n"):
        lines.pop()
    return lines


def _entries(lines: list[str], heads: list[tuple[int, str, str]], comment: re.Pattern) -> list[Entry]:
    """Line ranges for 0-based head rows ``(row, kind, name)`` in order."""
    starts = []
    for row, _, _ in heads:
        top = row
        while top > 0 and comment.match(lines[top - 1]):
            top -= 1
        starts.append(top)
    if starts and not any(re.search(r"\w", line) for line in lines[:starts[0]]):
        starts[0] = 0  # only `{` or `---` above the first key: no unit of its own
    out = []
    for i, (row, kind, name) in enumerate(heads):
        end = (starts[i + 1] if i + 1 < len(heads) else len(lines)) - 1
        while end > row and not lines[end].strip():
            end -= 1
        doc_lines = [comment.match(line).group(1) for line in lines[starts[i]:row] if comment.match(line)]
        out.append(Entry(kind, name, row + 1, starts[i] + 1, end + 1, lines[row].strip(),
                         "\n".join(d.strip() for d in doc_lines).strip()))
    return out


# --------------------------------------------------------------------------------------------
# JSON

_WS = json.decoder.WHITESPACE


def _json_heads(text: str) -> list[tuple[int, str, str]]:
    """The top-level keys of a JSON object, with their rows; ``[]`` for any other value."""
    json.loads(text)  # raises ValueError on malformed input
    i = _WS.match(text, 0).end()
    if text[i:i + 1] != "{":
        return []
    newlines = [k for k, ch in enumerate(text) if ch == "\n"]
    decoder = json.JSONDecoder()
    heads, i = [], i + 1
    while True:
        i = _WS.match(text, i).end()
        if text[i] == "}":
            return heads
        key, after = json.decoder.scanstring(text, i + 1)
        heads.append((bisect.bisect_left(newlines, i), "key", key))
        after = _WS.match(text, after).end() + 1  # past the ':'
        _, after = decoder.raw_decode(text, _WS.match(text, after).end())
        i = _WS.match(text, after).end()
        i += text[i] == ","


# --------------------------------------------------------------------------------------------
# YAML (by lines)

_YAML_KEY = re.compile(r"""^(?:"((?:[^"\\]|\\.)*)"|'((?:[^']|'')*)'|([^\s#:\-?\[\]{},&*!|>'"%@`][^#]*?))[ \t]*:(?:[ \t]|$)""")
_YAML_MARKERS = re.compile(r"^(?:---|\.\.\.)(?:[ \t].*)?$|^%")
_HASH_COMMENT = re.compile(r"^#(.*)$")


def _yaml_heads(lines: list[str]) -> list[tuple[int, str, str]]:
    heads: list[tuple[int, str, str]] = []
    after_marker = False  # a document's content may follow `---` on its own lines
    for row, line in enumerate(lines):
        if not line.strip() or line.startswith("#"):
            continue
        if line[0] in " \t":
            if "\t" in line[:len(line) - len(line.lstrip())]:
                raise ValueError(f"line {row + 1} is indented with a tab")
            if not heads and not after_marker:
                raise ValueError(f"line {row + 1} is indented before any top-level key")
            continue
        if _YAML_MARKERS.match(line):
            after_marker = True
            continue
        if heads and (line == "-" or line.startswith(("- ", "-\t"))):
            continue  # a list item of the key above, not indented (`stages:` then `- stage: Check`)
        match = _YAML_KEY.match(line)
        if match is None:
            if heads:
                raise ValueError(f"line {row + 1} is not a top-level key: {line[:40]!r}")
            return []  # a top-level list or scalar: no keys to split by
        name = next(g for g in match.groups() if g is not None)
        heads.append((row, "key", name.strip()))
    return heads


# --------------------------------------------------------------------------------------------
# TOML


def _toml_string_end(line: str, i: int, open_string: str) -> tuple[int, str | None]:
    """Where the scan of an open multi-line string goes on after ``line[i]``, and whether the
    string is still open. In a basic string a backslash escapes the next character (an escaped
    quote closes nothing); a run of three or more quotes closes the string after the run (up to
    two quotes before the closing three belong to the string, as tomllib reads them); a literal
    string has no escapes."""
    quote, n = open_string[0], len(line)
    if quote == '"' and line[i] == "\\":
        return i + 2, open_string
    if line[i] != quote:
        return i + 1, open_string
    run = i
    while run < n and line[run] == quote:
        run += 1
    return run, (None if run - i >= 3 else open_string)


def _toml_scan(line: str, i: int, depth: int, open_string: str | None) -> tuple[int, str | None]:
    """Bracket depth and open multi-line string after the rest of ``line`` from ``i``."""
    n = len(line)
    while i < n:
        if open_string is not None:
            i, open_string = _toml_string_end(line, i, open_string)
            continue
        ch = line[i]
        if ch == "#":
            break
        if ch in "\"'":
            if line.startswith(ch * 3, i):
                open_string, i = ch * 3, i + 3
                continue
            i += 1
            while i < n and line[i] != ch:
                i += 2 if ch == '"' and line[i] == "\\" else 1
        elif ch in "[{":
            depth += 1
        elif ch in "]}":
            depth -= 1
        i += 1
    return depth, open_string


_TOML_HEADER = re.compile(r"^\s*\[\[?\s*(.+?)\s*\]\]?\s*(?:#.*)?$")


def _toml_heads(text: str, lines: list[str]) -> list[tuple[int, str, str]]:
    tomllib.loads(text)  # raises TOMLDecodeError (a ValueError) on malformed input
    heads: list[tuple[int, str, str]] = []
    depth, open_string, in_table = 0, None, False
    for row, line in enumerate(lines):
        stripped = line.strip()
        if depth == 0 and open_string is None and stripped and not stripped.startswith("#"):
            header = _TOML_HEADER.match(line) if stripped.startswith("[") else None
            if header is not None:
                heads.append((row, "section", re.sub(r"\s*\.\s*", ".", header.group(1))))
                in_table = True
                continue
            if not in_table:
                heads.append((row, "key", stripped.split("=", 1)[0].strip().strip("\"'")))
        depth, open_string = _toml_scan(line, 0, depth, open_string)
    return heads


# --------------------------------------------------------------------------------------------
# INI

_INI_SECTION = re.compile(r"^\[([^\]]+)\]\s*(?:[#;].*)?$")
_INI_COMMENT = re.compile(r"^[#;](.*)$")


def _ini_heads(text: str, lines: list[str]) -> list[tuple[int, str, str]]:
    parser = configparser.ConfigParser(strict=False, interpolation=None)
    try:
        parser.read_string(text)
    except configparser.MissingSectionHeaderError:  # keys before the first section: top-level keys
        configparser.ConfigParser(strict=False, interpolation=None).read_string("[top]\n" + text)
    heads: list[tuple[int, str, str]] = []
    for row, line in enumerate(lines):
        section = _INI_SECTION.match(line)
        if section is not None:
            heads.append((row, "section", section.group(1).strip()))
        elif not heads or heads[-1][1] == "key":
            if line.strip() and line[0] not in " \t#;":
                heads.append((row, "key", re.split(r"[=:]", line, maxsplit=1)[0].strip()))
    return heads


# --------------------------------------------------------------------------------------------


def split(text: str, fmt: str) -> tuple[list[Entry], str | None]:
    """The top-level entries of a data file, or an error saying why it is malformed.

    Parameters
    ----------
    text : str
        The file's content.
    fmt : str
        One of :data:`FORMATS` (or an alias in :data:`ALIASES`).

    Returns
    -------
    (entries, error)
        Entries in line order and None; or ``[]`` and a message for malformed input; or ``[]``
        and None for a file with nothing to split by (see the module docstring). Never raises.

    Examples
    --------
    >>> entries, error = split("# Build\\n[build]\\nx = 1\\n\\n[test]\\ny = [\\n  2,\\n]\\n", "toml")
    >>> [(e.kind, e.name, e.start, e.end, e.doc) for e in entries], error
    ([('section', 'build', 1, 3, 'Build'), ('section', 'test', 5, 8, '')], None)
    >>> split("{oops", "json")[1]
    'malformed json: Expecting property name enclosed in double quotes: line 1 column 2 (char 1)'
    """
    fmt = ALIASES.get(fmt, fmt)
    text = text[1:] if text.startswith("\ufeff") else text  # a byte-order mark is not content
    lines = text_lines(text)
    try:
        if fmt == "json":
            heads, comment = _json_heads(text), re.compile(r"(?!)")
        elif fmt == "yaml":
            heads, comment = _yaml_heads(lines), _HASH_COMMENT
        elif fmt == "toml":
            heads, comment = _toml_heads(text, lines), _HASH_COMMENT
        elif fmt == "ini":
            heads, comment = _ini_heads(text, lines), _INI_COMMENT
        else:
            return [], f"not a data format: {fmt}"
        rows = [row for row, _, _ in heads]
        if len(heads) > MAX_ENTRIES or any(b <= a for a, b in zip(rows, rows[1:])):
            return [], None  # too many keys, or several on one line (minified JSON): windows
        return _entries(lines, heads, comment), None
    except (ValueError, configparser.Error, IndexError, RecursionError) as exc:
        return [], f"malformed {fmt}: {' '.join(str(exc).split())}"
    except Exception as exc:  # a bug here must not stop an index: the caller windows the file
        log.warning("splitting a %s file failed: %s: %s", fmt, type(exc).__name__, exc)
        return [], f"{type(exc).__name__}: {exc}"
