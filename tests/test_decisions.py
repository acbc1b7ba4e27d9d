"""The decision graph: typed nodes and edges, rendering within a budget, storage."""

from __future__ import annotations

import json

import pytest

from loom_nb.chat.decisions import DECISIONS_FILE, EDGE_TYPES, NODE_TYPES, DecisionGraph
from loom_nb.core.errors import LoomError, SessionFormatError, UnknownNodeError
from loom_nb.core.tokens import count_tokens


def sample() -> tuple[DecisionGraph, dict[str, str]]:
    d = DecisionGraph()
    ids = {
        "goal": d.add("goal", "Stop refresh failures"),
        "old": d.add("decision", "Extend token lifetime", confidence=40),
        "new": d.add("decision", "Rotate refresh tokens", confidence=85),
        "opt": d.add("option", "Sliding expiry"),
        "obs": d.add("observation", "invalid_grant after gateway retry"),
        "rev": d.add("revisit", "Check clock skew on api-2"),
    }
    d.link(ids["new"], ids["old"], "supersedes", rationale="lifetime did not help")
    d.link(ids["new"], ids["opt"], "rejected", rationale="still replayable")
    d.link(ids["goal"], ids["new"], "leads_to")
    return d, ids


def test_ids_types_and_what_edges_do_to_status():
    d, ids = sample()
    assert list(d.nodes) == ["d1", "d2", "d3", "d4", "d5", "d6"]
    assert d.node(ids["old"]).status == "stale"  # superseded
    assert d.node(ids["opt"]).status == "rejected"
    assert d.node(ids["new"]).status == "active"
    g = d.nx
    assert g.number_of_nodes() == 6 and g.number_of_edges() == 3
    assert {t for _, _, t in g.edges(data="type")} == {"supersedes", "rejected", "leads_to"}
    assert set(NODE_TYPES) == {"goal", "decision", "option", "action", "outcome", "observation", "revisit"}
    assert set(EDGE_TYPES) == {"leads_to", "chosen", "rejected", "requires", "blocks", "enables", "supersedes"}


def test_render_puts_goals_then_live_decisions_and_drops_superseded_ones():
    d, _ = sample()
    text = d.render(500)
    assert text.splitlines()[0] == "## Active goals"
    assert "Rotate refresh tokens (confidence 85%)" in text
    assert "- [d2] Extend token lifetime" not in text  # stale: superseded by d3
    assert "  - replaces: Extend token lifetime (lifetime did not help)" in text
    assert "  - rejected: Sliding expiry (still replayable)" in text
    assert text.index("## Recent decisions") < text.index("## To revisit") < text.index("## Observations")


@pytest.mark.parametrize("budget", [0, 8, 20, 40, 80, 500])
def test_render_never_exceeds_its_budget_and_never_cuts_an_item(budget):
    d, _ = sample()
    text = d.render(budget)
    assert count_tokens(text) <= budget
    for line in text.splitlines():  # every line is a heading or a whole item line
        assert line.startswith(("## ", "- [", "  - "))


def test_bad_input_is_refused():
    d = DecisionGraph()
    with pytest.raises(LoomError, match="must be one of"):
        d.add("wish", "x")
    with pytest.raises(LoomError, match="needs a title"):
        d.add("goal", "  ")
    with pytest.raises(LoomError, match="percentage"):
        d.add("goal", "x", confidence=140)
    a = d.add("goal", "x")
    with pytest.raises(UnknownNodeError):
        d.link(a, "d99", "leads_to")
    with pytest.raises(LoomError, match="edge type"):
        d.link(a, a, "likes")
    with pytest.raises(LoomError, match="cannot leads_to itself"):
        d.link(a, a, "leads_to")


def test_round_trip_and_corrupt_files(tmp_path):
    d, ids = sample()
    d.turn = 3
    d.save(tmp_path)
    back = DecisionGraph.load(tmp_path)
    assert back.to_dict() == d.to_dict()
    assert DecisionGraph.load(tmp_path / "nowhere").nodes == {}
    path = tmp_path / DECISIONS_FILE
    for text, problem in [("{", "not valid JSON"), (json.dumps({"schema": "x"}), "not a loom-nb decision graph"),
                          (json.dumps({"schema": "loom-nb.decisions/1", "nodes": [{"id": "d1"}], "edges": []}), "malformed")]:
        path.write_text(text)
        with pytest.raises(SessionFormatError, match=problem):
            DecisionGraph.load(tmp_path)
        assert path.read_text() == text


def test_views_escape_and_print():
    d = DecisionGraph()
    d.add("goal", "<script>alert(1)</script>")
    bundle = d._repr_mimebundle_()
    assert "<script>" not in bundle["text/html"] and "&lt;script&gt;" in bundle["text/html"]
    assert bundle["text/plain"].startswith("DecisionGraph: 1 nodes, 0 edges")
