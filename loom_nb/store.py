"""The session folder (seed 000 §9.1): ``graph.json``, ``content/``, ``embeddings/``.

``graph.json`` is the single source of truth: every node, edge and setting, the schema
version and the embedding model. Texts live in ``content/<id>.txt`` (read only when a node
is loaded); vectors in ``embeddings/*.npy``, saved raw so a round trip is bit-identical.

Saves are atomic: vectors are written under a new generation name, ``graph.json`` is
replaced last with ``os.replace`` (the commit point), and only then are files of older
generations removed. A crash at any step leaves the previous session readable.
"""

from __future__ import annotations

import json
import logging
import os
import tempfile
from contextlib import contextmanager
from dataclasses import asdict
from pathlib import Path
from typing import Any

import numpy as np

from .config import LoomConfig, Weights
from .errors import EmbeddingMismatchError, SessionFormatError
from .graph import ConceptNode, ContentNode, LinkReport, LoomGraph, Provenance, Reference, utc_now

log = logging.getLogger(__name__)

FORMAT = "loom-nb/graph"
SCHEMA_VERSION = 1
GRAPH_FILE = "graph.json"


@contextmanager
def atomic_file(path: Path):
    """A binary file that replaces ``path`` only when the ``with`` block succeeds.

    Readers see the old file or the new one, never half of one: the data goes to a
    temporary file in the same folder, is fsynced, and ``os.replace`` swaps it in.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            yield f
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def atomic_write_bytes(path: Path, data: bytes) -> None:
    with atomic_file(path) as f:
        f.write(data)


def atomic_write_text(path: Path, text: str) -> None:
    atomic_write_bytes(path, text.encode("utf-8"))


def _save_npy(path: Path, array: np.ndarray) -> None:
    with atomic_file(path) as f:
        np.save(f, np.ascontiguousarray(array, dtype=np.float32), allow_pickle=False)


# -- records ------------------------------------------------------------------------------


def _content_record(node: ContentNode) -> dict[str, Any]:
    record = {
        "id": node.id,
        "kind": "content",
        "type": node.type,
        "title": node.title,
        "tokens": node.tokens,
        "sha256": node.sha256,
        "created": node.created,
        "last_access_turn": node.last_access_turn,
        "provenance": asdict(node.provenance),
    }
    if node.reference is not None:
        record["reference"] = asdict(node.reference)
    if node.summary_of is not None:
        record["summary_of"] = node.summary_of
    if node.chunks:
        record["chunks"] = [list(c) for c in node.chunks]
    if node.linking is not None:
        record["linking"] = asdict(node.linking)
    if node.meta:
        record["meta"] = node.meta
    return record


def _concept_record(node: ConceptNode) -> dict[str, Any]:
    return {
        "id": node.id,
        "kind": "concept",
        "name": node.name,
        "description": node.description,
        "created": node.created,
        "origin": node.origin,
    }


def _content_from(record: dict[str, Any]) -> ContentNode:
    ref = record.get("reference")
    linking = record.get("linking")
    return ContentNode(
        id=record["id"],
        type=record["type"],
        tokens=int(record["tokens"]),
        title=record["title"],
        sha256=record["sha256"],
        provenance=Provenance(**record.get("provenance", {})),
        created=record["created"],
        last_access_turn=int(record.get("last_access_turn", 0)),
        reference=Reference(ref["file"], tuple(ref["lines"]), ref.get("signature", ""), ref.get("sha256", "")) if ref else None,
        summary_of=record.get("summary_of"),
        chunks=[tuple(c) for c in record.get("chunks", [])],
        linking=LinkReport(
            threshold=linking["threshold"],
            linked=[tuple(x) for x in linking["linked"]],
            created=linking.get("created"),
            near_miss=tuple(linking["near_miss"]) if linking.get("near_miss") else None,
        ) if linking else None,
        meta=record.get("meta", {}),
    )


def _concept_from(record: dict[str, Any]) -> ConceptNode:
    return ConceptNode(
        id=record["id"], name=record["name"], description=record["description"], created=record["created"], origin=record.get("origin")
    )


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
    return LoomConfig(**data)


# -- save ---------------------------------------------------------------------------------


def save_graph(graph: LoomGraph, folder: str | Path, *, cache_items=None, scores: dict[str, Any] | None = None) -> Path:
    """Write ``graph`` to the session ``folder`` atomically; returns the graph.json path."""
    folder = Path(folder)
    (folder / "content").mkdir(parents=True, exist_ok=True)
    (folder / "embeddings").mkdir(parents=True, exist_ok=True)
    graph_path = folder / GRAPH_FILE
    previous = _peek_generation(graph_path)
    generation = previous + 1

    # 1. content texts: one file per node, written only when new or changed
    for node in graph.content_nodes():
        if node.reference is not None:
            continue
        path = folder / "content" / f"{node.id}.txt"
        # A node's text never changes under its id (ids are never reused), so a file
        # that exists is already right.
        if not path.exists():
            atomic_write_text(path, graph.text(node.id))

    # 2. vectors under a new generation name
    dim = graph.content_vectors.dim or graph.concept_vectors.dim
    files = {}
    content = graph.content_vectors.matrix if len(graph.content_vectors) else np.zeros((0, dim), np.float32)
    concepts = graph.concept_vectors.matrix if len(graph.concept_vectors) else np.zeros((0, dim), np.float32)
    chunk_ids = sorted(graph.chunk_vectors)
    chunks = np.concatenate([graph.chunk_vectors[i] for i in chunk_ids]) if chunk_ids else np.zeros((0, dim), np.float32)
    for name, array in (("content", content), ("concepts", concepts), ("chunks", chunks)):
        rel = f"embeddings/{name}.g{generation}.npy"
        _save_npy(folder / rel, array)
        files[name] = {"file": rel, "rows": int(array.shape[0])}
    cache_file = None
    if cache_items:
        keys = [k for k, _ in cache_items]
        if keys:
            cache_file = f"embeddings/cache.g{generation}.npz"
            with atomic_file(folder / cache_file) as f:
                np.savez(f, keys=np.array(keys), vectors=np.stack([v for _, v in cache_items]).astype(np.float32))

    # 3. graph.json: the commit point
    doc = {
        "format": FORMAT,
        "schema_version": SCHEMA_VERSION,
        "saved": utc_now(),
        "generation": generation,
        "embedding": {"model": graph.embedding_model, "dim": int(dim)},
        "config": _config_to_dict(graph.config),
        "turn": graph.turn,
        "next_ids": dict(graph._next),
        "metadata": graph.metadata,
        "vectors": {
            **files,
            "content_ids": list(graph.content_vectors.ids),
            "concept_ids": list(graph.concept_vectors.ids),
            "chunk_rows": [[i, int(graph.chunk_vectors[i].shape[0])] for i in chunk_ids],
            "cache": cache_file,
        },
        "nodes": [
            _concept_record(d) if d.kind == "concept" else _content_record(d) for _, d in graph.nx.nodes(data="data")
        ],
        "edges": [[u, v, d["kind"], d["weight"], d.get("direction"), d.get("created")] for u, v, d in graph.nx.edges(data=True)],
        "scores": scores or {},
    }
    atomic_write_text(graph_path, json.dumps(doc, ensure_ascii=False, separators=(",", ":")))

    # 4. clean up what the new graph.json no longer names
    keep = {f["file"] for f in files.values()} | ({cache_file} if cache_file else set())
    for path in (folder / "embeddings").glob("*.g*.np*"):
        if f"embeddings/{path.name}" not in keep:
            path.unlink(missing_ok=True)
    live = {f"{n.id}.txt" for n in graph.content_nodes() if n.reference is None}
    for path in (folder / "content").glob("*.txt"):
        if path.name not in live:
            path.unlink(missing_ok=True)
    return graph_path


def _peek_generation(graph_path: Path) -> int:
    """The highest generation of vector files present (cheaper than parsing graph.json)."""
    found = [0]
    for path in (graph_path.parent / "embeddings").glob("*.g*.np*"):
        stem = path.name.split(".g", 1)[-1].split(".", 1)[0]
        if stem.isdigit():
            found.append(int(stem))
    return max(found)


# -- load ---------------------------------------------------------------------------------


def _load_npy(folder: Path, spec: dict[str, Any], dim: int) -> np.ndarray:
    path = folder / spec["file"]
    if not path.resolve().is_relative_to(folder.resolve()):
        raise SessionFormatError(folder / GRAPH_FILE, f"vector file {spec['file']!r} is outside the session folder")
    try:
        array = np.load(path, allow_pickle=False)
    except FileNotFoundError:
        raise SessionFormatError(path, "vector file named by graph.json is missing") from None
    except Exception as exc:
        raise SessionFormatError(path, f"not a readable numpy file ({exc})") from None
    if array.dtype != np.float32 or array.ndim != 2 or array.shape[0] != spec["rows"] or (array.shape[0] and array.shape[1] != dim):
        raise SessionFormatError(path, f"holds {array.shape} {array.dtype}, graph.json expects ({spec['rows']}, {dim}) float32")
    return array


def read_document(folder: str | Path) -> dict[str, Any]:
    """Parse and validate ``graph.json``: every problem names the file and what is wrong."""
    path = Path(folder) / GRAPH_FILE
    if not path.is_file():
        raise SessionFormatError(path, "no graph.json here: not a loom-nb session folder (Loom.open creates one)")
    raw = path.read_bytes()
    if not raw.strip():
        raise SessionFormatError(path, "file is empty (an interrupted copy?)")
    try:
        doc = json.loads(raw)
    except UnicodeDecodeError:
        raise SessionFormatError(path, "not UTF-8 text: a binary file, not a loom-nb graph") from None
    except json.JSONDecodeError as exc:
        raise SessionFormatError(path, f"not valid JSON, truncated or corrupt (line {exc.lineno}, column {exc.colno}: {exc.msg})") from None
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        found = doc.get("format") if isinstance(doc, dict) else type(doc).__name__
        raise SessionFormatError(path, f"not a loom-nb graph (format is {found!r}, expected {FORMAT!r})")
    version = doc.get("schema_version")
    if not isinstance(version, int):
        raise SessionFormatError(path, f"schema_version is {version!r}, expected an integer")
    if version > SCHEMA_VERSION:
        raise SessionFormatError(path, f"written by a newer loom-nb (schema {version}; this version reads up to {SCHEMA_VERSION}): upgrade loom-nb")
    for key in ("embedding", "nodes", "edges", "vectors"):
        if key not in doc:
            raise SessionFormatError(path, f"missing the {key!r} section")
    return doc


def load_graph(folder: str | Path, *, expect_model: str | None = None) -> tuple[LoomGraph, dict[str, Any]]:
    """Read a session folder into a :class:`LoomGraph`; returns the graph and the raw document.

    Raises
    ------
    SessionFormatError
        The folder, graph.json or a vector file is missing, corrupt, foreign or too new.
    EmbeddingMismatchError
        ``expect_model`` differs from the model that made the stored vectors.
    """
    folder = Path(folder)
    path = folder / GRAPH_FILE
    doc = read_document(folder)
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
    graph = LoomGraph(config=config, embedding_model=model)
    graph.turn = int(doc.get("turn", 0))
    graph.metadata = dict(doc.get("metadata", {}))
    graph._next.update(doc.get("next_ids", {}))
    vec = doc["vectors"]
    content = _load_npy(folder, vec["content"], dim)
    concepts = _load_npy(folder, vec["concepts"], dim)
    chunks = _load_npy(folder, vec["chunks"], dim)
    if len(vec["content_ids"]) != content.shape[0] or len(vec["concept_ids"]) != concepts.shape[0]:
        raise SessionFormatError(path, "vector id lists do not match the vector files")

    node_attrs = []
    try:
        for i, record in enumerate(doc["nodes"]):
            data = _concept_from(record) if record["kind"] == "concept" else _content_from(record)
            node_attrs.append((data.id, {"kind": data.kind, "data": data}))
    except (KeyError, TypeError, ValueError) as exc:
        raise SessionFormatError(path, f"node record #{i} is malformed ({type(exc).__name__}: {exc})") from None
    graph.nx.add_nodes_from(node_attrs)
    try:
        graph.nx.add_edges_from(
            (u, v, {"kind": k, "weight": w, "direction": d, "created": c}) for u, v, k, w, d, c in doc["edges"]
        )
    except (TypeError, ValueError) as exc:
        raise SessionFormatError(path, f"edge list is malformed ({exc})") from None
    if graph.nx.number_of_nodes() != len(node_attrs):
        raise SessionFormatError(path, "edges name nodes that are not in the node list")
    ids = set(vec["content_ids"]) | set(vec["concept_ids"])
    if ids != set(graph.nx.nodes):
        raise SessionFormatError(path, "the vector id lists and the node list disagree")
    from .graph import VectorTable

    graph.content_vectors = VectorTable.from_arrays(vec["content_ids"], content)
    graph.concept_vectors = VectorTable.from_arrays(vec["concept_ids"], concepts)
    offset = 0
    for node_id, rows in vec.get("chunk_rows", []):
        graph.chunk_vectors[node_id] = chunks[offset : offset + rows]
        offset += rows

    content_dir = folder / "content"

    def load_text(node_id: str) -> str:
        text_path = content_dir / f"{node_id}.txt"
        try:
            return text_path.read_bytes().decode("utf-8", "replace")
        except FileNotFoundError:
            raise SessionFormatError(text_path, f"content of node {node_id} is missing from the session folder") from None

    graph._text_loader = load_text
    graph._version += 1
    return graph, doc


def load_cache(folder: str | Path, doc: dict[str, Any]) -> tuple[list[str], np.ndarray] | None:
    """The saved embedding cache (keys, vectors), or ``None``; a damaged cache is skipped."""
    name = doc.get("vectors", {}).get("cache")
    if not name:
        return None
    try:
        with np.load(Path(folder) / name, allow_pickle=False) as data:
            return [str(k) for k in data["keys"]], data["vectors"].astype(np.float32)
    except Exception as exc:  # the cache only saves time: never fail a load over it
        log.warning("embedding cache %s unreadable (%s); starting with an empty cache", name, exc)
        return None
