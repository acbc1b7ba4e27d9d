"""Embeddings from a local Ollama server (``nomic-embed-text``, ``all-minilm``), through the
one client factory with loom-nb's timeouts."""

from __future__ import annotations

from typing import Sequence

import numpy as np

from ..core.embedding import normalise
from .client import ollama_client
from .errors import explain_ollama_error


class OllamaEmbedder:
    """Embeddings from a local Ollama server (``/api/embed``).

    Parameters
    ----------
    model : str
        ``nomic-embed-text`` (768 dimensions) or ``all-minilm`` (384), or any embedding
        model the server has.
    host : str, optional
        Server address; defaults to ``OLLAMA_HOST``, then ``http://127.0.0.1:11434``.
    dim : int, optional
        Known dimension; otherwise probed with one call on first use.
    timeouts : loom_nb.ollama.Timeouts, optional
        Connect and answer limits (default: :class:`~loom_nb.core.config.LoomConfig`'s), so a
        stalled server fails an embedding instead of hanging it.
    """

    KNOWN_DIMS = {"nomic-embed-text": 768, "all-minilm": 384, "mxbai-embed-large": 1024}

    def __init__(self, model: str = "nomic-embed-text", host: str | None = None, dim: int | None = None, client=None,
                 timeouts=None):
        self.model = model
        self.host = host
        self.timeouts = timeouts
        self.model_id = f"ollama:{model}"
        self._client = client
        self._dim = dim or self.KNOWN_DIMS.get(model.split(":")[0])

    @property
    def client(self):
        if self._client is None:
            self._client = ollama_client(self.host, self.timeouts)
        return self._client

    @property
    def dim(self) -> int:
        if self._dim is None:
            self._dim = int(self.embed(["dimension probe"]).shape[1])
        return self._dim

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        texts = list(texts)
        if not texts:
            return np.zeros((0, self._dim or 0), dtype=np.float32)
        try:
            response = self.client.embed(model=self.model, input=texts)
        except Exception as exc:
            raise explain_ollama_error(exc, self.model, self.host, timeouts=self.timeouts) from exc
        vectors = normalise(np.asarray(response["embeddings"], dtype=np.float32))
        self._dim = vectors.shape[1]
        return vectors

    def __repr__(self) -> str:
        return f"OllamaEmbedder(model={self.model!r})"
