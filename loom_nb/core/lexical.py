"""Deterministic lexical signals for ranking: BM25F over fields, path mentions, tagged paths.

Seed 004 (the Context Loom scorer) ranks workspace files by what the request *says*:
an explicitly tagged path is the strongest signal, a path or basename mentioned in the
request is strong, and query terms found in a file's path or symbols count more than terms
found in its headings or imports, which count more than terms in its body. This module
computes those signals as arrays over content rows, the same shape as every other signal in
:mod:`loom_nb.core.rank`:

* :class:`LexicalIndex` — an inverted index per field scored with BM25F, so the field
  preferences of seed 004 are weights (:data:`DEFAULT_FIELD_WEIGHTS`), not ad hoc bonuses;
* :func:`~loom_nb.core.paths.path_mentions` — 1.0 / 0.7 / 0.4 when the query names a row's path,
  basename or stem, and :func:`~loom_nb.core.paths.tagged_paths` — ``@path`` and backticked
  paths the user tagged (both in :mod:`loom_nb.core.paths`, analysis in :mod:`loom_nb.core.analysis`;
  importable from here as before).

Everything is deterministic: the same text and query give the same scores on every machine,
which is what lets a small local model trust the pack instead of re-searching the repository.

Size: one index: adding fields, postings, BM25F scoring, saving and loading.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

import numpy as np

from .analysis import STOPWORDS, _query_terms, split_identifier, terms  # noqa: F401 - the analysis names, importable from here as before
from .paths import (  # noqa: F401 - the path signals, importable from here as before
    BASENAME_SCORE,
    CODE_EXTENSIONS,
    FOLDER_SCORE,
    MIN_STEM_CHARS,
    PATH_SCORE,
    ROLES,
    STEM_SCORE,
    file_role,
    path_mentions,
    path_roles,
    tagged_mask,
    tagged_paths,
)

FIELDS: tuple[str, ...] = ("path", "symbol", "heading", "import", "content")
"""The text fields a content row may have, in the column order used by every array here."""

DEFAULT_FIELD_WEIGHTS: dict[str, float] = {"path": 3.0, "symbol": 3.0, "heading": 2.0, "import": 1.5, "content": 1.0}
"""BM25F field weights. Seed 004: a term in the path or a symbol is a strong match, in a heading
or an import a medium one, in the body a small one. Swept with k1 and b through the default
path on 13 labelled sets (``benchmarks/sweep_bm25.py``; benchmarks/README.md): symbol or path 5
and content 0.5 each trade one set for another and sum lower, import 0.5 changes next to nothing,
so seed 004's values stay."""

DEFAULT_K1 = 1.2
"""BM25 term-frequency saturation (Robertson & Zaragoza's usual 1.2: the 2nd occurrence of a
term adds much less than the 1st)."""

DEFAULT_B = 0.75
"""BM25 length normalisation (the usual 0.75: a match in a long chunk is worth less). 0.5 gains
fastapi and the self set at 4k and loses a guzzle case at every budget: a short message ("Fix
`0` body handling") then finds long units that repeat its word before the short one it names."""

# -- the index ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Postings:
    """Entries ``(term, slot, field, tf)`` sorted by term, then slot, then field.

    A term's postings are one contiguous slice, found with two binary searches, so a query
    reads a few numpy slices per term and never walks rows in Python.
    """

    term: np.ndarray  # int64 term ids, sorted
    slot: np.ndarray  # int64 slot of the row holding the entry
    field: np.ndarray  # int64 column in FIELDS
    tf: np.ndarray  # float64 occurrences of the term in that field

    @classmethod
    def build(cls, term: np.ndarray, slot: np.ndarray, fld: np.ndarray, tf: np.ndarray, maybe_sorted: bool = False) -> "_Postings":
        term, slot, fld = (np.asarray(a, np.int64) for a in (term, slot, fld))
        # one int64 key sorts faster than a 3-key lexsort; (term, slot, field) is unique
        n_slots = int(slot.max()) + 1 if slot.size else 1
        key = (term * n_slots + slot) * len(FIELDS) + fld
        if maybe_sorted and (key.size < 2 or bool((np.diff(key) > 0).all())):
            return cls(term, slot, fld, np.asarray(tf, np.float64))  # saved in order: no sort
        order = np.argsort(key)
        return cls(term[order], slot[order], fld[order], np.asarray(tf, np.float64)[order])

    @classmethod
    def empty(cls) -> "_Postings":
        return cls(np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0, np.float64))

    def __len__(self) -> int:
        return int(self.term.size)

    def lookup(self, term_id: int) -> slice:
        lo, hi = np.searchsorted(self.term, [term_id, term_id + 1])
        return slice(int(lo), int(hi))


@dataclass(eq=False)
class LexicalIndex:
    """An inverted index per field, scored with BM25F (Robertson & Zaragoza) over all rows at once.

    Rows are the dense integer rows of the content table. Internally each added row gets a
    *slot*; postings refer to slots, and ``slot → row`` is one integer array, so
    :meth:`move` (the graph fills a removed row's hole with its last row) is a relabel, and
    :meth:`remove` just marks the slot dead. New rows go to a small *delta* posting list that
    is sorted on the next query; once it grows past a quarter of the main list, or dead slots
    pile up, both are merged (compaction). Adding one answer per turn therefore never re-sorts
    the whole index.

    Scoring (BM25F). For row *d*, term *t* and field *f* with weight ``w_f``::

        tf~(t, d) = Σ_f  w_f · tf_f(t, d) / (1 − b + b · len_f(d) / avglen_f)
        idf(t)    = ln(1 + (N − df(t) + 0.5) / (df(t) + 0.5))
        score(d)  = Σ_t  idf(t) · tf~(t, d) / (k1 + tf~(t, d))

    ``N`` is the number of indexed rows, ``df(t)`` the rows holding *t* in any field,
    ``len_f(d)`` the number of terms (:func:`terms`) in field *f* of *d*, and ``avglen_f`` its
    mean over all ``N`` rows (rows without the field count as length 0). Each distinct query
    term counts once.

    Worked example (k1 = 1.2, b = 0.75, default weights: symbol 3, content 1). Three rows:
    0 = symbol "rank score", content "graph"; 1 = content "rank graph nodes"; 2 = content
    "graph". Symbol lengths (2, 0, 0), mean 2/3; content lengths (1, 3, 1), mean 5/3.
    Query "rank": df = 2, idf = ln(1 + 1.5/2.5) = ln 1.6.
    Row 0: tf~ = 3 · 1 / (0.25 + 0.75 · 2/(2/3)) = 3/2.5 = 1.2, score = ln 1.6 · 1.2/2.4 ≈ 0.2350.
    Row 1: tf~ = 1 / (0.25 + 0.75 · 3/(5/3)) = 1/1.6 = 0.625, score = ln 1.6 · 0.625/1.825 ≈ 0.1610.
    Row 2: no match, 0.

    >>> index = LexicalIndex()
    >>> index.add(0, {"symbol": "rank score", "content": "graph"})
    >>> index.add(1, {"content": "rank graph nodes"})
    >>> index.add(2, {"content": "graph"})
    >>> index.score("rank", 3).round(4)
    array([0.235, 0.161, 0.   ])
    >>> index.explain("rank graph", 0)
    {'symbol': ['rank'], 'content': ['graph']}

    Parameters
    ----------
    field_weights : dict, optional
        Weights for some or all of :data:`FIELDS`; fields not given keep
        :data:`DEFAULT_FIELD_WEIGHTS`. Unknown names are an error (a typo would silently
        weigh nothing).
    k1 : float
        Term-frequency saturation, ``>= 0`` (0 makes a match count once however often it occurs).
    b : float
        Length normalisation in ``[0, 1]`` (0: none; 1: full).
    """

    field_weights: dict[str, float] | None = None
    k1: float = DEFAULT_K1
    b: float = DEFAULT_B
    _weights: np.ndarray = field(init=False, repr=False)
    _vocab: dict[str, int] = field(init=False, repr=False)
    _terms: list[str] = field(init=False, repr=False)
    _row_slot: dict[int, int] = field(init=False, repr=False)
    _slot_row: np.ndarray = field(init=False, repr=False)
    _slot_len: np.ndarray = field(init=False, repr=False)
    _n_slots: int = field(init=False, repr=False)
    _len_total: np.ndarray = field(init=False, repr=False)
    _base: _Postings = field(init=False, repr=False)
    _pending: list[tuple[np.ndarray, int, np.ndarray, np.ndarray]] = field(init=False, repr=False)
    _delta: _Postings | None = field(init=False, repr=False)
    _n_dead: int = field(init=False, repr=False)

    def __post_init__(self) -> None:
        weights = dict(DEFAULT_FIELD_WEIGHTS)
        unknown = set(self.field_weights or {}) - set(FIELDS)
        if unknown:
            raise ValueError(f"unknown lexical fields {sorted(unknown)}; the fields are {FIELDS}")
        weights.update({k: float(v) for k, v in (self.field_weights or {}).items()})
        if any(w < 0 for w in weights.values()):
            raise ValueError(f"field weights must be >= 0, got {weights}")
        if self.k1 < 0 or not 0.0 <= self.b <= 1.0:
            raise ValueError(f"BM25 needs k1 >= 0 and 0 <= b <= 1, got k1={self.k1}, b={self.b}")
        self.field_weights = weights
        self._weights = np.array([weights[f] for f in FIELDS], dtype=np.float64)
        self._vocab, self._terms = {}, []
        self._row_slot = {}
        self._slot_row = np.zeros(0, np.int64)
        self._slot_len = np.zeros((0, len(FIELDS)), np.float64)
        self._n_slots = 0
        self._len_total = np.zeros(len(FIELDS), np.float64)
        self._base = _Postings.empty()
        self._pending = []
        self._delta = None
        self._n_dead = 0

    def __len__(self) -> int:
        return len(self._row_slot)

    def __contains__(self, row: int) -> bool:
        return int(row) in self._row_slot

    def __repr__(self) -> str:
        return f"LexicalIndex({len(self)} rows, {len(self._terms)} terms, k1={self.k1}, b={self.b})"

    # -- mutation -------------------------------------------------------------------------

    def add(self, row: int, fields: dict[str, str | None]) -> None:
        """Index a row's text fields; re-adding a row replaces what it had.

        Missing, ``None`` or empty fields have length 0. A row with no text at all still
        counts in ``N`` (it is a row that matches nothing). Unknown field names raise
        ``ValueError``.
        """
        row = int(row)
        if row < 0:
            raise ValueError(f"rows are non-negative integers, got {row}")
        unknown = set(fields) - set(FIELDS)
        if unknown:
            raise ValueError(f"unknown lexical fields {sorted(unknown)}; the fields are {FIELDS}")
        self.remove(row)
        term_ids: list[int] = []
        field_ids: list[int] = []
        tfs: list[int] = []
        lengths = np.zeros(len(FIELDS), np.float64)
        for column, name in enumerate(FIELDS):
            text = fields.get(name)
            if not text:
                continue
            found = terms(text)
            lengths[column] = len(found)
            counts = Counter(found)
            for term in [t for t in counts if t not in self._vocab]:
                self._vocab[term] = len(self._terms)
                self._terms.append(term)
            term_ids.extend(map(self._vocab.__getitem__, counts))
            field_ids.extend([column] * len(counts))
            tfs.extend(counts.values())
        slot = self._new_slot(row, lengths)
        self._pending.append((np.array(term_ids, np.int64), slot, np.array(field_ids, np.int64), np.array(tfs, np.float64)))
        self._delta = None

    def remove(self, row: int) -> None:
        """Forget a row. Removing a row that is not indexed does nothing."""
        slot = self._row_slot.pop(int(row), None)
        if slot is None:
            return
        self._len_total -= self._slot_len[slot]
        self._slot_row[slot] = -1
        self._n_dead += 1

    def move(self, old_row: int, new_row: int) -> None:
        """Relabel ``old_row`` as ``new_row``, as ``a[new] = a[old]; del a[old]`` would.

        This mirrors how the content table removes a row: the last row moves into the hole.
        Whatever ``new_row`` held is dropped; if ``old_row`` was not indexed, ``new_row`` ends
        up not indexed either. Costs O(1): postings refer to slots, not rows.
        """
        old_row, new_row = int(old_row), int(new_row)
        if old_row == new_row:
            return
        if new_row < 0:
            raise ValueError(f"rows are non-negative integers, got {new_row}")
        self.remove(new_row)
        slot = self._row_slot.pop(old_row, None)
        if slot is None:
            return
        self._row_slot[new_row] = slot
        self._slot_row[slot] = new_row

    def _new_slot(self, row: int, lengths: np.ndarray) -> int:
        slot = self._n_slots
        if slot == self._slot_row.size:
            size = max(64, 2 * slot)
            self._slot_row = np.concatenate([self._slot_row, np.full(size - slot, -1, np.int64)])
            self._slot_len = np.concatenate([self._slot_len, np.zeros((size - slot, len(FIELDS)))])
        self._slot_row[slot] = row
        self._slot_len[slot] = lengths
        self._n_slots += 1
        self._row_slot[row] = slot
        self._len_total += lengths
        return slot

    # -- postings maintenance --------------------------------------------------------------

    def compact(self) -> None:
        """Merge pending rows into the main postings now (after a bulk load), so the first
        query does not pay for it."""
        if self._pending or self._n_dead:
            self._compact()

    def _sync(self) -> None:
        """Make the delta postings queryable; merge everything when the delta or the dead grow."""
        pending = sum(p[0].size for p in self._pending)
        if pending > max(4096, len(self._base) // 4) or self._n_dead > max(1024, len(self) // 2):
            self._compact()
        elif self._delta is None:
            self._delta = self._pending_postings()

    def _pending_arrays(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """The delta entries ``(term, slot, field, tf)``, unsorted."""
        if not self._pending:
            empty = np.zeros(0, np.int64)
            return empty, empty, empty, np.zeros(0)
        sizes = np.array([p[0].size for p in self._pending], np.int64)
        slots = np.array([p[1] for p in self._pending], np.int64)
        return (
            np.concatenate([p[0] for p in self._pending]),
            np.repeat(slots, sizes),
            np.concatenate([p[2] for p in self._pending]),
            np.concatenate([p[3] for p in self._pending]),
        )

    def _pending_postings(self) -> _Postings:
        return _Postings.build(*self._pending_arrays()) if self._pending else _Postings.empty()

    def _compact(self) -> None:
        """Merge delta into the main postings, drop dead slots, renumber live slots by row."""
        base, delta = self._base, self._pending_arrays()
        term, slot, fld, tf = (np.concatenate([b, d]) for b, d in zip((base.term, base.slot, base.field, base.tf), delta))
        slot_row = self._slot_row[: self._n_slots]
        live = np.flatnonzero(slot_row >= 0)
        live = live[np.argsort(slot_row[live], kind="stable")]
        renumber = np.full(self._n_slots, -1, np.int64)
        renumber[live] = np.arange(live.size)
        keep = renumber[slot] >= 0
        self._base = _Postings.build(term[keep], renumber[slot[keep]], fld[keep], tf[keep])
        self._slot_row = slot_row[live].copy()
        self._slot_len = self._slot_len[live].copy()
        self._n_slots = int(live.size)
        self._row_slot = dict(zip(self._slot_row.tolist(), range(self._n_slots)))
        self._pending, self._delta, self._n_dead = [], _Postings.empty(), 0

    def _postings(self, term_id: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Slots, fields and frequencies of one term, main list then delta (live or not)."""
        parts = []
        for postings in (self._base, self._delta):
            if postings is not None and len(postings):
                s = postings.lookup(term_id)
                parts.append((postings.slot[s], postings.field[s], postings.tf[s]))
        if not parts:
            return np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0)
        if len(parts) == 1:
            return parts[0]
        return tuple(np.concatenate(x) for x in zip(*parts))  # type: ignore[return-value]

    # -- queries ---------------------------------------------------------------------------

    def score(self, query: str | list[str], n_rows: int, boost: dict[str, float] | None = None) -> np.ndarray:
        """BM25F score of every row ``0 .. n_rows-1`` (see the class docstring for the formula).

        Parameters
        ----------
        query : str or list of str
            Text, analysed with :func:`terms`; or a list of terms already analysed (used as
            given, lower-cased), so one analysis can score several indexes.
        n_rows : int
            Length of the result: rows past it are ignored, rows not indexed score 0.
        boost : dict of str to float, optional
            A weight per query term (1 when absent): BM25 sums over query terms, so a term of
            weight 3 counts as three occurrences would if the query's terms were not deduplicated
            (the line a query leads with, :func:`loom_nb.core.query.lead_line`).

        Returns
        -------
        numpy.ndarray
            float64 scores, ``>= 0``. Per query term the work is a slice of its postings and
            a ``bincount`` over slots: cost grows with postings, not with Python loops over rows.
        """
        out = np.zeros(int(n_rows), np.float64)
        n_docs = len(self)
        boost = boost or {}
        wanted = [(self._vocab[t], float(boost.get(t, 1.0))) for t in _query_terms(query) if t in self._vocab]
        if n_docs == 0 or not wanted or n_rows <= 0:
            return out
        self._sync()
        n_slots = self._n_slots
        slot_row = self._slot_row[:n_slots]
        live = slot_row >= 0
        avglen = self._len_total / n_docs
        avglen = np.where(avglen > 0, avglen, 1.0)  # a field no row has: its tf is 0 anyway
        total = np.zeros(n_slots, np.float64)
        for term_id, weight in wanted:
            slot, fld, tf = self._postings(term_id)
            if slot.size == 0:
                continue
            norm = 1.0 - self.b + self.b * self._slot_len[slot, fld] / avglen[fld]
            tilde = np.bincount(slot, weights=self._weights[fld] * tf / norm, minlength=n_slots)
            present = (np.bincount(slot, minlength=n_slots) > 0) & live
            df = int(np.count_nonzero(present))
            if df == 0:
                continue
            idf = np.log1p((n_docs - df + 0.5) / (df + 0.5))
            saturated = np.divide(tilde, self.k1 + tilde, out=np.zeros(n_slots), where=present & (tilde > 0))
            total += weight * idf * saturated
        inside = live & (slot_row < n_rows)
        out[slot_row[inside]] = total[inside]
        return out

    def explain(self, query: str | list[str], row: int) -> dict[str, list[str]]:
        """Which query terms matched in which field of ``row``.

        Returns ``{field: [terms]}`` with fields in :data:`FIELDS` order and terms in query
        order, only for fields with a match; ``{}`` for a row that is not indexed.
        """
        slot = self._row_slot.get(int(row))
        if slot is None:
            return {}
        self._sync()
        slot = self._row_slot[int(row)]  # compaction may have renumbered it
        matched: dict[int, list[str]] = {}
        for term in _query_terms(query):
            term_id = self._vocab.get(term)
            if term_id is None:
                continue
            slots, fld, _ = self._postings(term_id)
            for column in np.unique(fld[slots == slot]).tolist():
                matched.setdefault(column, []).append(term)
        return {FIELDS[c]: matched[c] for c in sorted(matched)}

    def rows_with(self, term: str, field: str) -> np.ndarray:
        """The rows holding ``term`` (one analysed term, compared in lower case) in ``field``,
        sorted: in the symbol field, the units that define or are named by it.

        >>> index = LexicalIndex()
        >>> index.add(0, {"symbol": "parse_duration", "content": "days"})
        >>> index.add(1, {"content": "calls parse_duration"})
        >>> index.rows_with("parse_duration", "symbol").tolist(), index.rows_with("parse_duration", "content").tolist()
        ([0], [1])
        """
        if field not in FIELDS:
            raise ValueError(f"unknown lexical field {field!r}; the fields are {FIELDS}")
        term_id = self._vocab.get(term.lower())
        if term_id is None:
            return np.zeros(0, np.int64)
        self._sync()
        slots, fld, _ = self._postings(term_id)
        rows = self._slot_row[slots[fld == FIELDS.index(field)]]
        return np.unique(rows[rows >= 0])

    # -- persistence -----------------------------------------------------------------------

    @property
    def vocabulary(self) -> list[str]:
        """Every term id's text (ids index this list)."""
        return self._terms

    def row_terms(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The row × term counts, summed over fields, as three arrays ``(rows, term_ids,
        counts)``: what topic naming reads (:func:`loom_nb.core.concepts.distinctive_terms`)."""
        self.compact()
        base = self._base
        if not len(base):
            empty = np.zeros(0, np.int64)
            return empty, empty, np.zeros(0)
        rows = self._slot_row[base.slot]
        key, inverse = np.unique(rows * len(self._terms) + base.term, return_inverse=True)
        counts = np.bincount(inverse.reshape(-1), weights=base.tf)
        return key // len(self._terms), key % len(self._terms), counts

    def to_arrays(self) -> dict[str, np.ndarray]:
        """Everything needed to rebuild the index, as plain numpy arrays (``np.savez``-safe).

        Keys: ``fields`` (unicode), ``terms`` (the vocabulary joined by newlines, as UTF-8
        bytes: a fixed-width unicode array would pad every term to the longest — one
        2,735-character token made a 378 MB file), ``rows`` (int64, one per indexed row),
        ``field_lengths`` (int64, rows × fields), and the postings ``posting_term``,
        ``posting_row`` (position in ``rows``), ``posting_field`` (int64) and ``posting_tf``
        (int64). Only terms still in use are written. Compacts the index first.
        """
        self._compact()
        used, term = np.unique(self._base.term, return_inverse=True)
        vocab = np.frombuffer("\n".join(self._terms[i] for i in used.tolist()).encode("utf-8"), dtype=np.uint8)
        return {
            "fields": np.array(FIELDS, dtype=str),
            "terms": vocab,
            "rows": self._slot_row[: self._n_slots].astype(np.int64),
            "field_lengths": self._slot_len[: self._n_slots].astype(np.int64),
            "posting_term": term.astype(np.int64).reshape(-1),
            "posting_row": self._base.slot.astype(np.int64),
            "posting_field": self._base.field.astype(np.int64),
            "posting_tf": self._base.tf.astype(np.int64),
        }

    @classmethod
    def from_arrays(
        cls,
        arrays: dict[str, np.ndarray],
        field_weights: dict[str, float] | None = None,
        k1: float = DEFAULT_K1,
        b: float = DEFAULT_B,
    ) -> "LexicalIndex":
        """Rebuild an index from :meth:`to_arrays` output (or an ``np.load`` of it).

        Weights and BM25 parameters are not stored: they are ranking configuration, and
        changing them must not need a re-index. Inconsistent arrays raise ``ValueError``.
        """
        index = cls(field_weights=field_weights, k1=k1, b=b)
        stored_fields = tuple(str(f) for f in np.asarray(arrays["fields"]).tolist())
        if stored_fields != FIELDS:
            raise ValueError(f"lexical arrays have fields {stored_fields}, expected {FIELDS}")
        raw = np.asarray(arrays["terms"])
        if raw.dtype == np.uint8:
            text = raw.tobytes().decode("utf-8")
            vocab = text.split("\n") if text else []
        else:  # an index saved by the first format: a unicode array
            vocab = [str(t) for t in raw.tolist()]
        rows = np.asarray(arrays["rows"], np.int64).reshape(-1)
        lengths = np.asarray(arrays["field_lengths"], np.float64).reshape(-1, len(FIELDS))
        term, slot, fld, tf = (np.asarray(arrays[k], np.int64).reshape(-1) for k in ("posting_term", "posting_row", "posting_field", "posting_tf"))
        n = rows.size
        if lengths.shape[0] != n or len({term.size, slot.size, fld.size, tf.size}) != 1:
            raise ValueError("lexical arrays disagree in length")
        # to_arrays writes rows in increasing order: checking that is cheaper than np.unique
        increasing = n < 2 or bool((np.diff(rows) > 0).all())
        if (not increasing and np.unique(rows).size != n) or (rows < 0).any():
            raise ValueError("lexical arrays repeat a row or hold a negative row")
        if term.size and (term.min() < 0 or term.max() >= len(vocab) or slot.min() < 0 or slot.max() >= n or fld.min() < 0 or fld.max() >= len(FIELDS)):
            raise ValueError("lexical postings point outside their terms, rows or fields")
        index._terms = vocab
        index._vocab = {t: i for i, t in enumerate(vocab)}
        index._slot_row = rows.copy()
        index._slot_len = lengths.copy()
        index._n_slots = n
        index._row_slot = dict(zip(rows.tolist(), range(n)))
        index._len_total = lengths.sum(axis=0)
        index._base = _Postings.build(term, slot, fld, tf.astype(np.float64), maybe_sorted=True)
        index._delta = _Postings.empty()
        return index


# -- score helpers -----------------------------------------------------------------------------


def normalise_scores(scores: np.ndarray) -> np.ndarray:
    """Map scores to 0–1 by dividing by the maximum; all zeros (or empty) stay zeros.

    BM25F is unbounded; the composite score in :mod:`loom_nb.core.rank` wants every signal in 0–1.
    Dividing by the maximum keeps the ratios between rows, so the best lexical match is 1.

    >>> normalise_scores(np.array([0.0, 2.0, 1.0]))
    array([0. , 1. , 0.5])
    """
    scores = np.asarray(scores, dtype=np.float64)
    top = scores.max() if scores.size else 0.0
    if not top > 0:
        return np.zeros_like(scores)
    return scores / top


