"""A static embedder distilled from MiniLM (model2vec-style): a token table, no network at query time.

Each WordPiece token has one row (256 numbers, int8) made by ``tools/build_static_embedder.py``
from the ONNX MiniLM loom-nb ships; a text is the mean of its tokens' rows, L2-normalised.
Hundreds of times faster than MiniLM and much weaker (issue 16: measured in
``benchmarks/bench_static_embedder.py``).
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Sequence

import numpy as np

from ..core.embedding import normalise
from ..core.errors import LoomError

_DATA = Path(__file__).parent.parent / "_data"
STATIC_MATRIX = _DATA / "minilm_static_256.npz"


class StaticEmbedder:
    """Mean of per-token vectors distilled from all-MiniLM-L6-v2 (numpy and tokenizers only).

    Parameters
    ----------
    path : str or Path, optional
        The ``.npz`` that ``tools/build_static_embedder.py`` writes; the packaged one by default.
    max_length : int
        Tokens per text at most (model2vec's default, 512).
    """

    def __init__(self, path: str | Path | None = None, max_length: int = 512):
        self.path = Path(path) if path is not None else STATIC_MATRIX
        self.max_length = max_length
        self.dim = 256
        self.model_id = "minilm-static-256"
        self._matrix: np.ndarray | None = None
        self._tokenizer = None
        self._loading = threading.Lock()

    def prepare(self) -> None:
        """Load the table and the tokenizer now (``embed`` does on first use)."""
        with self._loading:
            if self._matrix is None:
                self._load_now()

    def _load_now(self) -> None:
        import tokenizers

        from . import MINILM_TOKENIZER_SHA256, _sha256_file

        if not self.path.is_file():
            raise LoomError(f"{self.path}: no static embedder table; build it with tools/build_static_embedder.py --out {self.path}")
        with np.load(self.path) as data:
            if str(data["tokenizer_sha256"]) != MINILM_TOKENIZER_SHA256:
                raise LoomError(f"{self.path}: built for another tokenizer; rebuild it with tools/build_static_embedder.py")
            matrix = data["matrix"].astype(np.float32)
        tokenizer_path = _DATA / "minilm_tokenizer.json"
        if _sha256_file(tokenizer_path) != MINILM_TOKENIZER_SHA256:
            raise LoomError(f"{tokenizer_path}: not the expected MiniLM tokenizer (sha256 mismatch); reinstall loom-nb")
        tok = tokenizers.Tokenizer.from_file(str(tokenizer_path))
        tok.enable_truncation(self.max_length)
        tok.no_padding()
        self._unk = tok.token_to_id("[UNK]")
        matrix[self._unk] = 0  # an unknown token says nothing (model2vec drops it too)
        self.dim = matrix.shape[1]
        self.model_id = f"minilm-static-{self.dim}"
        self._tokenizer = tok
        self._matrix = matrix

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        texts = list(texts)
        if self._matrix is None:
            self.prepare()
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        encodings = self._tokenizer.encode_batch([t or "" for t in texts], add_special_tokens=False)
        lengths = np.fromiter((len(e.ids) for e in encodings), dtype=np.int64, count=len(texts))
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        filled = lengths > 0
        if filled.any():
            ids = np.concatenate([e.ids for e in encodings if e.ids]).astype(np.int64)
            starts = np.concatenate(([0], np.cumsum(lengths[filled])[:-1]))
            out[filled] = np.add.reduceat(self._matrix[ids], starts, axis=0)
        return normalise(out)  # the mean's direction: dividing by the length would change nothing

    def __repr__(self) -> str:
        return f"StaticEmbedder({str(self.path)!r})"
