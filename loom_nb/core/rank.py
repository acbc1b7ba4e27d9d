"""The eleven ranking signals (seed 000 §5, seed 004, the file signal) and the composite score.

Every signal is a pure, vectorised function returning one value in 0–1 per content node;
:func:`rank` stacks them into a matrix ``S`` (nodes × signals) and scores ``S @ w / sum(w)``.
The per-node contribution of signal *i* is ``w_i * s_i / sum(w)``: the breakdown sums to
the score, so a bar chart of contributions explains a rank exactly.

Size: eleven signal functions of a few lines each, every one with a doctest, and rank() that
stacks them.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

import numpy as np

from .config import CONTENT_TYPES, SIGNALS, LoomConfig, Weights
from .arrays import GraphArrays
from .graph import LoomGraph
from .analysis import _query_terms
from .lexical import normalise_scores
from .paths import (BASENAME_SCORE, MAX_FILES_PER_NAME, STEM_SCORE, line_mention_rows, module_members, path_mentions,
                    path_roles, tagged_mask, tagged_paths)
from .query import PREVIOUS_MARK, lead_calls, lead_line

log = logging.getLogger(__name__)

MAX_HOPS = 5
"""Hop distances past this are treated as unreachable (signal 0.5**4 ≈ 0.06 already)."""


# -- the signals: pure functions, one value per node, each in [0, 1] ----------------------


def semantic_signal(content_vectors: np.ndarray, query_vector: np.ndarray) -> np.ndarray:
    """Cosine of query and node, clipped to 0–1 (negative similarity is no relevance).

    >>> semantic_signal(np.array([[1.0, 0.0], [0.6, 0.8], [-1.0, 0.0]]), np.array([1.0, 0.0]))
    array([1. , 0.6, 0. ])
    """
    if len(content_vectors) == 0:
        return np.zeros(0)
    sims = content_vectors @ np.asarray(query_vector, dtype=content_vectors.dtype)
    damaged = ~np.isfinite(sims)
    if damaged.any():  # a damaged vectors file: those rows mean nothing, so they score no meaning
        log.warning("%d content vector(s) are not finite numbers (a damaged vectors file?): they score 0 on meaning",
                    int(damaged.sum()))
        sims = np.where(damaged, 0.0, sims)
    return np.clip(sims, 0.0, 1.0).astype(float)


def concept_hops(indptr: np.ndarray, indices: np.ndarray, anchor: int, max_hops: int = MAX_HOPS) -> np.ndarray:
    """Edges from ``anchor`` to every concept over concept–concept edges (-1: unreachable).

    A breadth-first search on a CSR adjacency, level by level in numpy, stopping at
    ``max_hops`` so its cost is bounded however large the graph is.
    """
    n = len(indptr) - 1
    dist = np.full(n, -1, dtype=np.int64)
    if n == 0 or anchor < 0:
        return dist
    dist[anchor] = 0
    frontier = np.array([anchor])
    for level in range(1, max_hops + 1):
        starts, ends = indptr[frontier], indptr[frontier + 1]
        if not (ends > starts).any():
            break
        neighbours = np.concatenate([indices[s:e] for s, e in zip(starts, ends)])
        neighbours = np.unique(neighbours[dist[neighbours] < 0])
        if neighbours.size == 0:
            break
        dist[neighbours] = level
        frontier = neighbours
    return dist


def hop_signal(
    n_content: int, link_content: np.ndarray, link_concept: np.ndarray, concept_dist: np.ndarray, decay: float
) -> tuple[np.ndarray, np.ndarray]:
    """``decay ** (hops - 1)`` where hops counts edges from the anchor concept to the node.

    Content linked to the anchor is 1 edge away (signal 1.0); content of a neighbouring
    concept is 2 away (``decay``), and so on; unreachable content scores 0. Returns the
    signal and the hop counts (-1 for unreachable).

    >>> s, hops = hop_signal(3, np.array([0, 1, 1]), np.array([0, 1, 0]), np.array([0, 1]), 0.5)
    >>> s.tolist(), hops.tolist()
    ([1.0, 1.0, 0.0], [1, 1, -1])
    """
    hops = np.full(n_content, np.iinfo(np.int64).max, dtype=np.int64)
    if link_content.size:
        d = concept_dist[link_concept]
        reachable = d >= 0
        np.minimum.at(hops, link_content[reachable], d[reachable] + 1)
    unreachable = hops == np.iinfo(np.int64).max
    hops[unreachable] = -1
    signal = np.where(unreachable, 0.0, decay ** np.maximum(hops - 1, 0).astype(float))
    return signal, hops


def follow_structure(hops: np.ndarray, a: np.ndarray, b: np.ndarray, decay: float) -> tuple[np.ndarray, np.ndarray]:
    """Let hop distance also flow along code-structure edges (imports, references, parts).

    A node one structural edge away from a node ``h`` hops from the anchor is at most
    ``h + 1`` hops away. One relaxation step, both directions, vectorised.

    >>> s, hops = follow_structure(np.array([1, -1, -1]), np.array([0]), np.array([1]), 0.5)
    >>> hops.tolist(), s.tolist()
    ([1, 2, -1], [1.0, 0.5, 0.0])
    """
    big = np.iinfo(np.int64).max // 2
    h = np.where(hops < 0, big, hops).astype(np.int64)
    if a.size:
        relaxed = h.copy()
        np.minimum.at(relaxed, b, h[a] + 1)
        np.minimum.at(relaxed, a, h[b] + 1)
        h = relaxed
    unreachable = h >= big
    out = np.where(unreachable, -1, h)
    signal = np.where(unreachable, 0.0, decay ** np.maximum(out - 1, 0).astype(float))
    return signal, out


def staleness_signal(last_access_turn: np.ndarray, turn: int, half_life: float) -> np.ndarray:
    """``0.5 ** (age / half_life)``, age in turns since last access: exponential decay.

    >>> staleness_signal(np.array([10, 2, 10]), 10, 8.0).tolist()
    [1.0, 0.5, 1.0]
    """
    age = np.maximum(turn - np.asarray(last_access_turn), 0).astype(float)
    return 0.5 ** (age / half_life)


def size_signal(tokens: np.ndarray, reference_tokens: int) -> np.ndarray:
    """``ref / (ref + tokens)``: 1 for an empty node, 0.5 at the reference size, → 0 huge.

    >>> size_signal(np.array([0, 400, 1200]), 400).tolist()
    [1.0, 0.5, 0.25]
    """
    tokens = np.asarray(tokens, dtype=float)
    return reference_tokens / (reference_tokens + tokens)


def provenance_signal(type_codes: np.ndarray, table: dict[str, float]) -> np.ndarray:
    """The configured weight of each node's source type (analysis > output > input).

    ``type_codes`` index :data:`~loom_nb.core.config.CONTENT_TYPES`
    ("input", "output", "analysis", "file_reference", "summary").

    >>> provenance_signal(np.array([2, 0]), {"analysis": 1.0, "input": 0.5}).tolist()
    [1.0, 0.5]
    """
    lookup = np.array([table.get(name, 0.0) for name in CONTENT_TYPES])
    return lookup[np.asarray(type_codes, dtype=np.int64)]


def role_provenance(provenance: np.ndarray, type_codes: np.ndarray, roles: np.ndarray, table: dict[str, float]) -> np.ndarray:
    """File references of test files, of change logs and of other non-code files (docs, data)
    take the ``test_reference`` / ``changelog_reference`` / ``other_reference`` provenance
    instead of ``file_reference``; ``roles`` are :func:`~loom_nb.core.lexical.path_roles` codes.
    A table built without ``changelog_reference`` treats change logs as other files (a saved
    session's table gains the default on open: :mod:`loom_nb.core.store`).

    >>> role_provenance(np.array([0.6, 0.6, 0.6, 0.6, 0.5]), np.array([3, 3, 3, 3, 0]), np.array([1, 2, 3, 4, 0]),
    ...                 {"test_reference": 0.3, "other_reference": 0.2, "changelog_reference": 0.1}).tolist()
    [0.6, 0.3, 0.2, 0.1, 0.5]
    >>> role_provenance(np.array([0.6]), np.array([3]), np.array([4]), {"other_reference": 0.2}).tolist()
    [0.2]
    """
    ref = np.asarray(type_codes) == CONTENT_TYPES.index("file_reference")
    out = np.asarray(provenance, dtype=float).copy()
    changelog = "changelog_reference" if "changelog_reference" in table else "other_reference"
    for code, key in ((2, "test_reference"), (3, "other_reference"), (4, changelog)):
        if key in table:
            out[ref & (roles == code)] = table[key]
    return out


def density_signal(
    n_content: int,
    link_content: np.ndarray,
    link_concept: np.ndarray,
    relevant_concepts: np.ndarray,
    structure: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """``1 - 0.5 ** k`` for a node with ``k`` query-relevant connections (0, .5, .75, …).

    Connections are concepts whose cosine to the query reaches ``concept_relevance``
    and, for code, structural neighbours (imports, references, parts) that are themselves
    relevant: ``structure = (a, b, relevant_content)``.

    >>> s, k = density_signal(2, np.array([0, 0, 1]), np.array([0, 1, 1]), np.array([True, True]))
    >>> s.tolist(), k.tolist()
    ([0.75, 0.5], [2, 1])
    """
    counts = np.bincount(link_content, weights=relevant_concepts[link_concept].astype(float), minlength=n_content)[:n_content]
    if structure is not None and structure[0].size:
        a, b, relevant = structure
        counts = counts + np.bincount(b, weights=relevant[a].astype(float), minlength=n_content)[:n_content]
        counts = counts + np.bincount(a, weights=relevant[b].astype(float), minlength=n_content)[:n_content]
    counts = counts.astype(np.int64) if n_content else np.zeros(0, dtype=np.int64)
    return 1.0 - 0.5 ** counts, counts


def lexical_signals(graph: LoomGraph, query: str, paths: list, n: int, exclude=(),
                    lead_line_weight: float = 0.0, previous_mention_share: float = 1.0) -> tuple[np.ndarray, ...]:
    """The four lexical signals of seed 004, each 0–1: BM25F terms (normalised by the best
    match), path mention, explicit tag (or the unit a traceback frame points at), and
    git-dirty file.

    Rows in ``exclude`` score no terms: a chat's own message matches its words best of all
    and would otherwise set the scale that pushes every real match down. The terms of the
    line a query of several lines leads with (:func:`~loom_nb.core.query.lead_line`: a
    title, a subject, a follow-up's own message) count ``1 + lead_line_weight`` times: BM25 sums
    over query terms, so each of them is weighted once, in the one scoring pass. A file named
    only in the exchange a follow-up is ranked with (after
    :data:`~loom_nb.core.query.PREVIOUS_MARK`) scores ``previous_mention_share`` of its path
    mention: the follow-up asks past the answer that named it. Only the message tags a file."""
    if n == 0:
        empty = np.zeros(0)
        return empty, empty, empty, empty
    has_paths = any(p is not None for p in paths)
    # A tag that names a file is its own signal, and its path words would match every
    # sibling file, so its text leaves the words. A tag that names no file stays a word:
    # `pytest.approx`, `re.Pattern` or a bare `dpll2.py` is what the user is asking about.
    # Only the message itself tags: a path the previous answer put in backticks is the
    # model's formatting, and counts as a mention of the exchange (below).
    own, mark, exchange = query.partition(PREVIOUS_MARK)
    masks = {tag: tagged_mask([tag], paths) for tag in tagged_paths(own)} if own and has_paths else {}
    tags = [tag for tag, mask in masks.items() if mask.any()]
    for tag in tags:
        own = own.replace(f"@{tag}", " ").replace(f"`{tag}`", " ")
    words = own + mark + exchange
    if words.strip():
        lead = lead_line(words) if lead_line_weight > 0 else ""
        boost = dict.fromkeys(_query_terms(lead), 1.0 + lead_line_weight) if lead else None
        raw = np.array(graph.lexical.score(words, n, boost), dtype=float)
        if len(exclude):
            raw[np.asarray(exclude, dtype=np.int64)] = 0.0
        terms = normalise_scores(raw)
    else:
        terms = np.zeros(n)
    if not has_paths:
        zeros = np.zeros(n)
        return terms, zeros, zeros, zeros
    mention = path_mentions(words, paths)  # a tag is its own signal, and its folder names no sibling
    if mark and previous_mention_share < 1.0:
        mention = np.maximum(path_mentions(own, paths), previous_mention_share * mention)
    mention = narrow_to_definitions(graph, own, paths, mention)
    mention = np.maximum(mention, called_definitions(graph, own, paths))
    tagged = line_mention_rows(query, paths, _span_reader(graph))  # the units a traceback's frames point at
    for tag in tags:
        tagged = np.maximum(tagged, masks[tag])
    dirty_files = set(graph.metadata.get("workspace", {}).get("dirty", ()))
    dirty = tagged_mask(sorted(dirty_files), paths) if dirty_files else np.zeros(n)
    return terms, mention, tagged, dirty


MEMBER_REST_SCORE = BASENAME_SCORE
"""The path mention left to the other units of a file when a qualified name goes on past
its module to a name the file defines: as if its basename were named (see
:func:`narrow_to_definitions`)."""


def narrow_to_definitions(graph: LoomGraph, message: str, paths: list, mention: np.ndarray) -> np.ndarray:
    """``mention`` with the full path score kept, in a file a qualified name names, only by
    the units that define the name after the module (``astropy.wcs.utils.wcs_to_celestial_frame``
    keeps ``wcs_to_celestial_frame`` at 1.0, and the rest of ``utils.py`` falls to
    :data:`MEMBER_REST_SCORE`); a file with no such unit keeps its mention whole. A unit
    defines the name when its name, or the class it is a method of, is that name, or it lists
    the name among those it defines.

    Pasted code that calls ``module.function(…)`` uses the module; it names the function.
    The whole file at the full score took the budget: in ``astropy-13579`` 18 of the 19 units
    loaded were those of ``utils.py`` and ``wcs.py``. Measured on the SWE-bench pool
    (benchmarks/README.md, 'A qualified name names its definition'): two issues gain all
    their lines at one budget and none loses; no other labelled query changes."""
    members = module_members(message, paths) if message else []
    if not members:
        return mention
    ids = graph.arrays().content_ids
    mention = mention.copy()
    for rows, member in members:
        defining = np.array([_defines(graph.node(ids[row]).meta, member) for row in rows.tolist()], dtype=bool)
        if defining.any():
            rest = rows[~defining]
            mention[rest] = np.minimum(mention[rest], MEMBER_REST_SCORE)
    return mention


def _defines(meta: dict, member: str) -> bool:
    """Whether a unit (its node's meta) defines ``member`` (lower-cased)."""
    name = str(meta.get("name") or "").lower()
    return member in (name, name.split(".", 1)[0], name.rsplit(".", 1)[-1]) or member in {
        str(d).lower() for d in meta.get("defines", ())}


CALL_SCORE = STEM_SCORE
"""The path mention of a file that defines a name the message's lead line calls
(:func:`~loom_nb.core.query.called_names`): as strong as naming the file's stem. Measured
through the default path on 17 sets (benchmarks/README.md, 'A called name names its file'):
at 0.7 and 1.0 fastapi lost two commits whose subject calls the API the fix sits behind
(`Depends()`, `Query()`), at 0.4 one (`Query()`, inside `Annotated[...]`: since only top-level
calls count, none), and the SWE-bench sympy issues gain as much at 0.4."""

MAX_CALL_CANDIDATES = 200
"""A called name in more symbol fields than this is too common to say where it is defined."""


def called_definitions(graph: LoomGraph, message: str, paths: list) -> np.ndarray:
    """:data:`CALL_SCORE` for every row of a file that defines a name the message's lead line
    calls (``Fix parse_duration() for negative durations`` names ``utils/dateparse.py``),
    else 0. A bare call (``integrate(…)``, not ``expr.integrate()``) names the files where a
    function or class of that name is defined, when one is: sympy defines ``integrate`` once as
    a function and in a dozen classes as a method. A name defined in more than
    :data:`~loom_nb.core.paths.MAX_FILES_PER_NAME` files names none of them, as a shared
    basename does. Candidates come from the lexical index's symbol field; only those few nodes
    are read, to check the name is one they define."""
    out = np.zeros(len(paths))
    calls = lead_calls(message)
    if not calls:
        return out
    ids = graph.arrays().content_ids
    methods = {name for name, method in calls if method}
    files: set[str] = set()
    for name in dict.fromkeys(name for name, _ in calls):
        rows = graph.lexical.rows_with(name, "symbol")
        rows = rows[rows < len(paths)]
        if rows.size == 0 or rows.size > MAX_CALL_CANDIDATES:
            continue
        metas = [(paths[r], graph.node(ids[r]).meta) for r in rows.tolist() if paths[r]]
        defining = {path for path, meta in metas if name in meta.get("defines", ())}
        if name not in methods:  # a bare call names a function or class, not a method of that name
            defining = {path for path, meta in metas if meta.get("name") == name} or defining
        if len(defining) <= MAX_FILES_PER_NAME:
            files |= defining
    return CALL_SCORE * tagged_mask(sorted(files), paths) if files else out


def _span_reader(graph: LoomGraph):
    """``row -> (first line, last line, title)`` of a content row's code unit, or None."""
    ids = graph.content_vectors.ids

    def span_of(row: int):
        node = graph.node(ids[row])
        ref = node.reference
        return (int(ref.lines[0]), int(ref.lines[-1]), node.title) if ref is not None and len(ref.lines) else None

    return span_of


FILE_COLUMN = SIGNALS.index("file")


def file_signal(base_scores: np.ndarray, relevant: np.ndarray, file_index: np.ndarray) -> np.ndarray:
    """Per row, the best base score among the *relevant* rows of its file; 0 for rows with
    no file (``file_index`` -1) or whose file has no relevant row.

    A commit, and the question behind it, touches several places in one file: the unit
    that matches best vouches for its neighbours, as file-then-function localisation does.

    >>> file_signal(np.array([0.2, 0.6, 0.4, 0.9]), np.array([True, True, True, False]), np.array([0, 0, 1, -1])).tolist()
    [0.6, 0.6, 0.4, 0.0]
    """
    out = np.zeros(len(base_scores))
    has = file_index >= 0
    if not has.any():
        return out
    best = np.zeros(int(file_index.max()) + 1)
    take = has & relevant
    np.maximum.at(best, file_index[take], base_scores[take])
    out[has] = best[file_index[has]]
    return out


def with_file_signal(signals: np.ndarray, weights: Weights, relevant: np.ndarray, file_index: np.ndarray | None) -> np.ndarray:
    """``signals`` with the file column filled from the composite of the other ten signals
    under ``weights`` (the file signal must not feed on itself)."""
    if file_index is None or len(signals) == 0 or weights.file == 0:
        signals[:, FILE_COLUMN] = 0.0
        return signals
    w = np.asarray(weights.as_tuple(), dtype=float)
    w[FILE_COLUMN] = 0.0
    base = signals @ w / w.sum() if w.sum() > 0 else np.zeros(len(signals))
    signals[:, FILE_COLUMN] = file_signal(base, relevant, file_index)
    return signals


def composite(signals: np.ndarray, weights: Weights) -> tuple[np.ndarray, np.ndarray]:
    """Scores and per-signal contributions: ``contrib = S * w / sum(w)``, ``score = contrib.sum(1)``.

    >>> w = Weights(**{name: 0.0 for name in SIGNALS[1:]})   # semantic 0.35 only
    >>> scores, contrib = composite(np.array([[0.8] + [1.0] * 10]), w)
    >>> round(float(scores[0]), 4)
    0.8
    """
    w = np.asarray(weights.as_tuple(), dtype=float)
    contributions = signals * (w / w.sum())
    return contributions.sum(axis=1), contributions


def relevance_mask(signals: np.ndarray, config: LoomConfig, exclude=()) -> np.ndarray:
    """Which nodes are *relevant*: a semantic signal at or above the floor, BM25F terms at
    or above ``lexical_relevance``, or a file the query names or tags.

    The semantic floor is ``relevance_floor``, raised to ``best − relevance_margin`` when a
    margin is set, where *best* is the query's best semantic match among the rows not in
    ``exclude``: with MiniLM on code nearly every unit reaches 0.2, so an absolute floor
    alone calls almost everything relevant.

    >>> S = np.zeros((3, len(SIGNALS))); S[0, 0] = 0.5; S[1, 6] = 0.6; S[2, 0] = 0.1
    >>> relevance_mask(S, LoomConfig()).tolist()
    [True, True, False]
    >>> S[2, 0] = 0.3
    >>> relevance_mask(S, LoomConfig(relevance_margin=None)).tolist(), relevance_mask(S, LoomConfig(relevance_margin=0.1)).tolist()
    ([True, True, True], [True, True, False])
    """
    if len(signals) == 0:
        return np.zeros(0, dtype=bool)
    col = {name: k for k, name in enumerate(SIGNALS)}
    floor = semantic_floor(signals, config, exclude)
    return ((signals[:, col["semantic"]] >= floor) | (signals[:, col["terms"]] >= config.lexical_relevance)
            | (signals[:, col["path_mention"]] > 0) | (signals[:, col["tagged"]] > 0))


def semantic_floor(signals: np.ndarray, config: LoomConfig, exclude=()) -> float:
    """The semantic signal a node needs to be relevant: ``relevance_floor``, raised to
    ``best − relevance_margin`` when a margin is set (rows in ``exclude`` are not the best)."""
    floor = config.relevance_floor
    if config.relevance_margin is not None and len(signals):
        counted = np.ones(len(signals), dtype=bool)
        if len(exclude):
            counted[np.asarray(exclude, dtype=np.int64)] = False
        if counted.any():
            floor = max(floor, float(signals[counted, 0].max()) - config.relevance_margin)
    return floor


# -- the ranking --------------------------------------------------------------------------


@dataclass
class Ranking:
    """Every content node scored against one query, with the breakdown behind each score."""

    query: str
    node_ids: list[str]
    signals: np.ndarray
    """Raw signals, shape (nodes, 11), columns in :data:`SIGNALS` order, each 0–1."""
    contributions: np.ndarray
    """``signals * w / sum(w)``; rows sum to :attr:`scores`."""
    scores: np.ndarray
    relevant: np.ndarray
    """Boolean: semantic signal at or above the relevance floor, or a strong lexical match,
    or the query names or tags the node's file."""
    hops: np.ndarray
    relevant_concept_counts: np.ndarray
    weights: Weights
    anchor: str | None
    """The concept most similar to the query (the origin of hop distance)."""
    anchor_similarity: float = 0.0
    tokens: np.ndarray = field(default=None)  # type: ignore[assignment]
    """Token count of each node."""
    order: np.ndarray = field(default=None)  # type: ignore[assignment]
    """Row indices by descending score; ties keep insertion order (deterministic)."""
    file_index: np.ndarray | None = None
    """Per row, a number shared by the rows of one file (-1: none); for the file signal."""

    def __post_init__(self) -> None:
        if self.order is None:
            self.order = np.argsort(-self.scores, kind="stable")
        if self.tokens is None:
            self.tokens = np.zeros(len(self.node_ids), dtype=np.int64)
        self._row: dict[str, int] | None = None

    def __len__(self) -> int:
        return len(self.node_ids)

    def __repr__(self) -> str:  # the dataclass repr would print every array
        top = f", top {self.node_ids[int(self.order[0])]} {float(self.scores[int(self.order[0])]):.2f}" if len(self) else ""
        query = self.query if len(self.query) <= 40 else self.query[:39] + "…"
        return f"<Ranking {query!r}: {len(self)} nodes, {int(self.relevant.sum())} relevant{top}>"

    def row(self, node_id: str) -> int:
        """The row of ``node_id`` in :attr:`signals` (built on first use)."""
        if self._row is None:
            self._row = {node_id: i for i, node_id in enumerate(self.node_ids)}
        return self._row[node_id]

    def score(self, node_id: str) -> float:
        return float(self.scores[self.row(node_id)])

    def breakdown(self, node_id: str) -> dict[str, float]:
        """Each signal's contribution to this node's score (they sum to the score)."""
        r = self.row(node_id)
        return {name: float(self.contributions[r, i]) for i, name in enumerate(SIGNALS)}

    def raw(self, node_id: str) -> dict[str, float]:
        r = self.row(node_id)
        return {name: float(self.signals[r, i]) for i, name in enumerate(SIGNALS)}

    def top(self, k: int = 10) -> list[tuple[str, float]]:
        return [(self.node_ids[i], float(self.scores[i])) for i in self.order[:k]]

    def reweighted(self, config: LoomConfig, weights: Weights | None = None) -> "Ranking":
        """The same signals under other weights and relevance thresholds, without ranking
        again (weight tuning re-scores thousands of times). Signals that depend on the
        config themselves (hop decay, size reference, the semantic floor's share in link
        density) keep the values they were computed with."""
        weights = weights or config.weights
        relevant = relevance_mask(self.signals, config)
        signals = with_file_signal(self.signals.copy(), weights, relevant, self.file_index)
        scores, contributions = composite(signals, weights)
        return Ranking(
            query=self.query, node_ids=self.node_ids, signals=signals, contributions=contributions,
            scores=scores, relevant=relevant, hops=self.hops,
            relevant_concept_counts=self.relevant_concept_counts, weights=weights, anchor=self.anchor,
            anchor_similarity=self.anchor_similarity, tokens=self.tokens, file_index=self.file_index,
        )


def rank(graph: LoomGraph, query_vector: np.ndarray | None, *, query: str = "", weights: Weights | None = None,
         config: LoomConfig | None = None, exclude=(), lexical: bool = True) -> Ranking:
    """Score every content node of ``graph`` against a query vector.

    Parameters
    ----------
    graph : LoomGraph
    query_vector : ndarray or None
        The query embedded by the graph's embedder (unit norm). ``None`` ranks without
        vectors (BARE mode): the semantic signal is 0, no concept anchors hop distance,
        and only lexical matches make a node relevant.
    query : str
        The query text, kept for display.
    weights : Weights, optional
        Overrides ``config.weights`` (the modes use this).
    config : LoomConfig, optional
        Defaults to the graph's config.
    exclude : sequence of int, optional
        Content rows the caller will not load (a chat's own message): they score no terms,
        so they do not set the scale of everyone else's.
    lexical : bool
        Score the lexical signals (terms, path mention, tag, git-dirty); FAST mode does not.

    Returns
    -------
    Ranking
        Signals, contributions and scores for every content node; no Python loop per node.

    Length: the signals in the order they depend on each other, one vectorised line each.
    """
    config = config or graph.config
    weights = weights or config.weights
    a: GraphArrays = graph.arrays()
    n = len(a.content_ids)
    q = None if query_vector is None else np.asarray(query_vector, dtype=np.float32).reshape(-1)
    if n and q is not None and q.shape[0] != a.content_vectors.shape[1]:
        from .errors import EmbeddingMismatchError

        raise EmbeddingMismatchError(f"query vector has dimension {q.shape[0]}, the graph {a.content_vectors.shape[1]}")

    semantic = semantic_signal(a.content_vectors, q) if q is not None else np.zeros(n)
    anchor, anchor_sim = None, 0.0
    if len(a.concept_ids) and q is not None:
        concept_sims = a.concept_vectors @ q
        anchor_row = int(np.argmax(concept_sims))
        anchor, anchor_sim = a.concept_ids[anchor_row], float(concept_sims[anchor_row])
        dist = concept_hops(a.concept_indptr, a.concept_indices, anchor_row)
        relevant_concepts = concept_sims >= config.concept_relevance
    else:  # no concepts, or no query vector to find the nearest one: no concept is near
        dist = np.full(len(a.concept_ids), -1, dtype=np.int64)
        relevant_concepts = np.zeros(len(a.concept_ids), dtype=bool)
    hop, hops = hop_signal(n, a.link_content, a.link_concept, dist, config.hop_decay)
    if lexical:
        terms, mention, tagged, dirty = lexical_signals(graph, query, a.paths, n, exclude, config.lead_line_weight,
                                                         config.previous_mention_share)
    else:
        terms = mention = tagged = dirty = np.zeros(n)
    # which neighbours count toward link density: semantically relevant ones, or (ranking
    # without a vector, BARE) lexically relevant ones, so structure still speaks there
    relevant = semantic >= config.relevance_floor if q is not None else (
        (terms >= config.lexical_relevance) | (mention > 0) | (tagged > 0))
    if n and config.lexical_anchor <= 1.0:  # the best lexical matches are anchors too
        hops = np.where(terms >= config.lexical_anchor, 1, hops)
        hop = np.where(hops > 0, config.hop_decay ** np.maximum(hops - 1, 0).astype(float), 0.0)
    if a.structure_a.size:
        hop, hops = follow_structure(hops, a.structure_a, a.structure_b, config.hop_decay)
    density, counts = density_signal(n, a.link_content, a.link_concept, relevant_concepts, (a.structure_a, a.structure_b, relevant))
    provenance = provenance_signal(a.type_codes, config.provenance) if n else np.zeros(0)
    if n and a.has_paths():
        provenance = role_provenance(provenance, a.type_codes, path_roles(a.paths), config.provenance)
    signals = np.column_stack(
        [
            semantic,
            hop,
            staleness_signal(a.last_access_turn, graph.turn, config.staleness_half_life),
            size_signal(a.tokens, config.size_reference_tokens),
            provenance,
            density,
            terms,
            mention,
            tagged,
            dirty,
            np.zeros(n),  # the file signal, from the others below
        ]
    ) if n else np.zeros((0, len(SIGNALS)))
    relevant = relevance_mask(signals, config, exclude)
    file_index = a.file_index() if n and a.has_paths() else None
    signals = with_file_signal(signals, weights, relevant, file_index)
    scores, contributions = composite(signals, weights)
    return Ranking(
        query=query,
        node_ids=a.content_ids,
        signals=signals,
        contributions=contributions,
        scores=scores,
        relevant=relevant,
        hops=hops,
        relevant_concept_counts=counts,
        weights=weights,
        anchor=anchor,
        anchor_similarity=anchor_sim,
        tokens=a.tokens,
        file_index=file_index,
    )
