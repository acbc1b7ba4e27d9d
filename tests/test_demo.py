"""The demo writes only where it may: an empty folder or one it built before."""

from __future__ import annotations

import pytest

from loom_nb import HashingEmbedder, LoomError
from loom_nb.demo import DEMO_MARKER, SAMPLES, build_session


def test_the_demo_refuses_to_replace_a_folder_it_did_not_build(tmp_path):
    out = tmp_path / "mine"
    out.mkdir()
    (out / "notes.txt").write_text("my precious file")
    with pytest.raises(LoomError, match="not made by loom-nb demo"):
        build_session(SAMPLES / "auth-debugging", out, HashingEmbedder(), verbose=False)
    assert [p.name for p in out.iterdir()] == ["notes.txt"]
    with pytest.raises(LoomError, match="refusing"):
        build_session(SAMPLES / "auth-debugging", out / "notes.txt", HashingEmbedder(), verbose=False)


def test_the_demo_rebuilds_its_own_folder_and_fills_an_empty_one(tmp_path):
    out = tmp_path / "empty"
    out.mkdir()
    build_session(SAMPLES / "auth-debugging", out, HashingEmbedder(), verbose=False).save()
    assert (out / DEMO_MARKER).exists() and (out / "graph.json").exists()
    (out / "stray.txt").write_text("left by the last build")
    build_session(SAMPLES / "auth-debugging", out, HashingEmbedder(), verbose=False).save()
    assert not (out / "stray.txt").exists() and (out / "graph.json").exists()


@pytest.mark.slow
def test_the_self_index_queries_find_their_module_in_the_top_3_of_the_default_call(tmp_path, minilm):
    """Seed 000 §8.2's self-referential queries, through the call a user makes (mode auto)."""
    from loom_nb import Loom
    from loom_nb.demo import PACKAGE, SELF_QUERIES

    loom = Loom.open(tmp_path / "self", embedder=minilm)
    loom.index(PACKAGE, progress=False)
    assert loom.wait()  # the vectors are embedded in the background: the figures are with all of them
    for query, expected in SELF_QUERIES:
        result = loom.query(query, budget=2000)
        top = [row.title for row in result.rows(3)]
        assert any(title.startswith(expected) for title in top), (query, top)
        assert result.packed.context_tokens <= 2000
