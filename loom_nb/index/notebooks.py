"""Notebooks cut into units cell by cell: ``.ipynb`` files and Jupytext percent scripts.

A notebook cell is the unit a notebook user thinks in. Each cell's text
(:func:`loom_nb.core.notebooks.cell_text`: source, then the gist of its outputs) is
outlined on its own, with the kernel's language for code cells and by heading for
markdown, so a cell holding three functions gives three units and a markdown cell with two
headings gives two. Every unit of a ``.ipynb`` names its cell, and its lines count inside
the cell's text (:class:`~loom_nb.core.graph.Reference` ``cell``).

A Jupytext percent script (a ``.py`` file whose cells start with ``# %%``) is a plain file
whose cells are line ranges: each cell is outlined the same way and its units keep the
file's own line numbers.
"""

from __future__ import annotations

import os
import re
from dataclasses import replace

from ..core.notebooks import OUTPUT_MARK, Cell, notebook_cells
from .symbols import Outline, outline
from .units import Unit, file_units, window_units

__all__ = ["PERCENT_CELL", "cell_outline", "cells_units", "is_percent_script", "notebook_units", "percent_units"]

PERCENT_LANGUAGES = frozenset({"python", "shell", "ruby"})
"""Languages whose comments start with ``#``: their percent cells are ``# %%``."""
PERCENT_CELL = re.compile(r"^# %%(?P<rest>.*)$", re.M)
"""A Jupytext percent-format cell marker: ``# %%``, ``# %% [markdown]``, ``# %% Title``."""


IPYTHON_LINE = re.compile(r"^[ \t]*(?:[%!?]|[\w.]+\?{1,2}[ \t]*$|[\w.]+(?:[ \t]*,[ \t]*[\w.]+)*[ \t]*=[ \t]*[%!])")
"""A line IPython runs but Python cannot parse: a magic (``%matplotlib inline``, ``%%time``), a
shell escape (``!pip install x``, ``files = !ls``, ``out = %sx ls``) or a help request (``?df``,
``df.merge??``)."""
PYTHON_CELL_MAGICS = frozenset({"time", "timeit", "capture", "prun", "debug", "python", "python3"})
"""Cell magics whose body is Python; a cell under any other (``%%bash``, ``%%html``, ``%%sql``)
is not Python, and is cut as text."""


def _python_source(text: str) -> str | None:
    """A Python cell's text as Python can parse it: its IPython lines (:data:`IPYTHON_LINE`)
    blank, so the outline's line numbers are still the cell's; None for a cell whose cell
    magic says its body is in another language.

    >>> _python_source("%%time\\n!pip install x\\nx = 1\\n")
    '\\n\\nx = 1\\n'
    >>> _python_source("%%bash\\nls") is None
    True
    """
    magic = re.match(r"[ \t]*%%(\w+)", text)
    if magic and magic.group(1) not in PYTHON_CELL_MAGICS:
        return None
    return "\n".join("" if IPYTHON_LINE.match(line) else line for line in text.split("\n"))


def cell_outline(path: str, language: str, text: str, ipython: bool = True) -> Outline:
    """The outline of one cell's text in its kernel's ``language``.

    In an ``ipython`` notebook a Python cell that does not parse is outlined again with its
    magics and shell escapes blank (:func:`_python_source`): they are IPython, not syntax
    errors. A cell that parses is outlined as it is (a ``%`` line in a string stays), and a
    cell under a cell magic of another language (``%%bash``) as text.
    """
    result = outline(path, text, language)
    if result.error and ipython and language == "python":
        source = _python_source(text)
        if source is None:
            return outline(path, text, "text")
        if source != text:
            result = outline(path, source, language)
    return result


def _cell_units(path: str, language: str, text: str, max_unit_tokens: int,
                ipython: bool = False) -> tuple[list[Unit], bool]:
    """Units of one cell's text, and whether its outline reported a parse error; the units'
    text is always the cell's own, whatever :func:`cell_outline` parsed."""
    if not text.strip():
        return [], False
    if language == "text":
        return window_units(path, "text", text, max_unit_tokens), False
    result = cell_outline(path, language, text, ipython)
    if result.language == "text":
        return window_units(path, "text", text, max_unit_tokens), False
    return file_units(path, language, text, result, max_unit_tokens), bool(result.error)


def notebook_units(path: str, text: str, max_unit_tokens: int = 800) -> tuple[list[Unit], int]:
    """The units of a ``.ipynb``'s cells, and how many cells failed to parse.

    Raises :class:`~loom_nb.core.notebooks.NotebookError` for a file that is not a notebook
    (the indexer then cuts it as plain text).
    """
    return cells_units(path, notebook_cells(text, path), max_unit_tokens)


def cells_units(path: str, cells: list[Cell], max_unit_tokens: int = 800) -> tuple[list[Unit], int]:
    """:func:`notebook_units` of cells already read (each cell's text masked, its
    :attr:`~loom_nb.core.notebooks.Cell.secrets` saying where)."""
    units: list[Unit] = []
    errors = 0
    for cell in cells:
        found, error = _cell_units(path, cell.language, cell.text, max_unit_tokens, ipython=True)
        errors += error
        units.extend(replace(unit, cell=cell.key, cell_number=cell.number) for unit in _tidy(found))
    return units, errors


def _tidy(units: list[Unit]) -> list[Unit]:
    """A cell's units as a reader would name them: output lines stay with the code above
    them, and a cell with no symbol is named by its first line, not ``lines 1-5``."""
    out: list[Unit] = []
    for unit in units:
        if out and out[-1].end + 1 == unit.start and all(line.startswith(OUTPUT_MARK) for line in unit.text.split("\n")):
            last = out[-1]
            out[-1] = replace(last, end=unit.end, text=f"{last.text}\n{unit.text}")
            continue
        if _unnamed(unit):
            first = next((line.strip() for line in unit.text.split("\n") if line.strip()), unit.name)
            unit = replace(unit, name=first[:60])
        out.append(unit)
    return out


def _unnamed(unit: Unit) -> bool:
    """A unit named only by where it is: a window (``lines 1-5``), or a markdown cell's text
    before any heading, which the outline names by the file's base name (``churn.ipynb``, not
    ``sub/churn.ipynb``: comparing with the path missed it in every folder but the root)."""
    if unit.kind == "window":
        return unit.name.startswith("lines ")
    return unit.kind == "heading" and unit.name in (unit.path, os.path.basename(unit.path))


def is_percent_script(language: str, text: str) -> bool:
    """A Python (or other code) file in Jupytext's percent format: it has ``# %%`` cells."""
    return language in PERCENT_LANGUAGES and PERCENT_CELL.search(text) is not None


def _percent_markdown(text: str) -> str:
    """A ``# %% [markdown]`` cell's body as markdown: the comment marks taken off."""
    return "\n".join(re.sub(r"^# ?", "", line) for line in text.split("\n"))


def percent_units(path: str, language: str, text: str, max_unit_tokens: int = 800) -> tuple[list[Unit], int]:
    """The units of a percent script, cell by cell, with the file's own line numbers.

    >>> script = "# %% [markdown]\\n# # Load\\n\\n# %%\\nimport json\\n\\ndef load(p):\\n    return json.load(open(p))\\n"
    >>> [(u.kind, u.name, u.start, u.end) for u in percent_units("s.py", "python", script)[0]]
    [('heading', 'Load', 2, 2), ('preamble', 's.py', 4, 6), ('function', 'load', 7, 8)]
    """
    lines = text.split("\n")
    starts = [text.count("\n", 0, m.start()) + 1 for m in PERCENT_CELL.finditer(text)]
    if not starts or starts[0] > 1:
        starts.insert(0, 1)
    bounds = list(zip(starts, [s - 1 for s in starts[1:]] + [len(lines)]))
    units: list[Unit] = []
    errors = 0
    for first, last in bounds:
        markdown = bool(re.match(r"^# %%.*\[(markdown|md)\]", lines[first - 1]))
        if markdown:  # the marker line says nothing; the rest is markdown behind "# "
            first += 1
        body = "\n".join(lines[first - 1:last])
        found, error = _cell_units(path, "markdown" if markdown else language,
                                   _percent_markdown(body) if markdown else body, max_unit_tokens)
        errors += error
        for unit in found:  # lines counted in the cell: shift them to the file's, and show the file's text
            start, end = unit.start + first - 1, unit.end + first - 1
            text = "\n".join(lines[start - 1:end])
            name = unit.name
            if _unnamed(unit):  # a cell with no symbol or heading: named by its first line
                shown = _percent_markdown(text) if markdown else text
                name = next((line.strip()[:60] for line in shown.split("\n") if line.strip() and not PERCENT_CELL.match(line)), name)
            units.append(replace(unit, start=start, end=end, text=text, name=name, language=language))
    return units, errors
