"""Shared fixtures: an embedder with hand-chosen vectors, so answers can be checked by hand."""

from __future__ import annotations

import os
import tempfile

import numpy as np
import pytest

# Workspace confirmations (loom_nb.core.trust) go to a folder of this run, not the user's
# ~/.config; set before any test, so CLI subprocesses inherit it.
os.environ["LOOM_NB_CONFIG_DIR"] = tempfile.mkdtemp(prefix="loom-nb-config-")


class TableEmbedder:
    """Maps each known text to a given vector (normalised). Unknown text is an error."""

    model_id = "table-test"

    def __init__(self, table: dict[str, list[float]]):
        self.table = {k: np.asarray(v, dtype=np.float32) for k, v in table.items()}
        self.dim = len(next(iter(self.table.values())))
        self.calls = 0

    def embed(self, texts):
        self.calls += 1
        out = np.stack([self.table[t] for t in texts]) if texts else np.zeros((0, self.dim), np.float32)
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        return (out / np.where(norms == 0, 1, norms)).astype(np.float32)


def unit(angle_deg: float, dim: int = 2) -> list[float]:
    """A unit vector at ``angle_deg`` from the x axis: cosines are cos(angle differences)."""
    v = [0.0] * dim
    v[0], v[1] = float(np.cos(np.radians(angle_deg))), float(np.sin(np.radians(angle_deg)))
    return v


@pytest.fixture
def table_embedder():
    return TableEmbedder


@pytest.fixture(scope="session")
def minilm():
    from loom_nb.embed import MiniLMEmbedder

    return MiniLMEmbedder()
