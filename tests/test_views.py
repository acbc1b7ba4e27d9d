"""The views: plotly figures, the weight sliders, and the text + escaped HTML of every object
(session, content node, concept, classification, result, tuner snapshot, graph), outside a
notebook (no front end needed)."""

import re
from html import escape

import numpy as np
import pytest

from conftest import TableEmbedder, unit
from loom_nb import SIGNALS, HashingEmbedder, Loom, LoomConfig, LoomError
from loom_nb.views import NodeView
from loom_nb.views.figures import budget_figure, contributions_figure, embedding_map, score_histogram
from loom_nb.views.widgets import TunerSnapshot


@pytest.fixture
def loom():
    loom = Loom(embedder=HashingEmbedder())
    loom.add("OAuth refresh tokens are single use; store the rotated refresh token.", type="analysis")
    loom.add("The refresh endpoint returns a new access token and a new refresh token.")
    loom.add("Dark theme colours live in theme.css.")
    return loom


def test_contribution_bars_add_up_to_the_score(loom):
    result = loom.query("rotated refresh token", budget=400, mode="fused")
    fig = contributions_figure(result)
    names = {trace.name for trace in fig.data}
    assert names <= set(SIGNALS) and "semantic" in names
    totals = np.zeros(len(fig.data[0].y))
    for trace in fig.data:
        totals += np.asarray(trace.x)
    rows = result.rows(20)[::-1]
    assert np.allclose(totals, [r.score for r in rows])
    assert fig.data[0].y[-1].startswith(rows[-1].node_id)  # the top node is drawn on top


def test_a_result_still_shows_after_the_nodes_it_loaded_are_removed(loom, tmp_path):
    result = loom.query("rotated refresh token", budget=400, mode="fused")
    first = result.loaded[0]
    title = loom.graph.node(first).title
    loom.graph.remove(first)
    assert result.decision(first).title == title and first in str(result)
    assert escape(title) in result._repr_html_()
    assert result.contributions_figure() is not None and first in [i.node_id for i in result.pack().items]
    view = loom.graph_view(result, clusters=False)
    assert "loaded" in str(view) and view.html()
    assert loom.graph_view(result, clusters=True).html()
    assert loom.export_report(result, tmp_path / "report.html").stat().st_size > 0


def test_the_budget_bar_adds_up_to_the_window_and_leaves_out_empty_zones(loom):
    result = loom.query("rotated refresh token", window=2000, mode="fused")
    fig = budget_figure(result)
    assert sum(bar.x[0] for bar in fig.data) == 2000  # every token of the window is accounted for
    names = [bar.name for bar in fig.data]
    assert names[-2:] == ["context used", "context unused"] or "context unused" not in names
    assert dict(zip(names, (b.marker.color for b in fig.data))).get("context unused", "#e3e3e3") == "#e3e3e3"
    explicit = budget_figure(loom.query("rotated refresh token", budget=500, mode="fused"))
    assert sum(bar.x[0] for bar in explicit.data) == 500
    assert [bar.name for bar in explicit.data] in (["context used", "context unused"], ["context used"])


def test_chart_labels_show_markup_in_titles_as_text(loom):
    loom.add("<b>bold</b> <a href='x'>link</a> about a rotated refresh token")
    result = loom.query("rotated refresh token", budget=400, mode="fused")
    labels = [y for bar in contributions_figure(result).data for y in bar.y]
    assert any("&lt;b&gt;bold&lt;/b&gt;" in y for y in labels) and not any("<b>" in y for y in labels)


def test_histogram_and_map(loom):
    result = loom.query("rotated refresh token", budget=400, mode="fused")
    hist = score_histogram(result)
    assert sum(len(t.x) for t in hist.data) == 3
    fig = embedding_map(loom, result)
    points = sum(len(t.x) for t in fig.data)
    assert points == 3 + len(loom.graph.concept_vectors)
    html = fig.to_html(include_plotlyjs=False)
    assert "<script>alert" not in html


def test_sliders_rerank_and_redraw(loom):
    tuner = loom.tune("refresh token", budget=400)
    first = tuner.result.table[0].node_id
    before = tuner.table.value
    for name, slider in tuner.sliders.items():  # everything off but provenance: analysis wins
        slider.value = 1.0 if name == "provenance" else 0.0
    assert tuner.result.ranking.weights.provenance > 0 and tuner.result.ranking.weights.semantic == 0
    assert tuner.result.table[0].type == "analysis"
    assert tuner.table.value != before
    tuner.floor.value = 0.0  # every node reaches a floor of zero
    assert tuner.result.packed.relevant_count == 3
    tuner.floor.value = 0.8  # only lexical matches stay relevant; the theme note has none
    css = next(r for r in tuner.result.table if r.title.startswith("Dark theme"))
    assert css.decision == "excluded" and tuner.result.packed.relevant_count < 3
    assert loom.graph.config.relevance_floor == LoomConfig().relevance_floor  # the session is untouched
    assert first in [r.node_id for r in tuner.result.table]


def test_the_tuner_starts_at_what_a_plain_query_returns_and_marks_what_a_move_changed(loom):
    tuner = loom.tune("refresh token", budget=400)
    plain = loom.query("refresh token", budget=400)
    assert [(r.node_id, r.decision) for r in tuner.result.rows(10)] == [(r.node_id, r.decision) for r in plain.rows(10)]
    assert "class='changed'" not in tuner.top.value  # nothing moved yet
    first = tuner.result.rows(1)[0].node_id
    tuner.sliders["semantic"].value = 1.0  # one move: the second note (more alike in words) comes first
    assert tuner.result.rows(2)[1].node_id == first
    rows = re.findall(r"<tr class='(changed|same)'[^>]*><td class='n'>(\d+)</td><td class='n'[^>]*>([^<]*)</td>", tuner.top.value)
    assert [int(rank) for _, rank, _ in rows] == [r.rank for r in tuner.result.rows(len(rows))]
    assert [(kind, arrow) for kind, _, arrow in rows[:2]] == [("changed", "▲1"), ("changed", "▼1")]
    assert "Δ score" in tuner.top.value and "#fff3c4" in tuner.top.value


@pytest.mark.parametrize("size", [{"budget": 50000}, {"budget": 100}, {"budget": 0}, {"window": 8192}])
def test_the_first_draw_is_loom_query_for_any_budget_or_window_the_sliders_do_not_reach(loom, size):
    """The budget slider spans 200-32,000; a budget outside it, or a window, is still what the
    first draw ranks and packs with, as loom.query does with it."""
    tuner = loom.tune("refresh token", **size)
    plain = loom.query("refresh token", **size)
    assert tuner.result.packed.budget.context == plain.packed.budget.context
    assert tuner.result.loaded == plain.loaded


def test_the_tuner_keeps_a_threshold_below_its_slider_and_takes_a_mode_in_capitals(loom):
    loom.apply_threshold(0.2)
    tuner = loom.tune("refresh token", budget=400, mode="FUSED")
    assert tuner.threshold.value == 0.2 and tuner.apply.disabled  # nothing moved, nothing to apply
    assert tuner.mode.value == "fused"
    with pytest.raises(LoomError, match="mode must be one of auto, bare, fast, fused"):
        loom.tune("refresh token", mode="turbo")


def test_every_weight_at_zero_says_so_instead_of_raising(loom):
    tuner = loom.tune("refresh token", budget=400)
    for slider in tuner.sliders.values():
        slider.value = 0.0
    assert "Every weight is zero: raise one." in tuner.top.value and tuner.result is None
    assert "no ranking" in tuner.snapshot()._repr_html_()
    with pytest.raises(LoomError, match="every weight slider is at zero"):
        tuner.config()
    bundle = tuner._repr_mimebundle_(include=["text/plain"])
    assert list(bundle) == ["text/plain"]


def test_for_a_question_the_density_slider_is_the_weight_that_question_gets(loom):
    question = "how is the refresh token rotated?"
    tuner = loom.tune(question, budget=400)
    plain = loom.query(question, budget=400)
    density = LoomConfig().question_density
    assert tuner.sliders["density"].value == density == plain.ranking.weights.density > 0
    assert tuner.result.ranking.weights == plain.ranking.weights
    tuner.sliders["density"].value = 0.0  # off for this message: no row's score reads density now
    assert tuner.result.ranking.weights.density == 0 and not tuner.result.ranking.contributions[:, SIGNALS.index("density")].any()
    kept = tuner.config()
    assert kept.question_density == 0.0 and kept.weights.density == 0.0
    tuner.sliders["density"].value = 0.5
    assert tuner.config().question_density == 0.5 and tuner.config().weights.density == loom.graph.config.weights.density
    assert tuner.result.ranking.weights.density == 0.5
    subject = loom.tune("Rotate the refresh token", budget=400)  # a commit subject: the slider is weights.density
    assert subject.sliders["density"].value == loom.graph.config.weights.density == 0
    tuner.reset()
    assert tuner.sliders["density"].value == density


def test_reset_goes_back_to_the_session_settings_in_one_rerank(loom, monkeypatch):
    tuner = loom.tune("refresh token", budget=400)
    start = [r.node_id for r in tuner.result.rows(3)]
    tuner.sliders["semantic"].value = 0.0
    tuner.floor.value = 0.5
    tuner.budget.value = 1000
    calls = []
    real = loom.query
    monkeypatch.setattr(loom, "query", lambda *a, **k: (calls.append(1), real(*a, **k))[1])
    tuner.reset()
    assert len(calls) == 1
    assert tuner.sliders["semantic"].value == loom.graph.config.weights.semantic and tuner.budget.value == 400
    assert [r.node_id for r in tuner.result.rows(3)] == start


def test_copy_as_loomconfig_gives_code_that_rebuilds_the_tuned_config(loom):
    from loom_nb import Weights

    loom.graph.config = loom.graph.config.with_(output_reservation=0.25)  # a session with its own setting
    tuner = loom.tune("refresh token", budget=400)
    tuner.sliders["terms"].value = 0.9
    tuner.floor.value = 0.3
    assert tuner.code.layout.display == "none"
    tuner.copy_button.click()
    assert tuner.code.layout.display is None and tuner.code.value == tuner.config_code()
    rebuilt = eval(tuner.code.value, {"LoomConfig": LoomConfig, "Weights": Weights})
    assert rebuilt == tuner.config() and rebuilt.weights.terms == 0.9 and rebuilt.relevance_floor == 0.3
    assert rebuilt.output_reservation == 0.25  # what differs from the defaults is kept
    assert loom.graph.config.weights.terms != 0.9  # the session is untouched until the user keeps it
    tuner.sliders["terms"].value = 0.7  # the shown code follows the sliders
    assert "terms=0.7" in tuner.code.value


def test_the_tuner_table_escapes_titles(loom):
    loom.add("<b>bold</b><img src=x onerror=alert(1)> about the refresh token")
    tuner = loom.tune("refresh token", budget=400)
    assert "<img" not in tuner.top.value and "&lt;img src=x" in tuner.top.value


def _topics_loom() -> Loom:
    """Three topics of 8 notes, rebuilt into concepts of about 4: each topic in halves, which
    a lower threshold merges."""
    from test_concepts import TOPICS, clustered

    vectors, labels = clustered(8)
    words = list(TOPICS.values())
    texts = [f"{words[label]} alpha note {k}" for k, label in enumerate(labels)]
    table = dict(zip(texts, vectors.tolist())) | {"alpha": vectors[0].tolist()}  # the query
    loom = Loom(embedder=TableEmbedder(table), config=LoomConfig(concept_threshold=0.99))
    for text in texts:
        loom.add(text)
    loom.rebuild_concepts(target_size=4)
    return loom


def test_the_threshold_slider_previews_and_its_button_relinks():
    pytest.importorskip("ipywidgets")
    loom = _topics_loom()
    tuner = loom.tune("alpha", budget=400)
    assert tuner.apply.disabled  # the slider is at the session's threshold
    tuner.threshold.value = 0.3
    assert "merge" in tuner.preview.value and not tuner.apply.disabled
    assert loom.graph.concept_threshold != 0.3  # previewing changes nothing
    before = loom.graph.counts()["concepts"]
    tuner.apply.click()
    assert loom.graph.concept_threshold == 0.3
    assert loom.graph.counts()["concepts"] < before
    assert "Applied:" in tuner.preview.value and tuner.apply.disabled


def test_budget_curves_draw_one_line_per_strategy_and_metric(tmp_path):
    from loom_nb.evaluation.run import evaluate, load_cases
    from loom_nb.views.figures import budget_curves

    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "tokens.py").write_text("def refresh_token(store):\n    '''Rotate the refresh token.'''\n    return store\n")
    (ws / "theme.md").write_text("# Theme\n\nDark colours live in theme.css.\n")
    (tmp_path / "cases.jsonl").write_text(
        '{"id": "a", "query": "how is the refresh token rotated?", "workspace": "ws", "gold_files": ["tokens.py"], "gold_ranges": {"tokens.py": [[1, 3]]}}\n'
    )
    cases, errors = load_cases(tmp_path / "cases.jsonl")
    assert not errors
    reports = {b: evaluate(cases, budget=b, strategies=("loom", "bm25-chunks"), embedder=HashingEmbedder(), cache_dir=tmp_path / "cache") for b in (200, 400)}
    fig = budget_curves(reports)
    assert len(fig.data) == 4  # 2 strategies × 2 metrics
    loom_line = next(t for t in fig.data if t.name == "loom" and t.xaxis == "x")
    assert list(loom_line.x) == [200, 400] and all(0 <= v <= 1 for v in loom_line.y)


# -- the views of every object: text and escaped HTML, stable, no memory addresses ----------------

HOSTILE = "<script>alert('x')</script><img src=x onerror=alert(1)> refresh tokens rotate"
ADDRESS = re.compile(r" at 0x[0-9a-f]+|<[\w.]+ object at")


@pytest.fixture
def pair():
    """Two content nodes at 30° (cosine 0.866) with a threshold of 0.99: two concepts, one
    concept edge between them; the first is hostile text."""
    table = {HOSTILE: unit(0), "Refresh tokens are single use.": unit(30), "refresh": unit(10),
             "Another note.": unit(90), "More text.": unit(120)}
    loom = Loom(embedder=TableEmbedder(table), config=LoomConfig(concept_threshold=0.99))
    loom.add(HOSTILE, type="analysis", source="model", reason=HOSTILE)
    loom.add("Refresh tokens are single use.")
    return loom


def bundle_of(obj) -> dict:
    b = obj._repr_mimebundle_()
    assert set(b) >= {"text/plain", "text/html"}
    return b


def assert_escaped(html: str) -> None:
    assert "<script>" not in html and "<img" not in html
    assert "&lt;script&gt;alert(" in html


def test_concept_view_lists_its_content_and_neighbour_concepts(pair):
    c1, c2 = [c.id for c in pair.graph.concept_nodes()]
    view = pair.view(c1)
    assert isinstance(view, NodeView) and view.kind == "concept"
    text = str(view)
    assert text.startswith(f"Concept {c1}: ")
    assert re.search(r"n1\s+1\.000", text)  # its founder, linked at cosine 1
    assert re.search(rf"{c2}\s+0\.866", text)  # the neighbour concept and its cosine
    html = bundle_of(view)["text/html"]
    assert "Neighbour concepts" in html and "0.866" in html and ">n1<" in html
    assert_escaped(html)


def test_content_view_shows_concepts_provenance_and_staleness(pair):
    pair.graph.advance_turn(8)  # one half-life since the nodes were made
    text = str(pair.view("n2"))
    assert "staleness 0.50: last used at turn 0, now turn 8" in text
    assert re.search(r"concepts: c\d+ .*\(1\.000\)", text)
    assert "provenance: user (input)" in text
    assert "text: stored in the session" in text
    html = bundle_of(pair.view("n1"))["text/html"]
    assert "model (output)" in html or "model (input)" in html
    assert "0.500" in html  # the staleness meter
    assert_escaped(html)


def test_content_view_says_when_a_reference_is_stale(tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "tokens.py").write_text("def refresh(store):\n    '''Rotate the refresh token.'''\n    return store\n")
    loom = Loom(tmp_path / "s", embedder=HashingEmbedder())
    loom.index(ws, progress=False)
    node = next(n for n in loom.graph.content_nodes() if n.reference is not None)
    assert "text: fresh" in str(loom.view(node.id))
    (ws / "tokens.py").write_text("def renamed(store):\n    return store\n")
    text = str(loom.view(node.id))
    assert "text: stale:" in text and "reference: tokens.py:" in text
    assert "stale:" in bundle_of(loom.view(node.id))["text/html"]


def test_session_view_counts_concepts_and_largest_nodes(pair):
    b = bundle_of(pair)
    assert "2 concepts, 2 content nodes" in b["text/plain"]
    assert "content by type: analysis 1, input 1" in b["text/plain"]
    assert "Largest content nodes" in b["text/html"] and "Concepts with the most content" in b["text/html"]
    assert_escaped(b["text/html"])


def test_classification_view_shows_verdict_segments_and_reasons():
    from loom_nb import classify

    c = classify(f"Why is this rejected?\n{HOSTILE}\n" + "2026-11-20 10:00:01 ERROR auth refresh=invalid_grant\n" * 4)
    b = bundle_of(c)
    assert b["text/plain"] == str(c)
    html = b["text/html"]
    assert f"<b>{c.kind}</b>" in html and "Reasons" in html and "Segments" in html
    for reason in c.reasons:
        assert __import__("html").escape(reason) in html
    assert_escaped(html)


def test_result_and_tuner_snapshot_views_are_escaped(pair):
    result = pair.query("refresh", budget=300, mode="fused")
    assert_escaped(bundle_of(result)["text/html"])
    tuner = pair.tune("refresh", budget=300)
    snap = tuner.snapshot()
    assert isinstance(snap, TunerSnapshot)
    assert f"semantic {pair.graph.config.weights.semantic:.2f}" in str(snap) and "budget 300" in str(snap)
    assert_escaped(bundle_of(snap)["text/html"])
    assert str(tuner) == str(snap)


def test_graph_view_bundle_has_text_and_escaped_html(pair):
    pytest.importorskip("pyvis")
    b = bundle_of(pair.graph_view())
    assert b["text/plain"].startswith("Graph: 2 concepts, 2 content nodes")
    assert "<script>alert(" not in b["text/html"]


def test_views_render_the_same_twice_and_never_show_addresses(pair):
    result = pair.query("refresh", budget=300, mode="fused")
    objects = [pair, pair.view("n1"), pair.view("c1"), result, result.classification, pair.add("Another note."),
               pair.tune("refresh", budget=300).snapshot()]
    for obj in objects:
        first, second = obj._repr_mimebundle_(), obj._repr_mimebundle_()
        if obj is not result:  # a result's text carries its timing
            assert first == second
        for value in (first["text/plain"], first["text/html"], repr(obj), str(obj)):
            assert not ADDRESS.search(value), (type(obj).__name__, value[:200])


def test_public_objects_print_readable_text(pair, tmp_path):
    """Every public object reads in a terminal: no default ``<X object at 0x…>``."""
    import loom_nb

    result = pair.query("refresh", budget=300, mode="fused")
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "a.py").write_text("def f():\n    return 1\n")
    code = Loom(tmp_path / "s", embedder=HashingEmbedder())
    objects = [
        pair, pair.graph, code.embedder, HashingEmbedder(), LoomConfig(), LoomConfig().weights, result, result.classification,
        result.budget, result.mode, result.ranking, result.table[0], result.window, pair.add("More text."),
        pair.graph.node("n1"), pair.graph.node("c1"), pair.graph.node("n1").provenance, pair.view("n1"),
        pair.tune("refresh", budget=300), pair.graph_view(), code.index(ws, progress=False), loom_nb.context_window("llama3.1"),
    ]
    for obj in objects:
        for text in (str(obj), repr(obj)):
            assert text and not ADDRESS.search(text), (type(obj).__name__, text[:200])


def test_concept_view_shows_its_distinctive_terms_and_strongest_members():
    from test_concepts import TOPICS

    loom = _topics_loom()
    for cid in loom.graph.concept_vectors.ids:
        member = loom.graph.text(loom.graph.content_of(cid)[0][0])
        words = next(words.split() for words in TOPICS.values() if member.startswith(words))
        text = str(loom.view(cid))
        terms = [t.split(" (")[0] for t in re.search(r"distinctive terms: (.*)", text).group(1).split(", ")]
        assert set(terms[:3]) <= set(words)  # "alpha" and "note" are in every note: never distinctive
        assert re.search(r"content \(\d+ nodes, \d+ of them with this as their strongest concept", text)
        assert "distinctive terms" in bundle_of(loom.view(cid))["text/html"]


def test_the_decision_table_reads_like_pandas_under_jupyterlabs_css(tmp_path):
    """Text left, numbers right, even under JupyterLab's right-aligning rule (copied here),
    a row count when rows are left out, and excluded rows folded."""
    from browser import browser_page

    from loom_nb.views.html import SHOWN_ROWS, result_html

    loom = Loom(embedder=HashingEmbedder(64))
    for k in range(SHOWN_ROWS + 20):
        loom.add(f"Note {k} about the refresh token rotation schedule, part {k}." if k % 2 else f"Unrelated gardening diary, entry {k}.")
    result = loom.query("refresh token rotation", budget=300)
    body = result_html(result)
    assert f"showing {SHOWN_ROWS} of {SHOWN_ROWS + 20} nodes" in body
    jupyterlab = ".jp-RenderedHTMLCommon td, .jp-RenderedHTMLCommon th {text-align: right; padding: 0.5em}"
    page_file = tmp_path / "table.html"
    page_file.write_text(f"<html><head><style>{jupyterlab}</style></head><body><div class='jp-RenderedHTMLCommon'>{body}</div></body></html>")
    with browser_page() as page:
        page.goto(page_file.as_uri())
        align = page.evaluate("""() => {
            const row = document.querySelector('table.loom-t tbody tr');
            return [...row.children].map(td => getComputedStyle(td).textAlign);
        }""")
        assert align[:6] == ["right", "left", "left", "left", "right", "right"]  # #, node, title, type, tokens, score
        folded = page.evaluate("document.querySelector('details') ? document.querySelector('details').open : null")
        assert folded is False  # the excluded rows are there, folded
