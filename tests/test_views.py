"""plotly figures and the weight sliders, outside a notebook (no front end needed)."""

import numpy as np
import pytest

from conftest import unit
from loom_nb import SIGNALS, HashingEmbedder, Loom, LoomConfig, LoomGraph
from loom_nb.views.figures import budget_figure, contributions_figure, embedding_map, score_histogram
from loom_nb.views.widgets import threshold_preview


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


def test_budget_waterfall_ends_at_zero(loom):
    result = loom.query("rotated refresh token", window=2000, mode="fused")
    fig = budget_figure(result)
    y = list(fig.data[0].y)
    assert y[0] == 2000 and sum(y) == 0  # every zone is taken from the window
    explicit = budget_figure(loom.query("rotated refresh token", budget=500, mode="fused"))
    assert explicit.data[0].y[0] == 500 and sum(explicit.data[0].y) == 0


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


def test_threshold_preview_counts_merges_and_splits():
    g = LoomGraph(LoomConfig(concept_threshold=0.99), embedding_model="toy")
    g.add_content("a", np.array(unit(0)))
    g.add_content("b", np.array(unit(30)))   # cos 30° = 0.866 to a
    g.add_content("c", np.array(unit(100)))

    class Holder:
        graph = g

    text = threshold_preview(Holder, 0.8)
    assert "1 concept pair(s) at or above it" in text and "0.866" in text
    assert "0 of 3 content links are below it" in threshold_preview(Holder, 0.5)
    assert "3 of 3 content links are below it" in threshold_preview(Holder, 1.01)


def test_budget_curves_draw_one_line_per_strategy_and_metric(tmp_path):
    from loom_nb.evaluate import evaluate, load_cases
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
