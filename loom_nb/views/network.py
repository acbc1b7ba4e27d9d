"""The drawing kit both graph pages share (:mod:`.graph_view`, :mod:`.graph_clusters`):
colours, labels and tooltips escaped for vis-network, the layouts, labels kept clear of each
other, and pyvis's page made offline.

Labels and tooltips reach the page HTML-escaped; the page decodes them in the browser with
``DOMParser`` and uses them only as plain text (canvas labels, a tooltip's ``textContent``).
vis-network is inlined (``cdn_resources="in_line"``) and the CDN tags pyvis adds anyway
(bootstrap CSS/JS) are removed: the page needs no network.
"""

from __future__ import annotations

import html
import math
import re

import networkx as nx
import numpy as np

__all__ = ["CONCEPT_COLOUR", "EDGE_COLOURS", "EXCLUDED_COLOUR", "LABELLED", "LOADED_BORDER", "LOADED_BORDER_WIDTH",
           "MANIFEST_BORDER", "OTHER_COLOUR", "SPRING_NODES", "TYPE_COLOURS", "escaped_label", "label_boxes", "layout",
           "new_network", "offline_page", "separate", "short", "spread_labels", "tooltip"]

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

# -- labels ------------------------------------------------------------------------------------


def short(text: str, limit: int = 32) -> str:
    """A label's text: one line of at most ``limit`` characters."""
    text = " ".join(str(text).split())
    return text[: limit - 1].rstrip() + "…" if len(text) > limit else text


def escaped_label(text: str, limit: int = 32) -> str:
    """A node label: shortened to one line and HTML-escaped (the page decodes it for the canvas)."""
    return html.escape(short(text, limit), quote=True)


def tooltip(lines: list[str]) -> str:
    """An HTML-escaped tooltip; lines are kept apart by newlines (shown with white-space: pre)."""
    text = html.escape("\n".join(" ".join(str(line).split()) for line in lines if line), quote=True)
    # pyvis switches to a different tooltip template when a title contains "href";
    # the entity reads the same once the browser parses the escaped title
    return text.replace("href", "hr&#101;f").replace("HREF", "HR&#69;F")



# -- layout ------------------------------------------------------------------------------------


SPRING_NODES = 500
"""Nodes up to which the drawing is one spring layout. networkx's costs O(n²) per iteration
(76 s of a 90 s page at 5,000 nodes); above this the concepts are laid out by springs and
each content node is placed around its strongest concept (:func:`_layout_large`)."""
_GOLDEN = 2.399963229728653
"""The golden angle: successive points on a spiral at this step never line up."""


def layout(sub: nx.Graph, seed: int) -> dict[str, tuple[float, float]]:
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


def spread_labels(pos: dict[str, tuple[float, float]], sizes: dict[str, float], labels: dict[str, str]) -> dict[str, tuple[float, float]]:
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
