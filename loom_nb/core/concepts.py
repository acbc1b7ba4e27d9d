"""The concept layer as topics: communities of a nearest-neighbour graph, named by their
distinctive terms, with merge, split and the figures that say whether they are topics.

Threshold linking alone (seed 000 §4.3) founds a concept for almost every node when the
embedder's paraphrases score below the threshold: 832 concepts for 920 units of
loom-nb's own code with MiniLM at 0.8 (issue 15). A rebuild instead partitions the content
vectors: each unit's ``k`` nearest neighbours make a weighted graph, and networkx's
Louvain method finds its communities at a resolution chosen so that a concept has about
``LoomConfig.concept_size`` members. Between rebuilds new nodes still link by threshold
(:meth:`LoomGraph._link`), at the threshold calibrated for the embedder
(:data:`~loom_nb.core.config.CONCEPT_THRESHOLDS`).

The similarity work (neighbours, means, overlaps, term weights, the quality figures) is
numpy over whole arrays; Python loops only where networkx needs its edges one by one (the
neighbour graph the Louvain method runs on, and the links of the new concepts).

Size: the concept layer's one job end to end: the communities, their names, the quality
figures and the hand edits (merge, split) that must build concepts the same way.
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass

import networkx as nx
import numpy as np

from .display import Displayable
from .errors import LoomError
from .graph import ConceptSpec, LoomGraph, concept_name

__all__ = [
    "LAYER_VERSION",
    "ConceptQuality",
    "communities",
    "concept_quality",
    "concept_terms",
    "distinctive_terms",
    "merge_candidates",
    "merge_concepts",
    "needs_concept_rebuild",
    "nearest_neighbours",
    "rebuild_concepts",
    "split_concept",
]

LAYER_VERSION = 2
"""How :func:`rebuild_concepts` builds the layer (2: a unit also links to the other concepts
it reaches at the threshold). Indexing rebuilds a layer of another version."""
NEIGHBOURS = 10
"""Each unit's nearest neighbours in the similarity graph the communities come from."""
_GROUP = 64
"""Columns per group in :func:`nearest_neighbours`' two-stage search."""


def _unit_rows(vectors: np.ndarray) -> np.ndarray:
    v = np.asarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(v, axis=1, keepdims=True)
    return v / np.where(norms > 0, norms, 1.0)


def nearest_neighbours(vectors: np.ndarray, k: int = NEIGHBOURS, block: int = 1024) -> tuple[np.ndarray, np.ndarray]:
    """The ``k`` most similar other rows of each row (cosine) and their similarities.

    Exact, in blocks of rows: the columns are cut into groups of 64, the ``k`` groups with
    the highest maximum are kept (every one of the ``k`` best columns lies in one of them),
    and only their columns are partitioned. That is about 3× faster than partitioning every
    column at 16,000 rows.

    >>> v = np.array([[1.0, 0.0], [0.9, 0.1], [0.0, 1.0], [0.1, 0.9]])
    >>> nearest_neighbours(v, k=1)[0].ravel().tolist()
    [1, 0, 3, 2]
    """
    v = _unit_rows(vectors)
    n = len(v)
    k = min(k, n - 1)
    if k <= 0:
        return np.zeros((n, 0), np.int64), np.zeros((n, 0), np.float32)
    pad = (-n) % _GROUP
    groups = (n + pad) // _GROUP
    idx = np.empty((n, k), np.int64)
    sims = np.empty((n, k), np.float32)
    for start in range(0, n, block):
        s = v[start : start + block] @ v.T
        b = len(s)
        s[np.arange(b), start + np.arange(b)] = -np.inf  # not its own neighbour
        if pad:
            s = np.concatenate([s, np.full((b, pad), -np.inf, np.float32)], axis=1)
        grouped = s.reshape(b, groups, _GROUP)
        if groups > k:
            top = np.argpartition(-grouped.max(axis=2), k - 1, axis=1)[:, :k]
        else:
            top = np.broadcast_to(np.arange(groups), (b, groups))
        candidates = np.take_along_axis(grouped, top[:, :, None], axis=1).reshape(b, -1)
        columns = (top[:, :, None] * _GROUP + np.arange(_GROUP)).reshape(b, -1)
        best = np.argpartition(-candidates, k - 1, axis=1)[:, :k]
        idx[start : start + b] = np.take_along_axis(columns, best, axis=1)
        sims[start : start + b] = np.take_along_axis(candidates, best, axis=1)
    return idx, sims


def communities(vectors: np.ndarray, target_size: int = 12, *, k: int = NEIGHBOURS, seed: int = 0) -> np.ndarray:
    """A community label per row: Louvain on the ``k``-nearest-neighbour graph.

    Modularity's resolution sets how fine the communities are; it is searched (at most
    four runs) until the mean community size is within a factor 1.3 of ``target_size``.
    Seeded, so the same vectors give the same labels.

    >>> rng = np.random.default_rng(0)
    >>> centres = rng.normal(size=(3, 16))
    >>> v = np.repeat(centres, 10, axis=0) + 0.05 * rng.normal(size=(30, 16))
    >>> labels = communities(v, target_size=10)
    >>> len(set(labels.tolist())), len(set(labels[:10].tolist()))
    (3, 1)
    """
    n = len(vectors)
    if n == 0:
        return np.zeros(0, np.int64)
    if n <= max(2, target_size):
        return np.zeros(n, np.int64)
    idx, sims = nearest_neighbours(vectors, k)
    g = nx.Graph()
    g.add_nodes_from(range(n))
    rows = np.repeat(np.arange(n), idx.shape[1])
    g.add_weighted_edges_from(zip(rows.tolist(), idx.ravel().tolist(), np.maximum(sims.ravel(), 1e-6).tolist()))
    want = n / target_size
    resolution = max(0.5, n / (5.0 * target_size))  # measured: about n / 60 gives 12 members
    best, best_miss = np.zeros(n, np.int64), math.inf
    for _ in range(4):
        found = nx.community.louvain_communities(g, weight="weight", resolution=resolution, seed=seed)
        ratio = want / len(found)
        if abs(math.log(ratio)) < best_miss:  # keep the run closest to the target
            best_miss = abs(math.log(ratio))
            for label, members in enumerate(sorted(found, key=min)):
                best[list(members)] = label
        if 1 / 1.3 <= ratio <= 1.3:
            break
        resolution *= ratio ** 1.25  # the count grew about as resolution ** 0.8
    return best


def distinctive_terms(rows: np.ndarray, term_ids: np.ndarray, counts: np.ndarray, labels: np.ndarray,
                      vocabulary: list[str], top: int = 3) -> list[list[str]]:
    """Per label, the ``top`` terms that set its members apart (class-based TF-IDF).

    ``rows``, ``term_ids`` and ``counts`` are a sparse row × term count matrix; a term's
    weight in a class is its share of the class's terms times ``log(1 + A / f)``, where
    ``A`` is the mean number of terms per class and ``f`` the term's count over all
    classes (BERTopic's c-TF-IDF). Terms of one character or all digits are skipped.

    >>> rows, terms, counts = np.array([0, 0, 1, 1]), np.array([0, 1, 0, 2]), np.array([1, 3, 1, 3])
    >>> distinctive_terms(rows, terms, counts, np.array([0, 1]), ["the", "token", "crumb"], top=1)
    [['token'], ['crumb']]
    """
    n_labels = int(labels.max()) + 1 if labels.size else 0
    pair_label, pair_term, weight = _class_term_weights(rows, term_ids, counts, labels, vocabulary)
    order = np.lexsort((pair_term, -weight, pair_label))  # by label, best weight first, ties by term
    out: list[list[str]] = [[] for _ in range(n_labels)]
    starts = np.searchsorted(pair_label[order], np.arange(n_labels))
    ends = np.searchsorted(pair_label[order], np.arange(n_labels), side="right")
    for label in range(n_labels):
        out[label] = [vocabulary[t] for t in pair_term[order[starts[label] : min(ends[label], starts[label] + top)]]]
    return out


def _class_term_weights(rows, term_ids, counts, labels, vocabulary) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(label, term, c-TF-IDF weight) for every term that occurs in a class (see
    :func:`distinctive_terms`); rows labelled -1 take no part."""
    empty = (np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0))
    n_labels = int(labels.max()) + 1 if labels.size else 0
    if n_labels == 0 or rows.size == 0:
        return empty
    usable = np.array([len(t) > 1 and not t.isdigit() for t in vocabulary], dtype=bool)
    keep = usable[term_ids] & (rows < labels.size)
    keep[keep] = labels[rows[keep]] >= 0
    if not keep.any():
        return empty
    label_of = labels[rows[keep]]
    n_terms = len(vocabulary)
    key = label_of * n_terms + term_ids[keep]
    pairs, inverse = np.unique(key, return_inverse=True)
    tf = np.bincount(inverse, weights=counts[keep].astype(float))
    pair_label, pair_term = pairs // n_terms, pairs % n_terms
    class_total = np.bincount(pair_label, weights=tf, minlength=n_labels)
    term_total = np.bincount(pair_term, weights=tf, minlength=n_terms)
    average = class_total.sum() / n_labels
    weight = tf / class_total[pair_label] * np.log1p(average / term_total[pair_term])
    return pair_label, pair_term, weight


def concept_terms(graph: LoomGraph, concept_id: str, top: int = 8) -> list[tuple[str, float]]:
    """The ``top`` terms that set ``concept_id``'s members apart from every other concept's
    (c-TF-IDF over each content node's strongest concept), with their weights."""
    if concept_id not in graph or graph.node(concept_id).kind != "concept":
        raise LoomError(f"{concept_id!r} is not a concept of this graph")
    labels = primary_concepts(graph)
    row = graph.concept_vectors.index[concept_id]
    term_rows, term_ids, counts = graph.lexical.row_terms()
    pair_label, pair_term, weight = _class_term_weights(term_rows, term_ids, counts, labels, graph.lexical.vocabulary)
    mine = np.flatnonzero(pair_label == row)
    mine = mine[np.lexsort((pair_term[mine], -weight[mine]))][:top]
    return [(graph.lexical.vocabulary[pair_term[k]], float(weight[k])) for k in mine]


@dataclass(frozen=True)
class ConceptQuality(Displayable):
    """Whether the concept layer is topics: how many, how large, how tight.

    Each content node counts in its strongest concept (``content`` counts every content node,
    one linked to no concept too). Cosines are means over pairs of content vectors: within a
    concept, and between different concepts.
    """

    content: int
    concepts: int
    median_size: float
    largest: int
    within: float
    between: float

    @property
    def per_thousand(self) -> float:
        """Concepts per 1,000 content nodes."""
        return 1000.0 * self.concepts / self.content if self.content else 0.0

    @property
    def separation(self) -> float:
        """Mean within-concept cosine minus mean between-concept cosine."""
        return self.within - self.between

    def __str__(self) -> str:
        head = (f"{self.concepts} concepts for {self.content} content nodes ({self.per_thousand:.0f} per 1,000); "
                f"size median {self.median_size:g}, largest {self.largest}; ")
        if np.isnan(self.within) or np.isnan(self.between):  # no pair to measure: say why, not "nan"
            within = "no concept has two members" if np.isnan(self.within) else f"within {self.within:.3f}"
            between = "one concept" if np.isnan(self.between) else f"between {self.between:.3f}"
            return head + f"cosine: {within}; {between} (no separation to measure)"
        return head + (f"cosine within {self.within:.3f}, between {self.between:.3f} "
                       f"(separation {self.separation:+.3f})")

    def as_dict(self) -> dict[str, float | None]:
        """Plain numbers for JSON; a cosine with no pair to measure is None (JSON has no NaN)."""
        def number(value: float) -> float | None:
            return None if np.isnan(value) else round(float(value), 4)

        return {"content": self.content, "concepts": self.concepts, "per_thousand": round(self.per_thousand, 1),
                "median_size": self.median_size, "largest": self.largest, "within": number(self.within),
                "between": number(self.between), "separation": number(self.separation)}


def primary_concepts(graph: LoomGraph) -> np.ndarray:
    """The row of each content node's strongest concept (-1 for none)."""
    a = graph.arrays()
    labels = np.full(len(a.content_ids), -1, np.int64)
    order = np.argsort(graph.link_weights, kind="stable")  # the strongest link is written last
    labels[a.link_content[order]] = a.link_concept[order]
    return labels


def concept_quality(graph: LoomGraph) -> ConceptQuality:
    """The figures of issue 15 for ``graph``'s concept layer, computed without an n × n
    matrix: for unit vectors, the pairs within a concept sum to ``|Σv|² − m``.

    >>> g = LoomGraph(embedding_model="toy")
    >>> for v in ([1.0, 0.0], [0.9, 0.1], [0.0, 1.0]):
    ...     _ = g.add_content("x", np.array(v))
    >>> q = concept_quality(g)
    >>> q.concepts, q.median_size, q.largest
    (2, 1.5, 2)
    """
    labels = primary_concepts(graph)
    content = int(labels.size)  # every content node, with a concept or not
    v = _unit_rows(graph.content_vectors.matrix)[labels >= 0]
    labels = labels[labels >= 0]
    if labels.size == 0:
        return ConceptQuality(content, 0, 0.0, 0, float("nan"), float("nan"))
    _, labels, sizes = np.unique(labels, return_inverse=True, return_counts=True)
    sums = np.zeros((sizes.size, v.shape[1]), np.float64)
    np.add.at(sums, labels, v)
    norms = (v.astype(np.float64) ** 2).sum(axis=1)  # 1 for each non-zero vector
    self_pairs = np.bincount(labels, weights=norms, minlength=sizes.size)
    within_sum = float(((sums ** 2).sum(axis=1) - self_pairs).sum())
    within_pairs = float((sizes * (sizes - 1)).sum())
    total = sums.sum(axis=0)
    between_sum = float(total @ total - (sums ** 2).sum())
    between_pairs = float(labels.size ** 2 - (sizes ** 2).sum())
    return ConceptQuality(
        content=content, concepts=int(sizes.size), median_size=float(np.median(sizes)), largest=int(sizes.max()),
        within=within_sum / within_pairs if within_pairs else float("nan"),
        between=between_sum / between_pairs if between_pairs else float("nan"),
    )


def _specs(graph: LoomGraph, labels: np.ndarray, rows: np.ndarray | None = None, overlap: bool = True) -> list[ConceptSpec]:
    """One concept per label over content ``rows`` (all by default): the normalised mean
    of its members' vectors, each member linked at its cosine to that mean, named by its
    distinctive terms and described by its most central members' titles. With ``overlap``
    a row is also linked to every other concept whose mean it reaches at the graph's
    threshold, as a new node would be: a unit between two topics belongs to both."""
    vectors = _unit_rows(graph.content_vectors.matrix)
    rows = np.arange(len(vectors)) if rows is None else rows
    ids = graph.content_vectors.ids
    n_labels = int(labels.max()) + 1 if labels.size else 0
    sums = np.zeros((n_labels, vectors.shape[1]), np.float64)
    np.add.at(sums, labels, vectors[rows])
    centroids = _unit_rows(sums)
    weights = np.einsum("ij,ij->i", vectors[rows], centroids[labels])
    # names are distinctive against every other concept, so the rows outside ``rows`` (a
    # merge or a split) keep their own concepts as labels of the background
    every = primary_concepts(graph)
    every = np.where(every >= 0, every + n_labels, -1)
    every[rows] = labels
    term_rows, term_ids, counts = graph.lexical.row_terms()
    take = every[term_rows] >= 0 if term_rows.size else np.zeros(0, bool)
    names = distinctive_terms(term_rows[take], term_ids[take], counts[take], every, graph.lexical.vocabulary)[:n_labels]
    extra_row, extra_label, extra_sim = _overlaps(vectors[rows], centroids, labels, graph.concept_threshold) if overlap else (
        np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0))
    specs = []
    for label in range(n_labels):
        members = np.flatnonzero(labels == label)
        members = members[np.argsort(-weights[members], kind="stable")]
        central = "; ".join(graph.node(ids[rows[m]]).title for m in members[:3])
        name = concept_name(names[label]) or graph.node(ids[rows[members[0]]]).title[:40]
        also = extra_label == label
        specs.append(ConceptSpec(name=name, description=f"{len(members)} members, e.g. {central}"[:160],
                                 vector=centroids[label].astype(np.float32),
                                 members=[(ids[rows[m]], float(weights[m])) for m in members]
                                 + [(ids[rows[m]], float(w)) for m, w in zip(extra_row[also], extra_sim[also])]))
    return specs


MAX_OVERLAPS = 3
"""A unit links to at most this many concepts besides its own: the ones it reaches most
closely at the threshold. Without the cap the hashing embedder, whose vectors of code share
much of their words, linked each of sqlalchemy's 28,087 units to 86 concepts on average
(2.4 million links, a 70 MB graph.json); MiniLM links 1.4 per unit on loom-nb's code."""


def _overlaps(vectors: np.ndarray, centroids: np.ndarray, labels: np.ndarray, threshold: float, block: int = 4096,
              most: int = MAX_OVERLAPS):
    """(row, label, cosine) for the ``most`` concept means other than its own that each row
    reaches at or above ``threshold``, closest first, in blocks of rows so memory stays bounded."""
    found = []
    for start in range(0, len(vectors), block):
        sims = vectors[start : start + block] @ centroids.T
        sims[np.arange(len(sims)), labels[start : start + len(sims)]] = -np.inf  # not its own concept
        r, c = np.nonzero(sims >= threshold)
        s = sims[r, c]
        order = np.lexsort((c, -s, r))  # by row, closest first, ties by concept
        r, c, s = r[order], c[order], s[order]
        first = np.searchsorted(r, r)  # where each row's run starts
        keep = np.arange(r.size) - first < most
        found.append((start + r[keep], c[keep], s[keep]))
    if not found:
        return np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0)
    return tuple(np.concatenate(parts) for parts in zip(*found))


REBUILD_SHARE = 0.2
"""An index run that adds or removes at least this share of the units rebuilds the concept
layer; a smaller refresh links its new units to the concepts there are."""


def needs_concept_rebuild(graph: LoomGraph, *, added: int, removed: int) -> bool:
    """Whether a change of ``added`` and ``removed`` units calls for :func:`rebuild_concepts`
    (see :data:`REBUILD_SHARE`), or the graph's concepts were never rebuilt as communities.
    Called after the removals, before the additions."""
    after = len(graph.content_vectors) + added  # the removed units are gone already
    layer = graph.metadata.get("concepts", {})
    if (layer.get("method"), layer.get("version")) != ("communities", LAYER_VERSION):
        return after > 0
    return added + removed >= REBUILD_SHARE * max(after, 1)


def rebuild_concepts(graph: LoomGraph, target_size: int | None = None, *, seed: int = 0) -> ConceptQuality:
    """Replace ``graph``'s concepts with communities of its content (see the module doc):
    about ``target_size`` members each (default ``config.concept_size``, or √n when that
    is smaller).

    Content nodes keep their ids, text and structure edges; concept ids are new (ids are
    never reused). Returns the new layer's :class:`ConceptQuality`.
    """
    n = len(graph.content_vectors)
    if n == 0:
        return concept_quality(graph)
    # a small session gets smaller topics: about √n members, so 20 notes make 4 or 5
    target = target_size or min(graph.config.concept_size, max(3, round(math.sqrt(n))))
    labels = communities(graph.content_vectors.matrix, target, seed=seed)
    graph.set_concepts(_specs(graph, labels))
    graph.metadata["concepts"] = {"method": "communities", "version": LAYER_VERSION, "target_size": int(target), "seed": int(seed)}
    return concept_quality(graph)


def _members(graph: LoomGraph, concept_id: str) -> np.ndarray:
    if concept_id not in graph or graph.node(concept_id).kind != "concept":
        raise LoomError(f"{concept_id!r} is not a concept of this graph")
    index = graph.content_vectors.index
    return np.array(sorted(index[c] for c, _ in graph.content_of(concept_id)), np.int64)


def merge_concepts(graph: LoomGraph, first: str, second: str) -> str:
    """Merge two concepts into one (a new id); returns it. Members linked to both keep one link."""
    if first == second:  # it would only come back under a new id
        raise LoomError(f"merge_concepts needs two different concepts; got {first!r} twice")
    rows = np.union1d(_members(graph, first), _members(graph, second))
    spec = _specs(graph, np.zeros(rows.size, np.int64), rows)[0]
    return graph.replace_concepts([first, second], [spec])[0]


def split_concept(graph: LoomGraph, concept_id: str, parts: int = 2, *, seed: int = 0) -> list[str]:
    """Split a concept into about ``parts`` (at least 2) communities of its members; returns the new ids."""
    if isinstance(parts, bool) or not isinstance(parts, numbers.Integral) or parts < 2:
        raise LoomError(f"a concept splits into a whole number of parts, at least 2; got {parts!r}")
    rows = _members(graph, concept_id)
    if rows.size < 2 * parts:
        raise LoomError(f"{concept_id} has {rows.size} members: too few to split into {parts}")
    labels = communities(graph.content_vectors.matrix[rows], max(2, math.ceil(rows.size / parts)), seed=seed)
    if labels.max() == 0:
        raise LoomError(f"{concept_id}'s members form one community; nothing to split")
    return graph.replace_concepts([concept_id], _specs(graph, labels, rows))


def merge_candidates(graph: LoomGraph, top: int = 10) -> list[tuple[str, str, float]]:
    """Pairs of concepts whose vectors are at or above the graph's linking threshold, most
    similar first: a node between them would have joined both, so they may be one topic."""
    ids = graph.concept_vectors.ids
    if len(ids) < 2:
        return []
    v = _unit_rows(graph.concept_vectors.matrix)
    sims = v @ v.T
    i, j = np.triu_indices(len(ids), k=1)
    keep = sims[i, j] >= graph.concept_threshold
    i, j, s = i[keep], j[keep], sims[i, j][keep]
    order = np.argsort(-s, kind="stable")[:top]
    return [(ids[i[o]], ids[j[o]], float(s[o])) for o in order]
