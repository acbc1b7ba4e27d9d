"""Vectors filled in after indexing returns: embed on a worker thread, rank meanwhile.

Embedding is about 90 % of a cold index with MiniLM (issue 16: 98 s of a caddy index),
while parsing, the lexical index and the structure edges take seconds. So a large index
adds its units with zero vectors, lists them in ``graph.metadata["pending_vectors"]`` and
returns; :class:`VectorFill` then embeds them batch by batch on a daemon thread. Each
batch is embedded outside any lock and written under ``graph.lock``, which a query holds
while it ranks and packs, so a query sees a batch whole or not at all.

A query before the fill ends ranks with what there is: a unit without its vector has a
semantic signal of 0 and is found by its terms, path and structure; the manifest says how
many units are embedded. The pending list is saved with the session, and
:meth:`Loom.open <loom_nb.core.engine.Loom.open>` starts a fill for what a save left
pending; an index run's fill also embeds what an earlier fill left (it failed, or was
stopped) and what an open could not read. At the end the concept layer is rebuilt (a large run) or each unit is linked to
the concepts at the threshold as its vector arrives (a small one).
"""

from __future__ import annotations

import atexit
import logging
import threading
import weakref
from dataclasses import dataclass
from typing import Sequence

import numpy as np

from ..core.concepts import REBUILD_SHARE, needs_concept_rebuild, rebuild_concepts
from ..core.errors import LoomError
from ..core.graph import chunk_mean
from ..core.tokens import truncate_to_tokens
from .units import EMBED_TOKENS, unit_embed_text

log = logging.getLogger(__name__)

__all__ = ["BACKGROUND_ABOVE", "FillJob", "VectorFill", "jobs_for_pending", "rebuild_due", "resume_fill"]

BACKGROUND_ABOVE = 512
"""Texts the model would embed (the cache answers the rest) at or above which
``index(..., wait=None)`` returns before its vectors: about 10 s of MiniLM on 2 cores.
Below it, indexing embeds in line and returns with every vector in place."""
FILL_BATCH = 64
EXIT_WAIT = 60.0
"""Seconds the interpreter's exit waits for a running fill to finish its batch. A daemon
thread killed inside onnxruntime aborts the process ("terminate called without an active
exception"); stopped between batches it just ends, its units still pending."""
_RUNNING: "weakref.WeakSet[VectorFill]" = weakref.WeakSet()


@atexit.register
def _stop_running_fills() -> None:
    for fill in list(_RUNNING):
        fill.stop()
    for fill in list(_RUNNING):
        fill._thread.join(EXIT_WAIT)


@dataclass(frozen=True)
class FillJob:
    """One unit's texts to embed: its chunks' (the vector is their mean) or its own one."""

    node_id: str
    pieces: tuple[str, ...]
    chunked: bool


def jobs_for_pending(graph, ids: Sequence[str] | None = None) -> list[FillJob]:
    """The jobs of a session's pending units (or of those of ``ids``), rebuilt from the nodes
    after a re-open: the texts indexing would have embedded. A unit whose file changed since,
    or cannot be read (a workspace not confirmed yet), is left pending (the next index
    replaces or embeds it)."""
    jobs = []
    for node_id in graph.pending_vectors if ids is None else ids:
        if node_id not in graph:
            continue
        node = graph.node(node_id)
        try:
            text = graph.text(node_id)
        except Exception as exc:  # stale or unreadable: the next index run replaces it
            log.info("pending %s left for the next index: %s", node_id, exc)
            continue
        if node.chunks:
            pieces = tuple(truncate_to_tokens(text[s:e], EMBED_TOKENS) for s, e in node.chunks)
        else:
            meta = node.meta
            pieces = (unit_embed_text(meta.get("path", ""), meta.get("name", ""), meta.get("embed_doc", ""), text),)
        jobs.append(FillJob(node_id, pieces, bool(node.chunks)))
    return jobs


def resume_fill(loom, *, progress: bool | None = None) -> "VectorFill":
    """Start embedding what a saved session left pending. The concept layer is rebuilt at
    the end when it was due (its version is older, or the pending units are many)."""
    graph = loom.graph
    jobs = jobs_for_pending(graph)
    return VectorFill(graph, loom.embedder, jobs, rebuild=rebuild_due(graph, len(graph.pending_vectors)),
                      progress=progress).start()


def rebuild_due(graph, pending: int) -> bool:
    """Whether a fill of ``pending`` units no index run added just now rebuilds the concept
    layer at its end: an old layer is rebuilt; else as an index run would, when the pending
    units are a large share."""
    return needs_concept_rebuild(graph, added=0, removed=0) or pending >= REBUILD_SHARE * len(graph.content_vectors)


class VectorFill:
    """Embeds pending units on a daemon thread (see the module doc).

    ``done`` and ``total`` count units; :meth:`wait` blocks until the fill ends and raises
    what stopped it, if anything did.
    """

    def __init__(self, graph, embedder, jobs: Sequence[FillJob], *, rebuild: bool, progress: bool | None = None,
                 batch: int = FILL_BATCH):
        self.graph = graph
        self.embedder = embedder
        self.jobs = list(jobs)
        self.rebuild = rebuild
        self.progress = progress
        self.batch = batch
        self.total = len(self.jobs)
        self.done = 0
        self.error: BaseException | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="loom-nb vector fill", daemon=True)

    def start(self) -> "VectorFill":
        _RUNNING.add(self)
        self._thread.start()
        return self

    @property
    def running(self) -> bool:
        return self._thread.is_alive()

    def wait(self, timeout: float | None = None) -> bool:
        """Block until the fill ends (or ``timeout`` seconds pass); True when it ended.
        A fill that failed raises here once, its units still pending; later calls return
        True (it has ended). Raising it on every call made each later ``index()`` and
        ``wait()`` of the session fail with an error from the past, and never refill."""
        if self._thread.ident is not None:
            self._thread.join(timeout)
        error, self.error = self.error, None
        if error is not None:
            raise LoomError(f"embedding in the background stopped after {self.done} of {self.total} units: "
                            f"{error}; the rest stay pending (saved with the session; the next index() or open "
                            "embeds them)") from error
        return not self._thread.is_alive()

    def stop(self) -> None:
        """Ask the worker to stop after the batch it is on (what is left stays pending)."""
        self._stop.set()

    def _batches(self):
        """Jobs grouped so each model call gets about ``batch`` texts."""
        group, size = [], 0
        for job in self.jobs:
            group.append(job)
            size += len(job.pieces)
            if size >= self.batch:
                yield group
                group, size = [], 0
        if group:
            yield group

    def _run(self) -> None:
        bar = _bar(self.total, self.progress)
        try:
            for group in self._batches():
                if self._stop.is_set():
                    return
                texts = [p for job in group for p in job.pieces]
                vectors = self.embedder.embed(texts)  # the slow part, outside the lock
                self._write(group, vectors)
                self.done += len(group)
                if bar is not None:
                    bar.update(len(group))
            with self.graph.lock:
                if self.rebuild:
                    rebuild_concepts(self.graph)
        except BaseException as exc:  # reported by wait(); the units stay pending
            log.warning("background embedding stopped: %s", exc)
            self.error = exc
        finally:
            _RUNNING.discard(self)
            if bar is not None:
                bar.close()

    def _write(self, group: list[FillJob], vectors: np.ndarray) -> None:
        graph = self.graph
        with graph.lock:
            filled = set()
            at = 0
            for job in group:
                rows = vectors[at : at + len(job.pieces)]
                at += len(job.pieces)
                if job.node_id not in graph:  # removed meanwhile
                    filled.add(job.node_id)
                    continue
                graph.set_vector(job.node_id, chunk_mean(rows) if job.chunked else rows[0], rows if job.chunked else None)
                graph.node(job.node_id).meta.pop("embed_doc", None)
                filled.add(job.node_id)
                if not self.rebuild:
                    graph.link_content(job.node_id)
            left = [n for n in graph.pending_vectors if n not in filled and n in graph]
            if left:
                graph.metadata["pending_vectors"] = left
            else:
                graph.metadata.pop("pending_vectors", None)


def _bar(total: int, enabled: bool | None):
    """A tqdm bar (a widget in a notebook, text in a terminal), or None when not wanted."""
    if enabled is False or total == 0:
        return None
    try:
        from tqdm.auto import tqdm
    except ImportError:  # pragma: no cover - tqdm is a dependency
        return None
    return tqdm(total=total, desc="embedding (background)", unit="unit", disable=None if enabled is None else not enabled)
