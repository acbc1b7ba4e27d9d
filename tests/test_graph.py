"""Threshold linking (seed 000 §4.3) on vectors whose cosines are known by construction."""

import numpy as np
import pytest

from conftest import unit
from loom_nb import EmbeddingMismatchError, LoomConfig, LoomGraph, extractive_name
from loom_nb.core.errors import LoomError, UnknownNodeError


def make_graph(threshold=0.8):
    return LoomGraph(LoomConfig(concept_threshold=threshold), embedding_model="toy")


def v(angle):
    return np.array(unit(angle))


def test_first_content_creates_a_concept():
    g = make_graph()
    node, report = g.add_content("OAuth tokens expire hourly.", v(0))
    assert report.created == "c1"
    assert report.linked == [("c1", 1.0)]
    assert report.near_miss is None
    assert g.concepts_of(node.id) == [("c1", 1.0)]
    assert g.node("c1").name and g.node("c1").description == "OAuth tokens expire hourly."
    assert g.node("c1").origin == node.id


def test_links_to_every_concept_at_or_above_threshold_and_records_the_near_miss():
    g = make_graph(0.8)
    g.add_content("a", v(0))     # c1 at 0°
    g.add_content("b", v(70))    # cos 70° = 0.342 < 0.8 → c2 at 70°
    g.add_content("c", v(140))   # c3 at 140°
    # 35°: cos(35°)=0.819 to both c1 and c2 → linked to both; c3 at 105° is the near miss
    node, report = g.add_content("d", v(35))
    assert report.created is None
    assert [cid for cid, _ in report.linked] == ["c1", "c2"]
    assert [round(s, 3) for _, s in report.linked] == [0.819, 0.819]
    assert report.near_miss[0] == "c3"
    assert report.near_miss[1] == pytest.approx(np.cos(np.radians(105)), abs=1e-6)
    # many-to-many: c1 now has two content nodes
    assert len(g.content_of("c1")) == 2


def test_below_threshold_creates_a_concept_and_keeps_the_best_miss():
    g = make_graph(0.8)
    g.add_content("a", v(0))
    node, report = g.add_content("b", v(40))  # cos 40° = 0.766
    assert report.created == "c2"
    assert report.near_miss == ("c1", pytest.approx(0.766, abs=1e-3))


def test_threshold_is_inclusive():
    g = make_graph(0.5)
    g.add_content("a", v(0))
    _, report = g.add_content("b", np.array([0.5, np.sqrt(0.75)]))  # cosine exactly 0.5
    assert report.created is None and report.linked[0][0] == "c1"


def test_concept_edges_carry_cosine_and_respect_the_floor():
    g = LoomGraph(LoomConfig(concept_threshold=0.95, concept_edge_min=0.5), embedding_model="toy")
    g.add_content("a", v(0))
    g.add_content("b", v(50))   # cos 50° = 0.643 ≥ 0.5 → edge c1–c2
    g.add_content("c", v(120))  # cos 70° to c2 = 0.342, cos 120° to c1 < 0: no edges
    assert g.related_concepts("c2") == [("c1", pytest.approx(0.643, abs=1e-3))]
    assert g.related_concepts("c3") == []


def test_link_edges_carry_direction_and_timestamp():
    from loom_nb import Provenance

    g = make_graph()
    node, _ = g.add_content("answer", v(0), type="output", provenance=Provenance("model", "answer to turn 1", "output"))
    data = g.nx.edges[node.id, "c1"]
    assert data["kind"] == "link" and data["direction"] == "output" and data["created"]


def test_dimension_mismatch_is_refused():
    g = make_graph()
    g.add_content("a", v(0))
    with pytest.raises(EmbeddingMismatchError):
        g.add_content("b", np.ones(3))


def test_remove_drops_orphan_concepts():
    g = make_graph()
    a, _ = g.add_content("a", v(0))
    b, _ = g.add_content("b", v(10))  # links to c1
    c, _ = g.add_content("c", v(90))  # creates c2
    g.remove(c.id)
    assert "c2" not in g and g.counts() == {"concepts": 1, "content": 2, "edges": 2}
    g.remove(a.id)
    assert "c1" in g  # still has b
    with pytest.raises(UnknownNodeError):
        g.node(a.id)


def test_invalid_content_type_and_concept_text():
    g = make_graph()
    with pytest.raises(ValueError):
        g.add_content("x", v(0), type="poem")
    g.add_content("x", v(0))
    with pytest.raises(LoomError):
        g.text("c1")


def test_extractive_name():
    name, description = extractive_name("OAuth tokens expire. The OAuth refresh flow renews tokens.")
    assert name == "oauth tokens expire"
    assert description == "OAuth tokens expire."
    assert extractive_name("") == ("untitled", "untitled")


def test_arrays_are_cached_until_a_change():
    g = make_graph()
    g.add_content("a", v(0))
    first = g.arrays()
    assert g.arrays() is first
    g.add_content("b", v(90))
    second = g.arrays()
    assert second is not first and len(second.content_ids) == 2
    assert second.link_content.tolist() == [0, 1] and second.link_concept.tolist() == [0, 1]


def test_ollama_namer_writes_names_and_falls_back():
    from ollama_standin import StandIn

    from loom_nb import OllamaNamer

    with StandIn(models=["llama3.2"]) as server:
        namer = OllamaNamer("llama3.2", host=server.host)
        assert namer("Refresh tokens rotate on every use.") == ("token rotation", "How refresh tokens are rotated.")
        server.generate_response = "not json"
        assert namer("Refresh tokens rotate on every use.") == extractive_name("Refresh tokens rotate on every use.")
        g = LoomGraph(embedding_model="toy", namer=OllamaNamer("missing-model", host=server.host))
        g.add_content("Refresh tokens rotate.", v(0))
        assert g.node("c1").name == extractive_name("Refresh tokens rotate.")[0]


def test_rows_stay_aligned_through_adds_removes_and_a_round_trip(tmp_path):
    """Vectors, token counts, paths, lexical postings and edges are kept by row; removing a
    node moves the last row into the hole. Check every row agrees after random edits."""
    import random

    from loom_nb import rank
    from loom_nb.core.store import load_graph, save_graph

    rnd = random.Random(7)
    g = LoomGraph(LoomConfig(concept_threshold=0.95), embedding_model="toy")
    alive: dict[str, tuple[str, int]] = {}
    for step in range(120):
        if alive and rnd.random() < 0.35:
            victim = rnd.choice(sorted(alive))
            g.remove(victim)
            del alive[victim]
        else:
            k = rnd.randrange(1000)
            word = f"word{k}"
            node, _ = g.add_content(f"{word} text", np.array(unit(rnd.uniform(0, 360), 3)), tokens=k + 1,
                                    meta={"path": f"f{k}.py"}, fields={"path": f"f{k}.py", "content": f"{word} text"})
            alive[node.id] = (word, k)
        if step % 40 == 39:  # a round trip in the middle of the edits
            save_graph(g, tmp_path / f"s{step}")
            g, _ = load_graph(tmp_path / f"s{step}")
    a = g.arrays()
    assert sorted(a.content_ids) == sorted(alive)
    for row, node_id in enumerate(a.content_ids):
        word, k = alive[node_id]
        assert a.tokens[row] == k + 1 and a.paths[row] == f"f{k}.py"
        hits = g.lexical.score(word, len(a.content_ids))
        assert hits[row] > 0, (node_id, word)
    for c, k in zip(a.link_content, a.link_concept):  # every link joins a live node to a live concept
        assert g.nx.has_edge(a.content_ids[c], a.concept_ids[k])
    r = rank(g, np.array(unit(0, 3)), query="word1 word2")
    assert len(r) == len(alive)


def test_the_networkx_graph_is_a_read_only_view_that_says_what_to_call():
    import networkx as nx

    g = make_graph(0.8)
    g.add_content("a", v(0))
    g.add_content("b", v(10))
    view = g.nx
    assert set(view.nodes) == {"n1", "n2", "c1"}
    assert nx.shortest_path(view, "n1", "n2") == ["n1", "c1", "n2"]  # networkx algorithms run on it directly
    assert nx.degree_centrality(view)["c1"] == 1.0
    ranks = nx.pagerank(view)  # scipy-backed in networkx 3
    assert max(ranks, key=ranks.get) == "c1" and abs(sum(ranks.values()) - 1.0) < 1e-9  # the hub ranks first
    attribute_edits = (lambda: view.nodes["n1"].clear(), lambda: nx.set_node_attributes(view, "x", "kind"),
                       lambda: nx.set_edge_attributes(view, 1.0, "weight"), lambda: view.adj["n1"]["c1"].pop("kind"))
    for edit in (lambda: view.remove_node("n2"), lambda: view.add_edge("n1", "n2"), lambda: view.clear(), *attribute_edits):
        with pytest.raises(LoomError, match="read-only view.*LoomGraph.remove"):
            edit()
    assert set(g.nx.nodes) == {"n1", "n2", "c1"}  # nothing changed
    assert g.nx.nodes["n1"]["kind"] == "content" and g.nx.edges["n1", "c1"]["kind"] == "link"
    copy = view.copy()  # networkx's own copy is a plain, editable graph
    copy.nodes["n1"]["note"] = "mine"
    assert "note" not in g.nx.nodes["n1"]


def test_a_concept_name_is_clipped_however_long_its_words_are():
    from loom_nb.core.concepts import rebuild_concepts
    from loom_nb.core.graph import NAME_CHARS, NAME_TERM_CHARS, ConceptSpec

    g = make_graph(0.8)
    g.add_content("x" * 5000, v(0))  # a pasted blob with no spaces is one word
    assert g.node("c1").name == "x" * (NAME_TERM_CHARS - 1) + "…"
    g.add_content("OAuth tokens expire. The OAuth refresh flow renews tokens.", v(90))
    assert g.node("c2").name == "oauth tokens expire"  # real names are as they were
    (new,) = g.replace_concepts(["c2"], [ConceptSpec("y " * 200, "d", np.array(v(90)), [("n2", 1.0)])])
    assert len(g.node(new).name) == NAME_CHARS and g.node(new).name.endswith("…")
    for k in range(6):
        g.add_content(("z" * 300 + " ") * 3 + f"note {k}", v(k))
    rebuild_concepts(g)
    assert all(len(c.name) <= NAME_CHARS and max(map(len, c.name.split())) <= NAME_TERM_CHARS for c in g.concept_nodes())


def test_to_networkx_writes_graphml_that_reads_back_when_text_has_control_characters():
    import io

    import networkx as nx

    g = make_graph(0.8)
    g.add_content("\x1b[31mERROR\x1b[0m token refresh failed\x00\x0c\n\x1b[33mWARN\x1b[0m\tretrying", v(0))
    assert "\x1b" in g.node("n1").title and "\x1b" in g.node("c1").description  # the node keeps what was pasted
    buffer = io.BytesIO()
    nx.write_graphml(g.to_networkx(), buffer)
    back = nx.read_graphml(io.BytesIO(buffer.getvalue()))
    assert back.nodes["n1"]["title"] == "\ufffd[31mERROR\ufffd[0m token refresh failed\ufffd"  # a form feed ends the line
    assert "\ufffd[33mWARN" in back.nodes["c1"]["description"]


def test_the_read_only_view_hands_out_nodes_and_a_graph_dict_that_refuse_edits():
    import copy
    import pickle

    from loom_nb.core.graph import ContentNode

    g = make_graph(0.8)
    g.add_content("OAuth tokens expire hourly.", v(0), meta={"defines": ["refresh"]})
    view = g.nx
    data = view.nodes["n1"]["data"]
    assert isinstance(data, ContentNode) and data == g.node("n1")  # reads as the node itself
    assert (data.type, data.tokens, data.provenance.source, data.meta["defines"]) == ("input", g.node("n1").tokens, "user", ("refresh",))
    edits = (lambda: setattr(data, "type", "no-such-type"), lambda: setattr(data, "tokens", 999_999),
             lambda: setattr(data.provenance, "source", "x"), lambda: data.meta.update(path="x"),
             lambda: view.graph.update(note="x"), lambda: view.graph.__setitem__("note", "x"),
             lambda: view.copy().nodes["n1"]["data"].__setattr__("title", "x"))
    for edit in edits:
        with pytest.raises(LoomError, match="read-only view.*LoomGraph.remove"):
            edit()
    assert (g.node("n1").type, g.node("n1").meta, g._graph().graph) == ("input", {"defines": ["refresh"]}, {})
    assert int(g.arrays().tokens[0]) == g.node("n1").tokens
    assert copy.deepcopy(data) == g.node("n1") and pickle.loads(pickle.dumps(data)) == g.node("n1")
    assert view.to_directed().nodes["n1"]["data"].title == g.node("n1").title  # networkx's copies still work


def test_to_networkx_exports_plain_values_to_json_and_graphml(tmp_path):
    import io
    import json

    import networkx as nx

    g = make_graph(0.8)
    g.add_content("a", v(0), meta={"path": "a.py"})
    g.add_content("b", v(10), meta={"path": "b.py"})
    g.add_structure("n1", "n2", "imports")
    plain = g.to_networkx()
    data = json.loads(json.dumps(nx.node_link_data(plain, edges="links")))
    back = nx.node_link_graph(data, edges="links")
    assert nx.utils.graphs_equal(back, plain)  # the round trip through JSON loses nothing
    assert back.nodes["n1"]["kind"] == "content" and back.nodes["c1"]["kind"] == "concept"
    assert back.edges["n1", "n2"] == {"kind": "imports", "weight": 1.0, "from": "n1", "to": "n2"}
    buffer = io.BytesIO()
    nx.write_graphml(plain, buffer)
    assert set(nx.read_graphml(io.BytesIO(buffer.getvalue())).nodes) == {"n1", "n2", "c1"}
    plain.remove_node("n2")  # the copy is the user's own
    assert "n2" in g


def test_replace_structure_keeps_one_edge_per_pair_and_touches_only_the_difference():
    g = make_graph(0.8)
    for name, angle in (("a", 0), ("b", 10), ("c", 20), ("d", 30)):
        g.add_content(name, v(angle), meta={"path": f"{name}.py"})
    g.add_structure("n1", "n2", "imports")
    g.add_structure("n2", "n3", "references")
    kept = g._graph().edges["n1", "n2"]  # networkx's attribute dict of the edge
    g.add_content("what c says, in short", v(25), summary_of="n3")  # n5: a summary edge joins n5 and n3
    n = g.replace_structure([
        ("n1", "n2", "imports"),       # unchanged
        ("n2", "n1", "references"),    # the same pair again: the first one given stays
        ("n3", "n3", "references"),    # to itself: none
        ("n3", "n5", "references"),    # the pair has a summary edge: none
        ("n1", "n9", "imports"),       # a node that is gone: none
        ("n4", "n1", "references"),    # new
    ])  # n2-n3 is not given: it goes
    assert n == 2 == g.structure_count
    assert g.structure_of("n1") == [("n2", "imports"), ("n4", "references")] and g.structure_of("n3") == []
    assert g._graph().edges["n1", "n2"] is kept  # an edge both sets share was not removed and added again
    assert g._graph().edges["n3", "n5"]["kind"] == "summarizes"
    with pytest.raises(ValueError, match="structure kind"):
        g.replace_structure([("n1", "n2", "calls")])
