"""The static embedder distilled from MiniLM (issue 16; tools/build_static_embedder.py, not shipped):
its reader, as the benchmark uses it, and its build steps."""

import importlib.util
from pathlib import Path

import numpy as np
import pytest

from loom_nb.embed import MINILM_TOKENIZER_SHA256

ROOT = Path(__file__).resolve().parents[1]


def _build_module():
    spec = importlib.util.spec_from_file_location("build_static_embedder", ROOT / "tools" / "build_static_embedder.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


build = _build_module()
StaticEmbedder = build.StaticEmbedder
BUILT = build.DEFAULT_OUT


@pytest.fixture(scope="module")
def table(tmp_path_factory):
    """A random table over MiniLM's vocabulary, saved as the build script saves one."""
    rng = np.random.default_rng(0)
    matrix = rng.integers(-127, 128, size=(30522, 16)).astype(np.int8)
    path = tmp_path_factory.mktemp("static") / "t.npz"
    np.savez(path, matrix=matrix, scale=np.float32(1), dims=np.int32(16), sif=np.float64(1e-4),
             tokenizer_sha256=np.str_(MINILM_TOKENIZER_SHA256))
    return path, matrix.astype(np.float32)


def test_a_text_is_the_mean_of_its_tokens_rows(table):
    path, matrix = table
    e = StaticEmbedder(path)
    e.prepare()
    ids = e._tokenizer.encode("refresh tokens", add_special_tokens=False).ids
    assert len(ids) >= 2
    expected = matrix[ids].mean(axis=0)
    got = e.embed(["refresh tokens"])[0]
    assert e.dim == 16 and got.dtype == np.float32
    assert got @ (expected / np.linalg.norm(expected)) == pytest.approx(1.0, abs=1e-6)


def test_empty_text_is_a_zero_vector_and_nothing_is_empty(table):
    e = StaticEmbedder(table[0])
    out = e.embed(["", "cat", ""])
    assert out.shape == (3, 16)
    assert not out[0].any() and not out[2].any()
    assert np.linalg.norm(out[1]) == pytest.approx(1.0, abs=1e-6)
    assert e.embed([]).shape == (0, 16)


def test_batches_and_order_do_not_change_a_vector(table):
    e = StaticEmbedder(table[0])
    texts = ["def rank(nodes):", "", "the ranking engine scores content", "x" * 5000]
    together = e.embed(texts)
    for text, vec in zip(texts, together):
        assert np.array_equal(e.embed([text])[0], vec)
    assert np.array_equal(StaticEmbedder(table[0]).embed(texts[::-1])[::-1], together)


def test_a_missing_or_foreign_table_is_a_clear_error(tmp_path, table):
    from loom_nb.core.errors import LoomError

    with pytest.raises(LoomError, match="build_static_embedder"):
        StaticEmbedder(tmp_path / "absent.npz").embed(["x"])
    foreign = tmp_path / "foreign.npz"
    np.savez(foreign, matrix=np.zeros((4, 2), np.int8), tokenizer_sha256=np.str_("0" * 64))
    with pytest.raises(LoomError, match="another tokenizer"):
        StaticEmbedder(foreign).embed(["x"])


def test_it_serves_a_loom(table):
    from loom_nb import Loom

    loom = Loom(embedder=StaticEmbedder(table[0]))
    assert loom.embedder.model_id == "minilm-static-16" and loom.embedder.dim == 16  # known before the table loads
    loom.add("The ranking engine scores content by several signals.")
    loom.add("Tomato plants go outside after the last frost.")
    assert loom.query("How does the ranking engine score content?", budget=500).loaded


def test_build_steps_are_model2vecs():
    w = build.sif_weights(1000)
    assert np.all(np.diff(w) > 0) and w[-1] < 1  # frequent (low-rank) tokens weigh least
    x = np.random.default_rng(1).normal(size=(200, 8)) @ np.diag([8, 4, 2, 1, 1, 1, 1, 1])
    scores = build.pca(x, 3)
    assert scores.shape == (200, 3)
    assert np.all(np.var(scores, axis=0)[:-1] >= np.var(scores, axis=0)[1:])  # largest variance first
    assert np.all(scores[np.argmax(np.abs(scores), axis=0), range(3)] > 0)  # the sign model2vec fixes
    assert np.array_equal(build.pca(x, 3), scores)


@pytest.mark.skipif(not BUILT.is_file(), reason="no built table: tools/build_static_embedder.py")
def test_the_distilled_table_knows_similar_from_unrelated():
    e = StaticEmbedder(BUILT)
    cat, kitten, stocks, code = e.embed(["A cat sits on the mat", "A kitten rests on a rug",
                                         "Stock markets fell sharply today", "def refresh_token(self): rotate the token"])
    assert e.dim == 256
    assert cat @ kitten > 0.4 > max(cat @ stocks, kitten @ stocks)
    assert cat @ e.embed(["A cat sits on the mat"])[0] == pytest.approx(1.0, abs=1e-6)
