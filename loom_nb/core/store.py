"""The session folder (seed 000 §9.1): ``graph.json``, ``content/``, ``embeddings/``.

``graph.json`` is the single source of truth: every node, edge and setting, the schema
version and the embedding model. Texts live in ``content/<id>.txt`` (read only when a node
is loaded); vectors in ``embeddings/*.npy``, saved raw so a round trip is bit-identical, or
in a Qdrant collection that graph.json names (:mod:`loom_nb.core.vector_store`).

Saves are atomic: vectors are written under a new generation name (or as new points),
``graph.json`` is replaced last with ``os.replace`` (the commit point), and only then are
files (points) of older generations removed, with the files a save killed before its
commit left in ``embeddings/``. A crash at any step leaves the previous session readable.

Size: one file format (graph.json, content files, vectors), its writer and its reader with one
check per way a folder can be wrong; they change together.
"""

from __future__ import annotations

import gc
import hashlib
import hmac
import json
import logging
import os
import re
import uuid
import weakref
from contextlib import contextmanager
from dataclasses import asdict
from pathlib import Path
from typing import Any

import numpy as np

from .atomic import atomic_file, atomic_write_bytes, atomic_write_text  # noqa: F401 - importable from here as before
from .config import DEFAULT_PROVENANCE, LoomConfig, Weights
from .folder_lock import not_writable, session_lock
from .userdir import seal_key
from .errors import EmbeddingMismatchError, LoomError, SessionConflictError, SessionFormatError, StaleReferenceError
from .errors import UnknownNodeError
from .lexical import LexicalIndex
from .arrays import STRUCTURE_KINDS, VectorTable
from .graph import _TYPE_CODE, NODE_ID, id_order, ConceptNode, ContentNode, LinkReport, LoomGraph, Provenance, Reference, sha256_text, utc_now
from .vector_store import NumpyFiles, StoredVectors, VectorLocation, VectorStore, VectorsVanished as _Vanished, parse_location, row_keys
from .vector_store import stored_location

log = logging.getLogger(__name__)

FORMAT = "loom-nb/graph"
SCHEMA_VERSION = 2
"""2: content files are named by id and hash (``content_name``); 1 is still read. A session
whose vectors are in Qdrant is written as 3 (:mod:`loom_nb.core.qdrant_store`), so that an
older loom-nb says to upgrade instead of looking for vector files."""
READS_UP_TO = 3
GRAPH_FILE = "graph.json"
LOAD_TRIES = 8
"""How many times a load starts again when a writer removes the files it was reading."""
MAX_GRAPH_BYTES = 1 << 30
"""graph.json larger than this (1 GiB) is refused before it is read: a 50k-node session
writes about 40 MB, and parsing a multi-gigabyte file would take minutes and gigabytes."""


def open_store(location: "VectorLocation | str | None", folder: str | Path) -> VectorStore:
    """The vector store for ``location`` in the session ``folder``
    (:mod:`loom_nb.core.vector_store`); Qdrant's module is imported only here."""
    location = parse_location(location)
    if not location.is_qdrant:
        return NumpyFiles(Path(folder))
    from .qdrant_store import QdrantStore

    return QdrantStore(location, Path(folder))


# -- columns ------------------------------------------------------------------------------
# graph.json stores nodes and edges column by column ("id": [...], "type": [...], …): it
# parses several times faster than one object per node, and stays readable with jq.


def _content_columns(nodes: list[ContentNode]) -> dict[str, list]:
    def optional(values):
        return values if any(v is not None for v in values) else None

    cols: dict[str, Any] = {
        "id": [n.id for n in nodes],
        "type": [n.type for n in nodes],
        "title": [n.title for n in nodes],
        "tokens": [n.tokens for n in nodes],
        "sha256": [n.sha256 for n in nodes],
        "created": [n.created for n in nodes],
        "last_access_turn": [n.last_access_turn for n in nodes],
        "source": [n.provenance.source for n in nodes],
        "reason": [n.provenance.reason for n in nodes],
        "direction": [n.provenance.direction for n in nodes],
        "link_threshold": [n.linking.threshold if n.linking else None for n in nodes],
        "link_created": [n.linking.created if n.linking else None for n in nodes],
        # two flat columns, not [id, sim] pairs: 50k tiny lists parse ten times slower
        "near_miss": [n.linking.near_miss[0] if n.linking and n.linking.near_miss else None for n in nodes],
        "near_miss_similarity": [n.linking.near_miss[1] if n.linking and n.linking.near_miss else None for n in nodes],
    }
    sparse = {
        "reference": [_reference_dict(n.reference) if n.reference else None for n in nodes],
        "summary_of": [n.summary_of for n in nodes],
        "chunks": [[list(c) for c in n.chunks] if n.chunks else None for n in nodes],
        "meta": [n.meta or None for n in nodes],
    }
    for key, values in sparse.items():
        if optional(values) is not None:
            cols[key] = values
    return cols


def _concept_columns(nodes: list[ConceptNode]) -> dict[str, list]:
    return {
        "id": [n.id for n in nodes],
        "name": [n.name for n in nodes],
        "description": [n.description for n in nodes],
        "created": [n.created for n in nodes],
        "origin": [n.origin for n in nodes],
    }


def _config_to_dict(config: LoomConfig) -> dict[str, Any]:
    data = config.to_dict()
    data["output_reservation_range"] = list(data["output_reservation_range"])
    return data


def _config_from(data: dict[str, Any] | None) -> LoomConfig:
    if not data:
        return LoomConfig()
    known = {f for f in LoomConfig.__dataclass_fields__}
    data = {k: v for k, v in data.items() if k in known}
    if "weights" in data:
        data["weights"] = Weights(**{k: v for k, v in data["weights"].items() if k in Weights.__dataclass_fields__})
    if "output_reservation_range" in data:
        data["output_reservation_range"] = tuple(data["output_reservation_range"])
    if isinstance(data.get("provenance"), dict):  # a key added since the save takes its default, as a new weight does
        data["provenance"] = {**DEFAULT_PROVENANCE, **data["provenance"]}
    threshold = data.get("concept_threshold")
    if isinstance(threshold, (int, float)) and not isinstance(threshold, bool) and threshold == 0:
        # apply_threshold(1e-5) once stored 0.0, which LoomConfig now refuses: open such a session
        # at the threshold calibrated for its embedder rather than not at all
        log.warning("the stored concept threshold 0 is not a threshold; using the one calibrated for the embedder")
        data["concept_threshold"] = None
    return LoomConfig(**data)


def _dumps(doc: dict[str, Any]) -> bytes:
    try:
        import orjson

        return orjson.dumps(doc)
    except ImportError:  # pragma: no cover - orjson is a dependency; json is the fallback
        return json.dumps(doc, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


def _loads(raw: bytes) -> Any:
    try:
        import orjson
    except ImportError:  # pragma: no cover
        return json.loads(raw)
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError:
        return json.loads(raw)  # re-raise through json for its line/column message


# -- save ---------------------------------------------------------------------------------


def content_name(node_id: str, sha256: str, schema_version: int = SCHEMA_VERSION) -> str:
    """The file in ``content/`` that holds a node's text.

    Since schema 2 the name carries the text's hash: a process killed before its
    graph.json committed may leave ``n7.<hash>.txt`` behind, and the next process that
    hands out ``n7`` for another text writes another name, so it can never serve the dead
    process's text. Schema 1 folders (``n7.txt``) are still read.
    """
    return f"{node_id}.txt" if schema_version < 2 else f"{node_id}.{sha256[:16]}.txt"


def _reference_dict(reference: Reference) -> dict[str, Any]:
    """A reference as graph.json stores it; ``cell`` only for a notebook cell (most are not)."""
    out = asdict(reference)
    if not out["cell"]:
        del out["cell"]
    return out


def schema():
    """The graph.json schema (pydantic), imported when first needed: building its models is
    75 ms of an import, and an open whose seal matches never validates (see :func:`_sealed`)."""
    from . import schema as module

    return module


_VECTOR_FILE = re.compile(r"^embeddings/[a-z]+\.g[0-9]+\.np[yz]$")
_SEAL_FILE = re.compile(r"^embeddings/seal\.g[0-9]+\.txt$")
_GENERATION_FILE = re.compile(r"^(?P<tmp>\.)?(?:[a-z]+\.g(?P<vec>[0-9]+)\.np[yz]|seal\.g(?P<seal>[0-9]+)\.txt)(?(tmp)\.[A-Za-z0-9_]+\.tmp|)$")
"""A file of ``embeddings/`` a save of one generation writes, or its temporary file while it
is written (:func:`~loom_nb.core.atomic.atomic_file`: ``.NAME.RANDOM.tmp``)."""
_CONTENT_FILE = re.compile(r"^(?P<tmp>\.)?n[0-9]+\.[0-9a-f]{16}\.txt(?(tmp)\.[A-Za-z0-9_]+\.tmp|)$")
"""A text file of ``content/`` a save writes (:func:`content_name`), or its temporary file."""


def _seal(raw: bytes) -> str | None:
    """This user's HMAC of a graph.json's bytes (None where no key can be kept)."""
    key = seal_key()
    return hmac.new(key, raw, hashlib.sha256).hexdigest() if key else None


def _sealed(folder: Path, doc: dict[str, Any], raw: bytes) -> bool:
    """Whether ``raw`` is a graph.json this user's loom-nb wrote: its seal file (named only
    in the one shape a save writes) holds the HMAC of exactly these bytes."""
    vec = doc.get("vectors")
    name = vec.get("seal") if isinstance(vec, dict) else None
    if not isinstance(name, str) or not _SEAL_FILE.match(name):
        return False
    try:
        stored = (folder / name).read_text(encoding="ascii").strip()
    except (OSError, UnicodeDecodeError):
        return False
    expected = _seal(raw)
    return expected is not None and hmac.compare_digest(stored, expected)


def _named_files(doc: dict[str, Any]) -> set[str]:
    """Every file a committed graph.json names, relative to the session folder.

    Read from a document the save did not validate, so only names of the two shapes a
    save writes are taken: clean-up can never reach outside ``content/`` and ``embeddings/``.
    """
    names = set()
    vec = doc.get("vectors") if isinstance(doc.get("vectors"), dict) else {}
    for key in ("content", "concepts", "chunks", "lexical", "cache", "seal"):
        value = vec.get(key)
        value = value.get("file") if isinstance(value, dict) else value
        if isinstance(value, str) and (_VECTOR_FILE.match(value) or _SEAL_FILE.match(value)):
            names.add(value)
    content = doc.get("content") if isinstance(doc.get("content"), dict) else {}
    ids, shas = content.get("id"), content.get("sha256")
    if not isinstance(ids, list) or not isinstance(shas, list):
        return names
    refs = content.get("reference") if isinstance(content.get("reference"), list) else [None] * len(ids)
    version = doc.get("schema_version") if isinstance(doc.get("schema_version"), int) else SCHEMA_VERSION
    for node_id, sha, ref in zip(ids, shas, refs):
        if ref is None and isinstance(node_id, str) and NODE_ID.match(node_id) and isinstance(sha, str):
            names.add("content/" + content_name(node_id, sha, version))
    return names


def data_files(folder: Path) -> list[str]:
    found = [f"content/{p.name}" for p in (folder / "content").glob("*.txt")] if (folder / "content").is_dir() else []
    if (folder / "embeddings").is_dir():
        found += [f"embeddings/{p.name}" for p in (folder / "embeddings").glob("*.np*")]
    return sorted(found)


def orphaned_data_error(folder: Path, found: list[str]) -> SessionFormatError:
    """graph.json is gone but session data is still here: say what, delete nothing."""
    content = sum(1 for f in found if f.startswith("content/"))
    vectors = len(found) - content
    return SessionFormatError(
        folder / GRAPH_FILE,
        f"missing, but the folder still holds {content} content file(s) and {vectors} vector file(s) "
        f"(e.g. {found[0]}): restore graph.json from a backup, or move the folder away to start afresh; nothing was deleted",
    )


def _committed(folder: Path) -> dict[str, Any] | None:
    """The document of the folder's committed graph.json, or None for a new folder.

    A folder with session data but no graph.json, or a graph.json that cannot be read,
    is an error: saving there would delete or overwrite what it cannot account for.
    """
    path = folder / GRAPH_FILE
    if path.is_symlink():
        raise SessionFormatError(path, "is a symbolic link; loom-nb replaces graph.json in place: copy the session folder instead")
    if not path.exists():
        found = data_files(folder)
        if found:
            raise orphaned_data_error(folder, found)
        return None
    return read_document(folder, validate=False)


def _generation(doc: dict[str, Any] | None) -> int:
    value = doc.get("generation", 0) if doc else 0
    return value if isinstance(value, int) and value >= 0 else 0


def _identity(doc: dict[str, Any] | None) -> str | None:
    """The session id a graph.json carries: a random id written when the session first
    came to its folder and kept by every save there, so a folder rebuilt by another
    session at the same generation is told apart. None in files written before it."""
    value = doc.get("session") if doc else None
    return value if isinstance(value, str) else None


def save_graph(graph: LoomGraph, folder: str | Path, *, cache_items=None, scores: dict[str, Any] | None = None,
               lock_timeout: float | None = None, vectors: "str | VectorLocation | None" = None) -> Path:
    """Write ``graph`` to the session ``folder`` atomically; returns the graph.json path.

    Holds the folder's write lock throughout. Refuses (and writes nothing) when the folder
    was saved by someone else since ``graph`` was loaded from it (:class:`SessionConflictError`),
    or holds data it cannot account for. ``vectors`` says where the vectors go
    (:mod:`loom_nb.core.vector_store`): numpy files in the folder by default, or a Qdrant
    collection.
    """
    folder = Path(folder)
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise not_writable(folder, exc) or exc from None
    try:
        schema().validate_config(graph.config)
    except schema().DocumentInvalid as exc:
        raise LoomError(f"cannot save {folder}: {exc}") from None
    with session_lock(folder, lock_timeout):
        previous = _committed(folder)
        here = str(folder.resolve())
        _check_no_conflict(graph, folder, here, previous)
        generation = max(_peek_generation(folder / GRAPH_FILE), _generation(previous)) + 1
        identity = _identity(previous) or uuid.uuid4().hex  # a new folder (or one from before ids) gets one
        store = open_store(vectors, folder)
        try:
            doc = _write(graph, folder, generation, identity, previous, cache_items, scores, store)
        except OSError as exc:  # the lock file was writable, the folder is not: say so, not the temporary file's name
            inside = exc.filename is not None and Path(os.fsdecode(exc.filename)).resolve().is_relative_to(here)
            raise (not_writable(folder, exc) if inside else None) or exc from None
        graph.saved_as = (here, generation, identity)  # committed: whatever the clean-up does
        _clean_up(folder, previous, doc, store)
        return folder / GRAPH_FILE


def _check_no_conflict(graph: LoomGraph, folder: Path, here: str, previous: dict[str, Any] | None) -> None:
    """Raise :class:`SessionConflictError` unless the folder holds exactly what ``graph``
    was last read from or saved as (or nothing, for a graph that never was)."""
    ours = graph.saved_as is not None and graph.saved_as[0] == here
    if previous is None:
        if ours:
            raise SessionConflictError(f"{folder / GRAPH_FILE}: removed since this session was read; nothing was written")
        return
    generation = _generation(previous)
    if not ours:
        raise SessionConflictError(f"{folder}: already holds another session; open it with Loom.open, or save to an empty folder")
    theirs, mine = _identity(previous), graph.saved_as[2]
    # two ids that differ, or any difference at the same generation, are another session; one
    # id missing at another generation may be this session saved since by a loom-nb that adds
    # or drops the id, which the generation check below reports
    if theirs != mine and ((theirs is not None and mine is not None) or graph.saved_as[1] == generation):
        raise SessionConflictError(
            f"{folder / GRAPH_FILE}: replaced by another session since this session was read (session {theirs}; this one "
            f"is {mine}); nothing was written: save this session to another folder with save(folder), or open the "
            "other one with Loom.open")
    if graph.saved_as[1] != generation:
        raise SessionConflictError(
            f"{folder / GRAPH_FILE}: saved by another process since this session was read (generation {generation}; "
            f"this session was opened at generation {graph.saved_as[1]}); nothing was written: reopen the session, "
            "redo the change and save again")


def check_not_replaced(graph: LoomGraph, folder: str | Path) -> None:
    """Raise :class:`SessionConflictError` when :func:`save_graph` would refuse to save
    ``graph`` to ``folder`` now: someone else saved there since ``graph`` was read or saved.
    Reads graph.json, writes nothing; a chat checks it before a turn calls the model, so a
    turn that could not be saved is refused before it is paid for."""
    folder = Path(folder)
    _check_no_conflict(graph, folder, str(folder.resolve()), _committed(folder))


def _write(graph: LoomGraph, folder: Path, generation: int, identity: str, previous: dict[str, Any] | None, cache_items, scores,
           store) -> dict[str, Any]:
    """Write and commit the session; returns the committed document.

    Length: the write order of a crash-safe save (content, vectors, then graph.json), kept in one place."""
    graph_path = folder / GRAPH_FILE
    content_nodes = [graph.node(i) for i in graph.content_vectors.ids]
    odd = next((n for n in content_nodes if n.type not in _TYPE_CODE), None)
    if odd is not None:  # a load refuses the whole session for it: refuse the save instead, writing nothing
        raise LoomError(f"cannot save {folder}: {odd.id} has content type {odd.type!r}, not one of {tuple(_TYPE_CODE)}; "
                        "nothing was written")
    (folder / "content").mkdir(exist_ok=True)
    (folder / "embeddings").mkdir(exist_ok=True)
    chunk_ids = sorted(graph.chunk_vectors)
    dim = graph.content_vectors.dim or graph.concept_vectors.dim
    lexical_file = f"embeddings/lexical.g{generation}.npz"
    cache_keys = [k for k, _ in cache_items] if cache_items else []
    cache_file = f"embeddings/cache.g{generation}.npz" if cache_keys else None
    content = graph.content_vectors.matrix if len(graph.content_vectors) else np.zeros((0, dim), np.float32)
    concepts = graph.concept_vectors.matrix if len(graph.concept_vectors) else np.zeros((0, dim), np.float32)
    chunks = np.concatenate([graph.chunk_vectors[i] for i in chunk_ids]) if chunk_ids else np.zeros((0, dim), np.float32)
    chunk_rows = [[i, int(graph.chunk_vectors[i].shape[0])] for i in chunk_ids]
    vectors = StoredVectors(content, concepts, chunks, row_keys(graph.content_vectors.ids, graph.concept_vectors.ids, chunk_rows),
                            model=graph.embedding_model)

    # 1. graph.json is encoded first, in memory: anything that cannot be written (a value
    # JSON cannot hold) fails here, before a single file changed. Edges are stored by row
    # (a position in the "content" / "concepts" columns); their direction and time are
    # those of the node that made them, and summary edges follow from "summary_of".
    doc = {
        "format": FORMAT,
        "schema_version": store.schema_version,
        "saved": utc_now(),
        "generation": generation,
        "session": identity,
        "embedding": {"model": graph.embedding_model, "dim": int(dim)},
        "config": _config_to_dict(graph.config),
        "turn": graph.turn,
        "next_ids": graph.next_ids,
        "metadata": graph.metadata,
        "vectors": {
            **store.describe(vectors, generation, previous, identity),
            "chunk_rows": chunk_rows,
            "cache": cache_file,
            "lexical": lexical_file,
            "seal": f"embeddings/seal.g{generation}.txt" if seal_key() else None,
        },
        "concepts": _concept_columns([graph.node(i) for i in graph.concept_vectors.ids]),
        "content": _content_columns(content_nodes),
        **graph.edge_columns(),
        "scores": scores or {},
    }
    _refuse_non_finite(doc, folder)
    try:
        raw = _dumps(doc)
    except (TypeError, ValueError) as exc:
        raise LoomError(f"cannot save {folder}: the session holds a value JSON cannot store ({exc}); nothing was written") from None

    # 2. content texts, one file per node under a name tied to its hash (see
    # content_name), so an existing file is already right. New files are flushed with one
    # sync before graph.json names them, not one fsync each (1 ms a file adds up).
    wrote = False
    for node in content_nodes:
        if node.reference is not None:
            continue
        path = folder / "content" / content_name(node.id, node.sha256)
        if not path.exists():
            try:
                data = graph.text(node.id).encode("utf-8")
            except StaleReferenceError as exc:  # its old file is lost or damaged: it stays left out
                log.warning("saving without the text of %s: %s", node.id, exc)
                continue
            with atomic_file(path, fsync=False) as f:  # removes its temporary file if the write fails
                f.write(data)
            wrote = True
    if wrote:
        os.sync()

    # 3. vectors where graph.json will say: files under the new generation's names, or the
    # points a Qdrant collection does not hold yet; the lexical index and cache as files
    store.write(vectors, doc["vectors"])
    with atomic_file(folder / lexical_file) as f:
        np.savez(f, **graph.lexical.to_arrays())
    if cache_file:
        with atomic_file(folder / cache_file) as f:
            np.savez(f, keys=np.array(cache_keys), vectors=np.stack([v for _, v in cache_items]).astype(np.float32))

    seal = _seal(raw) if doc["vectors"]["seal"] else None
    if seal:
        atomic_write_bytes(folder / doc["vectors"]["seal"], seal.encode("ascii"))

    # 4. graph.json: the commit point
    atomic_write_bytes(graph_path, raw)
    return doc


def _clean_up(folder: Path, previous: dict[str, Any] | None, doc: dict[str, Any], store) -> None:
    """After the commit, remove the files the previous committed graph.json named and this
    one does not, and those of generations older than this one that no save committed (a
    killed save's, :func:`_uncommitted`).

    The save has happened by now, so a failure is a warning: the files are garbage, and
    raising made the caller believe the save failed (and every later save of the same
    session was refused as a conflict)."""
    left = []
    named = _named_files(doc)
    for rel in sorted((_named_files(previous) - named) if previous is not None else set()) + _uncommitted(folder, doc, named):
        try:
            (folder / rel).unlink(missing_ok=True)
        except OSError as exc:
            left.append(f"{rel} ({exc.strerror or exc})")
    if left:
        log.warning("saved %s, but could not remove %d file(s) of earlier saves, no longer part of the session; "
                    "delete them by hand: %s%s", folder, len(left), ", ".join(left[:5]),
                    f" and {len(left) - 5} more" if len(left) > 5 else "")
    try:  # and vectors only older states named (Qdrant points); the next save retries a failure
        store.collect(previous, doc)
    except LoomError as exc:
        log.warning("saved %s, but could not yet remove the vectors it no longer names: %s", folder, exc)


def _uncommitted(folder: Path, doc: dict[str, Any], named: set[str]) -> list[str]:
    """Files left by saves killed before they committed, and only of the names a save writes:
    in ``embeddings/``, of a generation older than ``doc``'s (the one just committed; every
    save takes a generation above any file present, so no save to come writes these) and not
    named by it (:data:`_GENERATION_FILE`); in ``content/``, texts ``doc`` does not name and
    temporary files (:data:`_CONTENT_FILE`: a text's name carries its hash, so a later save
    that needs one writes it again). Called under the folder's lock, so no writer is still at
    work on them; a reader reads only what a committed graph.json names. Without this, each
    kill -9 during a save left its files for good."""
    committed = _generation(doc)
    stray = []
    for name in _files_in(folder / "embeddings"):
        match = _GENERATION_FILE.match(name)
        if match and int(match.group("vec") or match.group("seal")) < committed and f"embeddings/{name}" not in named:
            stray.append(f"embeddings/{name}")
    stray += [f"content/{name}" for name in _files_in(folder / "content")
              if _CONTENT_FILE.match(name) and f"content/{name}" not in named]
    return stray


def _files_in(folder: Path) -> list[str]:
    """Names of the regular files in ``folder`` (none if it cannot be read)."""
    try:
        return sorted(p.name for p in folder.iterdir() if p.is_file() and not p.is_symlink())
    except OSError:
        return []


_FLOAT_COLUMNS = (("links", "weight"), ("concept_edges", "weight"), ("content", "link_threshold"), ("content", "near_miss_similarity"))


def _refuse_non_finite(doc: dict[str, Any], folder: Path) -> None:
    """Refuse NaN and Infinity in graph.json's number columns (the config was checked before):
    orjson writes them as null, and the session would not open again."""
    for section, key in _FLOAT_COLUMNS:
        numbers = np.array([v for v in doc[section].get(key) or () if v is not None], dtype=np.float64)
        bad = numbers[~np.isfinite(numbers)]
        if bad.size:
            raise LoomError(f"cannot save {folder}: {section}.{key} holds {float(bad[0])} ({bad.size} value(s) in all), "
                            "which JSON cannot store; nothing was written (a damaged vector or a hand-edited graph.json?)")


def _peek_generation(graph_path: Path) -> int:
    """The highest generation of vector files present, committed or not."""
    found = [0]
    for path in (graph_path.parent / "embeddings").glob("*.g*.np*"):
        stem = path.name.split(".g", 1)[-1].split(".", 1)[0]
        if stem.isdigit():
            found.append(int(stem))
    return max(found)


# -- load ---------------------------------------------------------------------------------


class LazyNodes:
    """Node objects built from graph.json's columns only when asked for.

    Ranking needs arrays, which a load builds at once; a query then touches the few
    nodes it loads. Asking for the networkx graph builds every node (see LoomGraph.nx).
    """

    def __init__(self, graph: LoomGraph, concepts: dict[str, list], content: dict[str, list],
                 links: tuple, adjacent: tuple, structure: tuple, summaries: dict[str, str]):
        # a proxy, not a reference: graph._lazy -> self -> graph would be a cycle, and a
        # 50k-node graph would then wait for the cycle collector instead of being freed
        self.graph = weakref.proxy(graph)
        self.concepts = concepts
        self.content = content
        # the stored edges, as loaded: the graph is built from these before it may change
        self.links, self.adjacent, self.structure, self.summaries = links, adjacent, structure, summaries
        self.cache: dict[str, ConceptNode | ContentNode] = {}
        link_content = np.asarray(links[0], dtype=np.int64)
        self._link_order = np.argsort(link_content, kind="stable")
        self._link_ptr = np.zeros(len(content["id"]) + 1, dtype=np.int64)
        self._link_ptr[1:] = np.cumsum(np.bincount(link_content, minlength=len(content["id"])))

    def __contains__(self, node_id: str) -> bool:
        return node_id in self.graph.content_vectors.index or node_id in self.graph.concept_vectors.index

    def node(self, node_id: str) -> ConceptNode | ContentNode:
        cached = self.cache.get(node_id)
        if cached is not None:
            return cached
        g = self.graph
        if node_id in g.content_vectors.index:
            node = self._content(g.content_vectors.index[node_id])
        elif node_id in g.concept_vectors.index:
            c, i = self.concepts, g.concept_vectors.index[node_id]
            node = ConceptNode(id=node_id, name=c["name"][i], description=c["description"][i], created=c["created"][i], origin=c["origin"][i])
        else:
            raise UnknownNodeError(f"no node {node_id!r} in the graph")
        self.cache[node_id] = node
        return node

    def _linked(self, row: int) -> list[tuple[str, float]]:
        g = self.graph
        positions = self._link_order[self._link_ptr[row] : self._link_ptr[row + 1]]
        _, link_concept, link_weight = self.links
        pairs = [(g.concept_vectors.ids[link_concept[p]], link_weight[p]) for p in positions]
        # the order at link time: by similarity, then concept creation order
        return sorted(pairs, key=lambda cw: (-cw[1], id_order(cw[0])))

    def _content(self, i: int) -> ContentNode:
        c = self.content

        def get(key):
            values = c.get(key)
            return values[i] if values is not None else None

        ref = get("reference")
        near = get("near_miss")
        near_sim = get("near_miss_similarity")
        threshold = get("link_threshold")
        return ContentNode(
            id=c["id"][i],
            type=c["type"][i],
            tokens=int(c["tokens"][i]),
            title=c["title"][i],
            sha256=c["sha256"][i],
            provenance=Provenance(c["source"][i], c["reason"][i], c["direction"][i]),
            created=c["created"][i],
            last_access_turn=int(self.graph.content_vectors.cols[i, 1]),
            reference=Reference(ref["file"], tuple(ref["lines"]), ref.get("signature", ""), ref.get("sha256", ""),
                                ref.get("cell", "")) if ref else None,
            summary_of=get("summary_of"),
            chunks=[tuple(x) for x in (get("chunks") or [])],
            linking=LinkReport(threshold, self._linked(i), get("link_created"), (near, near_sim) if near else None) if threshold is not None else None,
            meta=get("meta") or {},
        )

    def all_nodes(self):
        for node_id in self.graph.concept_vectors.ids:
            yield self.node(node_id)
        for node_id in self.graph.content_vectors.ids:
            yield self.node(node_id)

    def edges(self):
        """Every edge with its networkx attributes, direction and time taken from its node."""
        g = self.graph
        content_ids, concept_ids = g.content_vectors.ids, g.concept_vectors.ids
        for c, k, w in zip(*self.links):
            node = self.node(content_ids[c])
            yield node.id, concept_ids[k], {"kind": "link", "weight": w, "direction": node.provenance.direction, "created": node.created}
        for (a, b), w in zip(*self.adjacent):
            yield concept_ids[a], concept_ids[b], {"kind": "concept", "weight": w, "created": self.node(concept_ids[a]).created}
        for source, summary in self.summaries.items():
            yield summary, source, {"kind": "summarizes", "weight": 1.0, "created": self.node(summary).created}
        for (a, b), kind in zip(*self.structure):
            yield content_ids[a], content_ids[b], {"kind": kind, "weight": 1.0, "source": content_ids[a], "target": content_ids[b]}


@contextmanager
def gc_paused():
    """Pause the cycle collector: a load makes ~10^5 containers it would rescan repeatedly
    (measured: 45 % of a 50k-node load)."""
    was_on = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_on:
            gc.enable()


def read_document(folder: str | Path, *, validate: bool = True) -> dict[str, Any]:  # noqa: C901 - one check per way a graph.json can be wrong, each with its own message
    """Parse and validate ``graph.json``: every problem names the file and what is wrong.

    ``validate=False`` skips the schema (about 55 ms at 50k nodes) for a save, which reads
    the committed document only for its generation and the files it names.
    """
    path = Path(folder) / GRAPH_FILE
    if path.is_symlink() and not path.exists():
        raise SessionFormatError(path, "is a dangling symbolic link: restore what it pointed to")
    if not path.is_file():
        raise SessionFormatError(path, "no graph.json here: not a loom-nb session folder (Loom.open creates one)")
    size = path.stat().st_size
    if size > MAX_GRAPH_BYTES:
        raise SessionFormatError(path, f"is {size / 2**20:,.0f} MiB, over the {MAX_GRAPH_BYTES / 2**20:,.0f} MiB a session may hold; not read")
    raw = path.read_bytes()
    if not raw.strip():
        raise SessionFormatError(path, "file is empty (an interrupted copy?)")
    if b"\x00" in raw[:8192]:
        raise SessionFormatError(path, "not UTF-8 text: a binary file, not a loom-nb graph")
    try:
        with gc_paused():
            doc = _loads(raw)
    except UnicodeDecodeError:
        raise SessionFormatError(path, "not UTF-8 text: a binary file, not a loom-nb graph") from None
    except json.JSONDecodeError as exc:
        raise SessionFormatError(path, f"not valid JSON, truncated or corrupt (line {exc.lineno}, column {exc.colno}: {exc.msg})") from None
    except RecursionError:  # orjson stops at depth 1024, and json's fallback runs out of stack
        raise SessionFormatError(path, "nested too deeply to be a loom-nb graph (a damaged or hostile file)") from None
    except ValueError as exc:  # json's own limits, e.g. an integer of over 4,300 digits
        raise SessionFormatError(path, f"not valid JSON, truncated or corrupt ({exc})") from None
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        found = doc.get("format") if isinstance(doc, dict) else type(doc).__name__
        raise SessionFormatError(path, f"not a loom-nb graph (format is {found!r}, expected {FORMAT!r})")
    version = doc.get("schema_version")
    if not isinstance(version, int):
        raise SessionFormatError(path, f"schema_version is {version!r}, expected an integer")
    if version > READS_UP_TO:
        raise SessionFormatError(path, f"written by a newer loom-nb (schema {version}; this version reads up to {READS_UP_TO}): upgrade loom-nb")
    for key in ("embedding", "concepts", "content", "links", "concept_edges", "vectors"):
        if key not in doc:
            raise SessionFormatError(path, f"missing the {key!r} section")
    if not validate or _sealed(path.parent, doc, raw):  # sealed: the bytes this user's loom-nb checked and wrote
        return doc
    try:
        schema().validate_document(doc)
    except schema().DocumentInvalid as exc:
        raise SessionFormatError(path, f"does not fit the graph.json schema: {exc}") from None
    return doc


_CONTENT_REQUIRED = ("id", "type", "title", "tokens", "sha256", "created", "last_access_turn", "source", "reason", "direction")
_CONCEPT_REQUIRED = ("id", "name", "description", "created", "origin")


def _check_columns(path: Path, section: str, cols: Any, required: tuple[str, ...]) -> int:
    if not isinstance(cols, dict):
        raise SessionFormatError(path, f"the {section!r} section is not a table of columns")
    lengths = set()
    for key in required:
        if not isinstance(cols.get(key), list):
            raise SessionFormatError(path, f"the {section!r} section has no {key!r} column")
        lengths.add(len(cols[key]))
    for key, values in cols.items():
        if isinstance(values, list):
            lengths.add(len(values))
    if len(lengths) > 1:
        raise SessionFormatError(path, f"the columns of {section!r} have different lengths {sorted(lengths)}")
    return lengths.pop() if lengths else 0


def load_graph(folder: str | Path, *, expect_model: str | None = None, doc: dict[str, Any] | None = None) -> tuple[LoomGraph, dict[str, Any]]:
    """Read a session folder into a :class:`LoomGraph`; returns the graph and the raw document.

    The graph is ready to rank at once; its node objects and networkx graph are built
    when first needed.

    Raises
    ------
    SessionFormatError
        The folder, graph.json or a vector file is missing, corrupt, foreign or too new.
    EmbeddingMismatchError
        ``expect_model`` differs from the model that made the stored vectors.

    ``doc`` is graph.json already parsed by :func:`read_document`, to avoid a second parse.

    Reads take no lock: a writer that commits while this reads may remove the files of
    the generation being read. The load then starts again on the new graph.json, so a
    reader gets one generation whole, never files of two (at most :data:`LOAD_TRIES` tries: a
    slow reader on a busy machine lost three races in a row to a writer saving in a loop, and
    got a session with its lexical index left out).
    """
    folder = Path(folder)
    doc = doc if doc is not None else read_document(folder)
    for attempt in range(LOAD_TRIES):
        try:
            with gc_paused():
                return _load_graph(folder, expect_model, doc)
        except _Vanished as gone:
            newer = read_document(folder)
            same = newer.get("generation") == doc.get("generation")
            if same or attempt == LOAD_TRIES - 1:
                if gone.lexical:  # only the lexical index is missing: rank without it, as before
                    log.warning("lexical index %s is missing; lexical signals are off until re-indexing", gone.where)
                    with gc_paused():
                        return _load_graph(folder, expect_model, newer, lexical=False)
                if stored_location(newer).is_qdrant:  # vectors="numpy" reads them from the collection too
                    raise SessionFormatError(gone.where, "vectors named by graph.json are missing, and only the collection "
                                             "held them: open the copy of this session that saved there since, or index "
                                             "the workspace again into a new session folder (loom-nb index NEW_FOLDER "
                                             "WORKSPACE)") from None
                raise SessionFormatError(gone.where, "vector file named by graph.json is missing") from None
            doc = newer
    raise AssertionError("unreachable")  # pragma: no cover


def _load_graph(folder: Path, expect_model: str | None, doc: dict[str, Any] | None,  # noqa: C901 - one check per way a session folder can be wrong, each with its own message
                lexical: bool = True) -> tuple[LoomGraph, dict[str, Any]]:
    """Length: one check per way a session folder can be wrong, in the order they are found."""
    path = folder / GRAPH_FILE
    doc = doc if doc is not None else read_document(folder)
    model = doc["embedding"].get("model")
    dim = int(doc["embedding"].get("dim") or 0)
    if expect_model is not None and model is not None and model != expect_model:
        raise EmbeddingMismatchError(
            f"{path}: vectors were made by {model!r} (dimension {dim}) but the embedder is {expect_model!r}; "
            f"open it with the same embedder, or rebuild the session with the new one — two vector spaces are never mixed"
        )
    try:
        config = _config_from(doc.get("config"))
    except (TypeError, ValueError) as exc:
        raise SessionFormatError(path, f"config section is invalid ({exc})") from None
    concepts, content = doc["concepts"], doc["content"]
    n_concepts = _check_columns(path, "concepts", concepts, _CONCEPT_REQUIRED)
    n_content = _check_columns(path, "content", content, _CONTENT_REQUIRED)
    n_links = _check_columns(path, "links", doc["links"], ("content", "concept", "weight"))
    n_adjacent = _check_columns(path, "concept_edges", doc["concept_edges"], ("a", "b", "weight"))
    structure = doc.get("structure") or {"source": [], "target": [], "kind": []}
    n_structure = _check_columns(path, "structure", structure, ("source", "target", "kind"))
    vec = doc["vectors"]
    try:
        store = open_store(stored_location(doc), folder)
        keys = row_keys(content["id"], concepts["id"], vec.get("chunk_rows") or [])
    except (LoomError, TypeError, ValueError) as exc:
        raise SessionFormatError(path, f"the vectors section is invalid ({exc})") from None
    content_vecs, concept_vecs, chunk_vecs = store.read(vec, keys, dim, model)
    if content_vecs.shape[0] != n_content or concept_vecs.shape[0] != n_concepts:
        raise SessionFormatError(path, "the number of nodes and of vectors differ")

    try:
        codes = np.fromiter(map(_TYPE_CODE.__getitem__, content["type"]), dtype=np.int64, count=n_content)
    except (KeyError, TypeError) as exc:
        raise SessionFormatError(path, f"unknown content type {exc.args[0]!r}") from None
    try:
        cols = np.column_stack([
            np.asarray(content["tokens"], dtype=np.int64).reshape(-1),
            np.asarray(content["last_access_turn"], dtype=np.int64).reshape(-1),
            codes,
        ]) if n_content else np.zeros((0, 3), dtype=np.int64)
        links = doc["links"]
        link_c = np.asarray(links["content"], dtype=np.int64).reshape(-1)
        link_k = np.asarray(links["concept"], dtype=np.int64).reshape(-1)
        edges = doc["concept_edges"]
        pairs = np.column_stack([np.asarray(edges["a"], dtype=np.int64).reshape(-1), np.asarray(edges["b"], dtype=np.int64).reshape(-1)])
        link_w = np.asarray(links["weight"]).reshape(-1)  # validates; the list is kept
        struct = np.column_stack([np.asarray(structure["source"], dtype=np.int64).reshape(-1), np.asarray(structure["target"], dtype=np.int64).reshape(-1)])
        pair_w = np.asarray(edges["weight"]).reshape(-1)
    except (TypeError, ValueError) as exc:
        raise SessionFormatError(path, f"a numeric column is malformed ({exc})") from None
    for weights, what in ((link_w, "link"), (pair_w, "concept edge")):
        # a sealed file skips the schema, and an older save wrote NaN as null: a null (or
        # text) weight was a TypeError at the first node built from it
        if weights.dtype.kind not in "fiub" or not np.isfinite(weights.astype(np.float64)).all():
            raise SessionFormatError(path, f"a {what} weight is not a finite number (null, text, NaN or Infinity): "
                                           "edited or damaged; restore graph.json from a backup")
    if n_links and (link_c.min() < 0 or link_c.max() >= n_content or link_k.min() < 0 or link_k.max() >= n_concepts):
        raise SessionFormatError(path, "a link names a node row that is not in the graph")
    if n_adjacent and (pairs.min() < 0 or pairs.max() >= n_concepts):
        raise SessionFormatError(path, "a concept edge names a concept row that is not in the graph")
    if n_structure and (struct.min() < 0 or struct.max() >= n_content):
        raise SessionFormatError(path, "a structure edge names a content row that is not in the graph")
    if not set(structure["kind"]) <= set(STRUCTURE_KINDS):
        raise SessionFormatError(path, f"unknown structure edge kinds {sorted(set(structure['kind']) - set(STRUCTURE_KINDS))}")

    content_table = VectorTable.from_arrays(content["id"], content_vecs, cols)
    concept_table = VectorTable.from_arrays(concepts["id"], concept_vecs)
    if len(content_table.index) != n_content or len(concept_table.index) != n_concepts:
        raise SessionFormatError(path, "node ids are not unique")
    if content_table.index.keys() & concept_table.index.keys():
        raise SessionFormatError(path, "a concept and a content node share an id")
    if link_w.size != n_links or pair_w.size != n_adjacent:
        raise SessionFormatError(path, "an edge weight column has the wrong length")
    summaries = {}
    for node_id, source in zip(content["id"], content.get("summary_of") or ()):
        if source is not None:
            if source not in content_table.index:
                raise SessionFormatError(path, f"{node_id} summarises {source!r}, which is not in the graph")
            summaries[source] = node_id
    chunk_vectors = _chunk_vectors(path, vec.get("chunk_rows") or [], chunk_vecs, content_table.index, content.get("chunks"))
    references, metas = content.get("reference"), content.get("meta")
    if references is None and metas is None:  # chat-only sessions: no files at all
        paths = [None] * n_content
    else:
        references, metas = references or [None] * n_content, metas or [None] * n_content
        paths = [ref["file"] if ref else (meta or {}).get("path") for ref, meta in zip(references, metas)]

    content_dir = folder / "content"
    version = doc["schema_version"]
    holder: list[LoomGraph] = []

    def load_text(node_id: str) -> str:
        """The node's text from ``content/``, served only if it still has the hash
        graph.json holds: a missing, edited or damaged file leaves the node out."""
        sha = holder[0].node(node_id).sha256
        text_path = content_dir / content_name(node_id, sha, version)
        try:
            text = text_path.read_bytes().decode("utf-8", "replace")
        except FileNotFoundError:
            raise StaleReferenceError(f"{node_id}: its text ({text_path}) is missing from the session folder; it is left out") from None
        except OSError as exc:
            raise StaleReferenceError(f"{node_id}: its text ({text_path}) cannot be read ({exc.strerror or exc}); it is left out") from None
        if sha256_text(text) != sha:
            raise StaleReferenceError(f"{node_id}: {text_path} no longer matches the sha256 in graph.json (edited or damaged); it is left out")
        return text

    links_cols = (link_c, link_k, list(links["weight"]))
    adjacent_cols = (pairs, list(edges["weight"]))
    structure_cols = (struct, list(structure["kind"]))
    graph = LoomGraph.from_columns(
        config=config, embedding_model=model, turn=int(doc.get("turn", 0)), metadata=dict(doc.get("metadata") or {}),
        next_ids=doc.get("next_ids", {}), content_vectors=content_table, concept_vectors=concept_table,
        chunk_vectors=chunk_vectors, links=links_cols, adjacent=adjacent_cols, structure=structure_cols,
        summaries=summaries, paths=paths, lexical=_load_lexical(folder, vec.get("lexical") if lexical else None, n_content),
        lazy_nodes=lambda g: LazyNodes(g, concepts, content, links_cols, adjacent_cols, structure_cols, summaries),
        text_loader=load_text,
    )
    holder.append(graph)
    graph.saved_as = (str(folder.resolve()), int(doc.get("generation", 0)), _identity(doc))
    return graph, doc


def _chunk_vectors(path: Path, chunk_rows: list, table: np.ndarray, content_index: dict[str, int],
                   spans: list | None) -> dict[str, np.ndarray]:
    """Each chunked node's rows of the chunks table, as ``vectors.chunk_rows`` hands them out.

    Checked like the other vector tables: rows that do not add up to the file's, or a count
    that is not the node's number of chunks, paired one node's spans with other rows (a
    broadcast error in the first query that loaded chunks), and an id that is no content
    node was saved again as it was.
    """
    where, seen, total = "vectors.chunk_rows", set(), 0
    for node_id, rows in chunk_rows:
        if not isinstance(rows, int) or isinstance(rows, bool) or rows < 0:
            raise SessionFormatError(path, f"{where} gives {node_id!r} {rows!r} rows, not a count")
        if node_id not in content_index:
            raise SessionFormatError(path, f"{where} names {node_id!r}, which is not a content node")
        if node_id in seen:
            raise SessionFormatError(path, f"{where} names {node_id} twice")
        seen.add(node_id)
        total += rows
    if total != table.shape[0]:
        raise SessionFormatError(path, f"{where} add up to {total} rows; the chunks file holds {table.shape[0]}")
    out, offset = {}, 0
    for node_id, rows in chunk_rows:
        node_spans = spans[content_index[node_id]] if spans else None
        if rows != len(node_spans or ()):
            raise SessionFormatError(path, f"{where} gives {node_id} {rows} rows, but {node_id} has {len(node_spans or ())} chunks")
        out[node_id] = table[offset : offset + rows]
        offset += rows
    return out


def _load_lexical(folder: Path, name: str | None, n_content: int) -> LexicalIndex:
    """The saved lexical index; a missing or damaged one is rebuilt empty with a warning
    (lexical signals then score 0 until the nodes are re-added or re-indexed)."""
    if not name:
        return LexicalIndex()
    try:
        with np.load(folder / name, allow_pickle=False) as data:
            index = LexicalIndex.from_arrays({k: data[k] for k in data.files})
    except FileNotFoundError:
        raise _Vanished(str(folder / name), lexical=True) from None
    except Exception as exc:
        log.warning("lexical index %s unreadable (%s); lexical signals are off until re-indexing", name, exc)
        return LexicalIndex()
    if len(index) > n_content:
        log.warning("lexical index %s has %d rows for %d nodes; ignoring it", name, len(index), n_content)
        return LexicalIndex()
    return index


def load_cache(folder: str | Path, doc: dict[str, Any]) -> tuple[list[str], np.ndarray] | None:
    """The saved embedding cache (keys, vectors), or ``None``; a damaged cache is skipped.

    Read after :func:`load_graph`, without a lock: a save that commits meanwhile removes the
    cache of ``doc``'s generation. Then the cache of the generation that replaced it is read
    (it maps texts to the same model's vectors: any generation's will do); an open racing a
    save lost its cache, warned of an unreadable file."""
    folder = Path(folder)
    for attempt in range(LOAD_TRIES):
        name = doc.get("vectors", {}).get("cache")
        if not name:
            return None
        try:
            with np.load(folder / name, allow_pickle=False) as data:
                return [str(k) for k in data["keys"]], data["vectors"].astype(np.float32)
        except FileNotFoundError:
            newer = _moved_on(folder, doc)
            if newer is None or attempt == LOAD_TRIES - 1:
                log.warning("embedding cache %s is missing; starting with an empty cache", name)
                return None
            doc = newer
        except Exception as exc:  # the cache only saves time: never fail a load over it
            log.warning("embedding cache %s unreadable (%s); starting with an empty cache", name, exc)
            return None
    return None  # pragma: no cover - the loop returns


def _moved_on(folder: Path, doc: dict[str, Any]) -> dict[str, Any] | None:
    """The committed graph.json when a save replaced ``doc``'s generation since (same model),
    else None."""
    try:
        newer = read_document(folder)
    except LoomError:
        return None
    model = (doc.get("embedding") or {}).get("model")
    if newer.get("generation") == doc.get("generation") or (newer.get("embedding") or {}).get("model") != model:
        return None
    return newer
