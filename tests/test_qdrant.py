"""Vectors in Qdrant (issue 20), in qdrant-client's embedded local mode: no server, offline.

The same session saved with numpy files and with Qdrant must answer every query the same;
saves send only new rows and delete only rows no graph.json names; a killed save loses
nothing; readers in other processes see one committed state whole while a refresher works.
"""

from __future__ import annotations

import hashlib
import json
import multiprocessing
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import textwrap
import threading
import time
from datetime import datetime
from pathlib import Path

import numpy as np
import pytest

qdrant_client = pytest.importorskip("qdrant_client")

from loom_nb import HashingEmbedder, Loom, LoomError  # noqa: E402
from loom_nb.core import graph as graph_module  # noqa: E402
from loom_nb.core.errors import EmbeddingMismatchError, SessionConflictError, SessionFormatError  # noqa: E402
from loom_nb.core.qdrant_store import QdrantStore, _named_points, connect  # noqa: E402
from loom_nb.core.store import GRAPH_FILE, load_graph  # noqa: E402
from loom_nb.core.vector_store import parse_location  # noqa: E402
from test_index import FILES, make_workspace  # noqa: E402

QUERIES = ["How are refresh tokens rotated?", "where is the token store saved", "fetchJson body", "deployment notes"]
BUDGETS = (150, 400, 1000)  # tokens: the small workspace is 11 units of 188 tokens in all


def local(tmp_path: Path, name: str = "loom") -> str:
    return f"qdrant+local://{tmp_path / 'qdrant'}/{name}"


def points_in(location: str, folder: Path) -> set[str]:
    """Every point id the collection holds."""
    with connect(parse_location(location), folder) as client:
        points, _ = client.scroll(parse_location(location).collection, limit=100_000, with_payload=False, with_vectors=False)
    return {str(p.id) for p in points}


def doc_of(folder: Path) -> dict:
    return json.loads((folder / GRAPH_FILE).read_text())


def indexed(folder: Path, workspace: Path, vectors: str | None) -> Loom:
    loom = Loom.open(folder, embedder=HashingEmbedder(), vectors=vectors)
    loom.index(workspace, wait=True, progress=False)
    loom.save()
    return loom


# -- locations ------------------------------------------------------------------------------


@pytest.mark.parametrize("spec, kind, where", [
    (None, "numpy", ""),
    ("numpy", "numpy", ""),
    ("http://qdrant:6333/loom-myrepo", "server", "http://qdrant:6333|loom-myrepo"),
    ("https://q.example.com/team/loom", "server", "https://q.example.com|loom"),
    ("qdrant+local:///srv/q/loom", "local", "/srv/q|loom"),
    ("qdrant+local:vectors/loom", "local", "vectors|loom"),
])
def test_a_location_names_the_store_and_the_collection(spec, kind, where):
    location = parse_location(spec)
    assert location.kind == kind
    if kind == "server":
        assert f"{location.server}|{location.collection}" == where
    elif kind == "local":
        assert f"{location.path}|{location.collection}" == where


@pytest.mark.parametrize("spec, message", [
    ("http://qdrant:6333", "last path segment"),
    ("http://qdrant:6333/loom?api_key=secret", "QDRANT_API_KEY"),
    ("http://qdrant:6333/bad name", "collection name"),
    ("qdrant+local://host/loom", "three slashes"),
    ("qdrant+local:loom", "storage folder and a collection"),
    ("qdrant:6333/loom", "give 'numpy'"),
    (42, "give 'numpy'"),
])
def test_a_malformed_location_says_what_to_write(spec, message):
    with pytest.raises(LoomError, match=message):
        parse_location(spec)


# -- the same answers --------------------------------------------------------------------------


class _FrozenClock(datetime):
    """Every ``created`` stamp reads the same second, so two builds can be compared whole."""

    @classmethod
    def now(cls, tz=None):
        return cls(2026, 1, 1, tzinfo=tz)


def test_a_storage_folder_under_a_file_is_refused_before_anything_is_written(tmp_path):
    (tmp_path / "afile").write_text("not a folder")
    with pytest.raises(LoomError, match="afile is a file, so the storage folder"):
        Loom(tmp_path / "s", embedder=HashingEmbedder(), vectors=f"qdrant+local://{tmp_path}/afile/sub/coll")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["afile"]  # no half-written session folder


def test_numpy_and_qdrant_sessions_load_the_same_nodes(tmp_path, monkeypatch):
    # The two sessions are indexed one after the other; on a loaded machine they straddle a
    # second and their nodes' creation stamps differ (CI failed on this once). Freeze the clock.
    monkeypatch.setattr(graph_module, "datetime", _FrozenClock)
    workspace = tmp_path / "ws"
    make_workspace(workspace)
    indexed(tmp_path / "np", workspace, None)
    indexed(tmp_path / "qd", workspace, local(tmp_path))
    assert list((tmp_path / "qd" / "embeddings").glob("*.npy")) == []  # the vectors are in the collection
    by_numpy, by_qdrant = Loom.open(tmp_path / "np"), Loom.open(tmp_path / "qd")
    assert by_numpy.vectors.kind == "numpy" and by_qdrant.vectors.kind == "local"
    compared = 0
    for query in QUERIES:
        for budget in BUDGETS:
            a, b = by_numpy.query(query, budget=budget), by_qdrant.query(query, budget=budget)
            assert a.loaded == b.loaded, (query, budget)
            assert np.array_equal(a.ranking.scores, b.ranking.scores)
            compared += bool(a.loaded)
    assert compared == len(QUERIES) * len(BUDGETS)  # the comparison is over real answers, not empty ones
    assert by_numpy.graph == by_qdrant.graph  # every node, edge and vector bit for bit


def test_a_qdrant_session_round_trips_bit_for_bit_with_chunks(tmp_path):
    loom = Loom(tmp_path / "s", embedder=HashingEmbedder(), vectors=local(tmp_path))
    loom.add("OAuth tokens expire after one hour; refresh them with the refresh token.")
    loom.add("The migrations run at startup and lock the schema table.\n" * 200)  # large: chunk vectors
    loom.save()
    doc = doc_of(tmp_path / "s")
    assert doc["schema_version"] == 3 and doc["vectors"]["store"] == "qdrant"
    assert doc["vectors"]["chunks"]["rows"] > 1
    rows = sum(doc["vectors"][k]["rows"] for k in ("content", "concepts", "chunks"))
    assert len(points_in(local(tmp_path), tmp_path / "s")) == rows
    loaded, _ = load_graph(tmp_path / "s")
    assert loaded == loom.graph


def test_a_numpy_session_moves_to_qdrant_at_its_next_save(tmp_path):
    loom = Loom(tmp_path / "s", embedder=HashingEmbedder())
    loom.add("a note about tokens")
    loom.save()
    assert sorted(p.name for p in (tmp_path / "s" / "embeddings").glob("*.npy")) == [
        "chunks.g1.npy", "concepts.g1.npy", "content.g1.npy"]
    moved = Loom.open(tmp_path / "s", vectors=local(tmp_path))
    moved.save()
    assert list((tmp_path / "s" / "embeddings").glob("*.npy")) == []
    assert Loom.open(tmp_path / "s").graph == loom.graph
    back = Loom.open(tmp_path / "s", vectors="numpy")  # and back to files
    back.save()
    assert doc_of(tmp_path / "s")["schema_version"] == 2 and "store" not in doc_of(tmp_path / "s")["vectors"]
    assert Loom.open(tmp_path / "s").graph == loom.graph


# -- saves send the difference --------------------------------------------------------------------


def test_a_save_sends_only_new_rows_and_deletes_only_dropped_ones(tmp_path, monkeypatch):
    folder = tmp_path / "s"
    loom = Loom(folder, embedder=HashingEmbedder(), vectors=local(tmp_path))
    for text in ("tokens expire hourly", "the cache is flushed nightly", "logs rotate weekly"):
        loom.add(text)
    loom.save()
    first = doc_of(folder)
    sent = []
    real = QdrantStore._upsert
    monkeypatch.setattr(QdrantStore, "_upsert", lambda self, client, v, e, ids, rows, missing: (sent.append(len(missing)),
                                                                                               real(self, client, v, e, ids, rows, missing)))
    loom.add("a fourth note about deployment windows")
    loom.save()
    second = doc_of(folder)
    new = set(_named_points(second)) - set(_named_points(first))
    assert sent == [len(new)] and 1 <= len(new) <= 2  # its content row, and the concept it founded
    assert points_in(local(tmp_path), folder) == set(_named_points(second))

    loom.graph.remove(loom.graph.content_vectors.ids[0])
    loom.save()
    third = doc_of(folder)
    assert sent[-1] == 0  # a removal sends nothing…
    assert points_in(local(tmp_path), folder) == set(_named_points(third))  # …and deletes the dropped points
    assert len(_named_points(third)) < len(_named_points(second))


# -- wrong embedder, foreign collections, bad addresses -----------------------------------------------


def test_another_embedder_is_refused_by_graph_json_and_by_the_collection(tmp_path, table_embedder):
    loom = Loom(tmp_path / "a", embedder=HashingEmbedder(), vectors=local(tmp_path))
    loom.add("tokens expire hourly")
    loom.save()
    with pytest.raises(EmbeddingMismatchError):
        Loom.open(tmp_path / "a", embedder=table_embedder({"x": [1.0, 0.0]}))
    # a new session aimed at the same collection: the collection's metadata refuses it
    with pytest.raises(EmbeddingMismatchError, match="holds vectors of 'hashing-256'"):
        Loom(tmp_path / "b", embedder=table_embedder({"x": [1.0, 0.0]}), vectors=local(tmp_path))


def test_a_collection_belongs_to_one_session(tmp_path):
    b = Loom(tmp_path / "b", embedder=HashingEmbedder(), vectors=local(tmp_path))  # before a made the collection
    a = Loom(tmp_path / "a", embedder=HashingEmbedder(), vectors=local(tmp_path))
    a.add("tokens expire hourly")
    a.save()
    b.add("the cache is flushed nightly")
    with pytest.raises(LoomError, match="holds the vectors of another session"):
        b.save()
    assert Loom.open(tmp_path / "a").graph == a.graph  # untouched


def test_a_collection_loom_nb_did_not_make_is_refused(tmp_path):
    from qdrant_client import models

    location = parse_location(local(tmp_path, "theirs"))
    with connect(location, tmp_path, create=True) as client:
        client.create_collection("theirs", vectors_config=models.VectorParams(size=256, distance=models.Distance.COSINE))
    with pytest.raises(LoomError, match="not made by loom-nb"):
        Loom(tmp_path / "s", embedder=HashingEmbedder(), vectors=local(tmp_path, "theirs"))


def test_an_unreachable_server_fails_at_once_with_a_clear_message(tmp_path):
    with socket.socket() as s:  # a loopback port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    started = time.perf_counter()
    with pytest.raises(LoomError, match=rf"no Qdrant server answered at http://127.0.0.1:{port}"):
        Loom(tmp_path / "s", embedder=HashingEmbedder(), vectors=f"http://127.0.0.1:{port}/loom")
    assert time.perf_counter() - started < 3


def test_without_qdrant_client_the_error_says_what_to_install(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "qdrant_client", None)  # import qdrant_client now raises ImportError
    with pytest.raises(LoomError, match=r"pip install 'loom-nb\[qdrant\]'"):
        Loom(tmp_path / "s", embedder=HashingEmbedder(), vectors="http://127.0.0.1:6333/loom")


def test_importing_loom_nb_does_not_import_qdrant_client():
    code = "import sys, loom_nb; loom_nb.Loom; print('qdrant_client' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env={**os.environ, "PYTHONPATH": str(Path(__file__).parents[1])})
    assert out.stdout.strip() == "False"


def test_a_location_graph_json_names_is_read_only_once_confirmed(tmp_path, monkeypatch):
    loom = Loom(tmp_path / "s", embedder=HashingEmbedder(), vectors=local(tmp_path))
    loom.add("tokens expire hourly")
    loom.save()  # saving there confirms it, for this user
    assert Loom.open(tmp_path / "s").graph == loom.graph
    monkeypatch.setenv("LOOM_NB_CONFIG_DIR", str(tmp_path / "another-user"))  # a folder from elsewhere
    with pytest.raises(LoomError, match="never confirmed on this machine: open it with vectors="):
        Loom.open(tmp_path / "s")
    assert Loom.open(tmp_path / "s", vectors=local(tmp_path)).graph == loom.graph  # naming it confirms it
    assert Loom.open(tmp_path / "s").graph == loom.graph


def test_local_storage_inside_the_session_folder_needs_no_confirmation(tmp_path, monkeypatch):
    loom = Loom(tmp_path / "s", embedder=HashingEmbedder(), vectors="qdrant+local:vectors/loom")
    loom.add("tokens expire hourly")
    loom.save()
    assert (tmp_path / "s" / "vectors" / "meta.json").is_file()
    monkeypatch.setenv("LOOM_NB_CONFIG_DIR", str(tmp_path / "another-user"))
    assert Loom.open(tmp_path / "s").graph == loom.graph


def test_a_point_changed_outside_loom_nb_is_a_format_error(tmp_path):
    loom = Loom(tmp_path / "s", embedder=HashingEmbedder(), vectors=local(tmp_path))
    loom.add("tokens expire hourly")
    loom.save()
    location = parse_location(local(tmp_path))
    with connect(location, tmp_path) as client:
        point = client.scroll("loom", limit=1, with_vectors=True)[0][0]
        client.upsert("loom", points=[qdrant_client.models.PointStruct(id=point.id, vector=[-x for x in point.vector])])
    with pytest.raises(SessionFormatError, match="not the one graph.json names"):
        Loom.open(tmp_path / "s")


def test_a_qdrant_graph_json_is_checked_against_the_schema(tmp_path):
    loom = Loom(tmp_path / "s", embedder=HashingEmbedder(), vectors=local(tmp_path))
    loom.add("tokens expire hourly")
    loom.save()
    doc = doc_of(tmp_path / "s")
    doc["vectors"]["content"]["digests"] = ["not-hex"]
    (tmp_path / "s" / GRAPH_FILE).write_text(json.dumps(doc))  # the seal no longer matches: validated
    with pytest.raises(SessionFormatError, match=r"vectors\.content\.digests"):
        Loom.open(tmp_path / "s")


def test_the_cli_indexes_into_qdrant_and_queries_from_it(tmp_path, capsys):
    from loom_nb.cli import main

    make_workspace(tmp_path / "ws")
    session = str(tmp_path / "s")
    assert main(["index", session, str(tmp_path / "ws"), "--embedder", "hashing", "--vectors", local(tmp_path)]) == 0
    assert main(["show", session]) == 0
    assert f"vectors: Qdrant local storage {tmp_path / 'qdrant'}, collection loom" in capsys.readouterr().out
    assert main(["query", session, "How are refresh tokens rotated?", "--budget", "150", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["table"]


# -- crashes -----------------------------------------------------------------------------------------

KILLED_SAVE = textwrap.dedent("""
    import os, signal, sys
    from loom_nb import Loom
    from loom_nb.core import store
    from loom_nb.core.qdrant_store import QdrantStore

    folder, workspace, where = sys.argv[1], sys.argv[2], sys.argv[3]
    if where == "before-commit":  # the new points are in, graph.json is not replaced yet
        real = store.atomic_write_bytes
        def write(path, data):
            if path.name == "graph.json":
                os.kill(os.getpid(), signal.SIGKILL)
            real(path, data)
        store.atomic_write_bytes = write
    else:  # graph.json is replaced, the old points are not deleted yet
        QdrantStore.collect = lambda self, previous, doc: os.kill(os.getpid(), signal.SIGKILL)
    with Loom.editing(folder) as loom:
        loom.index(workspace, wait=True, progress=False)
""")


@pytest.mark.parametrize("where", ["before-commit", "after-commit"])
def test_a_refresh_killed_midway_loses_nothing_and_the_next_one_finishes(tmp_path, where):
    workspace, folder = tmp_path / "ws", tmp_path / "s"
    make_workspace(workspace)
    before = indexed(folder, workspace, local(tmp_path))
    # rotate's body changes (its old node goes: an orphan point until the next save) and revoke is new
    edited = FILES["app/tokens.py"].replace("    return store\n", "    return store.rotated()\n")
    assert edited != FILES["app/tokens.py"]
    (workspace / "app" / "tokens.py").write_text(edited + "\n\ndef revoke(store):\n    return store.clear()\n")
    run = subprocess.run([sys.executable, "-c", KILLED_SAVE, str(folder), str(workspace), where], capture_output=True, text=True,
                         env={**os.environ, "PYTHONPATH": str(Path(__file__).parents[1])}, timeout=120)
    assert run.returncode == -signal.SIGKILL, run.stderr
    survivor = Loom.open(folder)
    if where == "before-commit":
        assert survivor.graph == before.graph  # the old state, whole
    else:
        assert "revoke" in " ".join(n.title for n in survivor.graph.content_nodes())  # the new state, whole
    assert len(points_in(local(tmp_path), folder)) > len(_named_points(doc_of(folder)))  # orphans are left…
    survivor.index(workspace, wait=True, progress=False)  # …until the next refresh
    survivor.save()
    assert points_in(local(tmp_path), folder) == set(_named_points(doc_of(folder)))
    assert Loom.open(folder).graph == survivor.graph


# -- readers while a refresher works ------------------------------------------------------------------

REFRESHES = 4
QUERY = "How are refresh tokens rotated?"


def fingerprint(loom: Loom) -> str:
    """What a reader must see whole: the ids and vectors of every row, and the ranking."""
    g = loom.graph
    h = hashlib.sha256()
    for table in (g.content_vectors, g.concept_vectors):
        h.update("\0".join(table.ids).encode())
        h.update(np.ascontiguousarray(table.matrix).tobytes())
    h.update(repr(loom.query(QUERY, budget=150).ranking.top(10)).encode())
    return h.hexdigest()


def _refresher(folder: str, workspace: str, out: str) -> None:
    states = []
    for i in range(REFRESHES):
        path = Path(workspace) / "app" / "tokens.py"
        path.write_text(path.read_text() + f"\n\ndef step_{i}(store):\n    return store.save({i})\n")
        with Loom.editing(folder) as loom:
            loom.index(workspace, wait=True, progress=False)
        states.append((loom.graph.saved_as[1], fingerprint(loom)))
        time.sleep(0.05)
    Path(out).write_text(json.dumps(states))


def _reader(folder: str, out: str, stop: str) -> None:
    seen, errors = [], []
    while not Path(stop).exists():
        try:
            loom = Loom.open(folder)
            seen.append((loom.graph.saved_as[1], fingerprint(loom)))
        except Exception as exc:  # noqa: BLE001 - every failure is a finding
            errors.append(f"{type(exc).__name__}: {exc}")
    Path(out).write_text(json.dumps({"seen": seen, "errors": errors}))


def test_two_reader_processes_see_whole_states_while_a_third_refreshes(tmp_path):
    """Local mode admits one process at a time to its storage folder (a file lock); loom-nb
    holds it only for a load or a save, so three processes take turns on one collection."""
    workspace, folder = tmp_path / "ws", tmp_path / "s"
    make_workspace(workspace)
    first = indexed(folder, workspace, local(tmp_path))
    committed = {first.graph.saved_as[1]: fingerprint(first)}
    stop = tmp_path / "stop"
    ctx = multiprocessing.get_context("spawn")  # fresh interpreters, as separate users would be
    readers = [ctx.Process(target=_reader, args=(str(folder), str(tmp_path / f"reader{i}.json"), str(stop))) for i in range(2)]
    refresher = ctx.Process(target=_refresher, args=(str(folder), str(workspace), str(tmp_path / "refresher.json")))
    for p in readers:
        p.start()
    time.sleep(1.0)  # readers are up before the first refresh
    refresher.start()
    refresher.join(180)
    time.sleep(0.5)
    stop.touch()
    for p in readers:
        p.join(60)
    assert refresher.exitcode == 0 and all(p.exitcode == 0 for p in readers)
    committed.update(dict(json.loads((tmp_path / "refresher.json").read_text())))
    committed = {int(k): v for k, v in committed.items()}
    observed = []
    for i in range(2):
        report = json.loads((tmp_path / f"reader{i}.json").read_text())
        assert report["errors"] == []
        observed += report["seen"]
    assert len(committed) == REFRESHES + 1
    assert all(committed[generation] == print_ for generation, print_ in observed)  # whole states only
    assert len({generation for generation, _ in observed}) >= 2  # and they did run during the refreshes
    assert points_in(local(tmp_path), folder) == set(_named_points(doc_of(folder)))


def test_reader_threads_see_whole_states_while_a_thread_refreshes(tmp_path):
    workspace, folder = tmp_path / "ws", tmp_path / "s"
    make_workspace(workspace)
    first = indexed(folder, workspace, local(tmp_path))
    committed = {first.graph.saved_as[1]: fingerprint(first)}
    observed, errors, done = [], [], threading.Event()

    def read():
        while not done.is_set():
            try:
                loom = Loom.open(folder)
                observed.append((loom.graph.saved_as[1], fingerprint(loom)))
            except Exception as exc:  # noqa: BLE001
                errors.append(exc)

    threads = [threading.Thread(target=read) for _ in range(2)]
    for t in threads:
        t.start()
    for i in range(3):
        path = workspace / "app" / "store.py"
        path.write_text(path.read_text() + f"\n\ndef extra_{i}():\n    return {i}\n")
        with Loom.editing(folder) as loom:
            loom.index(workspace, wait=True, progress=False)
        committed[loom.graph.saved_as[1]] = fingerprint(loom)
    done.set()
    for t in threads:
        t.join(60)
    assert errors == []
    assert observed and all(committed[g] == f for g, f in observed)


def test_a_reader_whose_points_were_just_collected_reads_the_new_state(tmp_path):
    folder = tmp_path / "s"
    loom = Loom(folder, embedder=HashingEmbedder(), vectors=local(tmp_path))
    loom.add("tokens expire hourly")
    loom.add("the cache is flushed nightly")
    loom.save()
    stale = doc_of(folder)  # a reader parsed graph.json here…
    loom.graph.remove("n1")
    loom.add("logs rotate weekly")
    loom.save()  # …a writer committed and deleted the points only the old state named…
    graph, doc = load_graph(folder, doc=stale)  # …so the read starts again on the new graph.json
    assert doc["generation"] == stale["generation"] + 1 and graph == loom.graph


# -- moving back, another session's collection ---------------------------------------------------


def test_a_session_moves_back_into_its_own_collection(tmp_path):
    folder = tmp_path / "s"
    loom = Loom(folder, embedder=HashingEmbedder())
    loom.add("a note on token refresh")
    loom.save()
    Loom.open(folder, vectors=local(tmp_path)).save()
    Loom.open(folder, vectors="numpy").save()  # the collection is left as it is
    again = Loom.open(folder, vectors=local(tmp_path))
    again.add("a note on clock skew")
    again.save()
    assert Loom.open(folder).graph == again.graph
    assert points_in(local(tmp_path), folder) == set(_named_points(doc_of(folder)))  # the first stay's leftovers are gone


def test_another_sessions_collection_is_refused_at_open_not_at_save(tmp_path):
    a = Loom(tmp_path / "a", embedder=HashingEmbedder(), vectors=local(tmp_path))
    a.add("tokens expire hourly")
    a.save()
    other = Loom(tmp_path / "b", embedder=HashingEmbedder())
    other.add("the cache is flushed nightly")
    other.save()
    with pytest.raises(LoomError, match="holds the vectors of another session"):
        Loom.open(tmp_path / "b", vectors=local(tmp_path))
    with pytest.raises(LoomError, match="holds the vectors of another session"):
        Loom.open(tmp_path / "new", embedder=HashingEmbedder(), vectors=local(tmp_path))
    assert Loom.open(tmp_path / "a").graph == a.graph


# -- copies of a session --------------------------------------------------------------------------


def test_a_copy_of_the_session_cannot_delete_the_vectors_the_original_names(tmp_path):
    a = Loom(tmp_path / "a", embedder=HashingEmbedder(), vectors=local(tmp_path))
    a.add("first note about token refresh")
    a.add("second note about clock skew")
    a.save()
    shutil.copytree(tmp_path / "a", tmp_path / "b")  # cp -r: the same owner, the same collection
    b = Loom.open(tmp_path / "b", vectors=local(tmp_path))
    b.graph.remove_many(["n1"])  # a change that drops a row (a refresh does)
    b.add("third note in the copy")
    held = points_in(local(tmp_path), tmp_path / "a")
    with pytest.raises(SessionConflictError, match=f"a copy of {re.escape(str(tmp_path / 'a'))}"):
        b.save()
    b.graph.remove_many(list(b.graph.content_vectors.ids))
    with pytest.raises(SessionConflictError):  # emptied, it sends nothing, but would delete every point
        b.save()
    assert points_in(local(tmp_path), tmp_path / "a") == held  # nothing sent, nothing deleted
    assert Loom.open(tmp_path / "a").graph == a.graph
    assert Loom.open(tmp_path / "a", vectors="numpy").graph == a.graph
    Loom.open(tmp_path / "b", vectors="numpy").save()  # what the refusal says: the copy keeps its vectors in its folder
    assert points_in(local(tmp_path), tmp_path / "a") == held and Loom.open(tmp_path / "a").graph == a.graph

    shutil.copytree(tmp_path / "a", tmp_path / "c")
    shutil.rmtree(tmp_path / "a")  # the original is gone: the folder was moved, not copied, and takes the collection over
    c = Loom.open(tmp_path / "c", vectors=local(tmp_path))
    c.graph.remove_many(["n1"])
    c.save()
    assert Loom.open(tmp_path / "c").graph == c.graph
    assert points_in(local(tmp_path), tmp_path / "c") == set(_named_points(doc_of(tmp_path / "c")))


def test_vectors_gone_from_the_collection_say_what_to_do(tmp_path):
    loom = Loom(tmp_path / "s", embedder=HashingEmbedder(), vectors=local(tmp_path))
    loom.add("tokens expire hourly")
    loom.save()
    with connect(parse_location(local(tmp_path)), tmp_path) as client:  # as a copy's save did before it was refused
        client.delete("loom", points_selector=qdrant_client.models.PointIdsList(points=_named_points(doc_of(tmp_path / "s"))[:1]))
    for vectors in (None, "numpy"):
        with pytest.raises(SessionFormatError, match=r"1 of the 2 vectors .* not in the collection.*index .* again into a new"):
            Loom.open(tmp_path / "s", vectors=vectors)


# -- damaged local storage ------------------------------------------------------------------------


@pytest.mark.parametrize("damage, named", [
    (lambda storage: (storage / "meta.json").write_text("{garbage"), "meta.json"),
    (lambda storage: next(storage.rglob("storage.sqlite")).write_bytes(b"not a database" * 100), "storage.sqlite"),
])
def test_damaged_local_storage_is_a_format_error_naming_the_file(tmp_path, damage, named):
    folder = tmp_path / "s"
    loom = Loom(folder, embedder=HashingEmbedder(), vectors="qdrant+local:vectors/loom")
    loom.add("tokens expire hourly")
    loom.save()
    damage(folder / "vectors")
    committed = (folder / GRAPH_FILE).read_bytes()
    for vectors in (None, "numpy"):
        with pytest.raises(SessionFormatError, match="Qdrant local storage is damaged") as raised:
            Loom.open(folder, vectors=vectors)
        assert raised.value.path.endswith(named)
    with pytest.raises(SessionFormatError, match="Qdrant local storage is damaged"):
        loom.save()  # a save into it is refused the same way
    assert (folder / GRAPH_FILE).read_bytes() == committed
