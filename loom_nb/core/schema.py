"""The declared shape of ``graph.json``: every type, range and length, checked before use.

A session folder may come from anywhere (a colleague, a download, a disk that lost power),
so the loader trusts nothing it has not checked. One declared schema, validated by pydantic
in one pass, replaces checks scattered over the code that later reads the document: a
wrong type anywhere becomes one :class:`~loom_nb.core.errors.SessionFormatError` naming the
field, instead of an ``AttributeError`` three calls later.

Ids and file names are checked by pattern because they become paths (``content/<id>…``,
``embeddings/…``); a reference needs a non-empty sha256, since without one its staleness
could not be checked and any text would be served.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, Optional

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, TypeAdapter, ValidationError

from .config import CONTENT_TYPES, LoomConfig

__all__ = ["validate_document", "validate_config", "DocumentInvalid"]

NodeId = Annotated[str, StringConstraints(pattern=r"^[A-Za-z][A-Za-z0-9_-]{0,63}$")]
Sha256 = Annotated[str, StringConstraints(pattern=r"^[0-9a-f]{64}$")]
OptionalSha256 = Annotated[str, StringConstraints(pattern=r"^([0-9a-f]{64})?$")]
VectorFile = Annotated[str, StringConstraints(pattern=r"^embeddings/[a-z]+\.g[0-9]+\.np[yz]$")]
BIG = 1 << 53  # past any real count; keeps numpy's int64 and float conversions exact
Count = Annotated[int, Field(ge=0, lt=BIG)]
Row = Annotated[int, Field(ge=0, lt=BIG)]
Int = Annotated[int, Field(gt=-BIG, lt=BIG)]
Pair = Annotated[list[Row], Field(min_length=2, max_length=2)]
ContentType = Literal[CONTENT_TYPES]  # type: ignore[valid-type]


class _Strict(BaseModel):
    """Known fields are typed strictly; fields a newer minor version adds are kept."""

    model_config = ConfigDict(strict=True, extra="allow")


class Reference(_Strict):
    file: Annotated[str, StringConstraints(min_length=1, max_length=4096)]
    lines: Annotated[list[Annotated[int, Field(ge=1, lt=BIG)]], Field(min_length=2, max_length=2)]
    signature: str = ""
    sha256: Sha256
    cell: Annotated[str, StringConstraints(max_length=256)] = ""


class ContentColumns(_Strict):
    id: list[NodeId]
    type: list[ContentType]
    title: list[str]
    tokens: list[Count]
    sha256: list[OptionalSha256]
    created: list[str]
    last_access_turn: list[Int]
    source: list[str]
    reason: list[str]
    direction: list[str]
    link_threshold: Optional[list[Optional[float]]] = None
    link_created: Optional[list[Optional[NodeId]]] = None
    near_miss: Optional[list[Optional[NodeId]]] = None
    near_miss_similarity: Optional[list[Optional[float]]] = None
    reference: Optional[list[Optional[Reference]]] = None
    summary_of: Optional[list[Optional[NodeId]]] = None
    chunks: Optional[list[Optional[list[Pair]]]] = None
    meta: Optional[list[Optional[dict[str, Any]]]] = None


class ConceptColumns(_Strict):
    id: list[NodeId]
    name: list[str]
    description: list[str]
    created: list[str]
    origin: list[Optional[str]]


class Links(_Strict):
    content: list[Row]
    concept: list[Row]
    weight: list[float]


class ConceptEdges(_Strict):
    a: list[Row]
    b: list[Row]
    weight: list[float]


class Structure(_Strict):
    source: list[Row]
    target: list[Row]
    kind: list[Literal["imports", "references", "continues"]]


class VectorSpec(_Strict):
    file: VectorFile
    rows: Count


class Vectors(_Strict):
    store: Literal["numpy"] = "numpy"
    content: VectorSpec
    concepts: VectorSpec
    chunks: VectorSpec
    chunk_rows: list[Annotated[list[NodeId | Count], Field(min_length=2, max_length=2)]] = []
    cache: Optional[VectorFile] = None
    lexical: Optional[VectorFile] = None
    seal: Optional[Annotated[str, StringConstraints(pattern=r"^embeddings/seal\.g[0-9]+\.txt$")]] = None
    """The file holding this user's HMAC of this graph.json (loom_nb.core.trust.seal_key)."""


class QdrantVectorSpec(_Strict):
    """A table kept in a Qdrant collection: the digest of each row, which names its point."""

    rows: Count
    digests: list[Annotated[str, StringConstraints(pattern=r"^[0-9a-f]{16}$")]]


class QdrantVectors(Vectors):
    """Vectors in a Qdrant collection (loom_nb.core.qdrant_store); the lexical index, cache
    and seal stay files."""

    store: Literal["qdrant"]
    location: Annotated[str, StringConstraints(min_length=1, max_length=4096)]
    """The server URL or local storage, ending in the collection."""
    owner: Annotated[str, StringConstraints(pattern=r"^[0-9a-f]{32}$")]
    """The session's id, also in the collection's metadata."""
    content: QdrantVectorSpec
    concepts: QdrantVectorSpec
    chunks: QdrantVectorSpec


class Embedding(_Strict):
    model: Optional[str] = None
    dim: Count = 0


class FileState(_Strict):
    sha256: Sha256
    nodes: list[NodeId] = []


class WorkspaceState(_Strict):
    root: Annotated[str, StringConstraints(min_length=1, max_length=4096)]
    commit: Optional[str] = None
    files: dict[str, FileState] = {}
    units_version: Int = 0
    dirty: list[str] = []


class ConceptLayer(_Strict):
    """How the concept layer was last rebuilt (loom_nb.core.concepts.rebuild_concepts)."""

    method: Annotated[str, StringConstraints(max_length=64)]
    version: Int = 0
    target_size: Annotated[int, Field(ge=1, lt=BIG)] = 12
    seed: Int = 0


class Metadata(_Strict):
    workspace: Optional[WorkspaceState] = None
    concepts: Optional[ConceptLayer] = None
    pending_vectors: Optional[list[Annotated[str, StringConstraints(max_length=64)]]] = None
    """Content ids whose vectors were still being computed at the save."""


class Document(_Strict):
    format: Literal["loom-nb/graph"]
    schema_version: Annotated[int, Field(ge=1)]
    saved: Optional[str] = None
    generation: Count = 0
    session: Optional[Annotated[str, StringConstraints(pattern=r"^[0-9a-f]{32}$")]] = None
    """The session's id (loom_nb.core.store._identity); absent in files from before it."""
    embedding: Embedding
    config: Optional[dict[str, Any]] = None
    turn: Count = 0
    next_ids: dict[Literal["concept", "content"], Annotated[int, Field(ge=1, lt=BIG)]] = {}
    metadata: Metadata = Metadata()
    vectors: Vectors
    concepts: ConceptColumns
    content: ContentColumns
    links: Links
    concept_edges: ConceptEdges
    structure: Structure = Structure(source=[], target=[], kind=[])
    scores: dict[str, Any] = {}


class QdrantDocument(Document):
    """A graph.json (schema 3) whose vectors are in a Qdrant collection."""

    vectors: QdrantVectors


class DocumentInvalid(ValueError):
    """graph.json does not fit the schema; ``str()`` names the first few fields."""


def _explain(exc: ValidationError, limit: int = 3) -> str:
    parts = []
    for error in exc.errors(include_url=False)[:limit]:
        where = ".".join(str(p) for p in error["loc"]) or "the document"
        parts.append(f"{where}: {error['msg']}")
    more = exc.error_count() - limit
    return "; ".join(parts) + (f" (and {more} more)" if more > 0 else "")


_DOCUMENT = TypeAdapter(Document)
_QDRANT_DOCUMENT = TypeAdapter(QdrantDocument)
_CONFIG = TypeAdapter(LoomConfig)


def validate_document(doc: Any) -> None:
    """Raise :class:`DocumentInvalid` unless ``doc`` fits the graph.json schema.

    The parsed document is left as it is (the loader reads its plain lists, which is
    faster than reading models); validation only says yes or no, and where.
    """
    vectors = doc.get("vectors") if isinstance(doc, dict) else None
    adapter = _QDRANT_DOCUMENT if isinstance(vectors, dict) and vectors.get("store") == "qdrant" else _DOCUMENT
    try:
        adapter.validate_python(doc)
    except ValidationError as exc:
        raise DocumentInvalid(_explain(exc)) from None
    if doc.get("config") is not None:
        validate_config(doc["config"])


def validate_config(data: dict[str, Any] | LoomConfig) -> LoomConfig:
    """A :class:`LoomConfig` from ``data``, every field type- and range-checked.

    Used on load and before a save: a config a notebook set to ``relevance_floor="x"``
    is refused when saved instead of breaking the next query.
    """
    if isinstance(data, LoomConfig):
        from dataclasses import asdict

        data = asdict(data)
    try:
        return _CONFIG.validate_python(data)
    except ValidationError as exc:
        raise DocumentInvalid("config." + _explain(exc)) from None
