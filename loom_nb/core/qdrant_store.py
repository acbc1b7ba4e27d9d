"""A session's vectors in a Qdrant collection (issue 20): a server a team shares, or
qdrant-client's embedded local mode for tests and one machine.

One point per row of the three vector tables (content, concepts, chunks). Its id is a UUID
made from the row's node, chunk index and a 64-bit digest of its float32 bytes
(:func:`~loom_nb.core.vector_store.point_id`), so a row that did not change keeps its point:
a save after re-indexing one file sends that file's units, not the whole session. Its payload
says what it is (``kind``, ``node``, ``chunk``, ``digest``, and the ``generation`` that first
wrote it), for anyone searching the collection with Qdrant's own tools.

graph.json lists the digest of every row. A save (under the session folder's write lock)
upserts the points the collection lacks, then replaces graph.json (the commit), then deletes
the points no committed graph.json names. So a reader sees the old rows or the new ones; a
reader that asks for points a save has just deleted starts again on the new graph.json. A
save killed before its commit leaves the old graph.json and all its points: nothing is lost,
the points it sent are orphans that the next save either reuses (same ids) or deletes.

The collection carries the embedding model, the dimension and the session that owns it in
its metadata (Qdrant 1.16 or newer): another embedder raises
:class:`~loom_nb.core.errors.EmbeddingMismatchError`, another session's collection is
refused, never mixed. It records too the folder that saved into it last: a copy of that
folder (``cp -r``), same owner and all, is refused at save, since its save would delete
points the original still names. The distance is the dot product: loom-nb's vectors are
unit length, and a cosine collection would re-normalise them and change their last bits.

qdrant-client is imported on first use, so ``import loom_nb`` works without it.
"""

from __future__ import annotations

import json
import logging
import os
import pickle
import sqlite3
import threading
import time
from contextlib import closing, contextmanager
from pathlib import Path
from typing import Any, Iterator

import numpy as np

from .errors import EmbeddingMismatchError, LoomError, SessionConflictError, SessionFormatError, SessionLockedError
from .vector_store import KINDS, StoredVectors, VectorLocation, VectorsVanished, digests, point_id

log = logging.getLogger(__name__)

__all__ = ["QdrantStore", "connect", "check_collection", "QDRANT_TIMEOUT", "LOCAL_WAIT"]

QDRANT_TIMEOUT = 10
"""Seconds a request to a server may take (qdrant-client's ``timeout``). A refused
connection or an unknown host fails at once; a silent host after this."""
LOCAL_WAIT = 30.0
"""Seconds a load or save waits for local storage another process holds (local mode
admits one process at a time; loom-nb holds it only while it loads or saves)."""
BATCH = 256
"""Points per upsert or retrieve request: about 1 MB of JSON at dimension 384."""
ID_BATCH = 4096
"""Ids per existence check or delete request (ids only, no vectors)."""
METADATA_KEY = "loom_nb"


def _qdrant():
    try:
        import qdrant_client
    except ImportError:
        raise LoomError("vectors in Qdrant need the qdrant-client package: pip install 'loom-nb[qdrant]'") from None
    return qdrant_client


_guard = threading.Lock()
_local_locks: dict[str, threading.Lock] = {}


def _thread_lock(path: Path) -> threading.Lock:
    """One thread of this process at a time per local storage folder (qdrant-client's own
    file lock refuses a second client even in the same process)."""
    with _guard:
        return _local_locks.setdefault(str(path), threading.Lock())


def _open_local(qdrant_client, path: Path, wait: float):
    """A local-mode client on ``path``, waiting while another process holds it. Damaged
    storage raises :class:`SessionFormatError` naming the file, as a damaged ``.npy`` does."""
    deadline, pause = time.monotonic() + wait, 0.01
    while True:
        try:
            return qdrant_client.QdrantClient(path=str(path))
        except RuntimeError as exc:
            if "already accessed" not in str(exc):
                raise
            if time.monotonic() >= deadline:
                raise SessionLockedError(f"{path}: Qdrant local storage is held by another process for over {wait:.0f} s "
                                         "(local mode admits one process at a time; use a Qdrant server to share it)") from None
            time.sleep(pause)
            pause = min(pause * 2, 0.2)
        except (ValueError, TypeError, KeyError, AttributeError, EOFError, pickle.UnpicklingError, sqlite3.DatabaseError) as exc:
            # qdrant-client reads meta.json and every collection's storage.sqlite (pickled
            # points) when it opens; what it raises on a damaged one names neither
            raise SessionFormatError(_damaged_file(path, exc), f"Qdrant local storage is damaged ({type(exc).__name__}: {exc}); "
                                     "graph.json is untouched: restore the storage folder from a backup, or index the "
                                     "workspace again into a new session folder") from None


def _damaged_file(path: Path, exc: Exception) -> Path:
    """The file of local storage ``path`` that ``exc`` was most likely raised on."""
    if isinstance(exc, sqlite3.DatabaseError):
        for db in sorted(path.glob("collection/*/storage.sqlite")):
            try:
                with closing(sqlite3.connect(db)) as conn:  # reads only
                    conn.execute("PRAGMA schema_version").fetchone()
            except sqlite3.DatabaseError:
                return db
        return path
    return path / "meta.json" if isinstance(exc, ValueError) else path


@contextmanager
def connect(location: VectorLocation, folder: Path | None, *, create: bool = False) -> Iterator[Any]:
    """A qdrant-client for ``location``, closed after the block. A server that does not
    answer, or answers as no Qdrant server would, raises :class:`LoomError` saying so."""
    qdrant_client = _qdrant()
    if location.kind == "local":
        path = location.storage_folder(folder).resolve()
        if not create and not (path / "meta.json").is_file():
            raise SessionFormatError(path, f"no Qdrant local storage here (graph.json keeps its vectors at {location.spelling})")
        with _thread_lock(path):
            client = _open_local(qdrant_client, path, LOCAL_WAIT)
            try:
                yield client
            finally:
                client.close()
        return
    from qdrant_client.http.exceptions import ResponseHandlingException, UnexpectedResponse

    client = qdrant_client.QdrantClient(url=location.server, prefix=location.prefix or None, timeout=QDRANT_TIMEOUT,
                                        api_key=os.environ.get("QDRANT_API_KEY") or None, check_compatibility=False)
    try:
        yield client
    except ResponseHandlingException as exc:
        raise LoomError(f"no Qdrant server answered at {location.server} ({exc.source if hasattr(exc, 'source') else exc}); "
                        "start one (README, section Qdrant) or check the URL") from None
    except UnexpectedResponse as exc:
        hint = " (set QDRANT_API_KEY)" if exc.status_code in (401, 403) else " (is it a Qdrant server?)"
        raise LoomError(f"{location.server} answered HTTP {exc.status_code} {exc.reason_phrase}{hint}") from None
    finally:
        client.close()


def _metadata(client, name: str) -> dict[str, Any] | None:
    """The collection's loom-nb metadata, None when there is no such collection."""
    if not client.collection_exists(name):
        return None
    meta = client.get_collection(name).config.metadata or {}
    return meta.get(METADATA_KEY) if isinstance(meta.get(METADATA_KEY), dict) else {}


def check_collection(location: VectorLocation, folder: Path | None, model: str | None, session: str | None = None) -> None:
    """Fail early, before a session is used: the location must answer, and a collection
    already there must hold vectors of ``model`` and belong to ``session`` (the id in
    graph.json; None for a session never saved, which owns no collection). Creates nothing."""
    if location.kind == "local" and not (location.storage_folder(folder) / "meta.json").is_file():
        return  # a new storage folder: made at the first save
    with connect(location, folder) as client:
        meta = _metadata(client, location.collection)
    if meta is not None:
        _check(location, meta, model=model, dim=None, owner=None)
        if meta.get("owner") != session:
            raise LoomError(_another_session(location, meta, session))
        if folder is not None:
            _refuse_a_copy(location, meta, Path(folder), session)


def _refuse_a_copy(location: VectorLocation, meta: dict[str, Any], folder: Path, owner: str | None) -> None:
    """Refuse a save from ``folder`` into a collection that another folder saved into last
    and still names as the same owner: a copy of this session (``cp -r``), whose vectors
    the save would delete (it deletes the points its own graph.json dropped, which the
    other one still names). A folder that is gone, or names other vectors now, was moved:
    ``folder`` takes its place.

    A copy on another machine (a server collection) is not found: its recorded folder is
    not on this one. Keeping every point instead would never lose one, but a collection
    that a session re-indexes daily would then grow without end."""
    other = meta.get("folder")
    if not isinstance(other, str) or not other:
        return  # made by an older loom-nb: the first save records its folder
    other = Path(other)
    try:
        if other.resolve() == folder.resolve() or (other.is_dir() and os.path.samefile(other, folder)):
            return
        doc = json.loads((other / "graph.json").read_bytes())
    except (OSError, ValueError):
        return  # gone, or not a session any more
    vec = doc.get("vectors") if isinstance(doc, dict) else None
    if not (isinstance(vec, dict) and vec.get("owner") == owner and _named_here(doc, location, other)):
        return
    raise SessionConflictError(
        f"{folder}: a copy of {other}, which keeps its vectors in the same collection ({location.describe()}); "
        f"saving here would delete vectors {other} still names, so nothing was written. Give this copy its own "
        f"vectors: Loom.open({str(folder)!r}, vectors='numpy') (or another collection), or delete {other} if this "
        "folder replaces it")


def _another_session(location: VectorLocation, meta: dict[str, Any], owner: str | None) -> str:
    this = f", this one {owner}" if owner else ", this one none yet"
    return (f"{location.describe()} holds the vectors of another session (owner {meta.get('owner')}{this}): give each "
            "session its own collection (another name in vectors=), or delete that collection first")


def _check(location: VectorLocation, meta: dict[str, Any], *, model: str | None, dim: int | None, owner: str | None) -> None:
    where = location.describe()
    if not meta:
        raise LoomError(f"{where}: the collection was not made by loom-nb (its metadata names no embedding model); "
                        "name another collection")
    if model is not None and meta.get("embedding_model") != model:
        raise EmbeddingMismatchError(
            f"{where} holds vectors of {meta.get('embedding_model')!r} (dimension {meta.get('dim')}), but the embedder is "
            f"{model!r}: open it with the same embedder, or use another collection — two vector spaces are never mixed")
    if dim is not None and meta.get("dim") != dim:
        raise EmbeddingMismatchError(f"{where} holds vectors of dimension {meta.get('dim')}, this session's are {dim}")
    if owner is not None and meta.get("owner") != owner:
        raise LoomError(_another_session(location, meta, owner))


class QdrantStore:
    """The :class:`~loom_nb.core.vector_store.VectorStore` of a Qdrant collection."""

    schema_version = 3
    """3: graph.json may keep its vectors in a Qdrant collection (an older loom-nb says to upgrade)."""

    def __init__(self, location: VectorLocation, folder: Path):
        self.location = location
        self.folder = folder
        self.generation = 0
        """The generation being saved (set by :meth:`describe`), kept in each new point's payload."""

    # -- save -----------------------------------------------------------------------------
    def describe(self, vectors: StoredVectors, generation: int, previous: dict[str, Any] | None, session: str) -> dict[str, Any]:
        # the owner is the session's id, so that a session moved back to numpy files can move
        # into its collection again; one a collection already has (an older loom-nb drew a
        # random id) is kept
        owner = None
        before = (previous or {}).get("vectors") if isinstance((previous or {}).get("vectors"), dict) else {}
        if before.get("store") == "qdrant" and _same(before.get("location"), self.location, self.folder):
            owner = before.get("owner")
        self.generation = generation
        entries = {"store": "qdrant", "location": self.location.spelling, "owner": owner or session}
        for kind in KINDS:
            entries[kind] = {"rows": len(vectors.keys[kind]), "digests": digests(vectors.matrix(kind))}
        return entries

    def write(self, vectors: StoredVectors, entries: dict[str, Any]) -> None:
        name, owner, model = self.location.collection, entries["owner"], vectors.model
        here = str(self.folder.resolve())
        if vectors.rows == 0:  # nothing to keep: no collection is made for an empty session…
            if self.location.kind != "local" or (self.location.storage_folder(self.folder) / "meta.json").is_file():
                with connect(self.location, self.folder) as client:
                    meta = _metadata(client, name)
                if meta:  # …but a copy emptied must not delete the points the original names
                    _refuse_a_copy(self.location, meta, self.folder, owner)
            return
        dim = int(next(vectors.matrix(k) for k in KINDS if len(vectors.keys[k])).shape[1])
        with connect(self.location, self.folder, create=True) as client:
            meta = _metadata(client, name)
            if meta is None:
                from qdrant_client import models

                client.create_collection(name, vectors_config=models.VectorParams(size=dim, distance=models.Distance.DOT),
                                         metadata={METADATA_KEY: {"embedding_model": model, "dim": dim, "owner": owner,
                                                                  "folder": here}})
            else:
                _check(self.location, meta, model=model, dim=dim, owner=owner)
                _refuse_a_copy(self.location, meta, self.folder, owner)
                if meta.get("folder") != here:  # a new folder, or one moved: it saves here from now on
                    client.update_collection(name, metadata={METADATA_KEY: {**meta, "folder": here}})
            ids, rows = self._points(vectors, entries)
            present = self._present(client, ids)
            missing = [i for i, point in enumerate(ids) if point not in present]
            self._upsert(client, vectors, entries, ids, rows, missing)
        log.info("%s: sent %d of %d vectors (the rest were there)", self.location.describe(), len(missing), len(ids))

    def _points(self, vectors: StoredVectors, entries: dict[str, Any]) -> tuple[list[str], list[tuple[str, int]]]:
        ids, rows = [], []
        for kind in KINDS:
            for row, ((node_id, index), digest) in enumerate(zip(vectors.keys[kind], entries[kind]["digests"])):
                ids.append(point_id(kind, node_id, index, digest))
                rows.append((kind, row))
        return ids, rows

    def _present(self, client, ids: list[str]) -> set[str]:
        found: set[str] = set()
        for start in range(0, len(ids), ID_BATCH):
            points = client.retrieve(self.location.collection, ids=ids[start:start + ID_BATCH], with_payload=False, with_vectors=False)
            found.update(str(p.id) for p in points)
        return found

    def _upsert(self, client, vectors: StoredVectors, entries, ids, rows, missing: list[int]) -> None:
        from qdrant_client import models

        generation = self.generation
        for start in range(0, len(missing), BATCH):
            batch = missing[start:start + BATCH]
            payloads, matrix = [], []
            for i in batch:
                kind, row = rows[i]
                node_id, index = vectors.keys[kind][row]
                payload = {"kind": kind, "node": node_id, "digest": entries[kind]["digests"][row], "generation": generation}
                if kind == "chunks":
                    payload["chunk"] = index
                payloads.append(payload)
                matrix.append(vectors.matrix(kind)[row])
            client.upsert(self.location.collection, wait=True,
                          points=models.Batch(ids=[ids[i] for i in batch], vectors=np.asarray(matrix, np.float32).tolist(),
                                              payloads=payloads))

    def collect(self, previous: dict[str, Any] | None, doc: dict[str, Any]) -> None:
        """Delete the points no committed graph.json names: those of the previous state that
        this one dropped, and any a killed save left behind (found when the collection
        holds more points than graph.json names)."""
        keep = set(_named_points(doc))
        drop = [p for p in _named_points(previous) if p not in keep] if _named_here(previous, self.location, self.folder) else []
        if not keep and not drop:
            return
        with connect(self.location, self.folder) as client:
            name = self.location.collection
            self._delete(client, drop)
            if client.count(name, exact=True).count > len(keep):
                orphans, offset = [], None
                while True:
                    points, offset = client.scroll(name, limit=ID_BATCH, offset=offset, with_payload=False, with_vectors=False)
                    orphans += [str(p.id) for p in points if str(p.id) not in keep]
                    if offset is None:
                        break
                log.info("%s: deleting %d points no graph.json names (left by an interrupted save)", name, len(orphans))
                self._delete(client, orphans)

    def _delete(self, client, ids: list[str]) -> None:
        from qdrant_client import models

        for start in range(0, len(ids), ID_BATCH):
            client.delete(self.location.collection, points_selector=models.PointIdsList(points=ids[start:start + ID_BATCH]), wait=True)

    # -- load -----------------------------------------------------------------------------
    def read(self, section: dict[str, Any], keys: dict[str, list[tuple[str, int]]], dim: int,
             model: str | None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The three matrices graph.json names, each row checked against its digest."""
        where = self.location.describe()
        for kind in KINDS:
            spec = section.get(kind)
            if not isinstance(spec, dict) or spec.get("rows") != len(keys[kind]) or len(spec.get("digests") or ()) != len(keys[kind]):
                raise SessionFormatError(self.folder / "graph.json", f"the {kind} vectors' digests do not match its rows")
        total = sum(len(keys[k]) for k in KINDS)
        out = {k: np.zeros((len(keys[k]), dim), np.float32) for k in KINDS}
        if total == 0:
            return out["content"], out["concepts"], out["chunks"]
        wanted = {}
        for kind in KINDS:
            for row, ((node_id, index), digest) in enumerate(zip(keys[kind], section[kind]["digests"])):
                wanted[point_id(kind, node_id, index, digest)] = (kind, row, digest)
        ids = list(wanted)
        with connect(self.location, self.folder) as client:
            meta = _metadata(client, self.location.collection)
            if meta is None:
                raise VectorsVanished(f"{where}: the collection is gone")
            _check(self.location, meta, model=model, dim=dim, owner=section.get("owner"))
            got = 0
            for start in range(0, len(ids), BATCH):
                for point in client.retrieve(self.location.collection, ids=ids[start:start + BATCH], with_payload=False, with_vectors=True):
                    kind, row, digest = wanted[str(point.id)]
                    out[kind][row] = np.asarray(point.vector, dtype=np.float32)
                    got += 1
        if got != len(ids):
            last = meta.get("folder")
            since = f" (it was saved from {last} since)" if isinstance(last, str) and last != str(self.folder.resolve()) else ""
            raise VectorsVanished(f"{where}: {len(ids) - got} of the {len(ids)} vectors graph.json names are not in "
                                  f"the collection{since}")
        for kind in KINDS:
            bad = [i for i, (a, b) in enumerate(zip(digests(out[kind]), section[kind]["digests"])) if a != b]
            if bad:
                raise SessionFormatError(self.folder / "graph.json", f"{where}: the {kind} vector of {keys[kind][bad[0]][0]} is not the "
                                         "one graph.json names (changed outside loom-nb)")
        return out["content"], out["concepts"], out["chunks"]


def _same(spelling: Any, location: VectorLocation, folder: Path) -> bool:
    from .vector_store import parse_location

    try:
        return isinstance(spelling, str) and parse_location(spelling).key(folder) == location.key(folder)
    except LoomError:
        return False


def _named_here(doc: dict[str, Any] | None, location: VectorLocation, folder: Path) -> bool:
    vec = (doc or {}).get("vectors")
    return isinstance(vec, dict) and vec.get("store") == "qdrant" and _same(vec.get("location"), location, folder)


def _named_points(doc: dict[str, Any] | None) -> list[str]:
    """The point ids a graph.json names (none for a numpy one, or one that cannot say)."""
    vec = (doc or {}).get("vectors")
    if not isinstance(vec, dict) or vec.get("store") != "qdrant":
        return []
    from .vector_store import row_keys

    content, concepts = doc.get("content") or {}, doc.get("concepts") or {}
    try:
        keys = row_keys(content.get("id") or [], concepts.get("id") or [], vec.get("chunk_rows") or [])
        return [point_id(kind, node_id, index, digest) for kind in KINDS
                for (node_id, index), digest in zip(keys[kind], vec[kind]["digests"])]
    except (KeyError, TypeError, ValueError):
        return []
