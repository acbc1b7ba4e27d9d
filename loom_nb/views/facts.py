"""The facts a view shows, gathered once: the text and the HTML renderings read these.

Pure functions over the graph; nothing here formats. A terminal (``print(loom.view("c3"))``)
and a notebook (``loom.view("c3")``) therefore show the same numbers.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

import numpy as np

from ..core.concepts import concept_terms, primary_concepts
from ..core.rank import staleness_signal

PREVIEW_LINES = 12
STRUCTURE_SHOWN = 12
"""Code neighbours a node's view lists; it counts the rest."""


@dataclass
class Related:
    """A neighbour of the viewed node, with what labels it and how strongly it is tied."""

    id: str
    label: str
    weight: float | None = None
    detail: str = ""


@dataclass
class ContentFacts:
    id: str
    title: str
    type: str
    tokens: int
    created: str
    last_access_turn: int
    turn: int
    staleness: float
    """The staleness signal now: 0.5 ** (turns since last use / half-life)."""
    half_life: float
    source: str
    direction: str
    reason: str
    concepts: list[Related]
    near_miss: Related | None
    threshold: float | None
    reference: str | None
    """``file:start-end`` for a reference node."""
    signature: str
    freshness: str
    """"fresh", "stale: …" (the referenced file changed or is gone) or "text unavailable: …"."""
    preview: list[str]
    more_lines: int
    summary_of: str | None
    """For a summary node: the node it summarises."""
    summary: str | None
    """The id of this node's summary, if it has one."""
    chunks: int
    structure: list[Related] = field(default_factory=list)
    """Code neighbours, each with its relation ("calls", "called by", "imports", "imported by",
    "previous part", "next part")."""
    structure_more: int = 0
    """Code neighbours beyond the ones listed."""


@dataclass
class ConceptFacts:
    id: str
    name: str
    description: str
    created: str
    origin: Related | None
    content: list[Related]
    """Linked content, strongest link first, with the cosine stored at link time."""
    neighbours: list[Related]
    """Related concepts (concept–concept edges), with their cosine."""
    tokens: int
    """Tokens of all linked content together."""
    members: int = 0
    """Content whose strongest concept this is (the rest reach it at the threshold)."""
    terms: list[Related] = field(default_factory=list)
    """Its distinctive terms against every other concept, with their c-TF-IDF weights."""


@dataclass
class SessionFacts:
    where: str
    counts: dict[str, int]
    embedder: str
    threshold: float
    turn: int
    types: dict[str, int]
    concepts: list[Related]
    """The concepts with the most content (weight: how many nodes)."""
    largest: list[Related]
    """The largest content nodes (weight: tokens)."""
    concepts_total: int
    vectors: str = ""
    """Where the vectors are kept when not in the folder's numpy files (a Qdrant collection)."""


def content_facts(loom, node_id: str) -> ContentFacts:
    from ..core.errors import StaleReferenceError

    g = loom.graph
    node = g.node(node_id)
    config = g.config
    concepts = [Related(cid, g.node(cid).name, float(sim)) for cid, sim in g.concepts_of(node.id)]
    near = None
    threshold = None
    if node.linking is not None:
        threshold = node.linking.threshold
        if node.linking.near_miss and node.linking.near_miss[0] in g:
            cid, sim = node.linking.near_miss
            near = Related(cid, g.node(cid).name, float(sim))
    try:
        text = g.text(node.id)
        freshness = "fresh" if node.reference is not None else "stored in the session"
    except StaleReferenceError as exc:
        text, freshness = "", f"stale: {exc}"
    except Exception as exc:  # a missing file or folder: say so instead of failing
        text, freshness = "", f"text unavailable: {exc}"
    lines = text.splitlines()
    ref = node.reference
    summary = g.summary_of(node.id)
    edges = g.structure_of(node.id, directed=True)
    structure = [Related(nb, g.node(nb).title, None, relation) for nb, relation in edges[:STRUCTURE_SHOWN]]
    return ContentFacts(
        id=node.id, title=node.title, type=node.type, tokens=node.tokens, created=str(node.created),
        last_access_turn=node.last_access_turn, turn=g.turn, staleness=float(staleness_signal(np.array([node.last_access_turn]), g.turn, config.staleness_half_life)[0]),
        half_life=config.staleness_half_life, source=node.provenance.source, direction=node.provenance.direction,
        reason=node.provenance.reason, concepts=concepts, near_miss=near, threshold=threshold,
        reference=ref.location if ref is not None else None,
        signature=ref.signature if ref is not None else "", freshness=freshness,
        preview=lines[:PREVIEW_LINES], more_lines=max(len(lines) - PREVIEW_LINES, 0),
        summary_of=node.summary_of, summary=summary, chunks=len(node.chunks), structure=structure,
        structure_more=max(len(edges) - STRUCTURE_SHOWN, 0),
    )


def concept_facts(loom, concept_id: str) -> ConceptFacts:
    g = loom.graph
    node = g.node(concept_id)
    content = []
    tokens = 0
    for nid, sim in g.content_of(node.id):
        n = g.node(nid)
        tokens += n.tokens
        content.append(Related(nid, n.title, float(sim), f"{n.type}, {n.tokens} tokens"))
    neighbours = [Related(cid, g.node(cid).name, float(sim), f"{len(g.content_of(cid))} content") for cid, sim in g.related_concepts(node.id)]
    origin = None
    if node.origin and node.origin in g:
        origin = Related(node.origin, g.node(node.origin).title)
    labels = primary_concepts(g)
    members = int((labels == g.concept_vectors.index[node.id]).sum()) if labels.size else 0
    terms = [Related(term, term, weight) for term, weight in concept_terms(g, node.id)]
    return ConceptFacts(id=node.id, name=node.name, description=node.description, created=str(node.created),
                        origin=origin, content=content, neighbours=neighbours, tokens=tokens, members=members, terms=terms)


def session_facts(loom, top: int = 8) -> SessionFacts:
    g = loom.graph
    sizes = {c.id: len(g.content_of(c.id)) for c in g.concept_nodes()}
    order = sorted(sizes, key=lambda cid: -sizes[cid])[:top]  # stable: ties keep creation order
    concepts = [Related(cid, g.node(cid).name, float(sizes[cid]), g.node(cid).description) for cid in order]
    nodes = list(g.content_nodes())
    largest = sorted(nodes, key=lambda n: -n.tokens)[:top]
    return SessionFacts(
        where=str(loom.folder) if loom.folder else "in memory", counts=g.counts(), embedder=loom.embedder.model_id,
        threshold=g.concept_threshold, turn=g.turn, types=dict(sorted(Counter(n.type for n in nodes).items())),
        concepts=concepts, largest=[Related(n.id, n.title, float(n.tokens), n.type) for n in largest],
        concepts_total=len(sizes), vectors=loom.vectors.describe() if getattr(loom, "vectors", None) and loom.vectors.is_qdrant else "",
    )
