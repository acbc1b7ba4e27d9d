"""A large graph drawn as its concepts: each concept one node, its members folded until clicked.

Past a few hundred nodes a drawing of every unit is a hairball that the browser pans
slowly. Here each concept is a diamond sized by its members and labelled with its name and
count; concept–concept edges join them. Clicking a concept unfolds its members on a ring
around it (and clicking again folds them), from data embedded in the page, so nothing is
fetched. With a query result, the loaded nodes are drawn unfolded from the start and their
concepts get the loaded border.

The page is built like :func:`loom_nb.views.graph_view.graph_html` (pyvis, vis-network
inlined, physics off, positions from a seeded spring layout), and what it shows is escaped
the same way: node data travels as JSON whose ``<`` is written ``\\u003c``, and the script
uses it only as canvas text and ``textContent``.
"""

from __future__ import annotations

import html
import json
import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..core.concepts import primary_concepts
from .network import (CONCEPT_COLOUR, EDGE_COLOURS, LOADED_BORDER, LOADED_BORDER_WIDTH, OTHER_COLOUR, TYPE_COLOURS,
                      escaped_label, layout, new_network, offline_page, tooltip)

__all__ = ["cluster_html"]

_CLUSTER_SCRIPT = """<script type="application/json" id="loom-members">%s</script>
<script type="text/javascript">
(function () {
  if (typeof network === "undefined" || !network) { return; }
  var members = JSON.parse(document.getElementById("loom-members").textContent);
  var open = {};
  var status = document.getElementById("loom-cluster-status");
  function tip(s) { var d = document.createElement("div"); d.style.whiteSpace = "pre"; d.textContent = s; return d; }
  function say() {
    var n = 0;
    Object.keys(open).forEach(function (c) { n += open[c].nodes.length; });
    if (status) { status.textContent = Object.keys(open).length + " concept(s) unfolded, " + n + " member node(s) drawn"; }
  }
  function unfold(cid) {
    var list = members[cid];
    if (!list || open[cid]) { return; }
    var at = network.getPositions([cid])[cid];
    var ring = 60 + 14 * Math.sqrt(list.length);
    var add = [], links = [];
    list.forEach(function (m, k) {
      if (nodes.get(m.id)) { return; }  // drawn already (a loaded node)
      var a = 2 * Math.PI * k / list.length;
      add.push({id: m.id, label: m.label, title: tip(m.title), shape: "dot", size: m.size,
                x: at.x + ring * Math.cos(a), y: at.y + ring * Math.sin(a), borderWidth: 1,
                color: {background: m.colour, border: "#333333"}});
      links.push({id: "fold:" + cid + ":" + m.id, from: m.id, to: cid, color: "%s", width: 1});
    });
    nodes.add(add);
    edges.add(links);
    open[cid] = {nodes: add.map(function (n) { return n.id; }), edges: links.map(function (e) { return e.id; })};
    say();
  }
  function fold(cid) {
    if (!open[cid]) { return; }
    edges.remove(open[cid].edges);
    nodes.remove(open[cid].nodes);
    delete open[cid];
    say();
  }
  network.on("click", function (p) {
    if (p.nodes.length !== 1 || !members[p.nodes[0]]) { return; }
    var cid = p.nodes[0];
    if (open[cid]) { fold(cid); } else { unfold(cid); }
  });
  window.loomClusters = {unfold: unfold, fold: fold, open: open};
  network.fit({animation: false});
  say();
})();
</script>"""


def _json_for_script(data: Any) -> str:
    """JSON that cannot end its ``<script>`` element or open another."""
    return json.dumps(data, ensure_ascii=True, separators=(",", ":")).replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def _member_record(graph, nid: str, scores: dict[str, float], size: float) -> dict[str, Any]:
    node = graph.node(nid)
    lines = [f"{node.type} {nid} · {node.tokens} tokens", node.title]
    if nid in scores:
        lines.append(f"score {scores[nid]:.3f}")
    if node.reference is not None:
        lines.append(node.reference.location)
    text = " ".join(f"{nid} {node.title}".split())
    label = text if len(text) <= 32 else text[:31].rstrip() + "…"
    return {"id": nid, "label": label, "title": "\n".join(" ".join(str(x).split()) for x in lines if x),
            "colour": TYPE_COLOURS.get(node.type, OTHER_COLOUR), "size": round(size, 1)}


MAX_CONCEPTS = 1500
"""Concepts the clustered page draws at most (the most relevant, else the largest)."""


@dataclass
class _Clusters:
    """What the page draws: the concepts (rows and ids), each one's strongest members, the
    loaded nodes and the concept each belongs to."""

    drawn: list[str]
    sizes: dict[str, int]
    members: dict[str, list[dict[str, Any]]]
    concept_of: dict[str, str]
    loaded: list[str]
    concepts: int
    content: int
    unplaced: list[str] = field(default_factory=list)
    """Loaded nodes linked to no concept: there is no cluster to draw them in."""


def _clusters(loom, result, max_concepts: int) -> _Clusters:
    graph = loom.graph
    ids = list(graph.concept_vectors.ids)
    content_ids = list(graph.content_vectors.ids)
    labels = primary_concepts(graph)
    has = labels >= 0
    sizes = np.bincount(labels[has], minlength=len(ids))
    scores: dict[str, float] = {}
    loaded: set[str] = set()
    if result is not None:
        scores = {nid: float(s) for nid, s in zip(result.ranking.node_ids, result.ranking.scores)}
        loaded = {nid for nid in result.loaded if nid in graph}
    best = np.zeros(len(ids))
    if scores and ids:  # a concept's relevance: its best member's score
        row_scores = np.array([scores.get(nid, 0.0) for nid in content_ids])
        np.maximum.at(best, labels[has], row_scores[has])
    order = sorted(range(len(ids)), key=lambda k: (-best[k], -sizes[k], k))
    # the concept of every loaded node is drawn, beyond max_concepts if need be: a loaded node
    # is what the drawing is for, and it is drawn beside its concept
    index = graph.content_vectors.index
    homes = {int(labels[index[nid]]) for nid in loaded if labels[index[nid]] >= 0}
    drawn = [ids[k] for k in sorted(set(order[: max(1, int(max_concepts))]) | homes)]
    size_of = _member_size(graph, result, scores)
    members: dict[str, list[dict[str, Any]]] = {cid: [] for cid in drawn}
    concept_of = {}
    for row in np.flatnonzero(has):
        cid = ids[labels[row]]
        if cid in members:
            nid = content_ids[row]
            members[cid].append(_member_record(graph, nid, scores, size_of(nid)))
            concept_of[nid] = cid
    for cid in members:  # the most relevant (or largest) member first on the ring
        members[cid].sort(key=lambda m: (-scores.get(m["id"], 0.0), -m["size"], m["id"]))
    return _Clusters(drawn, {ids[k]: int(sizes[k]) for k in range(len(ids))}, members, concept_of,
                     sorted(n for n in loaded if n in concept_of), len(ids), len(content_ids),
                     sorted(n for n in loaded if n not in concept_of))


def _member_size(graph, result, scores):
    """Node size: by score with a result, else by the square root of its tokens."""
    score_max = max(scores.values(), default=0.0)
    token_max = max((n.tokens for n in graph.content_nodes()), default=0)

    def size(nid: str) -> float:
        if result is not None:
            return 8 + 24 * (scores.get(nid, 0.0) / score_max if score_max > 0 else 0.0)
        return 8 + 16 * (math.sqrt(graph.node(nid).tokens / token_max) if token_max > 0 else 0.0)

    return size


def cluster_html(loom, result=None, *, max_concepts: int = MAX_CONCEPTS, height: str = "640px", seed: int = 7) -> str:
    """The session drawn as clusters: one node per concept (its strongest members folded into
    it), concept–concept edges, loaded nodes unfolded. Returns a self-contained page.

    Parameters
    ----------
    loom : Loom
    result : QueryResult, optional
        Sizes members by score and draws the loaded ones from the start.
    max_concepts : int
        Above this, the concepts with the most relevant (or the most) members are drawn and
        the caption says how many were left out.
    """
    graph = loom.graph
    plan = _clusters(loom, result, max_concepts)
    sub = graph.nx.subgraph(plan.drawn)
    pos = layout(nx_weighted(sub), seed)
    net = new_network(height)
    loaded_in = {cid: 0 for cid in plan.drawn}
    for nid in plan.loaded:
        loaded_in[plan.concept_of[nid]] += 1
    for cid in plan.drawn:
        c = graph.node(cid)
        count, hits = plan.sizes[cid], loaded_in[cid]
        x, y = pos[cid]
        net.add_node(
            cid, label=escaped_label(f"{c.name} ({count})", 40), shape="diamond", size=round(10 + 4 * math.sqrt(count), 1), x=x, y=y,
            color={"background": CONCEPT_COLOUR, "border": LOADED_BORDER if hits else "#7a4f70"},
            borderWidth=LOADED_BORDER_WIDTH if hits else 1,
            title=tooltip([f"concept {cid} · {count} members" + (f" · {hits} loaded" if hits else ""), c.name,
                            c.description, "click: unfold or fold its members"]),
        )
    for u, v, d in sub.edges(data=True):
        if d.get("kind") == "concept":
            weight = float(d.get("weight", 1.0))
            net.add_edge(u, v, width=round(0.5 + 3 * max(0.0, min(weight, 1.0)), 2), color=EDGE_COLOURS["concept"],
                         dashes=True, title=tooltip([f"concept {weight:.3f}"]))
    for nid in plan.loaded:
        cid = plan.concept_of[nid]
        record = next(m for m in plan.members[cid] if m["id"] == nid)
        x, y = pos[cid]
        angle = _angle(nid)
        net.add_node(nid, label=html.escape(record["label"], quote=True), title=tooltip(record["title"].split("\n")),
                     shape="dot", size=record["size"], x=x + 70 * math.cos(angle), y=y + 70 * math.sin(angle),
                     color={"background": record["colour"], "border": LOADED_BORDER}, borderWidth=LOADED_BORDER_WIDTH)
        net.add_edge(nid, cid, width=1.5, color=EDGE_COLOURS["link"])
    script = _CLUSTER_SCRIPT % (_json_for_script(plan.members), EDGE_COLOURS["link"])
    return offline_page(net, _caption(result, plan), script)


def nx_weighted(sub):  # the layout follows the concept edges only
    """The concept subgraph with only concept–concept edges (what the layout should follow)."""
    import networkx as nx

    out = nx.Graph()
    out.add_nodes_from(sub.nodes)
    out.add_weighted_edges_from((u, v, float(d.get("weight", 1.0))) for u, v, d in sub.edges(data=True) if d.get("kind") == "concept")
    return out


def _angle(node_id: str) -> float:
    """A fixed angle per node id (the same page every time; Python's ``hash`` is salted)."""
    return (sum(ord(ch) * (k + 1) for k, ch in enumerate(node_id)) % 360) * math.pi / 180


def _caption(result, plan: _Clusters) -> str:
    parts = [f"{len(plan.drawn)} of {plan.concepts} concepts drawn as clusters of their {plan.content:,} content nodes"]
    if result is not None:
        parts.append(f"{len(plan.loaded)} loaded (unfolded)")
        if plan.unplaced:
            parts.append(f"{len(plan.unplaced)} loaded but not drawn (linked to no concept): {', '.join(plan.unplaced[:5])}"
                         + (" …" if len(plan.unplaced) > 5 else ""))
    text = " · ".join(parts) + ". Click a concept to unfold its members; click again to fold them."
    query = f"<b>Query:</b> {html.escape(result.query)}<br>" if result is not None else ""
    return ('<div class="loom-graph-caption" style="font-family:sans-serif;font-size:13px;margin:4px 0">'
            f"{query}{html.escape(text)}<br><span id=\"loom-cluster-status\"></span></div>")
