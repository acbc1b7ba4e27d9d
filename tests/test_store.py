"""The session folder: round trip, atomic saves, and every kind of bad file."""

import json
import os
import stat

import numpy as np
import pytest

from conftest import unit
from loom_nb import EmbeddingMismatchError, HashingEmbedder, Loom, LoomConfig, LoomError, LoomGraph, SessionFormatError, StaleReferenceError
from loom_nb.core.store import GRAPH_FILE, SCHEMA_VERSION, content_name, load_graph, save_graph


def sample_graph():
    g = LoomGraph(LoomConfig(concept_threshold=0.9), embedding_model="toy")
    g.add_content("OAuth tokens expire", np.array(unit(0, 4)), type="analysis")
    big = "line one\nline two\nline three\n"
    g.add_content(big, np.array(unit(30, 4)), chunks=[(0, 9), (9, 18), (18, 29)],
                  chunk_vectors=np.array([unit(a, 4) for a in (10, 20, 30)], dtype=np.float32))
    g.add_content("a summary", np.array(unit(5, 4)), summary_of="n2")
    g.add_content("unicode: naïve café ✓ 😀 lone \udc80 surrogate", np.array(unit(90, 4)))
    g.advance_turn(3)
    g.mark_accessed(["n1"])
    g.metadata["note"] = "kept"
    return g


def test_round_trip_is_equal_with_bit_identical_vectors(tmp_path):
    g = sample_graph()
    save_graph(g, tmp_path)
    loaded, doc = load_graph(tmp_path)
    assert loaded == g
    for table in ("content_vectors", "concept_vectors"):
        a, b = getattr(g, table), getattr(loaded, table)
        assert a.ids == b.ids and a.matrix.tobytes() == b.matrix.tobytes()
    assert loaded.chunk_vectors["n2"].tobytes() == g.chunk_vectors["n2"].tobytes()
    assert loaded.text("n4") == g.text("n4") == "unicode: naïve café ✓ 😀 lone \ufffd surrogate"
    assert loaded.turn == 3 and loaded.metadata == {"note": "kept"}
    assert loaded.node("n1").linking.created == "c1"
    assert doc["schema_version"] == SCHEMA_VERSION and doc["embedding"] == {"model": "toy", "dim": 4}
    # and the loaded graph keeps working
    loaded.add_content("more", np.array(unit(45, 4)))
    assert loaded.node("n5").id == "n5"


def test_a_provenance_key_added_since_the_save_takes_its_default(tmp_path):
    """A session saved before change logs had their own provenance opens with the default for
    it, as it would for a new weight; the keys it stored keep their values."""
    g = sample_graph()
    stored = {k: v for k, v in LoomConfig().provenance.items() if k != "changelog_reference"}
    g.config = g.config.with_(provenance={**stored, "analysis": 0.5})
    save_graph(g, tmp_path)
    loaded, _ = load_graph(tmp_path)
    assert loaded.config.provenance["changelog_reference"] == LoomConfig().provenance["changelog_reference"]
    assert loaded.config.provenance["analysis"] == 0.5


def test_graph_json_is_inspectable(tmp_path):
    save_graph(sample_graph(), tmp_path)
    doc = json.loads((tmp_path / GRAPH_FILE).read_text())
    assert doc["content"]["id"] == ["n1", "n2", "n3", "n4"]
    assert doc["content"]["type"] == ["analysis", "input", "summary", "input"]
    assert doc["content"]["summary_of"] == [None, None, "n2", None]
    assert doc["concepts"]["id"][0] == "c1"
    # n1 → c1 and n3 → c1 (the summary is close to n1); rows index the columns above
    assert list(zip(doc["links"]["content"], doc["links"]["concept"]))[:1] == [(0, 0)]
    # a content file is named by its node and hash (content_name): a reused id cannot meet an old text
    assert (tmp_path / "content" / content_name("n1", doc["content"]["sha256"][0])).read_text() == "OAuth tokens expire"
    assert sorted(p.name.split(".")[0] for p in (tmp_path / "embeddings").iterdir()) == ["chunks", "concepts", "content", "lexical", "seal"]


def test_resave_replaces_generation_and_removes_old_files(tmp_path):
    g = sample_graph()
    save_graph(g, tmp_path)
    g.remove("n4")
    save_graph(g, tmp_path)
    names = sorted(p.name for p in (tmp_path / "embeddings").iterdir())
    assert names == ["chunks.g2.npy", "concepts.g2.npy", "content.g2.npy", "lexical.g2.npz", "seal.g2.txt"]
    assert not (tmp_path / "content" / "n4.txt").exists()
    assert load_graph(tmp_path)[0] == g


def test_a_save_removes_the_files_of_older_saves_that_were_killed_before_they_committed(tmp_path):
    # each kill -9 during a save left its vector files (and temporary files) for good
    loom = Loom(tmp_path, embedder=HashingEmbedder())
    loom.add("oauth refresh tokens rotate on every use")
    loom.save()  # generation 1
    emb = tmp_path / "embeddings"
    killed = ["content.g2.npy", "concepts.g2.npy", "lexical.g2.npz", "seal.g2.txt", ".cache.g2.npz.k3x_9q.tmp"]
    kept = ["notes.txt", "content.g2.npy.bak", "mine.npy", ".hidden"]
    for name in killed + kept:
        (emb / name).write_bytes(b"left by a killed save")
    loom.add("a second note")
    loom.save()  # generation 3: above every file present
    assert json.loads((tmp_path / GRAPH_FILE).read_text())["generation"] == 3
    left = sorted(p.name for p in emb.iterdir())
    assert not set(killed) & set(left) and set(kept) <= set(left)  # only the names a save writes
    assert not [name for name in left if ".g1." in name]  # and the previous save's, as before
    again = Loom.open(tmp_path, embedder=HashingEmbedder())
    assert len(again.graph.content_vectors) == 2 and again.query("oauth refresh", budget=500).loaded


def test_a_save_removes_the_texts_a_killed_save_left_in_content(tmp_path):
    # a save writes each new text to content/ before graph.json names it: a kill -9 in
    # between left the texts (and a half-written temporary file) for good
    loom = Loom(tmp_path, embedder=HashingEmbedder())
    loom.add("oauth refresh tokens rotate on every use")
    loom.save()
    content = tmp_path / "content"
    (named,) = [p.name for p in content.iterdir()]
    killed = ["n7.0123456789abcdef.txt", ".n8.fedcba9876543210.txt.k3x_9q.tmp"]
    kept = ["notes.txt", "n7.txt", "n9.0123456789abcdef.txt.bak", ".hidden"]
    for name in killed + kept:
        (content / name).write_text("left by a killed save")
    loom.add("a second note")
    loom.save()
    left = sorted(p.name for p in content.iterdir())
    assert not set(killed) & set(left)
    assert set(kept) | {named} <= set(left)  # only the names a save writes, and never a named text
    again = Loom.open(tmp_path, embedder=HashingEmbedder())
    assert sorted(again.text(n) for n in again.graph.content_vectors.ids) == ["a second note", "oauth refresh tokens rotate on every use"]


def test_a_node_of_an_unknown_type_is_refused_at_save_not_at_the_next_open(tmp_path):
    g = sample_graph()
    save_graph(g, tmp_path)
    before = (tmp_path / GRAPH_FILE).read_bytes()
    g.node("n1").type = "no-such-type"  # what a load would refuse the whole session for
    with pytest.raises(LoomError, match="n1 has content type 'no-such-type'.*nothing was written"):
        save_graph(g, tmp_path)
    with pytest.raises(LoomError, match="nothing was written"):
        save_graph(g, tmp_path / "new")
    assert (tmp_path / GRAPH_FILE).read_bytes() == before and not (tmp_path / "new" / "content").exists()
    assert load_graph(tmp_path)[0].node("n1").type == "analysis"


def test_a_failed_save_leaves_the_previous_session_intact(tmp_path, monkeypatch):
    g = sample_graph()
    save_graph(g, tmp_path)
    before = (tmp_path / GRAPH_FILE).read_bytes()
    g.add_content("new text", np.array(unit(60, 4)))
    import loom_nb.core.store as store

    real = store.atomic_write_bytes

    def crash_on_graph_json(path, data):
        if path.name == GRAPH_FILE:
            raise OSError("disk full")
        real(path, data)

    monkeypatch.setattr(store, "atomic_write_bytes", crash_on_graph_json)
    with pytest.raises(OSError):
        save_graph(g, tmp_path)
    assert (tmp_path / GRAPH_FILE).read_bytes() == before
    loaded, _ = load_graph(tmp_path)
    assert "n5" not in loaded and loaded.counts()["content"] == 4


def test_a_non_finite_number_is_refused_before_saving_and_the_field_named(tmp_path):
    """JSON cannot hold NaN or Infinity (orjson writes null), and a session saved with one
    did not open again: the save refuses, naming the field, and the folder stays as it was."""
    loom = Loom(tmp_path, embedder=HashingEmbedder())
    loom.add("OAuth tokens expire after one hour", split=False)
    loom.add("Sourdough rises by half in bulk", split=False)
    loom.save()
    before = (tmp_path / GRAPH_FILE).read_bytes()
    loom.add("a third note", split=False)
    object.__setattr__(loom.graph.config.weights, "semantic", float("nan"))  # past the dataclass's own check
    with pytest.raises(LoomError, match="semantic.*finite"):
        loom.save()
    loom.graph.config = LoomConfig()
    loom.graph._link_weight[0] = float("inf")  # however it got there
    with pytest.raises(LoomError, match=r"links\.weight.*inf"):
        loom.save()
    assert (tmp_path / GRAPH_FILE).read_bytes() == before
    reopened = Loom.open(tmp_path)
    assert len(reopened.graph.content_vectors) == 2 and reopened.query("OAuth tokens", budget=500).loaded


@pytest.mark.parametrize("weight", [None, float("nan"), float("inf"), "0.5"])
def test_a_link_weight_that_is_not_a_number_is_a_format_error(tmp_path, weight):
    """Even in a graph.json this user's loom-nb sealed (the schema is skipped then): a
    null weight, which an older save wrote for NaN, used to open and fail with a TypeError."""
    from loom_nb.core import store

    loom = Loom(tmp_path, embedder=HashingEmbedder())
    loom.add("OAuth tokens expire after one hour", split=False)
    loom.save()
    doc = json.loads((tmp_path / GRAPH_FILE).read_text())
    doc["links"]["weight"][0] = weight
    raw = json.dumps(doc).encode()
    (tmp_path / GRAPH_FILE).write_bytes(raw)
    (tmp_path / doc["vectors"]["seal"]).write_text(store._seal(raw))
    with pytest.raises(SessionFormatError, match=f"{GRAPH_FILE}.*link weight"):
        opened = Loom.open(tmp_path)
        opened.query("OAuth", budget=500)
        opened.graph.nx


def test_a_failed_clean_up_after_the_commit_is_a_warning_and_the_next_save_works(tmp_path, monkeypatch, caplog):
    """graph.json is the commit point: once it is written the save has happened, and the old
    generation's files are garbage. A clean-up that failed used to raise, and every later
    save of the same Loom was refused as 'saved by another process'."""
    from pathlib import Path

    loom = Loom(tmp_path, embedder=HashingEmbedder())
    loom.add("OAuth tokens expire after one hour", split=False)
    loom.save()
    loom.add("the refresh token is rotated on use", split=False)
    real = Path.unlink

    def refuse_old_vectors(self, *args, **kwargs):
        if self.parent.name == "embeddings" and ".g1." in self.name:
            raise PermissionError(13, "Permission denied", str(self))
        return real(self, *args, **kwargs)

    monkeypatch.setattr(Path, "unlink", refuse_old_vectors)
    with caplog.at_level("WARNING", logger="loom_nb.core.store"):
        loom.save()
    monkeypatch.setattr(Path, "unlink", real)
    assert "could not remove" in caplog.text and "content.g1.npy" in caplog.text
    assert json.loads((tmp_path / GRAPH_FILE).read_text())["generation"] == 2
    loom.add("a third note about token lifetimes", split=False)
    loom.save()
    reopened = Loom.open(tmp_path)
    assert len(reopened.graph.content_vectors) == 3 and reopened.query("OAuth token expiry", budget=500).loaded


def test_a_content_file_write_that_fails_leaves_no_temporary_file(tmp_path, monkeypatch):
    """A disk that fills while a node's text is written: the save fails, the previous session
    stays, and no ``.nX.*.tmp`` is left in content/ (they were, one per failed save)."""
    import os

    loom = Loom(tmp_path, embedder=HashingEmbedder())
    loom.add("OAuth tokens expire after one hour", split=False)
    loom.save()
    loom.add("the refresh token is rotated on use", split=False)
    real = os.replace

    def disk_full(src, dst, *args, **kwargs):
        if os.path.basename(os.fspath(src)).startswith(".n"):
            raise OSError(28, "No space left on device", os.fspath(src))
        return real(src, dst, *args, **kwargs)

    monkeypatch.setattr(os, "replace", disk_full)
    with pytest.raises(OSError, match="No space left"):
        loom.save()
    monkeypatch.setattr(os, "replace", real)
    assert [p.name for p in (tmp_path / "content").iterdir() if p.name.endswith(".tmp")] == []
    assert len(Loom.open(tmp_path).graph.content_vectors) == 1
    loom.save()
    reopened = Loom.open(tmp_path)
    assert len(reopened.graph.content_vectors) == 2 and reopened.query("OAuth token rotation", budget=500).loaded


def _write(tmp_path, data: bytes):
    (tmp_path / GRAPH_FILE).write_bytes(data)
    return data


@pytest.mark.parametrize(
    "data, message",
    [
        (b"", "empty"),
        (b'{"format": "loom-nb/graph", "schema_version": 1, "nod', "not valid JSON"),
        (b"\x89PNG\r\n\x1a\n\x00\x00\x00", "not UTF-8"),
        (b'{"nodes": [], "edges": []}', "not a loom-nb graph"),
        (b'["a", "list"]', "not a loom-nb graph"),
        (b'{"format": "loom-nb/graph", "schema_version": 99}', "newer loom-nb"),
        (b'{"format": "loom-nb/graph", "schema_version": "1"}', "expected an integer"),
        (b'{"format": "loom-nb/graph", "schema_version": 1, "content": {}}', "missing the 'embedding' section"),
        (b"[" * 100_000 + b"]" * 100_000, "nested too deeply"),  # was a RecursionError
        (b'{"format": "loom-nb/graph", "schema_version": ' + b"1" * 5000 + b"}", "not valid JSON"),  # a ValueError
    ],
)
def test_bad_graph_json_names_the_file_and_the_problem_and_changes_nothing(tmp_path, data, message):
    _write(tmp_path, data)
    with pytest.raises(SessionFormatError) as err:
        load_graph(tmp_path)
    assert str(tmp_path / GRAPH_FILE) in str(err.value) and message in str(err.value)
    assert (tmp_path / GRAPH_FILE).read_bytes() == data  # nothing damaged
    assert sorted(p.name for p in tmp_path.iterdir()) == [GRAPH_FILE]


def test_missing_folder_and_missing_vectors(tmp_path):
    with pytest.raises(SessionFormatError, match="not a loom-nb session folder"):
        load_graph(tmp_path / "nowhere")
    save_graph(sample_graph(), tmp_path)
    vec = next((tmp_path / "embeddings").glob("content.*.npy"))
    vec.unlink()
    with pytest.raises(SessionFormatError, match="vector file named by graph.json is missing") as err:
        load_graph(tmp_path)
    assert vec.name in str(err.value)


def test_vectors_of_the_wrong_shape_are_refused(tmp_path):
    save_graph(sample_graph(), tmp_path)
    vec = next((tmp_path / "embeddings").glob("content.*.npy"))
    np.save(vec, np.zeros((4, 8), dtype=np.float32))
    with pytest.raises(SessionFormatError, match=r"expects \(4, 4\) float32"):
        load_graph(tmp_path)


@pytest.mark.parametrize(
    "damage, message",
    [
        (lambda d: d["content"]["id"].pop(), "different lengths"),
        (lambda d: d["content"].pop("tokens"), r"content\.tokens: Field required"),
        (lambda d: d.__setitem__("concepts", []), "concepts: Input should be a valid dictionary"),
        (lambda d: d["content"]["type"].__setitem__(0, "poem"), r"content\.type\.0: Input should be 'input', 'output'"),
        (lambda d: d["content"]["tokens"].__setitem__(0, "many"), r"content\.tokens\.0: Input should be a valid integer"),
        (lambda d: d["links"]["concept"].__setitem__(0, 999), "link names a node row"),
        (lambda d: d["links"].pop("weight"), r"links\.weight: Field required"),
        (lambda d: d["concept_edges"]["a"].append(0), "different lengths"),
        (lambda d: d["content"]["summary_of"].__setitem__(0, "n99"), "summarises 'n99'"),
        (lambda d: d["content"]["id"].__setitem__(1, "n1"), "not unique"),
    ],
)
def test_malformed_columns(tmp_path, damage, message):
    save_graph(sample_graph(), tmp_path)
    doc = json.loads((tmp_path / GRAPH_FILE).read_text())
    damage(doc)
    (tmp_path / GRAPH_FILE).write_text(json.dumps(doc))
    with pytest.raises(SessionFormatError, match=message):
        load_graph(tmp_path)


@pytest.mark.parametrize("chunk_rows, message", [
    ([["n2", 5]], "add up to 5 rows; the chunks file holds 3"),
    ([["n2", 2]], "add up to 2 rows; the chunks file holds 3"),
    ([["n2", 0]], "add up to 0 rows; the chunks file holds 3"),
    ([["n99", 3]], "'n99', which is not a content node"),
    ([["c1", 3]], "'c1', which is not a content node"),
    ([["n2", 2], ["n1", 1]], "n2 has 3 chunks"),
    ([["n2", 3], ["n2", 0]], "names n2 twice"),
])
def test_chunk_rows_that_disagree_with_the_chunks_file_are_refused(tmp_path, chunk_rows, message):
    """vectors.chunk_rows says which rows of the chunks file belong to which node; one that
    does not fit used to open and crash the query (a broadcast error), or be saved again."""
    save_graph(sample_graph(), tmp_path)
    doc = json.loads((tmp_path / GRAPH_FILE).read_text())
    assert doc["vectors"]["chunk_rows"] == [["n2", 3]] and doc["vectors"]["chunks"]["rows"] == 3
    doc["vectors"]["chunk_rows"] = chunk_rows
    (tmp_path / GRAPH_FILE).write_text(json.dumps(doc))
    with pytest.raises(SessionFormatError, match=f"{GRAPH_FILE}: vectors.chunk_rows.*{message}"):
        load_graph(tmp_path)


def test_a_loaded_graph_ranks_before_building_its_node_objects(tmp_path):
    from loom_nb import rank

    g = sample_graph()
    save_graph(g, tmp_path)
    loaded, _ = load_graph(tmp_path)
    ranking = rank(loaded, np.array(unit(0, 4)))
    assert ranking.node_ids == g.content_vectors.ids
    assert np.array_equal(ranking.scores, rank(g, np.array(unit(0, 4))).scores)
    assert loaded._lazy is not None  # nothing but arrays was needed
    assert loaded.node("n3").summary_of == "n2" and loaded.summary_of("n2") == "n3"
    assert loaded.counts() == g.counts()
    loaded.add_content("a new node", np.array(unit(200, 4)))  # builds the networkx graph
    assert loaded._lazy is None and loaded.counts()["content"] == 5


def test_vectors_from_another_model_are_never_mixed(tmp_path):
    save_graph(sample_graph(), tmp_path)
    with pytest.raises(EmbeddingMismatchError, match="'toy'"):
        load_graph(tmp_path, expect_model="all-MiniLM-L6-v2")
    loom = Loom(tmp_path / "s", embedder=HashingEmbedder(256))
    loom.add("hello there")
    loom.save()
    with pytest.raises(EmbeddingMismatchError):
        Loom.open(tmp_path / "s", embedder=HashingEmbedder(128))
    g = LoomGraph(embedding_model="toy")
    g.add_content("a", np.array(unit(0, 4)))
    with pytest.raises(EmbeddingMismatchError):
        g.add_content("b", np.array(unit(0, 3)))


def test_missing_content_file_is_reported_when_read(tmp_path):
    save_graph(sample_graph(), tmp_path)
    next((tmp_path / "content").glob("n1.*.txt")).unlink()
    loaded, _ = load_graph(tmp_path)
    with pytest.raises(StaleReferenceError, match="n1: its text .* is missing"):
        loaded.text("n1")


def test_embedding_cache_survives_a_reopen(tmp_path):
    class Counting(HashingEmbedder):
        calls = 0

        def embed(self, texts):
            Counting.calls += len(texts)
            return super().embed(texts)

    loom = Loom(tmp_path, embedder=Counting())
    loom.add("the same text")
    loom.save()
    assert Counting.calls == 1
    again = Loom.open(tmp_path, embedder=Counting())
    again.query("the same text", budget=100)
    assert Counting.calls == 1  # the query text was cached with the session
    assert again.embedder.hits == 1


def test_an_open_overtaken_by_a_save_reads_the_cache_of_the_new_generation(tmp_path, monkeypatch, caplog):
    # the graph was read at one generation, a save committed the next and removed the first
    # one's cache before the open read it: the cache was lost, with a warning of a damaged file
    import loom_nb.core.engine as engine

    loom = Loom(tmp_path, embedder=HashingEmbedder())
    loom.add("the same text")
    loom.save()
    real_load_graph = engine.load_graph

    def overtaken(*args, **kwargs):
        loaded = real_load_graph(*args, **kwargs)
        monkeypatch.setattr(engine, "load_graph", real_load_graph)
        writer = Loom.open(tmp_path, embedder=HashingEmbedder())
        writer.add("a writer's note")
        writer.save()  # commits the next generation, removes this one's files
        return loaded

    monkeypatch.setattr(engine, "load_graph", overtaken)
    again = Loom.open(tmp_path, embedder=HashingEmbedder())
    assert "embedding cache" not in caplog.text
    assert again.embedder.hits == 0 and len(list(again.embedder.items())) >= 2
    again.query("the same text", budget=100)
    assert again.embedder.hits == 1


def test_lexical_index_and_paths_round_trip(tmp_path):
    from test_rank import lexical_graph

    from loom_nb import rank

    g = lexical_graph()
    save_graph(g, tmp_path)
    loaded, _ = load_graph(tmp_path)
    for query in ("save_graph", "what is in rank.py?", "@loom_nb/core/graph.py", "bananas"):
        a = rank(g, np.array(unit(0)), query=query)
        b = rank(loaded, np.array(unit(0)), query=query)
        assert np.array_equal(a.signals, b.signals), query


def test_a_loaded_graph_saves_and_grows_again(tmp_path):
    g = sample_graph()
    save_graph(g, tmp_path / "a")
    loaded, _ = load_graph(tmp_path / "a")
    save_graph(loaded, tmp_path / "b")  # straight from the loaded arrays
    again, _ = load_graph(tmp_path / "b")
    assert again == g
    again.add_content("grows", np.array(unit(120, 4)))
    again.add_content("and grows", np.array(unit(125, 4)))
    save_graph(again, tmp_path / "b")
    assert load_graph(tmp_path / "b")[0] == again


def test_a_graph_json_this_user_saved_skips_the_schema_check_and_any_other_does_not(tmp_path, monkeypatch):
    """The seal: an HMAC of the bytes with a per-user key, written beside graph.json."""
    import loom_nb.core.schema as schema
    from loom_nb import HashingEmbedder, Loom

    loom = Loom(tmp_path / "s", embedder=HashingEmbedder(32))
    loom.add("A note about sealed sessions.")
    loom.save()
    checked = []
    real = schema.validate_document
    monkeypatch.setattr(schema, "validate_document", lambda doc: (checked.append(1), real(doc)))
    assert Loom.open(tmp_path / "s", embedder=HashingEmbedder(32)).graph.counts()["content"] == 1
    assert checked == []  # sealed: the bytes are the ones this user's loom-nb checked and wrote
    graph_json = tmp_path / "s" / "graph.json"
    graph_json.write_bytes(graph_json.read_bytes().replace(b"sealed sessions", b"edited sessions"))
    Loom.open(tmp_path / "s", embedder=HashingEmbedder(32))
    assert checked == [1]  # edited by hand: checked in full
    monkeypatch.setenv("LOOM_NB_CONFIG_DIR", str(tmp_path / "another-user"))
    Loom(tmp_path / "t", embedder=HashingEmbedder(32)).save()
    Loom.open(tmp_path / "t", embedder=HashingEmbedder(32))
    monkeypatch.setenv("LOOM_NB_CONFIG_DIR", str(tmp_path / "a-third-user"))
    Loom.open(tmp_path / "t", embedder=HashingEmbedder(32))
    assert checked == [1, 1]  # sealed with another user's key: checked in full


@pytest.mark.skipif(not hasattr(os, "fchmod"), reason="file modes are POSIX")
def test_atomic_writes_give_new_files_the_umask_mode_and_keep_a_replaced_files_mode(tmp_path, monkeypatch):
    """mkstemp makes files 0600: a report to share, or a session folder a team reads, came
    out readable by its owner alone, and a file replaced in place lost the mode it had."""
    from loom_nb.core import atomic
    from loom_nb.core.atomic import atomic_write_text

    monkeypatch.setattr(atomic, "_UMASK", [])  # read afresh under the umask set here
    old = os.umask(0o022)
    try:
        new = tmp_path / "report.html"
        atomic_write_text(new, "<p>a report</p>")
        assert stat.S_IMODE(new.stat().st_mode) == 0o644
        kept = tmp_path / "shared.json"
        kept.write_text("{}")
        kept.chmod(0o640)
        atomic_write_text(kept, '{"a": 1}')
        assert stat.S_IMODE(kept.stat().st_mode) == 0o640 and kept.read_text() == '{"a": 1}'
    finally:
        os.umask(old)
