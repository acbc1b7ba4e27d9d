"""Where a session's vectors are kept: numpy files in the session folder (the default), or a
Qdrant collection that a team shares (issue 20).

The boundary
------------
Ranking scores *every* content node for every query (eleven signals, then the budget picks),
so the semantic signal needs the similarity of every row, not a nearest-k:
``semantic_signal(content_vectors @ q)`` in :mod:`loom_nb.core.rank`. That matrix stays a numpy
:class:`~loom_nb.core.arrays.VectorTable` in the process whatever the store, and rows are
added and removed there (``LoomGraph.add_content`` / ``remove_many``). So the hot path is the
same code, at the same speed, with either store, and the answers are the same: the vectors a
query multiplies are bit for bit the ones that were saved.

The store is what that table is loaded from and saved to, in four steps a save and a load
take in this order:

``describe(vectors, generation, previous, session)``
    What graph.json will record of these vectors (file names, or per-row digests and the
    owner, ``session``'s id); no I/O, so a session that cannot be encoded fails before
    anything is written.
``write(vectors, entries)``
    Put the vectors where those entries say, before graph.json commits. A Qdrant store sends
    only the points the collection does not hold yet: the rows added since the last save.
``read(section, keys, dim, model)``
    The three matrices (content, concepts, chunks) a committed graph.json names.
``collect(previous, doc)``
    After the commit: remove what only older graph.json files named (the rows removed).

graph.json stays the single source of truth for nodes and edges, and names exactly which
vectors belong to it; replacing graph.json is the commit point of either store. A reader
that meets vectors a concurrent save has just collected starts again on the new graph.json
(:func:`loom_nb.core.store.load_graph`), so it gets one state whole, never half of two.

Locations (``vectors=`` of ``Loom``, ``Loom.open`` and ``--vectors`` of the CLI)
--------------------------------------------------------------------------------
``"numpy"`` (or None)
    ``embeddings/*.npy`` in the session folder: the default.
``"http://HOST:6333/COLLECTION"`` (or https; a path before the collection is a prefix)
    A Qdrant server. An API key is read from ``QDRANT_API_KEY``, never from the URL: the
    location is saved in graph.json.
``"qdrant+local:///ABSOLUTE/FOLDER/COLLECTION"`` or ``"qdrant+local:FOLDER/COLLECTION"``
    qdrant-client's embedded local mode, no server: a storage folder and a collection in it.
    A relative folder is inside the session folder. One process at a time holds a storage
    folder; loom-nb opens it only for a load or a save, so processes take turns.
"""

from __future__ import annotations

import hashlib
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol
from urllib.parse import urlsplit

import numpy as np

from .atomic import save_npy
from .errors import LoomError, SessionFormatError

__all__ = ["NUMPY", "VectorLocation", "StoredVectors", "VectorStore", "VectorsVanished", "NumpyFiles",
           "parse_location", "stored_location", "row_keys", "digests", "point_id"]

KINDS = ("content", "concepts", "chunks")
"""The three vector tables a session stores, in graph.json's order."""
LOCAL_SCHEME = "qdrant+local:"
_COLLECTION_NAME = "letters, digits, '_', '-' or '.', at most 255"


@dataclass(frozen=True)
class VectorLocation:
    """A parsed ``vectors=`` value: where a session's vectors live.

    Examples
    --------
    >>> parse_location("http://qdrant:6333/loom-myrepo").describe()
    'Qdrant server http://qdrant:6333, collection loom-myrepo'
    >>> parse_location("qdrant+local:vectors/loom").describe()
    'Qdrant local storage vectors (in the session folder), collection loom'
    >>> parse_location(None).kind
    'numpy'
    """

    kind: str
    """"numpy", "server" or "local"."""
    spelling: str
    """As graph.json stores it (and as the user wrote it, normalised)."""
    server: str = ""
    """For a server: scheme, host and port."""
    prefix: str = ""
    """For a server behind a path: the path before the collection."""
    path: str = ""
    """For local mode: the storage folder (relative: inside the session folder)."""
    collection: str = ""

    @property
    def is_qdrant(self) -> bool:
        return self.kind != "numpy"

    def storage_folder(self, session_folder: str | Path | None) -> Path:
        """Local mode's storage folder as an absolute path."""
        path = Path(self.path)
        if not path.is_absolute():
            if session_folder is None:
                raise LoomError(f"{self.spelling}: a relative storage folder lies inside the session folder, and this "
                                "session has none yet: give Loom a folder, or write qdrant+local:///ABSOLUTE/PATH/COLLECTION")
            path = Path(session_folder) / path
        for above in (path, *path.parents):  # refused now, not half-way through the first save
            if above.exists():
                if not above.is_dir():
                    raise LoomError(f"{self.spelling}: {above} is a file, so the storage folder {path} cannot be made there")
                break
        return path

    def key(self, session_folder: str | Path | None) -> str:
        """One spelling per place, for comparing two locations and remembering trust."""
        if self.kind == "local":
            return f"{LOCAL_SCHEME}//{self.storage_folder(session_folder).resolve()}/{self.collection}"
        return self.spelling

    def inside(self, session_folder: str | Path) -> bool:
        """Whether this is local storage inside ``session_folder`` (trusted like its files)."""
        if self.kind != "local":
            return False
        return self.storage_folder(session_folder).resolve().is_relative_to(Path(session_folder).resolve())

    def describe(self) -> str:
        if self.kind == "server":
            return f"Qdrant server {self.server}{'/' + self.prefix if self.prefix else ''}, collection {self.collection}"
        if self.kind == "local":
            where = self.path if Path(self.path).is_absolute() else f"{self.path} (in the session folder)"
            return f"Qdrant local storage {where}, collection {self.collection}"
        return "numpy files in the session folder (embeddings/)"


NUMPY = VectorLocation("numpy", "numpy")


def _usage(spec: Any) -> str:
    return (f"vectors={spec!r}: give 'numpy' (the default), a Qdrant server URL ending in the collection "
            f"(http://qdrant:6333/loom-myrepo) or local storage ({LOCAL_SCHEME}///abs/folder/COLLECTION, or "
            f"{LOCAL_SCHEME}folder/COLLECTION inside the session folder)")


def _collection(name: str, spec: str) -> str:
    if not name or len(name) > 255 or not all(c.isalnum() or c in "_-." for c in name) or name[0] == ".":
        raise LoomError(f"{_usage(spec)}; the collection name {name!r} must be {_COLLECTION_NAME}")
    return name


def parse_location(spec: "str | VectorLocation | None") -> VectorLocation:
    """Read a ``vectors=`` value; a malformed one raises :class:`LoomError` saying what to write.

    >>> parse_location("https://q.example.com/team/loom-repo").prefix
    'team'
    >>> parse_location("http://qdrant:6333/?api_key=x")
    Traceback (most recent call last):
    ...
    loom_nb.core.errors.LoomError: vectors='http://qdrant:6333/?api_key=x': an API key goes in the QDRANT_API_KEY environment variable, never in the URL (graph.json stores the URL)
    """
    if spec is None or isinstance(spec, VectorLocation):
        return spec or NUMPY
    if not isinstance(spec, str):
        raise LoomError(_usage(spec))
    text = spec.strip()
    if text == "numpy":
        return NUMPY
    if text.startswith(("http://", "https://")):
        parts = urlsplit(text)
        if parts.query or parts.fragment or parts.username or parts.password:
            raise LoomError(f"vectors={spec!r}: an API key goes in the QDRANT_API_KEY environment variable, never in the "
                            "URL (graph.json stores the URL)")
        segments = [s for s in parts.path.split("/") if s]
        if not parts.hostname or not segments:
            raise LoomError(f"{_usage(spec)}; the collection is the URL's last path segment")
        collection = _collection(segments[-1], spec)
        server = f"{parts.scheme}://{parts.netloc}"
        prefix = "/".join(segments[:-1])
        return VectorLocation("server", f"{server}/{prefix + '/' if prefix else ''}{collection}", server=server,
                              prefix=prefix, collection=collection)
    if text.startswith(LOCAL_SCHEME):
        rest = text[len(LOCAL_SCHEME):]
        if rest.startswith("//") and not rest.startswith("///"):
            raise LoomError(f"{_usage(spec)}; three slashes for an absolute folder, none for one inside the session")
        rest = rest[2:] if rest.startswith("///") else rest
        folder, _, name = rest.rstrip("/").rpartition("/")
        if not folder:
            raise LoomError(f"{_usage(spec)}; name a storage folder and a collection in it")
        collection = _collection(name, spec)
        slashes = "//" if folder.startswith("/") else ""
        return VectorLocation("local", f"{LOCAL_SCHEME}{slashes}{folder}/{collection}", path=folder, collection=collection)
    raise LoomError(_usage(spec))


def stored_location(doc: dict[str, Any]) -> VectorLocation:
    """The location a graph.json names for its vectors (numpy files when it names none)."""
    vec = doc.get("vectors") if isinstance(doc.get("vectors"), dict) else {}
    if vec.get("store", "numpy") == "numpy":
        return NUMPY
    return parse_location(vec.get("location"))


@dataclass
class StoredVectors:
    """The three vector tables of a save, each with the key of every row."""

    content: np.ndarray
    concepts: np.ndarray
    chunks: np.ndarray
    keys: dict[str, list[tuple[str, int]]]
    """Per kind, (node id, chunk index) of each row; the index is 0 but for chunks."""
    model: str | None = None
    """The embedding model that made them (a Qdrant collection records it)."""

    def matrix(self, kind: str) -> np.ndarray:
        return getattr(self, kind)

    @property
    def rows(self) -> int:
        return sum(len(self.keys[k]) for k in KINDS)


def row_keys(content_ids: list[str], concept_ids: list[str], chunk_rows: list) -> dict[str, list[tuple[str, int]]]:
    """(node id, chunk index) of every row of the three tables, as graph.json orders them.

    >>> row_keys(["n1"], ["c1"], [["n1", 2]])["chunks"]
    [('n1', 0), ('n1', 1)]
    """
    chunks = [(node_id, i) for node_id, count in chunk_rows for i in range(int(count))]
    return {"content": [(i, 0) for i in content_ids], "concepts": [(i, 0) for i in concept_ids], "chunks": chunks}


def digests(matrix: np.ndarray) -> list[str]:
    """A 64-bit BLAKE2b digest of each row's float32 bytes: what names its point, and what a
    load checks the point against.

    >>> digests(np.zeros((1, 2), np.float32))
    ['ca08ea5bca49cc18']
    """
    data = np.ascontiguousarray(matrix, dtype=np.float32)
    return [hashlib.blake2b(row.tobytes(), digest_size=8).hexdigest() for row in data]


_POINTS = uuid.UUID("6c1f3a52-8d4e-4f0b-9a57-1e2b6f0d4c31")


def point_id(kind: str, node_id: str, index: int, digest: str) -> str:
    """The Qdrant point of one row: a UUID from what the row is and what it holds, so an
    unchanged row keeps its point from one save to the next and is never sent twice.

    >>> point_id("content", "n1", 0, "ca08ea5bca49cc18") == point_id("content", "n1", 0, "ca08ea5bca49cc18")
    True
    """
    return str(uuid.uuid5(_POINTS, f"{kind}/{node_id}/{index}/{digest}"))


class VectorsVanished(Exception):
    """Vectors a graph.json names are gone (a save since may have collected them): the
    load starts again on the newer graph.json."""

    def __init__(self, where: str, lexical: bool = False):
        super().__init__(where)
        self.where, self.lexical = where, lexical


class VectorStore(Protocol):
    """Where a session's vector tables are saved and loaded from (see the module doc)."""

    location: VectorLocation
    schema_version: int
    """The graph.json schema version a save with this store writes."""

    def describe(self, vectors: StoredVectors, generation: int, previous: dict[str, Any] | None,
                 session: str) -> dict[str, Any]: ...

    def write(self, vectors: StoredVectors, entries: dict[str, Any]) -> None: ...

    def read(self, section: dict[str, Any], keys: dict[str, list[tuple[str, int]]], dim: int,
             model: str | None) -> tuple[np.ndarray, np.ndarray, np.ndarray]: ...

    def collect(self, previous: dict[str, Any] | None, doc: dict[str, Any]) -> None: ...


class NumpyFiles:
    """``embeddings/<kind>.g<generation>.npy`` in the session folder, saved raw so a round
    trip is bit-identical, loaded as copy-on-write memory maps. Older generations' files are
    removed by the save's own clean-up of files no graph.json names."""

    location = NUMPY
    schema_version = 2

    def __init__(self, folder: Path):
        self.folder = Path(folder)

    def describe(self, vectors: StoredVectors, generation: int, previous: dict[str, Any] | None, session: str) -> dict[str, Any]:
        return {kind: {"file": f"embeddings/{kind}.g{generation}.npy", "rows": int(vectors.matrix(kind).shape[0])}
                for kind in KINDS}

    def write(self, vectors: StoredVectors, entries: dict[str, Any]) -> None:
        for kind in KINDS:
            save_npy(self.folder / entries[kind]["file"], vectors.matrix(kind))

    def read(self, section, keys, dim, model):
        return tuple(self._load(section[kind], dim) for kind in KINDS)

    def collect(self, previous, doc) -> None:
        return None

    def _load(self, spec: dict[str, Any], dim: int) -> np.ndarray:
        folder = self.folder
        if not isinstance(spec, dict) or not isinstance(spec.get("file"), str):
            raise SessionFormatError(folder / "graph.json", "a vector table names no file (a Qdrant session read as numpy?)")
        path = folder / spec["file"]
        if not path.resolve().is_relative_to(folder.resolve()):
            raise SessionFormatError(folder / "graph.json", f"vector file {spec['file']!r} is outside the session folder")
        try:
            # copy-on-write memory map: the pages load as ranking touches them (the page cache
            # usually has them), and the graph may still change its copy in memory
            array = np.load(path, allow_pickle=False, mmap_mode="c")
        except FileNotFoundError:
            raise VectorsVanished(str(path)) from None
        except Exception as exc:
            raise SessionFormatError(path, f"not a readable numpy file ({exc})") from None
        if array.dtype != np.float32 or array.ndim != 2 or array.shape[0] != spec["rows"] or (array.shape[0] and array.shape[1] != dim):
            raise SessionFormatError(path, f"holds {array.shape} {array.dtype}, graph.json expects ({spec['rows']}, {dim}) float32")
        return array
