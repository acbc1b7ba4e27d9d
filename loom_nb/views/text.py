"""Plain-text renderings: stable (no memory addresses), readable at 100 columns."""

from __future__ import annotations


from ..core.config import SIGNALS
from ..core.graph import shown_below
from .facts import concept_facts, content_facts, session_facts

_SHORT = {
    "semantic": "sem", "hop": "hop", "staleness": "stale", "size": "size", "provenance": "prov", "density": "dens",
    "terms": "terms", "path_mention": "path", "tagged": "tag", "git_dirty": "dirty", "file": "file",
}


def clip(text: str, width: int) -> str:
    """``text`` on one line, cut to ``width`` characters with an ellipsis (every view's
    titles and reasons).

    >>> clip("a   long\\ntitle", 7)
    'a long…'
    """
    text = " ".join(str(text).split())
    return text if len(text) <= width else text[: width - 1] + "…"


def budget_text(result) -> str:
    lines = [f"Budget ({result.budget.source}, mode {result.mode.name.upper()}):"]
    for zone, tokens in result.budget_split().items():
        lines.append(f"  {zone:<18} {tokens:>8,}")
    if result.window is not None:
        lines.append(f"  ({result.window})")
    return "\n".join(lines)


def table_text(result, limit: int = 15) -> str:
    head = f"{'#':>3} {'node':<7} {'type':<14} {'tok':>6} {'score':>6}  " + " ".join(f"{_SHORT[s]:>5}" for s in SIGNALS) + "  decision"
    lines = [head]
    for row in result.rows(limit):
        contrib = " ".join(f"{row.contributions[s]:5.2f}" for s in SIGNALS)
        lines.append(
            f"{row.rank:>3} {row.node_id:<7} {row.type:<14} {row.tokens:>6} {row.score:6.3f}  {contrib}  {row.decision}: {clip(row.reason, 48)}"
        )
    if len(result.ranking) > limit:
        lines.append(f"    … {len(result.ranking) - limit} more nodes")
    return "\n".join(lines)


def result_text(result) -> str:
    c = result.classification
    parts = [
        f"Query: {result.query}",
        f"Classified {c.kind} (complexity {c.complexity:.2f}); mode {result.mode.name.upper()} "
        f"({result.mode.strategy}); {result.packed.context_tokens:,} of {result.budget.context:,} context tokens used; "
        f"{result.seconds * 1000:.0f} ms",
        "",
        result.manifest,
        "",
        budget_text(result),
        "",
        table_text(result),
    ]
    return "\n".join(parts)


def loom_text(loom) -> str:
    """The session: where, how big, the concepts with the most content, the largest nodes."""
    f = session_facts(loom)
    c = f.counts
    lines = [
        f"Loom session: {f.where}",
        f"  {c['concepts']} concepts, {c['content']} content nodes, {c['edges']} edges; embedder {f.embedder}; "
        f"threshold {f.threshold}; turn {f.turn}",
    ]
    if f.vectors:
        lines.append(f"  vectors: {f.vectors}")
    if f.types:
        lines.append("  content by type: " + ", ".join(f"{t} {n}" for t, n in f.types.items()))
    if f.concepts:
        lines.append("  concepts (most content first):")
        for k in f.concepts:
            lines.append(f"    {k.id:<6} {clip(k.label, 30):<30} {int(k.weight):>3} nodes  {clip(k.detail, 50)}")
    if f.largest:
        lines.append("  largest content nodes:")
        for n in f.largest:
            lines.append(f"    {n.id:<6} {n.detail:<14} {int(n.weight):>6} tok  {clip(n.label, 50)}")
    return "\n".join(lines)


def concept_text(loom, concept_id: str) -> str:
    """A concept: its description, the content linked to it, its neighbour concepts."""
    f = concept_facts(loom, concept_id)
    lines = [f"Concept {f.id}: {f.name}", f"  {clip(f.description, 96)}", f"  created {f.created}"
             + (f"; founded by {f.origin.id} {clip(f.origin.label, 50)!r}" if f.origin else "")]
    if f.terms:
        lines.append("  distinctive terms: " + ", ".join(f"{t.label} ({t.weight:.3f})" for t in f.terms))
    lines.append(f"  content ({len(f.content)} nodes, {f.members} of them with this as their strongest concept, "
                 f"{f.tokens:,} tokens; link similarity):")
    lines.extend(f"    {r.id:<6} {r.weight:.3f}  {clip(r.label, 56):<56} {r.detail}" for r in f.content)
    if f.neighbours:
        lines.append("  neighbour concepts (cosine):")
        lines.extend(f"    {r.id:<6} {r.weight:.3f}  {clip(r.label, 40):<40} {r.detail}" for r in f.neighbours)
    else:
        lines.append("  neighbour concepts: none at or above the concept-edge floor")
    return "\n".join(lines)


def content_text(loom, node_id: str) -> str:
    """A content node: preview, concepts with link similarity, provenance, staleness."""
    f = content_facts(loom, node_id)
    lines = [
        f"Content {f.id}: {f.title}",
        f"  type {f.type}, {f.tokens} tokens, created {f.created}",
        f"  staleness {f.staleness:.2f}: last used at turn {f.last_access_turn}, now turn {f.turn} (half-life {f.half_life:g} turns)",
        f"  provenance: {f.source} ({f.direction}){': ' + f.reason if f.reason else ''}",
        "  concepts: " + (", ".join(f"{r.id} {r.label!r} ({r.weight:.3f})" for r in f.concepts) or "none"),
    ]
    if f.near_miss is not None:
        lines.append(f"  near miss: {f.near_miss.id} {f.near_miss.label!r} ({shown_below(f.near_miss.weight)} < {f.threshold})")
    if f.reference is not None:
        lines.append(f"  reference: {f.reference}  {clip(f.signature, 60)}")
    lines.append(f"  text: {f.freshness}")
    if f.summary_of:
        lines.append(f"  summary of {f.summary_of}")
    if f.summary:
        lines.append(f"  summarised by {f.summary}")
    if f.chunks:
        lines.append(f"  {f.chunks} chunks with vectors of their own")
    if f.structure:
        more = f", and {f.structure_more} more" if f.structure_more else ""
        lines.append("  code structure: " + ", ".join(f"{r.detail} {r.id}" for r in f.structure) + more)
    lines.append("  ---")
    lines.extend("  " + line for line in f.preview)
    if f.more_lines:
        lines.append(f"  … {f.more_lines} more lines")
    return "\n".join(lines)


def node_text(loom, node_id: str) -> str:
    """A content or a concept node, whichever ``node_id`` is."""
    if loom.graph.node(node_id).kind == "concept":
        return concept_text(loom, node_id)
    return content_text(loom, node_id)



