"""The graph as an interactive, self-contained, offline HTML page (pyvis / vis-network).

Concept and content nodes are placed by ``networkx.spring_layout`` (fixed seed, scaled to
pixels; past :data:`~.network.SPRING_NODES` nodes only the concepts are, and each unit goes
on a spiral around its strongest concept) and drawn with physics off, so the page renders in
a few seconds and the same graph always looks the same. Past :data:`CLUSTER_ABOVE` content
nodes the page is :mod:`.graph_clusters`' instead. The drawing kit both share (colours,
escaped labels, layouts, the offline page) is :mod:`.network`.

Everything taken from the graph (titles, names, descriptions, reasons) is HTML-escaped
before it reaches the page, and the caption is escaped HTML.

Size: the pyvis view: choosing the nodes to show, then building the page.
"""

from __future__ import annotations

import html
import math
import os
import re
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..core.arrays import STRUCTURE_KINDS
from ..core.display import Displayable
from .network import (CONCEPT_COLOUR, EDGE_COLOURS, EXCLUDED_COLOUR, LABELLED, LOADED_BORDER, LOADED_BORDER_WIDTH,
                      MANIFEST_BORDER, OTHER_COLOUR, TYPE_COLOURS, layout, new_network, offline_page, short,
                      spread_labels, tooltip)

__all__ = ["CLUSTER_ABOVE", "GraphView", "graph_html", "save_graph_html"]

LOADED_DECISIONS = ("loaded", "summary", "chunk")


# -- choosing what to draw -------------------------------------------------------------------


@dataclass
class _Plan:
    """The nodes to draw and what is known about them."""

    concepts: list[str]
    content: list[str]
    total_concepts: int
    total_content: int
    decisions: dict[str, Any] = field(default_factory=dict)
    """node id -> NodeDecision, for the drawn content nodes (only with a result)."""
    scores: dict[str, float] = field(default_factory=dict)
    loaded: set[str] = field(default_factory=set)

    @property
    def shown(self) -> int:
        return len(self.concepts) + len(self.content)

    @property
    def left_out(self) -> int:
        return self.total_concepts + self.total_content - self.shown

    def count(self, decision: str) -> int:
        return sum(1 for d in self.decisions.values() if d.decision == decision)


def _plan(loom, result, max_nodes: int) -> _Plan:  # noqa: C901 - one view option per branch
    """Length: one view option per branch."""
    graph = loom.graph
    g = graph.nx
    concept_ids = list(graph.concept_vectors.ids)
    content_ids = list(graph.content_vectors.ids)
    max_nodes = max(1, int(max_nodes))

    scores: dict[str, float] = {}
    loaded: set[str] = set()
    if result is not None:
        ranking = result.ranking
        scores = {nid: float(s) for nid, s in zip(ranking.node_ids, ranking.scores)}
        loaded = {nid for nid in result.loaded if nid in g}

    def content_priority(nid: str) -> tuple:
        # loaded first, then by score (with a result) or by size in tokens (without)
        size = graph.node(nid).tokens
        return (nid not in loaded, -scores.get(nid, 0.0), -size) if result is not None else (-size,)

    if len(concept_ids) + len(content_ids) <= max_nodes:
        kept_concepts, kept_content = concept_ids, content_ids
    else:
        order = sorted(content_ids, key=content_priority)  # sorted() is stable: ties keep insertion order
        kept_c: dict[str, None] = {}
        kept_n: dict[str, None] = {}
        for nid in order:
            best = graph.concepts_of(nid)[:1]
            extra = [c for c, _ in best if c not in kept_c]
            must = nid in loaded
            if not must and len(kept_c) + len(kept_n) + 1 + len(extra) > max_nodes:
                if len(kept_c) + len(kept_n) >= max_nodes:
                    break
                continue
            kept_n[nid] = None
            for c in extra:
                if must or len(kept_c) + len(kept_n) < max_nodes:
                    kept_c[c] = None
        room = max_nodes - len(kept_c) - len(kept_n)
        if room > 0:  # fill with the remaining concepts: most relevant, or most connected
            def concept_priority(cid: str) -> tuple:
                linked = graph.content_of(cid)
                best = max((scores.get(n, 0.0) for n, _ in linked), default=0.0)
                return (-best, -len(linked))

            rest = sorted((c for c in concept_ids if c not in kept_c), key=concept_priority)
            for c in rest[:room]:
                kept_c[c] = None
        kept_concepts = [c for c in concept_ids if c in kept_c]
        kept_content = [n for n in content_ids if n in kept_n]

    decisions: dict[str, Any] = {}
    if result is not None and kept_content:
        wanted = set(kept_content)
        for row in result.rows(min(len(content_ids), max(len(kept_content), 1))):
            if row.node_id in wanted:
                decisions[row.node_id] = row
        for nid in kept_content:
            if nid not in decisions:
                try:
                    decisions[nid] = result.decision(nid)
                except Exception:  # a node added after the query has no row
                    pass
        loaded |= {nid for nid, d in decisions.items() if d.decision in LOADED_DECISIONS}
    return _Plan(kept_concepts, kept_content, len(concept_ids), len(content_ids), decisions, scores, loaded)


def _px(height: str) -> int:
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*(px)?\s*", str(height))
    return int(float(m.group(1))) if m else 640


def _caption(plan: _Plan, result) -> str:
    parts = [
        f"{len(plan.concepts)} of {plan.total_concepts} concepts",
        f"{len(plan.content)} of {plan.total_content} content nodes",
    ]
    if result is not None:
        parts.append(f"{len(plan.loaded)} loaded")
        parts.append(f"{plan.count('manifest_only')} manifest-only")
        parts.append(f"{plan.count('excluded')} excluded")
    text = " · ".join(parts)
    if plan.left_out:
        text += f" — {plan.left_out} nodes left out (showing the {plan.shown} most "
        text += "relevant to the query)" if result is not None else "largest)"
    query = f"<b>Query:</b> {html.escape(result.query)}<br>" if result is not None else ""
    legend = [f'<span style="color:{CONCEPT_COLOUR}">&#9670; concept</span>']
    legend += [f'<span style="color:{c}">&#9679; {html.escape(t)}</span>' for t, c in TYPE_COLOURS.items()]
    if result is not None:
        legend += [
            f'<span style="border:3px solid {LOADED_BORDER};padding:0 4px">loaded</span>',
            f'<span style="border:2px dashed {MANIFEST_BORDER};padding:0 4px">manifest only</span>',
            f'<span style="background:{EXCLUDED_COLOUR};padding:0 4px;opacity:.6">excluded</span>',
        ]
    return (
        '<div class="loom-graph-caption" style="font-family:sans-serif;font-size:13px;margin:4px 0">'
        f"{query}{html.escape(text)}<br>{' &nbsp; '.join(legend)}</div>"
    )


def _node_size(plan: _Plan, graph, nid: str, result, score_max: float, token_max: int) -> float:
    """A content node's radius: by score with a result, else by the square root of its tokens."""
    if result is not None:
        return round(10 + 30 * (plan.scores.get(nid, 0.0) / score_max if score_max > 0 else 0.0), 1)
    return round(10 + 20 * (math.sqrt(graph.node(nid).tokens / token_max) if token_max > 0 else 0.0), 1)


def _drop_empty_label(net, node_id: str, label: str) -> None:
    """No label for a node past :data:`LABELLED` (given none, pyvis would draw its id)."""
    if not label:
        net.node_map[node_id].pop("label", None)


def _build(loom, result, plan: _Plan, *, height: str, seed: int) -> str:  # noqa: C901 - one node kind per branch
    """Length: one kind of node or edge per branch."""
    graph = loom.graph
    g = graph.nx
    keep = plan.concepts + plan.content
    sub = g.subgraph(keep)
    score_max = max((plan.scores.get(n, 0.0) for n in plan.content), default=0.0)
    token_max = max((graph.node(n).tokens for n in plan.content), default=0)
    texts = {cid: short(graph.node(cid).name) for cid in plan.concepts}
    texts |= {nid: short(f"{nid} {graph.node(nid).title}") for nid in plan.content}
    sizes = {cid: 16.0 for cid in plan.concepts}
    sizes |= {nid: _node_size(plan, graph, nid, result, score_max, token_max) for nid in plan.content}
    labelled = set(sorted(keep, key=lambda n: -sizes[n])[:LABELLED])  # sorted() is stable
    texts = {n: t if n in labelled else "" for n, t in texts.items()}
    pos = spread_labels(layout(sub, seed), sizes, texts)

    net = new_network(height)

    for cid in plan.concepts:
        c = graph.node(cid)
        x, y = pos[cid]
        net.add_node(
            cid, label=html.escape(texts[cid], quote=True), shape="diamond", size=sizes[cid], x=x, y=y,
            color={"background": CONCEPT_COLOUR, "border": "#7a4f70"}, borderWidth=1,
            title=tooltip([f"concept {cid}", c.name, c.description]),
        )
        _drop_empty_label(net, cid, texts[cid])

    for nid in plan.content:
        node = graph.node(nid)
        x, y = pos[nid]
        fill = TYPE_COLOURS.get(node.type, OTHER_COLOUR)
        options: dict[str, Any] = {"borderWidth": 1}
        colour = {"background": fill, "border": "#333333"}
        lines = [f"{node.type} {nid} · {node.tokens} tokens", node.title]
        row = plan.decisions.get(nid)
        if row is not None:
            lines.append(f"{row.decision} · score {row.score:.3f} · rank {row.rank}")
            lines.append(row.reason)
        if nid in plan.loaded:
            colour["border"] = LOADED_BORDER
            options["borderWidth"] = LOADED_BORDER_WIDTH
        elif row is not None and row.decision == "manifest_only":
            colour["border"] = MANIFEST_BORDER
            options["borderWidth"] = 2
            options["shapeProperties"] = {"borderDashes": [4, 3]}
        elif row is not None and row.decision == "excluded":
            colour = {"background": EXCLUDED_COLOUR, "border": "#aaaaaa"}
            options["opacity"] = 0.45
        if node.reference is not None:
            lines.append(node.reference.location)
        colour["highlight"] = {"background": fill, "border": colour["border"]}
        net.add_node(
            nid, label=html.escape(texts[nid], quote=True), shape="dot", size=sizes[nid], x=x, y=y,
            color=colour, title=tooltip(lines), **options,
        )
        _drop_empty_label(net, nid, texts[nid])

    for u, v, d in sub.edges(data=True):
        kind = d.get("kind", "link")
        weight = float(d.get("weight", 1.0))
        a, b = d.get("source", u), d.get("target", v)
        extra: dict[str, Any] = {}
        tip = [f"{kind} {weight:.3f}"]
        if kind in STRUCTURE_KINDS:  # drawn from caller to callee; a weight of 1 says nothing
            extra["arrows"] = "to"
            relation = {"references": "calls", "imports": "imports", "continues": "continues in"}[kind]
            tip = [short(f"{a} {graph.node(a).title}"), relation, short(f"{b} {graph.node(b).title}")]
        if kind == "concept":
            extra["dashes"] = True
        net.add_edge(
            a, b, width=round(0.5 + 4.5 * max(0.0, min(weight, 1.0)), 2),
            color=EDGE_COLOURS.get(kind, "#9a9a9a"), title=tooltip(tip), **extra,
        )

    return offline_page(net, _caption(plan, result))


# -- public API ----------------------------------------------------------------------------------


CLUSTER_ABOVE = 800
"""Content nodes above which the graph is drawn as clusters of concepts (``clusters=None``)."""


def graph_html(loom, result=None, *, max_nodes: int = 400, height: str = "640px", seed: int = 7,
               clusters: bool | None = None) -> str:
    """A self-contained, offline HTML page drawing the graph with pyvis (vis-network inlined).

    Parameters
    ----------
    loom : Loom
    result : QueryResult, optional
        Sizes content nodes by score and marks what was loaded (red thick border),
        named in the manifest only (dashed grey border) or excluded (faded grey).
    max_nodes : int
        Above this, keep the loaded nodes, then the content most relevant to ``result``
        (by score; without a result the largest by tokens) with its strongest concept,
        then the most relevant concepts; the caption says how many were left out.
        Loaded nodes are always kept, even beyond ``max_nodes``.
    height : str
        CSS height of the drawing.
    seed : int
        Seed of the spring layout (same graph, same seed: same picture).
    clusters : bool, optional
        Draw each concept as one node with its members folded until clicked
        (:func:`loom_nb.views.graph_clusters.cluster_html`). By default, when the session
        has more than :data:`CLUSTER_ABOVE` content nodes.
    """
    if _clustered(loom, clusters):
        from .graph_clusters import cluster_html

        return cluster_html(loom, result, height=height, seed=seed)
    plan = _plan(loom, result, max_nodes)
    return _build(loom, result, plan, height=height, seed=seed)


def _clustered(loom, clusters: bool | None) -> bool:
    return bool(clusters) if clusters is not None else len(loom.graph.content_vectors) > CLUSTER_ABOVE


def save_graph_html(loom, path, result=None, **kw) -> Path:
    """Write :func:`graph_html` to ``path`` atomically (temporary file, then ``os.replace``)."""
    path = Path(path)
    page = graph_html(loom, result, **kw)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as fh:
            fh.write(page)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise
    return path


class GraphView(Displayable):
    """The graph for a notebook: an ``<iframe srcdoc>`` of :func:`graph_html`, no files written.

    Usually made with ``loom.graph_view(result)``.
    """

    def __init__(self, loom, result=None, *, max_nodes: int = 400, height: str = "640px", seed: int = 7,
                 clusters: bool | None = None):
        self.loom = loom
        self.result = result
        self.max_nodes = max_nodes
        self.height = height
        self.seed = seed
        self.clusters = _clustered(loom, clusters)

    def _options(self) -> dict:
        return {"max_nodes": self.max_nodes, "height": self.height, "seed": self.seed, "clusters": self.clusters}

    def html(self) -> str:
        return graph_html(self.loom, self.result, **self._options())

    def save(self, path) -> Path:
        return save_graph_html(self.loom, path, self.result, **self._options())

    def _repr_html_(self) -> str:
        srcdoc = html.escape(self.html(), quote=True)
        frame_height = _px(self.height) + 90
        return (
            f'<iframe srcdoc="{srcdoc}" sandbox="allow-scripts" '
            f'style="width:100%;height:{frame_height}px;border:none" title="loom-nb graph"></iframe>'
        )


    def __str__(self) -> str:
        if self.clusters:  # the facts the clustered page's caption gives
            from .graph_clusters import MAX_CONCEPTS, _clusters

            c, plan = self.loom.graph.counts(), _clusters(self.loom, self.result, MAX_CONCEPTS)
            lines = [f"Graph: {c['concepts']} concepts, {c['content']} content nodes, {c['edges']} edges",
                     f"drawn as clusters: {len(plan.drawn)} of {plan.concepts} concepts, their members folded until clicked"]
            if self.result is not None:
                lines += [f"query: {self.result.query}", f"loaded {len(plan.loaded)} (unfolded)"]
            return "\n".join(lines)
        plan = _plan(self.loom, self.result, self.max_nodes)
        lines = [
            f"Graph: {plan.total_concepts} concepts, {plan.total_content} content nodes, "
            f"{self.loom.graph.counts()['edges']} edges",
            f"shown: {len(plan.concepts)} concepts, {len(plan.content)} content nodes"
            + (f" ({plan.left_out} left out, max_nodes={self.max_nodes})" if plan.left_out else ""),
        ]
        if self.result is not None:
            lines.append(f"query: {self.result.query}")
            lines.append(
                f"loaded {len(self.result.loaded)} · manifest-only {plan.count('manifest_only')} · "
                f"excluded {plan.count('excluded')} (of the shown nodes)"
            )
        return "\n".join(lines)

    def __repr__(self) -> str:
        c = self.loom.graph.counts()
        return f"GraphView({c['concepts']} concepts, {c['content']} content, max_nodes={self.max_nodes})"
