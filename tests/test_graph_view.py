"""The offline pyvis page of the graph (loom_nb.views.graph_view)."""

from __future__ import annotations

import html
import json
import re

import numpy as np
import pytest

from loom_nb import HashingEmbedder, Loom
from loom_nb.views.graph_view import GraphView, graph_html, save_graph_html
from loom_nb.views.network import LOADED_BORDER, LOADED_BORDER_WIDTH

TEXTS = [
    "OAuth tokens expire after one hour; refresh them with the refresh token.",
    "The ranking combines six weighted signals into one score.",
    "<script>alert(1)</script> pasted page with <img src=x onerror=alert(2)> inside",
    "Packing fills the budget with the best nodes, then summaries, then chunks.",
    "Tokens are counted with tiktoken cl100k as an estimate for local models.",
    "Concept nodes are index entries and are never sent to the model.",
]
QUERY = "how do oauth tokens expire and get refreshed?"


@pytest.fixture(scope="module")
def session():
    loom = Loom(embedder=HashingEmbedder())
    for text in TEXTS:
        loom.add(text, split=False)
    result = loom.query(QUERY, budget=300, mode="fused")
    return loom, result


@pytest.fixture(scope="module")
def page(session):
    loom, result = session
    return graph_html(loom, result)


def _dataset(page: str, name: str) -> list[dict]:
    match = re.search(rf"{name} = new vis\.DataSet\((\[.*?\])\);\n", page, re.S)
    assert match, f"no {name} DataSet in the page"
    return json.loads(match.group(1))


def _options(page: str) -> dict:
    match = re.search(r"var options = (\{.*?\});\n", page, re.S)
    assert match
    return json.loads(match.group(1))


def test_page_needs_no_network(page):
    assert not re.search(r"<script[^>]*\bsrc\s*=\s*[\"']?(https?:)?//", page, re.I)
    assert not re.search(r"<link[^>]*\bhref\s*=\s*[\"']?(https?:)?//", page, re.I | re.S)
    assert '<script src="http' not in page
    assert "cdn.jsdelivr" not in page
    assert "new vis.Network" in page  # vis-network is inlined, not fetched
    assert "vis-network" in page and len(page) > 300_000


def test_physics_off_and_positions_precomputed(session, page):
    assert _options(page)["physics"]["enabled"] is False
    nodes = _dataset(page, "nodes")
    assert all(isinstance(n["x"], float) and isinstance(n["y"], float) for n in nodes)
    loom, result = session
    assert graph_html(loom, result) == page  # fixed seed: the same page every time


def test_every_node_and_edge_is_drawn(session, page):
    loom, _ = session
    g = loom.graph.nx
    ids = {n["id"] for n in _dataset(page, "nodes")}
    assert ids == set(g.nodes)
    for node_id in g.nodes:
        assert f'"{node_id}"' in page
    edges = _dataset(page, "edges")
    assert len(edges) == g.number_of_edges()
    for edge in edges:
        weight = g.edges[edge["from"], edge["to"]]["weight"]
        assert edge["width"] == pytest.approx(0.5 + 4.5 * min(max(weight, 0.0), 1.0), abs=0.01)


def test_hostile_text_never_becomes_markup(session, page):
    assert "<script>alert(1)</script>" not in page
    assert "<script>alert" not in page
    assert not re.search(r"<img[^>]*onerror", page, re.I)
    # every occurrence of the handler is inside an escaped form of the tag
    bare = re.sub(r"(\\u0026|&)lt;img src=x onerror=alert\(2\)", "", page)
    assert "onerror=alert(2)" not in bare
    loom, _ = session
    hostile = next(n for n in loom.graph.content_nodes() if "alert(1)" in n.title)
    node = next(n for n in _dataset(page, "nodes") if n["id"] == hostile.id)
    for key in ("title", "label"):
        assert "<" not in node[key] and ">" not in node[key]
        assert "&lt;script&gt;" in node[key]
        assert "<script>" in html.unescape(node[key])


def test_href_in_text_does_not_switch_pyvis_tooltip_template():
    loom = Loom(embedder=HashingEmbedder())
    loom.add('<a href="javascript:alert(3)">click</a> a link in a pasted page', split=False)
    page = graph_html(loom)
    assert "popup.innerHTML" not in page
    assert '<a href="javascript' not in page


def test_loaded_nodes_get_the_loaded_style(session, page):
    loom, result = session
    assert result.loaded
    nodes = {n["id"]: n for n in _dataset(page, "nodes")}
    decisions = {r.node_id: r.decision for r in result.rows()}
    for node_id in result.loaded:
        assert nodes[node_id]["color"]["border"] == LOADED_BORDER
        assert nodes[node_id]["borderWidth"] == LOADED_BORDER_WIDTH
    for node_id, decision in decisions.items():
        if node_id not in result.loaded and decision not in ("loaded", "summary", "chunk"):
            assert nodes[node_id]["color"]["border"] != LOADED_BORDER
        if decision == "excluded":
            assert nodes[node_id]["opacity"] < 1
        if decision == "manifest_only":
            assert nodes[node_id]["shapeProperties"]["borderDashes"]
    # content sized by score: the best-scored node is the largest content node
    best = result.rows(1)[0].node_id
    content = [n for n in nodes.values() if n["id"] in decisions]
    assert max(content, key=lambda n: n["size"])["id"] == best
    # concepts and content are told apart
    concept_ids = {c.id for c in loom.graph.concept_nodes()}
    assert {nodes[c]["shape"] for c in concept_ids} == {"diamond"}
    assert {nodes[n]["shape"] for n in decisions} == {"dot"}


def test_max_nodes_keeps_loaded_and_says_what_was_left_out(session):
    loom, result = session
    total = len(loom.graph)
    page = graph_html(loom, result, max_nodes=4)
    nodes = {n["id"] for n in _dataset(page, "nodes")}
    assert len(nodes) <= max(4, len(result.loaded))
    assert set(result.loaded) <= nodes
    left_out = total - len(nodes)
    assert left_out > 0
    assert f"{left_out} nodes left out" in page
    edges = _dataset(page, "edges")
    assert all(e["from"] in nodes and e["to"] in nodes for e in edges)
    assert f"{left_out} left out" in str(GraphView(loom, result, max_nodes=4))


def test_without_a_result_keeps_the_largest():
    loom = Loom(embedder=HashingEmbedder())
    for text in TEXTS:
        loom.add(text, split=False)
    largest = max(loom.graph.content_nodes(), key=lambda n: n.tokens)
    page = graph_html(loom, max_nodes=2)
    nodes = {n["id"] for n in _dataset(page, "nodes")}
    assert largest.id in nodes and len(nodes) == 2
    assert f"{len(loom.graph) - 2} nodes left out" in page


def test_save_graph_html_is_atomic(session, page, tmp_path):
    loom, result = session
    target = tmp_path / "out" / "graph.html"
    path = save_graph_html(loom, target, result)
    assert path == target and path.exists()
    assert path.read_text(encoding="utf-8") == page
    assert [p.name for p in target.parent.iterdir()] == ["graph.html"]  # no temporary file left
    save_graph_html(loom, target, result, max_nodes=3)  # replaces in place
    assert target.read_text(encoding="utf-8") != page
    assert [p.name for p in target.parent.iterdir()] == ["graph.html"]


def test_graph_view_repr_html_is_an_escaped_srcdoc(session, page):
    loom, result = session
    view = GraphView(loom, result)
    frame = view._repr_html_()
    assert frame.startswith("<iframe srcdoc=\"") and frame.endswith("</iframe>")
    srcdoc = re.match(r'<iframe srcdoc="([^"]*)"', frame).group(1)
    assert "<" not in srcdoc
    assert html.unescape(srcdoc) == page
    text = str(view)
    assert "concepts" in text and f"loaded {len(result.loaded)}" in text
    assert "GraphView(" in repr(view)


def test_empty_graph_draws():
    loom = Loom(embedder=HashingEmbedder())
    page = graph_html(loom)
    assert _dataset(page, "nodes") == []
    assert "0 of 0 concepts" in page


def test_a_large_drawing_runs_springs_on_its_concepts_only_and_puts_content_beside_its_concept(monkeypatch):
    """At 5,000 nodes one spring layout of everything took 76 s; past SPRING_NODES only the
    concepts are laid out by springs and each unit sits on a spiral around its strongest one."""
    import math

    import networkx as nx

    from loom_nb.views import network as gv

    g = nx.Graph()
    g.add_nodes_from((f"c{c}", {"kind": "concept"}) for c in range(60))
    g.add_edges_from((f"c{c}", f"c{c + 1}", {"kind": "concept", "weight": 0.6}) for c in range(59))
    for n in range(gv.SPRING_NODES):
        g.add_node(f"n{n}", kind="content")
        g.add_edge(f"n{n}", f"c{n % 60}", kind="link", weight=0.9)
        if n % 7 == 0:  # a weaker second concept: the strongest is its home
            g.add_edge(f"n{n}", f"c{(n + 1) % 60}", kind="link", weight=0.5)
    g.add_node("alone", kind="content")
    sizes = []
    spring = nx.spring_layout
    monkeypatch.setattr(nx, "spring_layout", lambda sub, **kw: sizes.append(sub.number_of_nodes()) or spring(sub, **kw))
    pos = gv.layout(g, 7)
    assert sizes == [60] and set(pos) == set(g) and all(map(math.isfinite, np.ravel(list(pos.values()))))
    scale = max(250.0, 45.0 * math.sqrt(g.number_of_nodes()))
    for n in range(gv.SPRING_NODES):
        assert math.dist(pos[f"n{n}"], pos[f"c{n % 60}"]) < 0.9 / math.sqrt(60) * scale
    assert pos == gv.layout(g, 7)  # the same graph, the same picture


# -- labels that stay clear of each other (issue 17) -------------------------------------------

from browser import LABEL_BOXES_JS, browser_page, overlapping  # noqa: E402
from loom_nb.views.network import LABELLED, label_boxes, separate  # noqa: E402


def test_separate_moves_overlapping_boxes_apart_and_keeps_the_first_in_place():
    rng = np.random.default_rng(3)
    centres = rng.normal(scale=20, size=(30, 2))  # 30 boxes of 120 x 30 px piled into 40 px
    halves = np.tile([60.0, 15.0], (30, 1))
    out = separate(centres, halves, gap=4)
    assert np.array_equal(out[0], centres[0])
    apart = np.abs(out[:, None, :] - out[None, :, :]) >= halves[:, None, :] + halves[None, :, :] + 4 - 1e-9
    assert (apart.any(-1) | np.eye(30, dtype=bool)).all()  # every pair clear on one axis at least
    assert np.array_equal(out, separate(centres, halves, gap=4))  # deterministic
    lone = np.array([[5.0, 5.0], [500.0, 500.0]])
    assert np.array_equal(separate(lone, np.ones((2, 2))), lone)  # nothing overlaps: nothing moves


def test_a_box_covers_the_shape_and_the_label_under_it():
    offset, halves = label_boxes([10.0, 10.0], [20, 0])
    assert halves[0, 0] == 20 * 7.4 / 2 and halves[1, 0] == 10.0  # the label's width, or the dot's
    assert offset[0, 1] > offset[1, 1] > -1e-9  # the label hangs under the dot


def many_titles_loom(n: int = 18) -> Loom:
    loom = Loom(embedder=HashingEmbedder())
    for k in range(n):
        loom.add(f"oauth token refresh note {k}: rotation and expiry of grant number {k}", title=f"refresh token rotation note {k}")
    return loom


def test_labelled_boxes_never_overlap_and_past_the_limit_labels_show_on_hover():
    loom = many_titles_loom(LABELLED + 10)
    result = loom.query("refresh token rotation", budget=600)
    page = graph_html(loom, result, max_nodes=LABELLED + 40)
    nodes = _dataset(page, "nodes")
    labelled = [n for n in nodes if "label" in n]
    assert len(labelled) == LABELLED < len(nodes)
    assert all("title" in n for n in nodes)  # the unlabelled ones name themselves on hover
    offset, halves = label_boxes([n["size"] for n in labelled], [len(html.unescape(n["label"])) for n in labelled])
    centres = np.array([[n["x"], n["y"]] for n in labelled]) + offset
    gap = np.abs(centres[:, None, :] - centres[None, :, :]) - (halves[:, None, :] + halves[None, :, :])
    assert ((gap >= -1e-6).any(-1) | np.eye(len(labelled), dtype=bool)).all()


def test_labels_drawn_in_chromium_do_not_overlap_at_22_nodes(tmp_path):
    loom = many_titles_loom(24)
    result = loom.query("refresh token rotation", budget=600)
    path = save_graph_html(loom, tmp_path / "g.html", result, max_nodes=22)
    with browser_page() as page:
        page.goto(path.as_uri())
        page.wait_for_function("typeof network !== 'undefined' && Object.values(network.body.nodes)"
                               ".every(n => !n.options.label || n.labelModule.size.width > 0)")
        boxes = page.evaluate(LABEL_BOXES_JS)
        assert len(boxes) == len(_dataset(path.read_text(), "nodes")) == 22
        assert overlapping(boxes) == []
        assert page.blocked == [] and page.dialogs == []


def test_a_code_edge_is_drawn_from_caller_to_callee_and_says_so(tmp_path):
    (tmp_path / "app").mkdir()
    (tmp_path / "app" / "cart.py").write_text("def total(items):\n    return sum(items)\n")
    (tmp_path / "app" / "checkout.py").write_text("from .cart import total\n\n\ndef pay(items):\n    return total(items)\n")
    loom = Loom(embedder=HashingEmbedder())
    loom.index(tmp_path, progress=False)
    ids = {n.title: n.id for n in loom.graph.content_nodes()}
    pay, total = ids["app/checkout.py:4-5 pay"], ids["app/cart.py:1-2 total"]
    page = graph_html(loom, loom.query("what does pay call?", budget=400))
    edge = next(e for e in _dataset(page, "edges") if {e["from"], e["to"]} == {pay, total})
    assert (edge["from"], edge["to"], edge["arrows"]) == (pay, total, "to")
    assert html.unescape(edge["title"]) == f"{pay} app/checkout.py:4-5 pay\ncalls\n{total} app/cart.py:1-2 total"
