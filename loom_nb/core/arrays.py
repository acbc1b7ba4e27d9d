"""The graph as arrays, for ranking without walking networkx: a growable table of vectors
per kind (content, concepts, chunks) and :class:`GraphArrays`, the columns one ranking reads
(vectors, token counts, access turns, links, structure edges, paths).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field

import numpy as np

from .errors import EmbeddingMismatchError


class VectorTable:
    """Row-per-id float32 vectors in one contiguous, growable matrix.

    Optional integer columns ride along with each row (token count, last access turn and
    type code for content), so ranking reads them as arrays without touching the nodes.
    """

    def __init__(self, dim: int = 0, columns: int = 0):
        self.dim = dim
        self.columns = columns
        self.ids: list[str] = []
        self.index: dict[str, int] = {}
        self._data = np.zeros((0, dim), dtype=np.float32)
        self._cols = np.zeros((0, columns), dtype=np.int64)

    def __len__(self) -> int:
        return len(self.ids)

    def __contains__(self, node_id: str) -> bool:
        return node_id in self.index

    @property
    def matrix(self) -> np.ndarray:
        return self._data[: len(self.ids)]

    @property
    def cols(self) -> np.ndarray:
        """The integer columns, shape (rows, columns); a view, updated in place."""
        return self._cols[: len(self.ids)]

    def add(self, node_id: str, vector: np.ndarray, cols: tuple[int, ...] = ()) -> int:
        vector = np.asarray(vector, dtype=np.float32).reshape(-1)
        if self.dim == 0 and not self.ids:
            self.dim = vector.shape[0]
            self._data = np.zeros((0, self.dim), dtype=np.float32)
        if vector.shape[0] != self.dim:
            raise EmbeddingMismatchError(f"vector of dimension {vector.shape[0]} added to a table of dimension {self.dim}")
        n = len(self.ids)
        if n == self._data.shape[0]:
            size = max(16, 2 * n)
            grown = np.zeros((size, self.dim), dtype=np.float32)
            grown[:n] = self._data[:n]
            self._data = grown
            grown_cols = np.zeros((size, self.columns), dtype=np.int64)
            grown_cols[:n] = self._cols[:n]
            self._cols = grown_cols
        self._data[n] = vector
        if self.columns:
            self._cols[n] = cols
        self.index[node_id] = n
        self.ids.append(node_id)
        return n

    def get(self, node_id: str) -> np.ndarray:
        return self._data[self.index[node_id]]

    def set(self, node_id: str, vector: np.ndarray) -> None:
        """Overwrite one row in place (views taken by :meth:`matrix` see the new values)."""
        self._data[self.index[node_id]] = np.asarray(vector, dtype=np.float32).reshape(-1)

    def remove(self, node_id: str) -> None:
        row = self.index.pop(node_id)
        last = len(self.ids) - 1
        if row != last:
            moved = self.ids[last]
            self._data[row] = self._data[last]
            self._cols[row] = self._cols[last]
            self.ids[row] = moved
            self.index[moved] = row
        self.ids.pop()

    @classmethod
    def from_arrays(cls, ids: list[str], matrix: np.ndarray, cols: np.ndarray | None = None) -> "VectorTable":
        columns = 0 if cols is None else int(cols.shape[1])
        table = cls(int(matrix.shape[1]) if matrix.ndim == 2 else 0, columns)
        table.ids = list(ids)
        table.index = {node_id: i for i, node_id in enumerate(table.ids)}
        table._data = np.ascontiguousarray(matrix, dtype=np.float32)
        table._cols = np.zeros((len(ids), 0), dtype=np.int64) if cols is None else np.ascontiguousarray(cols, dtype=np.int64)
        return table


TOKENS, TURN, TYPE = 0, 1, 2
"""Columns of the content vector table."""


@dataclass
class GraphArrays:
    """Dense views of the graph for vectorised ranking; rebuilt only after a change."""

    content_ids: list[str]
    content_vectors: np.ndarray
    tokens: np.ndarray
    last_access_turn: np.ndarray
    """A live view: marking nodes accessed updates it without a rebuild."""
    type_codes: np.ndarray
    """Content type per node, as an index into ``CONTENT_TYPES``."""
    concept_ids: list[str]
    concept_vectors: np.ndarray
    link_content: np.ndarray
    """Content row of every content–concept edge."""
    link_concept: np.ndarray
    """Concept row of every content–concept edge."""
    concept_indptr: np.ndarray
    """CSR adjacency of concept–concept edges (``indices[indptr[i]:indptr[i+1]]``)."""
    concept_indices: np.ndarray
    structure_a: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    """Content rows of code-structure edges (imports, references, parts), one end…"""
    structure_b: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    """…and the other."""
    paths: list = field(default_factory=list)
    """The workspace file of each content row, or None."""
    _files: np.ndarray | None = field(default=None, repr=False)
    _has_paths: bool | None = field(default=None, repr=False)

    def has_paths(self) -> bool:
        """Whether any content row has a workspace file; once per arrays build (a scan of
        50k rows for a session of pasted text alone took 1.3 ms of every query, twice)."""
        if self._has_paths is None:
            self._has_paths = any(p is not None for p in self.paths)
        return self._has_paths

    def file_index(self) -> np.ndarray:
        """Per content row, a number shared by every row of the same file (-1: no file).

        Built once per arrays build: the file signal groups rows by file on every query.
        Files are numbered in order of first appearance with a dict, 3x faster than
        ``np.unique`` over the paths as strings (8 against 24 ms at 50k rows), and a chat
        rebuilds the arrays after every turn.

        >>> GraphArrays._numbered(["a.py", None, "b.py", "a.py", ""]).tolist()
        [0, -1, 1, 0, -1]
        """
        if self._files is None:
            self._files = self._numbered(self.paths)
        return self._files

    @staticmethod
    def _numbered(paths) -> np.ndarray:
        seen: dict = {None: -1, "": -1}
        return np.fromiter((seen.setdefault(p, len(seen) - 2) for p in paths), np.int64, count=len(paths))


STRUCTURE_KINDS = ("imports", "references", "continues")


def _pair_array(pairs) -> np.ndarray:
    """``(n, 2)`` int64 rows from an array or a list of pairs.

    ``np.fromiter`` over the flattened list is 3x faster than ``np.asarray`` on a list of
    tuples, and a chat rebuilds these arrays after every turn's new nodes.
    """
    if isinstance(pairs, np.ndarray):
        return pairs.astype(np.int64, copy=False).reshape(-1, 2)
    return np.fromiter(itertools.chain.from_iterable(pairs), np.int64, count=2 * len(pairs)).reshape(-1, 2)
