"""What the core needs to know of embeddings: the :class:`Embedder` protocol, unit-norm
rows, and :class:`CachedEmbedder`, which keys vectors by the text's hash so unchanged text is
never embedded twice.

The models themselves (MiniLM, hashing, Ollama) live a layer up, in ``loom_nb.embed`` and
``loom_nb.ollama``; the engine is handed one, or asks ``loom_nb.embed`` for the default.
"""

from __future__ import annotations

import hashlib
from typing import Iterable, Protocol, Sequence, runtime_checkable

import numpy as np


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into L2-normalised float32 vectors of a fixed dimension.

    ``model_id`` names the vector space: vectors with different ids are never compared.
    """

    model_id: str
    dim: int

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """An array of shape ``(len(texts), dim)``, dtype float32, rows of unit norm."""
        ...


def normalise(vectors: np.ndarray) -> np.ndarray:
    """Rows scaled to unit length (zero rows stay zero), as float32."""
    vectors = np.asarray(vectors, dtype=np.float32)
    if vectors.ndim == 1:
        vectors = vectors[None, :]
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return (vectors / np.where(norms == 0, 1, norms)).astype(np.float32)


def text_key(text: str) -> str:
    """The cache key of a text: its sha256 (the model id is kept beside it)."""
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


class CachedEmbedder:
    """Any embedder plus a cache keyed by model id and content hash.

    Unchanged text is never embedded twice: :attr:`hits` and :attr:`misses` say how often
    the cache answered. The cache is saved with the session (``embeddings/cache-*.npy``).
    """

    def __init__(self, inner: Embedder):
        self.inner = inner
        self.model_id = inner.model_id
        self._vectors: dict[str, np.ndarray] = {}
        self.hits = 0
        self.misses = 0

    @property
    def dim(self) -> int:
        return self.inner.dim

    def __len__(self) -> int:
        return len(self._vectors)

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        texts = list(texts)
        keys = [text_key(t) for t in texts]
        missing: dict[str, str] = {}
        for key, text in zip(keys, texts):
            if key not in self._vectors and key not in missing:
                missing[key] = text
        self.misses += len(missing)
        self.hits += len(texts) - len(missing)
        if missing:
            fresh = self.inner.embed(list(missing.values()))
            for key, vector in zip(missing, fresh):
                self._vectors[key] = vector
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        return np.stack([self._vectors[k] for k in keys]).astype(np.float32)

    def prepare(self) -> None:
        """Load the model ahead of the first embed, where the embedder can (MiniLM)."""
        prepare = getattr(self.inner, "prepare", None)
        if prepare is not None:
            prepare()

    def uncached(self, texts: Sequence[str]) -> int:
        """How many distinct texts of ``texts`` the model would have to embed."""
        return len({key for key in map(text_key, texts) if key not in self._vectors})

    def items(self) -> Iterable[tuple[str, np.ndarray]]:
        return self._vectors.items()

    def preload(self, keys: Sequence[str], vectors: np.ndarray) -> None:
        for key, vector in zip(keys, vectors):
            self._vectors[key] = np.asarray(vector, dtype=np.float32)

    def forget(self, texts: Sequence[str]) -> None:
        """Drop these texts from the cache (an evaluation times each strategy's own embedding)."""
        for text in texts:
            self._vectors.pop(text_key(text), None)

    def __repr__(self) -> str:
        return f"CachedEmbedder({self.inner!r}, entries={len(self)}, hits={self.hits}, misses={self.misses})"
