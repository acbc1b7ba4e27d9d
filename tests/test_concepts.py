"""The concept layer as topics (issue 15): neighbours, communities, names, merge and split,
the figures, and when indexing rebuilds. Vectors are built around known centres, so the
right partition is known."""

import json

import numpy as np
import pytest

from loom_nb import HashingEmbedder, Loom, LoomConfig, LoomGraph
from loom_nb.core.concepts import (
    ConceptQuality,
    communities,
    concept_quality,
    distinctive_terms,
    merge_candidates,
    merge_concepts,
    nearest_neighbours,
    rebuild_concepts,
    split_concept,
)
from loom_nb.core.config import CONCEPT_THRESHOLDS, DEFAULT_CONCEPT_THRESHOLD
from loom_nb.core.errors import LoomError
from loom_nb.core.store import load_graph, save_graph

TOPICS = {
    "auth": "oauth token refresh expiry bearer login",
    "dough": "flour water starter dough loaf oven",
    "git": "commit branch merge rebase remote diff",
}


def clustered(n_per: int = 10, dim: int = 24, spread: float = 0.08, seed: int = 0):
    """Unit vectors around one random centre per topic; labels in topic order."""
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(len(TOPICS), dim))
    vectors = np.repeat(centres, n_per, axis=0) + spread * rng.normal(size=(len(TOPICS) * n_per, dim))
    return vectors / np.linalg.norm(vectors, axis=1, keepdims=True), np.repeat(np.arange(len(TOPICS)), n_per)


def topic_graph(n_per: int = 10, config: LoomConfig | None = None) -> LoomGraph:
    vectors, labels = clustered(n_per)
    g = LoomGraph(config or LoomConfig(concept_threshold=0.99), embedding_model="toy")
    words = list(TOPICS.values())
    rng = np.random.default_rng(1)
    for k, (vector, label) in enumerate(zip(vectors, labels)):
        text = " ".join(rng.choice(words[label].split(), size=6)) + f" note {k}"
        g.add_content(text, vector, title=f"{list(TOPICS)[label]} {k}")
    return g


def members(g: LoomGraph, concept_id: str) -> set[str]:
    return {c for c, _ in g.content_of(concept_id)}


# -- neighbours and communities ---------------------------------------------------------------

@pytest.mark.parametrize("n, k", [(300, 5), (129, 10), (7, 10), (2, 3)])
def test_nearest_neighbours_match_brute_force(n, k):
    rng = np.random.default_rng(n)
    v = rng.normal(size=(n, 16)).astype(np.float32)
    idx, sims = nearest_neighbours(v, k, block=64)
    u = v / np.linalg.norm(v, axis=1, keepdims=True)
    s = u @ u.T
    np.fill_diagonal(s, -np.inf)
    k = min(k, n - 1)
    expected = np.sort(-np.sort(-s, axis=1)[:, :k], axis=1)
    assert idx.shape == (n, k)
    assert np.allclose(np.sort(sims, axis=1), expected, atol=1e-5)
    assert not (idx == np.arange(n)[:, None]).any()  # never its own neighbour


def test_nearest_neighbours_of_one_row_is_empty():
    idx, sims = nearest_neighbours(np.ones((1, 4)), 5)
    assert idx.shape == sims.shape == (1, 0)


def test_communities_find_the_planted_topics_and_are_seeded():
    vectors, truth = clustered(n_per=20)
    labels = communities(vectors, target_size=20)
    assert len(set(labels.tolist())) == 3
    for topic in range(3):
        assert len(set(labels[truth == topic].tolist())) == 1  # one topic, one community
    assert communities(vectors, target_size=20).tolist() == labels.tolist()


def test_communities_of_tiny_inputs():
    assert communities(np.zeros((0, 4))).tolist() == []
    assert communities(np.eye(3), target_size=12).tolist() == [0, 0, 0]


def test_distinctive_terms_skip_digits_and_single_letters():
    rows = np.array([0, 0, 0, 1, 1])
    terms = np.array([0, 1, 2, 0, 3])
    counts = np.array([9, 9, 1, 1, 2])
    vocab = ["x", "2024", "token", "crumb"]
    assert distinctive_terms(rows, terms, counts, np.array([0, 1]), vocab, top=2) == [["token"], ["crumb"]]


# -- the rebuild -------------------------------------------------------------------------------

def test_rebuild_makes_one_concept_per_topic_named_by_its_words():
    g = topic_graph(n_per=10)
    old_ids = set(g.concept_vectors.ids)
    structure = g.add_structure("n1", "n2", "imports")
    quality = rebuild_concepts(g, target_size=10)
    assert quality.concepts == 3
    assert quality.median_size == 10 and quality.largest == 10
    assert quality.separation > 0.5
    for cid in g.concept_vectors.ids:
        titles = {g.node(n).title.split()[0] for n in members(g, cid)}
        assert len(titles) == 1  # each concept is one topic
        topic = titles.pop()
        assert set(g.node(cid).name.split()) <= set(TOPICS[topic].split())  # named by its own words
    links = g.arrays().link_content
    assert sorted(links.tolist()) == list(range(30))  # every content node linked exactly once
    assert structure and g.structure_of("n1") == [("n2", "imports")]  # structure edges survive
    assert set(g.concept_vectors.ids).isdisjoint(old_ids)  # ids are never reused
    assert g.metadata["concepts"]["method"] == "communities"


def test_a_rebuilt_layer_saves_and_loads(tmp_path):
    g = topic_graph()
    rebuild_concepts(g, target_size=10)
    save_graph(g, tmp_path / "s")
    loaded, _ = load_graph(tmp_path / "s")
    assert loaded == g
    assert {c.name for c in loaded.concept_nodes()} == {c.name for c in g.concept_nodes()}
    assert loaded.metadata["concepts"] == g.metadata["concepts"]


def test_concept_quality_matches_the_pairwise_means():
    g = topic_graph(n_per=6)
    rebuild_concepts(g, target_size=6)
    q = concept_quality(g)
    a = g.arrays()
    label = np.empty(len(a.content_ids), int)
    label[a.link_content] = a.link_concept
    v = a.content_vectors / np.linalg.norm(a.content_vectors, axis=1, keepdims=True)
    s = v @ v.T
    same = label[:, None] == label[None, :]
    off = ~np.eye(len(label), dtype=bool)
    assert q.within == pytest.approx(s[same & off].mean(), abs=1e-5)
    assert q.between == pytest.approx(s[~same].mean(), abs=1e-5)
    assert q.per_thousand == pytest.approx(1000 * 3 / 18)
    assert "3 concepts for 18 content nodes" in str(q)


def test_quality_of_one_member_concepts_says_why_there_is_no_within_cosine():
    # a session built with add() links node by node: every concept had one member, and the
    # summary printed "cosine within nan (separation +nan)"
    q = ConceptQuality(content=12, concepts=12, median_size=1.0, largest=1, within=float("nan"), between=0.101)
    assert str(q).endswith("cosine: no concept has two members; between 0.101 (no separation to measure)")
    assert "nan" not in str(q) and "nan" not in q._repr_html_()
    assert q.as_dict()["within"] is None and q.as_dict()["separation"] is None
    json.dumps(q.as_dict(), allow_nan=False)  # JSON has no NaN
    assert "nan" not in str(concept_quality(topic_graph(n_per=0)))


def test_merge_then_split_gives_the_topics_back():
    g = topic_graph(n_per=8)
    rebuild_concepts(g, target_size=8)
    first, second = sorted(g.concept_vectors.ids, key=lambda c: min(members(g, c)))[:2]
    union = members(g, first) | members(g, second)
    merged = merge_concepts(g, first, second)
    assert first not in g and second not in g
    assert members(g, merged) == union
    parts = split_concept(g, merged, parts=2)
    assert len(parts) == 2 and merged not in g
    assert sorted(map(frozenset, (members(g, p) for p in parts)), key=min) == sorted(
        [frozenset(members_of_topic(g, union, t)) for t in ("auth", "dough", "git") if members_of_topic(g, union, t)], key=min)


def members_of_topic(g, ids, topic):
    return {n for n in ids if g.node(n).title.startswith(topic)}


def test_merge_and_split_refuse_what_they_cannot_do():
    g = topic_graph(n_per=4)
    rebuild_concepts(g, target_size=4)
    some = g.concept_vectors.ids[0]
    with pytest.raises(LoomError, match="not a concept"):
        merge_concepts(g, some, "n1")
    with pytest.raises(LoomError, match="too few"):
        split_concept(g, some, parts=3)
    before = (g.counts(), list(g.concept_vectors.ids))
    with pytest.raises(LoomError, match="two different concepts"):
        merge_concepts(g, some, some)  # it would only come back under a new id
    for parts in (0, 1, -3, 1.5, True, "2"):
        with pytest.raises(LoomError, match="at least 2"):
            split_concept(g, some, parts=parts)
    assert (g.counts(), list(g.concept_vectors.ids)) == before  # nothing changed


def test_merge_candidates_are_the_pairs_above_the_threshold():
    g = LoomGraph(LoomConfig(concept_threshold=0.95), embedding_model="toy")
    for angle in (0, 20, 90):  # three concepts: 0° and 20° are 0.94 apart, 90° far
        g.add_content(f"note {angle}", np.array([np.cos(np.radians(angle)), np.sin(np.radians(angle))]))
    assert merge_candidates(g) == []
    g.config = LoomConfig(concept_threshold=0.9)
    assert [(a, b) for a, b, _ in merge_candidates(g)] == [("c1", "c2")]


# -- the threshold and the indexer -------------------------------------------------------------

def test_the_threshold_is_calibrated_for_the_embedder_unless_configured():
    assert LoomGraph(embedding_model="all-MiniLM-L6-v2").concept_threshold == CONCEPT_THRESHOLDS["all-MiniLM-L6-v2"]
    assert LoomGraph(embedding_model="hashing-256").concept_threshold == CONCEPT_THRESHOLDS["hashing"]
    assert LoomGraph(embedding_model="someone-elses").concept_threshold == DEFAULT_CONCEPT_THRESHOLD
    assert LoomGraph(LoomConfig(concept_threshold=0.6), embedding_model="hashing-256").concept_threshold == 0.6
    with pytest.raises(ValueError, match="concept_size"):
        LoomConfig(concept_size=1)


def write_workspace(root, files: int):
    topics = list(TOPICS.values())
    for k in range(files):
        words = topics[k % 3].split()
        body = "\n\n".join(f"def {words[(k + j) % 6]}_{k}_{j}():\n    return '{' '.join(words)} {j}'" for j in range(4))
        (root / f"m{k:02d}.py").write_text(body + "\n")


def test_indexing_rebuilds_and_a_small_refresh_links_instead(tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    write_workspace(ws, 24)
    loom = Loom(embedder=HashingEmbedder())
    report = loom.index(ws, progress=False)
    g = loom.graph
    assert g.metadata["concepts"]["method"] == "communities"
    assert 1 < report.concepts < report.nodes_added / 3
    before = set(g.concept_vectors.ids)
    (ws / "m00.py").write_text((ws / "m00.py").read_text() + "\n\ndef extra():\n    return 'oauth token'\n")
    loom.index(ws, progress=False)  # one file of 24: linked by threshold, no rebuild
    assert before <= set(g.concept_vectors.ids)
    assert all(g.concepts_of(n.id) for n in g.content_nodes())  # every unit has a concept
    write_workspace(ws, 36)  # twelve new files: a rebuild
    loom.index(ws, progress=False)
    assert before.isdisjoint(g.concept_vectors.ids)


def test_a_loom_of_notes_rebuilds_its_concepts_on_request():
    loom = Loom(embedder=HashingEmbedder())
    rng = np.random.default_rng(3)
    for k in range(24):
        words = list(TOPICS.values())[k % 3].split()
        loom.add(" ".join(rng.choice(words, size=12)) + f". Note {k}.")
    linked = loom.concept_quality()
    rebuilt = loom.rebuild_concepts()
    assert rebuilt == loom.concept_quality()
    assert linked.concepts == 6  # linking at the hashing embedder's 0.45 split two topics
    assert (rebuilt.concepts, rebuilt.median_size) == (3, 8)  # one concept per topic
    for concept_id in loom.graph.concept_vectors.ids:
        assert len({int(n[1:]) % 3 for n in members(loom.graph, concept_id)}) == 1
    assert "concepts for 24 content nodes" in str(rebuilt)
    assert rebuilt._repr_mimebundle_(include=["text/plain"]) == {"text/plain": str(rebuilt)}


def test_a_unit_between_two_topics_links_to_both():
    g = LoomGraph(LoomConfig(concept_threshold=0.6), embedding_model="toy")
    rng = np.random.default_rng(5)
    for k in range(16):  # eight near each of two orthogonal axes
        v = np.zeros(8)
        v[k % 2] = 1.0
        g.add_content(f"note {k}", v + 0.05 * rng.normal(size=8))
    bridge, _ = g.add_content("between", np.array([1.0, 1.0, 0, 0, 0, 0, 0, 0]))
    rebuild_concepts(g, target_size=8)
    links = g.concepts_of(bridge.id)
    assert len(links) == 2 and all(0.6 <= w <= 0.8 for _, w in links)  # cos 45° ≈ 0.71 to each mean
    others = [n.id for n in g.content_nodes() if n.id != bridge.id]
    assert all(len(g.concepts_of(n)) == 1 for n in others)
    assert concept_quality(g).concepts == 2  # quality counts each unit once, in its strongest concept


def test_a_layer_of_an_older_version_is_rebuilt_on_the_next_index(tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    write_workspace(ws, 6)
    loom = Loom(embedder=HashingEmbedder())
    loom.index(ws, progress=False)
    before = set(loom.graph.concept_vectors.ids)
    loom.index(ws, progress=False)  # nothing changed: the layer stays
    assert set(loom.graph.concept_vectors.ids) == before
    loom.graph.metadata["concepts"]["version"] = 1  # as a session saved before the overlap links
    loom.index(ws, progress=False)
    assert before.isdisjoint(loom.graph.concept_vectors.ids)


@pytest.mark.parametrize("record", ["communities", {"method": 3}, {"method": "communities", "target_size": 0}])
def test_a_corrupt_concept_record_is_a_format_error_on_open(tmp_path, record):
    import json

    from loom_nb import SessionFormatError

    g = topic_graph(n_per=4)
    rebuild_concepts(g, target_size=4)
    save_graph(g, tmp_path / "s")
    path = tmp_path / "s" / "graph.json"
    data = json.loads(path.read_text())
    data["metadata"]["concepts"] = record
    path.write_text(json.dumps(data))
    with pytest.raises(SessionFormatError, match="concepts"):
        load_graph(tmp_path / "s")


def test_a_unit_links_to_at_most_three_concepts_besides_its_own():
    from loom_nb.core.concepts import MAX_OVERLAPS

    g = LoomGraph(LoomConfig(concept_threshold=0.3), embedding_model="toy")
    rng = np.random.default_rng(5)
    centres = rng.normal(size=(8, 16))
    for k in range(8 * 6):  # eight topics of six units
        g.add_content(f"unit {k}", centres[k % 8] + 0.05 * rng.normal(size=16), link=False)
    hub = g.add_content("hub", centres.mean(axis=0), link=False)[0].id  # near every topic's mean
    rebuild_concepts(g, target_size=6)
    assert len(g.concept_vectors) >= 5
    reach = (g.concept_vectors.matrix @ g.content_vectors.get(hub) >= 0.3).sum()
    assert reach > 1 + MAX_OVERLAPS  # it reaches more than it may link to
    sims = [s for _, s in g.concepts_of(hub)]
    assert len(sims) == 1 + MAX_OVERLAPS


def test_a_new_node_near_a_member_joins_its_topic_instead_of_founding_one():
    """Found re-indexing cobra after renaming one file: each of its units missed every topic's
    mean at the threshold and founded a concept of one member (77 → 80 concepts, and still 80
    after the rename was undone; a fresh index had 77). A topic is a mean of many vectors: a
    unit within the threshold of one of its members joins it."""
    g = LoomGraph(LoomConfig(concept_threshold=0.9), embedding_model="toy")
    angle = np.radians(40)
    for axis, offset in ((0, 2), (1, 8)):  # two topics of five, each member 40° off its axis
        for k in range(5):
            v = np.zeros(16)
            v[axis], v[offset + k] = np.cos(angle), np.sin(angle)
            g.add_content(f"topic {axis} member {k}", v, title=f"t{axis}m{k}")
    rebuild_concepts(g, target_size=5)
    assert len(g.concept_vectors) == 2
    member = next(n for n in g.content_nodes() if n.title == "t0m2")
    (topic, _), = g.concepts_of(member.id)
    near = g.content_vectors.matrix[g.content_vectors.index[member.id]].copy()
    near[15] = 0.2  # cos 0.98 to that member, 0.80 to its topic's mean
    near /= np.linalg.norm(near)
    assert float(near @ g.concept_vectors.matrix[g.concept_vectors.index[topic]]) < 0.9
    node, report = g.add_content("topic 0 member 2, renamed", near)
    assert report.created is None and report.linked == [(topic, pytest.approx(0.98, abs=0.005))]
    assert len(g.concept_vectors) == 2 and node.id in members(g, topic)
    far = np.zeros(16)
    far[14] = 1.0  # near no member of any topic: it still founds its own concept
    assert g.add_content("something else entirely", far)[1].created is not None
