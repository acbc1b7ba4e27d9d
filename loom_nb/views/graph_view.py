"""The graph as an interactive, self-contained, offline HTML page (pyvis / vis-network).

Concept and content nodes are placed by ``networkx.spring_layout`` (fixed seed, scaled to
pixels; past :data:`SPRING_NODES` nodes only the concepts are, and each unit goes on a spiral
around its strongest concept) and drawn with physics off, so the page renders in a few seconds and the same graph
always looks the same. vis-network is inlined (``cdn_resources="in_line"``) and the CDN tags
pyvis adds anyway (bootstrap CSS/JS) are removed: the page needs no network.

Everything taken from the graph (titles, names, descriptions, reasons) is HTML-escaped
before it reaches the page: the page decodes labels and tooltips in the browser with ``DOMParser`` and uses them only as
plain text (canvas labels, ``textContent`` of the tooltip), and the caption is escaped HTML.

Size: the pyvis view: choosing the nodes to show, then building the page.
"""

from __future__ import annotations

from ..core.arrays import STRUCTURE_KINDS
from ..core.display import Displayable

import html
import math
import os
import re
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import networkx as nx
import numpy as np

__all__ = ["CLUSTER_ABOVE", "GraphView", "graph_html", "save_graph_html", "CONCEPT_COLOUR", "TYPE_COLOURS", "LOADED_BORDER"]

CONCEPT_COLOUR = "#b279a2"
TYPE_COLOURS = {
    "input": "#4c78a8",
    "output": "#f58518",
    "analysis": "#54a24b",
    "file_reference": "#72b7b2",
    "summary": "#eeca3b",
}
OTHER_COLOUR = "#9d755d"
LOADED_BORDER = "#d62728"
"""Border of nodes whose text (whole, summary or chunks) went into the context."""
LOADED_BORDER_WIDTH = 5
MANIFEST_BORDER = "#555555"
"""Border of nodes named only in the manifest (drawn dashed)."""
EXCLUDED_COLOUR = "#d9d9d9"
"""Fill of excluded nodes (drawn faded)."""
EDGE_COLOURS = {
    "link": "#9a9a9a",
    "concept": "#b279a2",
    "summarizes": "#eeca3b",
    "imports": "#72b7b2",
    "references": "#4c9a9a",
    "continues": "#54a24b",
}
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


# -- text helpers ------------------------------------------------------------------------------


def _short(text: str, limit: int = 32) -> str:
    """A label's text: one line of at most ``limit`` characters."""
    text = " ".join(str(text).split())
    return text[: limit - 1].rstrip() + "…" if len(text) > limit else text


def _label(text: str, limit: int = 32) -> str:
    """A node label: shortened to one line and HTML-escaped (the page decodes it for the canvas)."""
    return html.escape(_short(text, limit), quote=True)


def _tooltip(lines: list[str]) -> str:
    """An HTML-escaped tooltip; lines are kept apart by newlines (shown with white-space: pre)."""
    text = html.escape("\n".join(" ".join(str(line).split()) for line in lines if line), quote=True)
    # pyvis switches to a different tooltip template when a title contains "href";
    # the entity reads the same once the browser parses the escaped title
    return text.replace("href", "hr&#101;f").replace("HREF", "HR&#69;F")


def _px(height: str) -> int:
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*(px)?\s*", str(height))
    return int(float(m.group(1))) if m else 640


# -- the page ----------------------------------------------------------------------------------

_CDN_LINK = re.compile(r"<link\b[^>]*?\bhref\s*=\s*[\"']?(?:https?:)?//[^>]*>", re.I | re.S)
_CDN_SCRIPT = re.compile(r"<script\b[^>]*?\bsrc\s*=\s*[\"']?(?:https?:)?//[^>]*>\s*</script\s*>", re.I | re.S)
_DEAD_COMMENT = re.compile(r"<!--(?:(?!-->).)*?node_modules.*?-->", re.S)
_EMPTY_HEADING = re.compile(r"<center>\s*<h1>\s*</h1>\s*</center>", re.I)

# Labels and titles arrive HTML-escaped. In the browser each is decoded with DOMParser (which
# runs no script and loads nothing) and used as plain text only: labels as canvas text,
# tooltips as the textContent of an element (vis-network would otherwise show the entities).
_DECODE_SCRIPT = """<script type="text/javascript">
(function () {
  if (typeof nodes === "undefined" || !nodes || typeof DOMParser === "undefined") { return; }
  var parser = new DOMParser();
  function text(s) { return parser.parseFromString(s, "text/html").documentElement.textContent; }
  function tip(s) {
    var d = document.createElement("div");
    d.style.whiteSpace = "pre";
    d.textContent = text(s);
    return d;
  }
  function decode(set) {
    var updates = [];
    set.forEach(function (item) {
      var u = {id: item.id}, changed = false;
      if (typeof item.label === "string") { u.label = text(item.label); changed = true; }
      if (typeof item.title === "string") { u.title = tip(item.title); changed = true; }
      if (changed) { updates.push(u); }
    });
    set.update(updates);
  }
  decode(nodes);
  if (typeof edges !== "undefined" && edges) { decode(edges); }
})();
</script>"""


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


SPRING_NODES = 500
"""Nodes up to which the drawing is one spring layout. networkx's costs O(n²) per iteration
(76 s of a 90 s page at 5,000 nodes); above this the concepts are laid out by springs and
each content node is placed around its strongest concept (:func:`_layout_large`)."""
_GOLDEN = 2.399963229728653
"""The golden angle: successive points on a spiral at this step never line up."""


def _layout(sub: nx.Graph, seed: int) -> dict[str, tuple[float, float]]:
    n = sub.number_of_nodes()
    if n == 0:
        return {}
    if n == 1:
        return {next(iter(sub.nodes)): (0.0, 0.0)}
    pos = _layout_large(sub, seed) if n > SPRING_NODES else nx.spring_layout(sub, seed=seed, weight="weight", k=1.5 / math.sqrt(n))
    scale = max(250.0, 45.0 * math.sqrt(n))
    return {node: (float(x) * scale, float(y) * scale) for node, (x, y) in pos.items()}


def _spring(sub: nx.Graph, seed: int) -> dict:
    """A spring layout whose cost stays near that of :data:`SPRING_NODES` nodes: fewer
    iterations as the graph grows (50, networkx's default, up to that size)."""
    n = sub.number_of_nodes()
    if n <= 1:
        return {node: np.zeros(2) for node in sub}
    iterations = max(5, min(50, int(50 * (SPRING_NODES / n) ** 2)))
    return nx.spring_layout(sub, seed=seed, weight="weight", k=1.5 / math.sqrt(n), iterations=iterations)


def _layout_large(sub: nx.Graph, seed: int) -> dict:
    """A layout in about linear time past :data:`SPRING_NODES`: the concepts (and nodes that
    are not content) by springs, each content node on a spiral around its strongest drawn
    concept, and content with no drawn concept on a spiral of its own beside them."""
    kinds = dict(sub.nodes(data="kind"))
    anchors = [node for node in sub if kinds.get(node) != "content"]
    home: dict = {}
    homeless = []
    for node in sub:
        if kinds.get(node) != "content":
            continue
        links = [(d.get("weight", 0.0), nb) for nb, d in sub.adj[node].items() if kinds.get(nb) != "content"]
        if links:
            home.setdefault(max(links, key=lambda wn: (wn[0], str(wn[1])))[1], []).append(node)
        else:
            homeless.append(node)
    pos = {node: np.asarray(xy, dtype=float) for node, xy in _spring(sub.subgraph(anchors), seed).items()}
    step = 0.9 / math.sqrt(max(len(anchors), 1))  # about half the room between two concepts
    for anchor, members in home.items():
        radius = step / math.sqrt(len(members) + 1)
        for k, node in enumerate(members, 1):
            pos[node] = pos[anchor] + radius * math.sqrt(k) * np.array([math.cos(k * _GOLDEN), math.sin(k * _GOLDEN)])
    if homeless:  # beside the concepts, to the right
        right = max((xy[0] for xy in pos.values()), default=0.0) + 0.3
        radius = 1.0 / math.sqrt(len(homeless))
        centre = np.array([right + math.sqrt(len(homeless)) * radius, 0.0])
        for k, node in enumerate(homeless):
            pos[node] = centre + radius * math.sqrt(k) * np.array([math.cos(k * _GOLDEN), math.sin(k * _GOLDEN)])
    return pos


FONT_PX = 12
"""Label font size of the drawing, in canvas pixels."""
CHAR_PX = 7.4
"""Width allowed per label character: above the mean advance of vis-network's 12 px Arial
(6.2 px on file names and symbols in Chromium), so a box never under-covers its label."""
LABEL_GAP = 6.0


def label_boxes(sizes, label_lengths) -> tuple[np.ndarray, np.ndarray]:
    """Each node's box with its label, as (centre offset from the node, half extents).

    vis-network draws a dot's or a diamond's label under the shape: the box runs from the
    shape's top to the label's baseline and is as wide as the wider of shape and label.
    """
    sizes = np.asarray(sizes, dtype=float)
    half_w = np.maximum(sizes, np.asarray(label_lengths, dtype=float) * CHAR_PX / 2)
    top, bottom = -sizes, sizes + 4 + 1.4 * FONT_PX * (np.asarray(label_lengths) > 0)
    return np.stack([np.zeros_like(sizes), (top + bottom) / 2], 1), np.stack([half_w, (bottom - top) / 2], 1)


LABELLED = 60
"""Nodes drawn with a label: the largest (the highest scores); the others show theirs on hover.
Past this many, labels cannot all stay clear of each other in a picture that still fits."""
_SPIRAL = 5.0 * np.sqrt(np.arange(40_000))[:, None] * np.stack(
    [np.cos(np.arange(40_000) * 2.399963229728653), 0.6 * np.sin(np.arange(40_000) * 2.399963229728653)], 1)
"""Candidate moves, nearest first: a golden-angle spiral, flattened like the labels are."""


def separate(centres: np.ndarray, halves: np.ndarray, *, gap: float = LABEL_GAP, order=None) -> np.ndarray:
    """Boxes placed one by one, in ``order``, each at the free spot nearest its layout
    position (a spiral search), so no two overlap and the first placed do not move.

    Deterministic, and the spring layout's neighbourhoods stay roughly where they were.

    >>> out = separate(np.array([[0.0, 0.0], [10.0, 0.0]]), np.array([[20.0, 5.0], [20.0, 5.0]]), gap=0)
    >>> out[0].tolist(), bool(abs(out[1, 0]) >= 40 or abs(out[1, 1]) >= 10)
    ([0.0, 0.0], True)
    """
    c = np.array(centres, dtype=float)
    out = c.copy()
    placed: list[int] = []
    for i in (range(len(c)) if order is None else order):
        if placed:
            others, reach = out[placed], halves[placed] + halves[i] + gap
            for start in range(0, len(_SPIRAL), 256):
                candidates = c[i] + _SPIRAL[start:start + 256]
                free = ~(np.abs(candidates[:, None, :] - others[None]) < reach[None]).all(-1).any(1)
                if free.any():
                    out[i] = candidates[int(np.argmax(free))]
                    break
            else:  # pragma: no cover - 40,000 candidates out to ~1,000 px: not reached at LABELLED boxes
                out[i] = c[i] + _SPIRAL[-1] * (1 + len(placed))
        placed.append(int(i))
    return out


def _spread(pos: dict[str, tuple[float, float]], sizes: dict[str, float], labels: dict[str, str]) -> dict[str, tuple[float, float]]:
    """The layout with each labelled node's box (shape and label) clear of the other labelled
    ones; nodes without a label keep their place."""
    ids = [i for i in pos if labels.get(i)]
    if len(ids) < 2:
        return pos
    offset, halves = label_boxes([sizes[i] for i in ids], [len(labels[i]) for i in ids])
    points = np.array([pos[i] for i in ids], dtype=float)
    # room first: spread the whole layout until its box could hold the labels twice over, so the
    # search for free spots stays short (the picture keeps its shape, only larger)
    need = float((4 * halves.prod(axis=1)).sum()) * 2.0
    have = float(np.prod(np.ptp(np.array(list(pos.values()), dtype=float), axis=0) + 1.0))
    scale = max(1.0, (need / have) ** 0.5)
    everything = {node: (x * scale, y * scale) for node, (x, y) in pos.items()}
    order = sorted(range(len(ids)), key=lambda k: -sizes[ids[k]])  # stable: the biggest keep their place
    centres = separate(points * scale + offset, halves, order=order) - offset
    return everything | {node: (float(x), float(y)) for node, (x, y) in zip(ids, centres)}


def new_network(height: str):
    """A pyvis network with vis-network inlined and physics off (positions are given)."""
    from pyvis.network import Network

    net = Network(height=height, width="100%", directed=False, notebook=False, cdn_resources="in_line")
    net.options = {
        "physics": {"enabled": False},
        "edges": {"smooth": False, "color": {"inherit": False}},
        "nodes": {"font": {"size": FONT_PX}},
        "interaction": {"hover": True, "tooltipDelay": 150, "dragNodes": True, "hideEdgesOnDrag": True},
        "layout": {"improvedLayout": False},
    }
    return net


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
    texts = {cid: _short(graph.node(cid).name) for cid in plan.concepts}
    texts |= {nid: _short(f"{nid} {graph.node(nid).title}") for nid in plan.content}
    sizes = {cid: 16.0 for cid in plan.concepts}
    sizes |= {nid: _node_size(plan, graph, nid, result, score_max, token_max) for nid in plan.content}
    labelled = set(sorted(keep, key=lambda n: -sizes[n])[:LABELLED])  # sorted() is stable
    texts = {n: t if n in labelled else "" for n, t in texts.items()}
    pos = _spread(_layout(sub, seed), sizes, texts)

    net = new_network(height)

    for cid in plan.concepts:
        c = graph.node(cid)
        x, y = pos[cid]
        net.add_node(
            cid, label=html.escape(texts[cid], quote=True), shape="diamond", size=sizes[cid], x=x, y=y,
            color={"background": CONCEPT_COLOUR, "border": "#7a4f70"}, borderWidth=1,
            title=_tooltip([f"concept {cid}", c.name, c.description]),
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
            color=colour, title=_tooltip(lines), **options,
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
            tip = [_short(f"{a} {graph.node(a).title}"), relation, _short(f"{b} {graph.node(b).title}")]
        if kind == "concept":
            extra["dashes"] = True
        net.add_edge(
            a, b, width=round(0.5 + 4.5 * max(0.0, min(weight, 1.0)), 2),
            color=EDGE_COLOURS.get(kind, "#9a9a9a"), title=_tooltip(tip), **extra,
        )

    return offline_page(net, _caption(plan, result))


def offline_page(net, caption: str, script: str = "") -> str:
    """pyvis's page with the CDN tags it adds anyway removed, ``caption`` on top, and the
    label decoder (then ``script``) run after the drawing."""
    page = net.generate_html()
    page = _CDN_LINK.sub("", page)
    page = _CDN_SCRIPT.sub("", page)
    page = _DEAD_COMMENT.sub("", page)
    page = _EMPTY_HEADING.sub("", page)
    page = page.replace("<body>", "<body>\n" + caption, 1)
    page = page.replace("</body>", _DECODE_SCRIPT + "\n" + script + "\n</body>", 1)
    if not page.lstrip().lower().startswith("<!doctype"):
        page = "<!DOCTYPE html>\n" + page
    return page


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
