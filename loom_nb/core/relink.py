"""What another concept threshold would do to the concept layer, and doing it.

In a layer of communities (:func:`~loom_nb.core.concepts.rebuild_concepts`) the threshold
decides which *other* concepts a unit also belongs to: a unit reaches a concept when its
cosine to the concept's mean is at or above the threshold. A new threshold therefore shows
itself as:

* **merges**: two concepts whose members mostly reach both (Jaccard of the member sets,
  counting those links, at least :data:`MERGE_SHARE`) are one topic at that threshold;
  chains of such pairs become one concept;
* **splits**: a concept of at least four members of which most (over :data:`SPLIT_SHARE`)
  fall below the threshold to their own mean is too loose for it, and is split into the
  communities of its members (about two; members that form one community stay together);
* **links**: the count of those extra links, before and after.

Comparing concept means directly would not work: means are smoother than units, so with
MiniLM on code the pairs of concept means at or above 0.70 chain 38 of 98 concepts into one
group (the self-index), while the member test merges a handful.

:func:`threshold_plan` computes it from the stored vectors without changing anything;
:func:`apply_threshold` stores the threshold in the graph's config and builds the layer it
describes (concept ids are new, as after a rebuild). Both are numpy over whole arrays.
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass, replace

import networkx as nx
import numpy as np

from .concepts import (MAX_OVERLAPS, ConceptQuality, _specs, _unit_rows, communities, concept_quality, primary_concepts,
                       rebuild_concepts)
from .display import Displayable, html_table
from .errors import LoomError
from .graph import LoomGraph

__all__ = ["MERGE_SHARE", "SPLIT_SHARE", "ThresholdPlan", "apply_threshold", "threshold_plan"]

MERGE_SHARE = 0.5
"""Jaccard of two concepts' member sets (primary members and the units that reach them)
at or above which they merge."""
SPLIT_SHARE = 0.5
"""Share of a concept's members below the threshold to its mean above which it splits."""
_MIN_SPLIT = 4


@dataclass(frozen=True)
class ThresholdPlan(Displayable):
    """The merges, splits and extra links a concept threshold would make (see the module doc)."""

    threshold: float
    current: float
    concepts: int
    merges: tuple[tuple[tuple[str, ...], float], ...]
    """Groups of concept ids that would become one, with the lowest pair Jaccard in the group."""
    splits: tuple[tuple[str, int, float, int], ...]
    """Concepts that would split: (id, members, share of members below the threshold, parts)."""
    links_now: int
    links_then: int
    names: dict
    unlinked: int = 0
    """Content nodes linked to no concept (added with ``link=False``): applying gives them
    concepts, communities of their vectors when there are no concepts at all."""

    @property
    def concepts_then(self) -> int:
        """Concepts after applying."""
        merged = sum(len(group) - 1 for group, _ in self.merges)
        return self.concepts - merged + sum(parts - 1 for *_, parts in self.splits)

    @property
    def changes(self) -> bool:
        return bool(self.merges or self.splits or self.links_now != self.links_then or self.threshold != self.current
                    or self.unlinked)

    def _label(self, cid: str) -> str:
        return f"{cid} {self.names.get(cid, '')!r}"

    def __str__(self) -> str:
        lines = [f"concept threshold {self.threshold:.2f} (now {self.current:.2f}): {self.concepts} → "
                 f"{self.concepts_then} concepts; {len(self.merges)} merge(s), {len(self.splits)} split(s); "
                 f"units also linked to another concept: {self.links_now} → {self.links_then}"]
        for group, share in self.merges[:8]:
            lines.append(f"  merge {' + '.join(self._label(c) for c in group)} (members shared ≥ {share:.2f})")
        for cid, size, below, parts in self.splits[:8]:
            lines.append(f"  split {self._label(cid)} in {parts}: {below:.0%} of its {size} members below {self.threshold:.2f}")
        if self.unlinked:
            lines.append(f"  {self.unlinked} content node(s) linked to no concept: applying gives them concepts"
                         + (" (communities of their vectors, as rebuild_concepts makes)" if not self.concepts else ""))
        hidden = max(len(self.merges) - 8, 0) + max(len(self.splits) - 8, 0)
        if hidden:
            lines.append(f"  … {hidden} more")
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        from html import escape

        rows = [["merge", escape(" + ".join(self._label(c) for c in group)), f"members shared ≥ {share:.2f}"]
                for group, share in self.merges]
        rows += [["split", escape(self._label(cid)), f"in {parts}: {below:.0%} of {size} members below"]
                 for cid, size, below, parts in self.splits]
        head = escape(str(self).splitlines()[0])
        return f"<div class='loom-threshold-plan'><b>{head}</b>{html_table(['change', 'concepts', 'why'], rows) if rows else ''}</div>"


def _groups(graph: LoomGraph, threshold: float, *, seed: int = 0, block: int = 2048):
    """At ``threshold``: each content row's primary concept row, the merge groups (concept
    rows, lowest Jaccard), the splits (concept row, its member rows, their community labels),
    primary sizes, shares below, and the count of extra links. Members in common are summed block by block of content rows, so
    memory is a block times the concepts plus concepts squared."""
    labels = primary_concepts(graph)
    vectors = _unit_rows(graph.content_vectors.matrix)
    n_concepts = len(graph.concept_vectors)
    if n_concepts == 0:  # content added with link=False and never linked: nothing to merge, split or reach
        return labels, [], [], np.zeros(0, np.int64), np.zeros(0), 0
    means = _unit_rows(graph.concept_vectors.matrix)
    shared = np.zeros((n_concepts, n_concepts), np.float32)
    below = np.zeros(n_concepts)
    extra = 0
    for start in range(0, len(vectors), block):
        sims = vectors[start : start + block] @ means.T
        lab = labels[start : start + block]
        has = np.flatnonzero(lab >= 0)
        own = sims[has, lab[has]].copy()
        sims[has, lab[has]] = -np.inf  # the extra links, capped as a rebuild caps them
        closest = np.argsort(-sims, axis=1)[:, :MAX_OVERLAPS]
        member = np.zeros_like(sims, dtype=np.float32)
        reached = np.take_along_axis(sims, closest, axis=1) >= threshold
        np.put_along_axis(member, closest, reached.astype(np.float32), axis=1)
        extra += int(member.sum())
        sims[has, lab[has]] = own
        member[has, lab[has]] = 1.0
        shared += member.T @ member
        below += np.bincount(lab[has], weights=(sims[has, lab[has]] < threshold).astype(float), minlength=n_concepts)
    size = np.diag(shared).copy()
    union = size[:, None] + size[None, :] - shared
    jaccard = np.divide(shared, union, out=np.zeros_like(shared), where=union > 0)
    i, j = np.triu_indices(n_concepts, 1)
    close = jaccard[i, j] >= MERGE_SHARE
    pairs = nx.Graph()
    pairs.add_weighted_edges_from(zip(i[close].tolist(), j[close].tolist(), jaccard[i, j][close].tolist()))
    merges = []
    for group in nx.connected_components(pairs):
        members = sorted(group)
        lowest = min(d["weight"] for _, _, d in pairs.subgraph(members).edges(data=True))
        merges.append((members, float(lowest)))
    merges.sort(key=lambda m: (-m[1], m[0]))
    in_merge = {c for group, _ in merges for c in group}
    primary_size = np.bincount(labels[labels >= 0], minlength=n_concepts)
    share = np.divide(below, primary_size, out=np.zeros(n_concepts), where=primary_size > 0)
    splits = []
    for concept in np.flatnonzero((share > SPLIT_SHARE) & (primary_size >= _MIN_SPLIT)):
        if int(concept) in in_merge:
            continue
        rows = np.flatnonzero(labels == concept)
        parts = communities(graph.content_vectors.matrix[rows], max(2, -(-rows.size // 2)), seed=seed)
        if parts.max() > 0:  # members that form one community stay one concept
            splits.append((int(concept), rows, parts))
    return labels, merges, splits, primary_size, share, extra


def threshold_plan(graph: LoomGraph, threshold: float) -> ThresholdPlan:
    """What :func:`apply_threshold` would do at ``threshold``, changing nothing."""
    threshold = _checked(threshold)
    ids = graph.concept_vectors.ids
    labels, merges, splits, size, share, links_then = _groups(graph, threshold)
    links_now = _groups(graph, graph.concept_threshold)[-1]
    return ThresholdPlan(
        threshold=threshold, current=graph.concept_threshold, concepts=len(ids),
        merges=tuple((tuple(ids[c] for c in group), share_) for group, share_ in merges),
        splits=tuple((ids[c], int(size[c]), float(share[c]), int(parts.max()) + 1) for c, _, parts in splits),
        links_now=links_now, links_then=links_then,
        names={ids[c]: graph.node(ids[c]).name for group, _ in merges for c in group} | {ids[c]: graph.node(ids[c]).name for c, _, _ in splits},
        unlinked=int((labels < 0).sum()),
    )


def apply_threshold(graph: LoomGraph, threshold: float, *, seed: int = 0) -> ConceptQuality:
    """Store ``threshold`` in the graph's config and re-link the layer at it: the merges and
    splits of :func:`threshold_plan` made, every concept's mean, name and extra links
    computed again (concept ids are new). Content with no concept gets one of its own; when
    no content has a concept (it was added with ``link=False``), the layer is built as
    :func:`~loom_nb.core.concepts.rebuild_concepts` builds it, at the new threshold. Returns
    the new layer's quality."""
    threshold = _checked(threshold)
    if len(graph.content_vectors) == 0 or len(graph.concept_vectors) == 0:
        graph.config = replace(graph.config, concept_threshold=threshold)
        return rebuild_concepts(graph)
    labels, merges, splits, _, _, _ = _groups(graph, threshold, seed=seed)
    final = labels.copy()
    for group, _ in merges:
        final[np.isin(final, group)] = group[0]
    next_label = int(final.max()) + 1
    for _, rows, parts in splits:
        for part in range(1, int(parts.max()) + 1):
            final[rows[parts == part]] = next_label
            next_label += 1
    orphans = final < 0  # content with no concept at all: each its own
    final[orphans] = next_label + np.arange(int(orphans.sum()))
    _, final = np.unique(final, return_inverse=True)
    graph.config = replace(graph.config, concept_threshold=threshold)
    graph.set_concepts(_specs(graph, final))
    return concept_quality(graph)


def _checked(threshold: float) -> float:
    """``threshold`` as it is stored (four decimals), once it is a cosine in (0, 1]: rounded
    first, so that what is checked is what is kept (1e-5 was checked, then stored as 0.0, which
    no preview would take again).

    >>> _checked(0.70004), _checked(1)
    (0.7, 1.0)
    """
    if isinstance(threshold, bool) or not isinstance(threshold, numbers.Real):
        raise LoomError(f"a concept threshold is a number, a cosine in (0, 1]; got {threshold!r}")
    value = round(float(threshold), 4)
    if not 0.0 < value <= 1.0:
        rounded = f", {value} at four decimals" if value != threshold and math.isfinite(value) else ""
        raise LoomError(f"a concept threshold is a cosine in (0, 1]; got {threshold!r}{rounded}")
    return value
