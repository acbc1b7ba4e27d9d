"""The baselines every engine row is read against: BM25 over whole files, whole files in
BM25 order, BM25 over fixed windows, and dense retrieval over the same windows. Each fills
the same budget from the same files (those the indexer's walk takes)."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..core.errors import LoomError
from ..core.lexical import LexicalIndex
from ..core.tokens import count_tokens_many

from .metrics import Loaded

log = logging.getLogger(__name__)

BASELINES: tuple[str, ...] = ("bm25", "bm25-chunks", "dense", "whole-file")
"""The strategies this module runs (the engine's rows run in :mod:`loom_nb.evaluation.run`)."""

WINDOW_LINES = 40
"""Lines per window for ``bm25-chunks`` and ``dense``: about one function or one screen, the
usual size of a retrieval chunk for code."""


# -- a workspace, prepared once per run ------------------------------------------------------


@dataclass
class _Window:
    path: str
    start: int
    end: int
    text: str
    tokens: int


class _Workspace:
    """A workspace's files and windows, with BM25 indexes and (on demand) window vectors."""

    def __init__(self, root: Path):
        from ..index.walk import read_text, walk_workspace

        self.root = root
        self.files: list[_Window] = []
        for entry in walk_workspace(root).files:
            try:
                text = read_text(root / entry.path)
            except OSError:
                continue
            n_lines = text.count("\n") + (0 if text.endswith("\n") or not text else 1)
            self.files.append(_Window(entry.path, 1, max(n_lines, 1), text, 0))
        for f, n in zip(self.files, count_tokens_many(f.text for f in self.files)):
            f.tokens = n
        self.windows: list[_Window] = []
        for f in self.files:
            lines = f.text.splitlines(keepends=True) or [""]
            for i in range(0, len(lines), WINDOW_LINES):
                part = lines[i : i + WINDOW_LINES]
                self.windows.append(_Window(f.path, i + 1, i + len(part), "".join(part), 0))
        for w, n in zip(self.windows, count_tokens_many(w.text for w in self.windows)):
            w.tokens = n
        self.total_tokens = sum(f.tokens for f in self.files)
        self.file_index = self._bm25(self.files)
        self.window_index = self._bm25(self.windows)
        self._vectors: np.ndarray | None = None

    @staticmethod
    def _bm25(pieces: list[_Window]) -> LexicalIndex:
        index = LexicalIndex()
        for row, piece in enumerate(pieces):
            index.add(row, {"content": f"{piece.path}\n{piece.text}"})
        index.compact()
        return index

    def window_vectors(self, embedder) -> np.ndarray:
        if self._vectors is None:
            texts = [f"{w.path}\n{w.text}" for w in self.windows]
            self._vectors = embedder.embed(texts) if texts else np.zeros((0, embedder.dim), np.float32)
        return self._vectors


def _greedy(pieces: list[_Window], scores: np.ndarray, budget: int, *, stop_at_first_misfit: bool,
            positive_only: bool) -> list[Loaded]:
    """Load pieces in descending score (ties by position) while they fit ``budget``."""
    order = sorted(range(len(pieces)), key=lambda i: (-float(scores[i]), i))
    out, left = [], budget
    for i in order:
        if positive_only and not scores[i] > 0:
            break
        piece = pieces[i]
        if piece.tokens > left:
            if stop_at_first_misfit:
                break
            continue
        out.append(Loaded(piece.path, piece.start, piece.end, piece.tokens, float(scores[i])))
        left -= piece.tokens
    return out


def run_baseline(strategy: str, ws: _Workspace, query: str, budget: int, embedder=None) -> list[Loaded]:
    """What one baseline strategy loads for ``query`` (see the module docstring)."""
    if strategy == "bm25":
        scores = ws.file_index.score(query, len(ws.files))
        return _greedy(ws.files, scores, budget, stop_at_first_misfit=True, positive_only=True)
    if strategy == "whole-file":
        scores = ws.file_index.score(query, len(ws.files))
        return _greedy(ws.files, scores, budget, stop_at_first_misfit=False, positive_only=False)
    if strategy == "bm25-chunks":
        scores = ws.window_index.score(query, len(ws.windows))
        return _greedy(ws.windows, scores, budget, stop_at_first_misfit=False, positive_only=True)
    if strategy == "dense":
        if embedder is None:
            raise LoomError("the dense baseline needs an embedder")
        vectors = ws.window_vectors(embedder)
        q = embedder.embed([query])[0]
        scores = vectors @ q if len(vectors) else np.zeros(0)
        return _greedy(ws.windows, scores, budget, stop_at_first_misfit=False, positive_only=True)
    raise LoomError(f"unknown strategy {strategy!r}; the strategies are {', '.join(BASELINES)}")
