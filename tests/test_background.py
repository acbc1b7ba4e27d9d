"""Indexing that returns before its vectors (issue 16): units added with their vectors
pending, embedded on a worker thread, saved and resumed; queries meanwhile rank with what
there is. An embedder whose batches wait on a gate holds the fill where a test wants it."""

import os
import threading
import time

import numpy as np
import pytest

from loom_nb import HashingEmbedder, Loom, LoomError
from loom_nb.index import background

from test_index import make_workspace


class GatedEmbedder(HashingEmbedder):
    """A hashing embedder whose batches (more than one text: not a query) wait for ``gate``;
    ``fail`` makes them raise instead."""

    def __init__(self):
        super().__init__(64)
        self.gate = threading.Event()
        self.fail = False

    def embed(self, texts):
        if len(texts) > 1:
            assert self.gate.wait(20), "the test never opened the gate"
            if self.fail:
                raise RuntimeError("the model went away")
        return super().embed(texts)


@pytest.fixture
def workspace(tmp_path):
    make_workspace(tmp_path / "ws")
    return tmp_path / "ws"


def synchronous(workspace, folder):
    loom = Loom(folder, embedder=HashingEmbedder(64))
    loom.index(workspace, progress=False, wait=True)
    return loom


def same_vectors(a: Loom, b: Loom) -> bool:
    ta, tb = a.graph.content_vectors, b.graph.content_vectors
    return sorted(ta.ids) == sorted(tb.ids) and all(np.array_equal(ta.get(i), tb.get(i)) for i in ta.ids)


def test_index_returns_first_and_queries_say_how_much_is_embedded(workspace, tmp_path):
    embedder = GatedEmbedder()
    loom = Loom(tmp_path / "s", embedder=embedder)
    report = loom.index(workspace, progress=False, wait=False)
    units = len(loom.graph.content_vectors)
    assert report.vectors_pending == units > 0 and "embedding in the background" in str(report)
    assert loom.embedded_share == 0.0 and not loom.wait(timeout=0.05)
    early = loom.query("refresh token rotate", budget=400)
    assert early.embedded_share == 0.0
    assert early.manifest.startswith("[semantic: 0% of units embedded")
    assert any("tokens.py" in r.title for r in early.rows(3))  # found by its terms meanwhile
    embedder.gate.set()
    assert loom.wait(timeout=20) and loom.embedded_share == 1.0 and not loom.graph.pending_vectors
    late = loom.query("refresh token rotate", budget=400)
    assert late.embedded_share == 1.0 and not late.manifest.startswith("[semantic")
    reference = synchronous(workspace, tmp_path / "sync")
    assert same_vectors(loom, reference)
    assert late.loaded == reference.query("refresh token rotate", budget=400).loaded


def test_a_save_while_embedding_is_resumed_by_the_next_open(workspace, tmp_path):
    embedder = GatedEmbedder()
    loom = Loom(tmp_path / "s", embedder=embedder)
    loom.index(workspace, progress=False, wait=False)
    pending = loom.graph.pending_vectors
    loom.save()  # the worker is held at its first batch
    loom._fill.stop()
    embedder.gate.set()
    again = Loom.open(tmp_path / "s", embedder=HashingEmbedder(64))
    assert again._fill.total == len(pending) > 0  # the open resumed every pending unit
    assert again.wait(timeout=20) and again.embedded_share == 1.0
    assert same_vectors(again, synchronous(workspace, tmp_path / "sync"))
    again.save()
    assert Loom.open(tmp_path / "s", embedder=HashingEmbedder(64)).graph.pending_vectors == []


def failing_fill(workspace, folder) -> tuple[Loom, "GatedEmbedder"]:
    """A session whose background fill runs into an embedder that fails at once."""
    embedder = GatedEmbedder()
    embedder.fail = True
    embedder.gate.set()
    loom = Loom(folder, embedder=embedder)
    loom.index(workspace, progress=False, wait=False)
    return loom, embedder


def test_a_failed_fill_is_reported_and_leaves_its_units_pending(workspace, tmp_path):
    loom, embedder = failing_fill(workspace, tmp_path / "s")
    with pytest.raises(LoomError, match="stopped after 0 of .* units: the model went away; the rest stay pending"):
        loom.wait(timeout=20)
    assert len(loom.graph.pending_vectors) == len(loom.graph.content_vectors)
    loom.save()
    resumed = Loom.open(tmp_path / "s", embedder=HashingEmbedder(64))
    assert resumed.wait(timeout=20) and resumed.embedded_share == 1.0


def test_a_failed_fill_is_reported_once(workspace, tmp_path):
    # the error was raised again by every later wait() and index() of the session
    loom, embedder = failing_fill(workspace, tmp_path / "s")
    with pytest.raises(LoomError, match="the model went away"):
        loom.wait(timeout=20)
    assert loom.wait(timeout=20) is False  # reported; its units are still pending
    report = loom.index(workspace, progress=False, wait=False)
    assert report.files_unchanged == report.files_seen


def test_the_next_index_embeds_what_a_failed_fill_left(workspace, tmp_path):
    loom, embedder = failing_fill(workspace, tmp_path / "s")
    with pytest.raises(LoomError, match="the model went away"):
        loom.wait(timeout=20)
    embedder.fail = False  # the model is back
    report = loom.index(workspace, progress=False)
    assert report.files_unchanged == report.files_seen and report.vectors_pending == len(loom.graph.content_vectors)
    assert loom.wait(timeout=20) and loom.embedded_share == 1.0 and not loom.graph.pending_vectors
    assert same_vectors(loom, synchronous(workspace, tmp_path / "sync"))


def test_units_an_open_could_not_read_are_embedded_by_the_index_that_confirms_the_workspace(workspace, tmp_path, monkeypatch):
    # opened where the workspace was never confirmed, the fill found no text to embed; the
    # index that confirms the root found nothing changed and left 100 % of the units pending
    embedder = GatedEmbedder()
    loom = Loom(tmp_path / "s", embedder=embedder)
    loom.index(workspace, progress=False, wait=False)
    loom.save()  # the worker is held at its first batch
    loom._fill.stop()
    embedder.gate.set()
    loom.wait(timeout=20)
    monkeypatch.setenv("LOOM_NB_CONFIG_DIR", str(tmp_path / "another-machine"))
    elsewhere = Loom.open(tmp_path / "s", embedder=HashingEmbedder(64))
    assert elsewhere.graph.pending_vectors and elsewhere._fill.total == 0  # nothing it may read
    assert elsewhere.wait(timeout=20) is False
    report = elsewhere.index(workspace, progress=False, wait=True)
    assert report.files_unchanged == report.files_seen and report.vectors_pending == 0
    assert elsewhere.wait(timeout=0) and elsewhere.embedded_share == 1.0
    assert same_vectors(elsewhere, synchronous(workspace, tmp_path / "sync"))


def test_a_refresh_with_units_of_its_own_to_embed_keeps_those_left_pending_before(workspace, tmp_path):
    # its own pending list replaced the one before: a save then dropped them for good
    loom, embedder = failing_fill(workspace, tmp_path / "s")
    with pytest.raises(LoomError, match="the model went away"):
        loom.wait(timeout=20)
    before = set(loom.graph.pending_vectors)
    embedder.fail = False
    embedder.gate.clear()  # the next fill is held at its first batch
    (workspace / "app/extra.py").write_text("def extra():\n    return 'new'\n")
    loom.index(workspace, progress=False, wait=False)
    assert before and before < set(loom.graph.pending_vectors)  # listed, so a save keeps them pending
    embedder.gate.set()
    assert loom.wait(timeout=20) and loom.embedded_share == 1.0


def test_nodes_added_during_a_fill_keep_their_vectors(workspace, tmp_path):
    embedder = GatedEmbedder()
    loom = Loom(tmp_path / "s", embedder=embedder)
    loom.index(workspace, progress=False, wait=False)
    note = loom.add("A note about deployment windows, written while the index embeds.").ids[0]
    embedder.gate.set()
    assert loom.wait(timeout=20)
    expected = HashingEmbedder(64).embed(["A note about deployment windows, written while the index embeds."])[0]
    assert np.allclose(loom.graph.content_vectors.get(note), expected / np.linalg.norm(expected))
    norms = np.linalg.norm(loom.graph.content_vectors.matrix, axis=1)
    assert np.allclose(norms, 1.0)  # no batch was written into a table the note's row had replaced


def test_by_default_a_small_index_embeds_in_line_and_a_large_one_in_the_background(workspace, tmp_path, monkeypatch):
    small = Loom(tmp_path / "small", embedder=HashingEmbedder(64))
    assert small.index(workspace, progress=False).vectors_pending == 0 and small.embedded_share == 1.0
    monkeypatch.setattr(background, "BACKGROUND_ABOVE", 1)
    monkeypatch.setattr("loom_nb.index.indexer.BACKGROUND_ABOVE", 1)
    large = Loom(tmp_path / "large", embedder=HashingEmbedder(64))
    assert large.index(workspace, progress=False).vectors_pending > 0
    assert large.wait(timeout=20)


def test_a_second_index_waits_for_the_first_fill(workspace, tmp_path):
    embedder = GatedEmbedder()
    loom = Loom(tmp_path / "s", embedder=embedder)
    loom.index(workspace, progress=False, wait=False)
    threading.Timer(0.2, embedder.gate.set).start()
    report = loom.index(workspace, progress=False, wait=True)  # blocks until the gate opens and the fill ends
    assert report.files_unchanged == report.files_seen and loom.embedded_share == 1.0


def test_a_process_that_exits_while_embedding_ends_cleanly_and_keeps_its_pending_units(tmp_path):
    """onnxruntime aborts the process if a daemon thread is killed inside a model call; the
    exit stops the fill between batches instead. The saved session keeps what is pending."""
    import subprocess
    import sys

    pytest.importorskip("onnxruntime")
    ws = tmp_path / "ws"
    ws.mkdir()
    for k in range(60):
        (ws / f"m{k}.py").write_text("".join(f"def f{k}_{j}(x):\n    '''Step {j} of module {k}.'''\n    return x + {j}\n\n\n" for j in range(8)))
    script = (
        "from loom_nb import Loom\n"
        f"loom = Loom({str(tmp_path / 's')!r})\n"
        f"loom.index({str(ws)!r}, progress=False, wait=False)\n"
        "import time\n"
        "while loom._fill.done == 0:  # the model is loaded and on its second batch\n"
        "    time.sleep(0.02)\n"
        "loom.save()\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0 and "terminate" not in done.stderr, done.stderr[-2000:]
    reopened = Loom.open(tmp_path / "s")
    assert reopened.graph.pending_vectors  # saved before the vectors were in
    assert reopened.wait(timeout=300) and reopened.embedded_share == 1.0


class Preparing(HashingEmbedder):
    """A hashing embedder that says when the warm-up asked it to load its model."""

    def __init__(self):
        super().__init__(64)
        self.prepared = threading.Event()

    def prepare(self):
        self.prepared.set()


def saved_session(folder):
    first = Loom(folder, embedder=HashingEmbedder(64))
    first.add("A note so the session has content.")
    first.save()
    return folder


def test_opening_a_session_loads_the_model_before_the_first_query(tmp_path):
    embedder = Preparing()
    Loom.open(saved_session(tmp_path / "s"), embedder=embedder)
    assert embedder.prepared.wait(10)  # on the warm-up thread, without a query


def test_the_model_loads_while_the_graph_is_parsed(tmp_path, monkeypatch):
    """The warm-up starts before graph.json's columns are parsed, so the two overlap."""
    import loom_nb.core.engine as engine

    embedder, real_load = Preparing(), engine.load_graph

    def load_graph(*args, **kwargs):
        assert embedder.prepared.wait(10), "the model was not loading yet when the graph was parsed"
        return real_load(*args, **kwargs)

    monkeypatch.setattr(engine, "load_graph", load_graph)
    assert len(Loom.open(saved_session(tmp_path / "s"), embedder=embedder).graph) > 0


def test_an_embedder_with_nothing_to_load_still_warms_the_tokenizer_and_readability(tmp_path, monkeypatch):
    """The hashing and Ollama embedders have no prepare(): the warm-up used to stop there, so the
    first query of such a session loaded the BPE table and the hyphenation rules (0.5 s)."""
    import loom_nb.core.engine as engine

    warmed = threading.Event()
    real_classify = engine.classify

    def classify(text, *args, **kwargs):
        if text.startswith("Warm up"):
            warmed.set()
        return real_classify(text, *args, **kwargs)

    monkeypatch.setattr(engine, "classify", classify)
    assert not hasattr(HashingEmbedder(64), "prepare")
    Loom.open(saved_session(tmp_path / "s"), embedder=HashingEmbedder(64))
    assert warmed.wait(10)  # on the warm-up thread, without a query


def test_opening_a_session_builds_what_ranking_reads_before_the_first_query(tmp_path, monkeypatch):
    import loom_nb.core.engine as engine

    ranked = threading.Event()
    real_rank = engine.rank

    def rank(graph, vector, **kwargs):
        result = real_rank(graph, vector, **kwargs)
        if kwargs.get("query") == engine.WARM_UP_QUERY:
            # a vector of the graph's own, not a question's (the model may still be loading), so
            # the semantic path and the concept hops run too; the arrays are built
            assert np.array_equal(vector, graph.content_vectors.matrix[0]) and graph._arrays is not None
            ranked.set()
        return result

    monkeypatch.setattr(engine, "rank", rank)
    loom = Loom.open(saved_session(tmp_path / "s"), embedder=HashingEmbedder(64))
    assert ranked.wait(10)
    assert loom.graph.lock.acquire(timeout=10)  # and released the lock
    loom.graph.lock.release()
    assert loom.query("a note", budget=500).loaded


def test_a_query_asked_at_once_makes_the_warm_up_ranking_stand_down(tmp_path, monkeypatch):
    import loom_nb.core.engine as engine

    warm = []
    real_rank = engine.rank

    def rank(graph, vector, **kwargs):
        warm.append((graph, kwargs.get("query") == engine.WARM_UP_QUERY))
        return real_rank(graph, vector, **kwargs)

    monkeypatch.setattr(engine, "rank", rank)
    monkeypatch.setattr(engine, "WARM_RANKING_DELAY", 5.0)  # a query comes well within it
    loom = Loom.open(saved_session(tmp_path / "s"), embedder=HashingEmbedder(64))
    assert loom.query("a note", budget=500).loaded
    _join_warm_up_threads()
    assert [w for g, w in warm if g is loom.graph] == [False]  # the query's own ranking only


def _join_warm_up_threads():
    import loom_nb.core.engine as engine

    for thread in list(engine._WARMING):
        thread.join(10)


@pytest.fixture
def warm_events(monkeypatch):
    """What the warm-up does, in order: "rank" for its ranking, "collect" for a full garbage
    collection (recorded, not run); it starts at once."""
    import loom_nb.core.engine as engine

    _join_warm_up_threads()  # an earlier test's warm-up would fire into this one's record
    events = []
    real_rank = engine.rank

    def rank(graph, vector, **kwargs):
        if kwargs.get("query") == engine.WARM_UP_QUERY:
            events.append("rank")
        return real_rank(graph, vector, **kwargs)

    monkeypatch.setattr(engine, "rank", rank)
    monkeypatch.setattr(engine.gc, "collect", lambda *a: events.append("collect") or 0)
    monkeypatch.setattr(engine, "WARM_RANKING_DELAY", 0.0)
    return events


def test_the_warm_up_collects_garbage_once_after_its_ranking_unless_a_query_came(tmp_path, monkeypatch, warm_events):
    """The collector's first full pass over what the open created fell inside a query (issue 16)."""
    import loom_nb.core.engine as engine

    Loom.open(saved_session(tmp_path / "idle"), embedder=HashingEmbedder(64))
    _join_warm_up_threads()
    assert warm_events == ["rank", "collect"]

    warm_events.clear()
    monkeypatch.setattr(engine, "WARM_RANKING_DELAY", 5.0)
    loom = Loom.open(saved_session(tmp_path / "busy"), embedder=HashingEmbedder(64))
    assert loom.query("a note", budget=500).loaded  # asked at once: the warm-up stands down
    _join_warm_up_threads()
    assert warm_events == []


def test_an_index_run_that_changed_the_graph_warms_it_as_an_open_does(tmp_path, warm_events):
    """A fresh Loom that indexes was never opened: its first query paid the classifier's rules
    and the collector's first full pass over what indexing created (issue 16)."""
    make_workspace(tmp_path / "ws")
    loom = Loom(embedder=HashingEmbedder(64))
    assert loom.index(tmp_path / "ws", wait=True).nodes_added
    _join_warm_up_threads()
    assert warm_events == ["rank", "collect"]

    warm_events.clear()
    assert not loom.index(tmp_path / "ws", wait=True).nodes_added  # nothing changed: nothing to warm
    _join_warm_up_threads()
    assert warm_events == []


def test_the_exit_does_not_wait_for_a_warm_up_ranking_nobody_asked_for(tmp_path, monkeypatch):
    """A command that opens a session and ends (``loom-nb show``) used to wait out the ranking's delay."""
    import time

    import loom_nb.core.engine as engine

    monkeypatch.setattr(engine, "WARM_RANKING_DELAY", 60.0)
    loom = Loom.open(saved_session(tmp_path / "s"), embedder=HashingEmbedder(64))
    started = time.perf_counter()
    engine._join_warm_up()  # what the interpreter's exit runs
    assert time.perf_counter() - started < 30 and loom._asked.is_set()


class HoldingALock(HashingEmbedder):
    """A hashing embedder whose model set-up holds a lock for a while, as tiktoken's table
    loading and onnxruntime's session set-up do."""

    def __init__(self, seconds: float):
        super().__init__(64)
        self.lock, self.holding, self.seconds = threading.Lock(), threading.Event(), seconds

    def prepare(self):
        with self.lock:
            self.holding.set()
            time.sleep(self.seconds)


@pytest.mark.skipif(not hasattr(os, "register_at_fork"), reason="no fork on this platform")
def test_a_process_forked_during_the_warm_up_does_not_inherit_its_locks_held(tmp_path):
    """``multiprocessing`` forks by default on Linux. A child forked while the warm-up held a
    lock got it held by a thread the child does not have, and waited on it forever: the
    reliability benchmark's forked writers hung in ``count_tokens``. The fork waits for the
    warm-up instead."""
    embedder = HoldingALock(seconds=1.0)
    Loom.open(saved_session(tmp_path / "s"), embedder=embedder)
    assert embedder.holding.wait(10)
    pid = os.fork()
    if pid == 0:  # the child: exit 0 if the lock can be taken
        os._exit(0 if embedder.lock.acquire(timeout=5) else 1)
    _, status = os.waitpid(pid, 0)
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0, "the child found the warm-up's lock held"


def test_a_refresh_changes_the_lexical_index_and_the_edges_only_under_the_graphs_lock(workspace, tmp_path, monkeypatch):
    """A query on another thread (a chat's background indexer, the warm-up ranking an open
    starts) holds the graph's lock and may compact the lexical index itself. A refresh that
    compacted it without the lock once ran beside such a ranking and left its row and length
    tables of different sizes (``IndexError`` in ``_compact``, on a mined history's sibling
    trees): every compaction and every edge change must happen under the lock."""
    from loom_nb.core.lexical import LexicalIndex

    loom = synchronous(workspace, tmp_path / "s")
    held = []
    compact, replace = LexicalIndex._compact, type(loom.graph).replace_structure

    def watched_compact(index):
        held.append(("compact", loom.graph.lock._is_owned()))
        return compact(index)

    def watched_replace(graph, edges):
        held.append(("edges", graph.lock._is_owned()))
        return replace(graph, edges)

    monkeypatch.setattr(LexicalIndex, "_compact", watched_compact)
    monkeypatch.setattr(type(loom.graph), "replace_structure", watched_replace)
    tokens = workspace / "app" / "tokens.py"
    tokens.write_text(tokens.read_text() + "\n\ndef revoke_token(token):\n    return None\n")
    report = loom.index(workspace, progress=False, wait=True)
    assert report.files_indexed == 1 and report.nodes_added
    assert ("compact", True) in held and ("edges", True) in held
    assert all(owned for _, owned in held), held


def _child_exit_code(pid: int, seconds: float) -> int | None:
    """The child's exit code, or None when it is still running after ``seconds`` (then killed)."""
    deadline = time.monotonic() + seconds
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return os.WEXITSTATUS(status) if os.WIFEXITED(status) else -1
        if time.monotonic() > deadline:
            os.kill(pid, 9)
            os.waitpid(pid, 0)
            return None
        time.sleep(0.02)


@pytest.mark.skipif(not hasattr(os, "register_at_fork"), reason="no fork on this platform")
def test_a_process_forked_while_a_fill_holds_the_graphs_lock_can_still_query(workspace, tmp_path, monkeypatch):
    """A fill writes each batch, and at its end rebuilds the concept layer, under the graph's
    lock (seconds at a large index). A child forked meanwhile inherited the lock held by a
    thread it does not have, and its first query waited forever. The fork waits for the
    lock instead; the child's fill is gone, its units still pending."""
    holding, release = threading.Event(), threading.Event()
    write = background.VectorFill._write

    def slow_write(self, group, vectors):
        with self.graph.lock:  # as a large rebuild holds it for seconds
            holding.set()
            release.wait(1.0)
            write(self, group, vectors)

    monkeypatch.setattr(background.VectorFill, "_write", slow_write)
    monkeypatch.setattr(background, "BACKGROUND_ABOVE", 1)
    monkeypatch.setattr("loom_nb.index.indexer.BACKGROUND_ABOVE", 1)
    loom = Loom(tmp_path / "s", embedder=HashingEmbedder(64))
    loom.index(workspace, progress=False, wait=None)
    assert holding.wait(10), "the fill never wrote a batch"
    pid = os.fork()
    if pid == 0:  # the child: exit 0 when a query answers
        try:
            os._exit(0 if loom.query("refresh token rotate", budget=400).loaded else 2)
        finally:
            os._exit(3)
    assert _child_exit_code(pid, 15) == 0, "the child's query waited on a lock its parent's fill held"
    release.set()
    assert loom.wait(timeout=20)
