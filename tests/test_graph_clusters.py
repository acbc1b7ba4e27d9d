"""A large session drawn as clusters (issue 15): one node per concept, members folded until
clicked. The page is driven in headless Chromium with playwright: real clicks on the canvas,
every outside request blocked, every dialog trapped."""

import numpy as np
import pytest

from browser import browser_page
from loom_nb import HashingEmbedder, Loom, LoomConfig, LoomGraph
from loom_nb.core.concepts import primary_concepts, rebuild_concepts
from loom_nb.views.graph_view import CLUSTER_ABOVE, graph_html

HOSTILE = "<img src=x onerror=alert(1)><b>bold</b>"


def big_loom(n: int = 5000, dim: int = 32, seed: int = 0) -> Loom:
    """``n`` units around n/12 random centres, every title hostile markup, concepts rebuilt."""
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(n // 12, dim))
    g = LoomGraph(LoomConfig(concept_threshold=0.99), embedding_model=HashingEmbedder(dim).model_id)
    for k in range(n):
        c = k % len(centres)
        g.add_content(f"topic{c} unit{k} words", centres[c] + 0.3 * rng.normal(size=dim), title=f"unit {k} {HOSTILE}", link=False)
    rebuild_concepts(g)
    return Loom(embedder=HashingEmbedder(dim), graph=g)


@pytest.fixture(scope="module")
def big():
    return big_loom()


def open_page(page, path):
    page.goto(path.as_uri())
    page.wait_for_function("typeof network !== 'undefined' && window.loomClusters !== undefined")


def click_node(page, node_id, until: str | None = None):
    """A real mouse click where vis-network drew ``node_id``; with ``until`` (a JS condition),
    clicked again (at most three times) while the condition has not come true.

    Each attempt first moves the pointer off the canvas (a node's tooltip, drawn above the
    pointer, cannot cover the next click) and centres the view on the node at scale 1, so the
    node is large on screen and a view still being fitted cannot move it from under the click.
    A final miss reports what was under the pointer and which of vis-network's pointer events
    the page saw (a click that reads as a long press fires ``hold``, not ``click``)."""
    seen = []
    page.evaluate("window.loomEventsSeen = window.loomEventsSeen || (function () { var seen = [];"
                  " ['click', 'doubleClick', 'hold', 'release'].forEach(function (kind) {"
                  " network.on(kind, function (p) { seen.push(kind + ':' + p.nodes.join(',')); }); }); return seen; })()")
    for attempt in range(3):
        page.mouse.move(1, 1)
        page.evaluate(f"network.moveTo({{position: network.getPositions(['{node_id}'])['{node_id}'], scale: 1, animation: false}})")
        at = page.evaluate(f"network.canvasToDOM(network.getPositions(['{node_id}'])['{node_id}'])")
        box = page.locator("#mynetwork").bounding_box()
        x, y = box["x"] + at["x"], box["y"] + at["y"]
        page.mouse.click(x, y)
        if until is None:
            return
        try:
            page.wait_for_function(until, timeout=10_000, polling=100)  # not per frame: the click handler sets it
            return
        except Exception:
            seen.append(page.evaluate(
                f"[network.getNodeAt({{x: {at['x']}, y: {at['y']}}}) || null, document.elementFromPoint({x}, {y}).tagName]"))
    events = page.evaluate("window.loomEventsSeen")
    raise AssertionError(f"three clicks on {node_id} did not make {until!r} true; under the pointer: {seen}; events: {events}")


def uncovered(page, candidates):
    """The first of ``candidates`` that no other node covers where vis-network drew it: the
    layout is settled by physics, and a concept drawn under another cannot be clicked."""
    for node_id in candidates:
        page.evaluate(f"network.moveTo({{position: network.getPositions(['{node_id}'])['{node_id}'], scale: 1, animation: false}})")
        if page.evaluate(f"network.getNodeAt(network.canvasToDOM(network.getPositions(['{node_id}'])['{node_id}']))") == node_id:
            return node_id
    raise AssertionError(f"every one of {len(candidates)} concepts is drawn under another")


def test_a_large_session_is_drawn_as_its_concepts_and_a_click_unfolds_one(big, tmp_path):
    assert len(big.graph.content_vectors) > CLUSTER_ABOVE
    view = big.graph_view()
    assert view.clusters and "drawn as clusters" in str(view)
    path = view.save(tmp_path / "big.html")
    concepts = list(big.graph.concept_vectors.ids)
    labels = primary_concepts(big.graph)
    with browser_page() as page:
        open_page(page, path)
        assert page.evaluate("nodes.length") == len(concepts)  # no member drawn yet
        middle = len(concepts) // 2
        target = uncovered(page, concepts[middle:] + concepts[:middle])
        own = int((labels == big.graph.concept_vectors.index[target]).sum())
        click_node(page, target, until=f"window.loomClusters.open['{target}'] !== undefined")
        assert page.evaluate("nodes.length") == len(concepts) + own
        assert page.text_content("#loom-cluster-status") == f"1 concept(s) unfolded, {own} member node(s) drawn"
        member = page.evaluate(f"window.loomClusters.open['{target}'].nodes[0]")
        assert page.evaluate(f"nodes.get('{member}').label").startswith(f"{member} unit ")  # canvas text, not markup
        assert page.evaluate(f"nodes.get('{member}').title.textContent").count(HOSTILE) == 1  # literal text
        click_node(page, target, until=f"window.loomClusters.open['{target}'] === undefined")
        assert page.evaluate("nodes.length") == len(concepts)
        assert page.evaluate("document.querySelectorAll('img, b').length") == 0  # no title became markup
        assert page.blocked == [] and page.dialogs == []


def test_loaded_nodes_are_drawn_unfolded_and_their_concepts_marked(big, tmp_path):
    result = big.query("topic7 unit7 words", budget=300)
    assert result.loaded
    page_html = graph_html(big, result)
    assert "loaded (unfolded)" in page_html and HOSTILE not in page_html
    path = tmp_path / "result.html"
    path.write_text(page_html, encoding="utf-8")
    with browser_page() as page:
        open_page(page, path)
        drawn = set(page.evaluate("nodes.getIds()"))
        assert set(result.loaded) <= drawn
        concept = big.graph.concepts_of(result.loaded[0])[0][0]
        assert page.evaluate(f"nodes.get('{concept}').borderWidth") == 5


def test_small_sessions_keep_the_full_drawing_unless_asked():
    small = big_loom(120)
    assert not small.graph_view().clusters
    assert small.graph_view(clusters=True).clusters
    assert "Click a concept to unfold" in graph_html(small, clusters=True)
    assert "Click a concept to unfold" not in graph_html(small)


def test_the_clustered_view_as_text_gives_the_captions_facts():
    """Every object prints as text the facts its HTML shows: the query and what was loaded."""
    small = big_loom(120)
    result = small.query("topic7 unit7 words", budget=300)
    text = str(small.graph_view(result, clusters=True))
    concepts = len(small.graph.concept_vectors)
    assert f"drawn as clusters: {concepts} of {concepts} concepts" in text
    assert "query: topic7 unit7 words" in text and f"loaded {len(result.loaded)} (unfolded)" in text
    assert f"{len(result.loaded)} loaded (unfolded)" in graph_html(small, result, clusters=True)


def test_every_loaded_node_is_drawn_with_its_concept_beyond_max_concepts_or_named():
    from loom_nb.views.graph_clusters import _clusters, cluster_html

    small = big_loom(120)
    result = small.query("topic7 unit7 words", budget=2000, mode="fused")
    homes = {small.graph.concepts_of(n)[0][0] for n in result.loaded}
    assert len(homes) > 1  # more concepts than max_concepts=1 draws
    plan = _clusters(small, result, 1)
    assert plan.loaded == sorted(result.loaded) and homes <= set(plan.drawn) and not plan.unplaced
    assert f"{len(result.loaded)} loaded (unfolded)" in cluster_html(small, result, max_concepts=1)
    unlinked = small.graph.add_content("topic7 unit7 words again", small.graph.content_vectors.get(result.loaded[0]),
                                       link=False)[0].id
    result = small.query("topic7 unit7 words", budget=2000, mode="fused")
    assert unlinked in result.loaded  # loaded, with no concept to draw it in: the caption names it
    assert _clusters(small, result, 1).unplaced == [unlinked]
    assert f"1 loaded but not drawn (linked to no concept): {unlinked}" in cluster_html(small, result, max_concepts=1)
