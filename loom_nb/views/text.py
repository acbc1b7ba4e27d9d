"""Plain-text renderings: stable (no memory addresses), readable at 100 columns."""

from __future__ import annotations

from typing import Any

from ..config import SIGNALS

_SHORT = {
    "semantic": "sem", "hop": "hop", "staleness": "stale", "size": "size", "provenance": "prov", "density": "dens",
    "terms": "terms", "path_mention": "path", "tagged": "tag", "git_dirty": "dirty",
}


def _cut(text: str, width: int) -> str:
    text = " ".join(text.split())
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
            f"{row.rank:>3} {row.node_id:<7} {row.type:<14} {row.tokens:>6} {row.score:6.3f}  {contrib}  {row.decision}: {_cut(row.reason, 48)}"
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
    g = loom.graph
    c = g.counts()
    where = loom.folder or "in memory"
    lines = [
        f"Loom session: {where}",
        f"  {c['concepts']} concepts, {c['content']} content nodes, {c['edges']} edges; embedder {loom.embedder.model_id}; "
        f"threshold {g.config.concept_threshold}; turn {g.turn}",
    ]
    concepts = sorted(g.concept_nodes(), key=lambda k: -len(g.content_of(k.id)))[:8]
    if concepts:
        lines.append("  concepts (most content first):")
        for k in concepts:
            lines.append(f"    {k.id:<6} {_cut(k.name, 30):<30} {len(g.content_of(k.id)):>3} nodes  {_cut(k.description, 50)}")
    largest = sorted(g.content_nodes(), key=lambda n: -n.tokens)[:8]
    if largest:
        lines.append("  largest content nodes:")
        for n in largest:
            lines.append(f"    {n.id:<6} {n.type:<14} {n.tokens:>6} tok  {_cut(n.title, 50)}")
    return "\n".join(lines)


def node_text(loom, node_id: str) -> str:
    g = loom.graph
    node = g.node(node_id)
    if node.kind == "concept":
        lines = [f"Concept {node.id}: {node.name}", f"  {node.description}", f"  created {node.created}; founded by {node.origin}"]
        lines.append("  content: " + ", ".join(f"{i} ({s:.2f})" for i, s in g.content_of(node.id)))
        related = g.related_concepts(node.id)
        if related:
            lines.append("  related concepts: " + ", ".join(f"{i} ({s:.2f})" for i, s in related))
        return "\n".join(lines)
    lines = [
        f"Content {node.id}: {node.title}",
        f"  type {node.type}, {node.tokens} tokens, created {node.created}, last used at turn {node.last_access_turn} (now {g.turn})",
        f"  provenance: {node.provenance.source} ({node.provenance.direction}){': ' + node.provenance.reason if node.provenance.reason else ''}",
        "  concepts: " + ", ".join(f"{i} {g.node(i).name!r} ({s:.2f})" for i, s in g.concepts_of(node.id)),
    ]
    if node.linking is not None:
        lines.append(f"  linking: {node.linking}")
    if node.reference is not None:
        lines.append(f"  reference: {node.reference.file} lines {node.reference.lines[0]}-{node.reference.lines[1]}")
    try:
        preview = g.text(node.id)
    except Exception as exc:  # a stale or missing file: say so instead of failing
        preview = f"(text unavailable: {exc})"
    lines.append("  ---")
    lines.extend("  " + line for line in preview.splitlines()[:12])
    return "\n".join(lines)


def render(obj: Any) -> str:
    return str(obj)
