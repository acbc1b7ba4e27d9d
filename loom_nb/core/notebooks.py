"""Jupyter notebooks as the text of their cells, not their JSON (issue 18).

A ``.ipynb`` file is JSON whose strings hold the code: indexed as text, a unit would be
``"source": ["import numpy as np\\n", ...`` and a question about the code would meet
escaped quotes and base64 images. So a notebook is read cell by cell with ``nbformat``,
and each cell becomes its *cell text*: the source, then the gist of its outputs as comment
lines (the first lines of ``text/plain`` or a stream, a traceback's error line; images
and widget state are dropped).

A reference into a notebook names its cell (by the cell's id, which nbformat 4.5 gives
every cell, else by ``#index``) and a line range inside the cell text, so editing one cell
leaves every other cell's references fresh. Parsed notebooks are kept per version of the
file (size, mtime, ctime, inode): loading several cells of one notebook parses it once.
"""

from __future__ import annotations

import json
import re
import warnings
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from .errors import LoomError
from .files import file_stamp, read_text
from .lru import BoundedLRU
from .secrets import mask_lines

__all__ = ["NOTEBOOK_SUFFIX", "Cell", "NotebookError", "cell_text", "notebook_cells", "read_cell", "read_notebook"]

NOTEBOOK_SUFFIX = ".ipynb"
MAX_OUTPUT_LINES = 6
"""Lines of each output kept in the cell text: what the cell printed, not a whole log."""
MAX_OUTPUT_CHARS = 400
OUTPUT_MARK = "# Out: "
"""Prefix of each output line in a cell text (a comment in the usual kernel languages)."""
_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
_CACHE_SIZE = 8


class NotebookError(LoomError):
    """A ``.ipynb`` that is not a notebook nbformat can read (bad JSON, not nbformat 4)."""


@dataclass(frozen=True)
class Cell:
    """One cell as indexing and loading see it."""

    key: str
    """The cell's id as written in the file, or ``#index`` when it has none (nbformat < 4.5, or a
    4.5 notebook some tool wrote without them) or shares it with another cell (a cell copied in
    an editor that keeps ids)."""
    number: int
    """Position in the notebook, from 1 (what a person calls "cell 3")."""
    kind: str
    """``code``, ``markdown`` or ``raw``."""
    language: str
    """The kernel's language for code cells, ``markdown`` for markdown, ``text`` for raw."""
    text: str
    """:func:`cell_text`: the source, then the outputs' gist, credentials masked."""
    secrets: tuple[tuple[int, int], ...] = ()
    """First and last line (in :attr:`text`, from 1) of each credential masked in it."""


def _source(value) -> str:
    return "".join(value) if isinstance(value, list) else str(value or "")


def _clip(text: str) -> list[str]:
    """An output's first lines; :func:`cell_text` cuts each short once it is masked."""
    lines = [line.rstrip() for line in _ANSI.sub("", text).strip("\n").split("\n")]
    kept = lines[:MAX_OUTPUT_LINES]
    if len(lines) > MAX_OUTPUT_LINES:
        kept.append(f"… {len(lines) - MAX_OUTPUT_LINES} more lines")
    return kept


def _output_lines(output: dict) -> list[str]:
    """The gist of one output: its text or ``text/plain``, or a traceback's error line."""
    kind = output.get("output_type")
    if kind == "stream":
        return _clip(_source(output.get("text")))
    if kind in ("execute_result", "display_data"):
        plain = (output.get("data") or {}).get("text/plain")
        return _clip(_source(plain)) if plain is not None else []
    if kind == "error":
        return _clip(f"{output.get('ename', 'Error')}: {output.get('evalue', '')}")
    return []


def cell_text(cell: dict) -> str:
    """A cell's source, then each output's gist as ``# Out:`` lines, credentials masked: this is
    the text a cell is indexed, loaded and checked against its hash by.

    >>> cell_text({"cell_type": "code", "source": ["x = 2\\n", "x * 21"],
    ...            "outputs": [{"output_type": "execute_result", "data": {"text/plain": "42", "image/png": "iVBOR"}}]})
    'x = 2\\nx * 21\\n# Out: 42'
    >>> cell_text({"cell_type": "markdown", "source": "# Title"})
    '# Title'
    """
    return _masked_cell_text(cell)[0]


def _masked_cell_text(cell: dict) -> tuple[str, tuple[tuple[int, int], ...]]:
    """:func:`cell_text` and the lines of each credential masked in it. Source and outputs are
    masked as one text (a key printed over several lines is one credential), before the
    output lines are cut short and marked: cut inside a quoted password, a line no longer
    looks like one, and behind ``# Out:`` an env line no longer starts its line."""
    text = _source(cell.get("source")).rstrip("\n")
    outputs = [line for output in cell.get("outputs") or () for line in _output_lines(output)] if cell.get("cell_type") == "code" else []
    masked, spans = mask_lines("\n".join([text, *outputs]))
    if not outputs:
        return masked, spans
    lines = masked.split("\n")
    first = len(lines) - len(outputs)
    return "\n".join(lines[:first] + [f"{OUTPUT_MARK}{line[:MAX_OUTPUT_CHARS]}" for line in lines[first:]]), spans


def notebook_cells(text: str, where: str = "notebook") -> list[Cell]:
    """The cells of a notebook's JSON text, each with its :func:`cell_text`."""
    import nbformat

    try:
        with warnings.catch_warnings():  # nbformat warns of (and invents) ids a 4.5 notebook lacks
            warnings.simplefilter("ignore")
            nb = nbformat.reads(text, as_version=4)
    except (json.JSONDecodeError, nbformat.reader.NotJSONError) as exc:
        raise NotebookError(f"{where} is not notebook JSON ({str(exc).splitlines()[0][:200]})") from None
    except Exception as exc:  # nbformat raises several types for a foreign or damaged document
        raise NotebookError(f"{where} is not a notebook nbformat can read ({type(exc).__name__}: {str(exc)[:200]})") from None
    meta = nb.get("metadata") or {}
    language = str((meta.get("kernelspec") or {}).get("language") or (meta.get("language_info") or {}).get("name") or "python").lower()
    ids = _written_ids(text)
    shared = {key for key, count in Counter(ids or ()).items() if count > 1}
    cells = []
    for index, cell in enumerate(nb.get("cells") or ()):
        kind = str(cell.get("cell_type", "raw"))
        written = ids[index] if ids is not None and index < len(ids) else None
        if written in shared:  # a cell copied with its id: by id only the first could be found
            written = None
        masked, spans = _masked_cell_text(cell)
        cells.append(Cell(key=str(written or f"#{index}"), number=index + 1, kind=kind,
                          language=language if kind == "code" else "markdown" if kind == "markdown" else "text",
                          text=masked, secrets=spans))
    return cells


def _written_ids(text: str) -> list[str | None] | None:
    """The id each cell has in the file itself (None where it has none), or None for a
    notebook not in format 4. nbformat gives a 4.5 notebook without ids new random ones on
    every read, and a key that changes on every read would make every cell stale.

    >>> _written_ids('{"nbformat": 4, "nbformat_minor": 5, "cells": [{"id": "a1"}, {}]}')
    ['a1', None]
    """
    try:
        doc = json.loads(text)
    except ValueError:
        return None
    cells = doc.get("cells") if isinstance(doc, dict) and doc.get("nbformat") == 4 else None
    if not isinstance(cells, list):
        return None
    return [str(c["id"]) if isinstance(c, dict) and isinstance(c.get("id"), str) and c["id"] and not c["id"].startswith("#")
            else None for c in cells]  # "#3" is a position key (nbformat's ids never start so)


_NOTEBOOKS: BoundedLRU[str, tuple[tuple, list[Cell]]] = BoundedLRU(_CACHE_SIZE)


def read_notebook(path: Path) -> list[Cell]:
    """The cells of the notebook at ``path``, parsed once per version of the file
    (:func:`~loom_nb.core.files.file_stamp`)."""
    stamp = file_stamp(path.stat())
    found = _NOTEBOOKS.get(str(path))
    if found is not None and found[0] == stamp:
        return found[1]
    cells = notebook_cells(read_text(path), str(path.name))
    _NOTEBOOKS.put(str(path), (stamp, cells))
    return cells


def read_cell(path: Path, key: str) -> Cell | None:
    """The cell ``key`` (id or ``#index``) of the notebook at ``path``; None when it is gone."""
    for cell in read_notebook(path):
        if cell.key == key:
            return cell
    return None
