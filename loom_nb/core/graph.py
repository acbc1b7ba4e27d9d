"""LoomGraph: concept nodes, content nodes and the edges between them (seed 000 §4).

Concept nodes are index entries (name, one-sentence description, embedding) that are never
sent to a model; content nodes hold what may be loaded (text, or a lazy file reference).
The graph lives in a ``networkx.Graph``; the vectors live beside it in dense numpy tables
so that ranking is a few matrix products rather than a loop over nodes.

Size: LoomGraph is the one owner of node state (the networkx graph, vector tables, lexical
index, id counters); split, two objects could disagree about a node.
"""

from __future__ import annotations

import functools
import hashlib
import logging
import math
import re
import threading
import weakref
from collections import Counter
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, is_dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable, Iterator, Protocol

import networkx as nx
import numpy as np

from .config import CONTENT_TYPES, LoomConfig, calibrated_concept_threshold
from .errors import EmbeddingMismatchError, LoomError, UnknownNodeError
from .analysis import STOPWORDS
from .arrays import STRUCTURE_KINDS, TOKENS, TURN, TYPE, GraphArrays, VectorTable, _pair_array  # noqa: F401 - importable from here as before
from .lexical import LexicalIndex
from .secrets import is_secret_file, mask_each, mask_secrets, secret_file_notice

log = logging.getLogger(__name__)

_RELATIONS = {("references", True): "calls", ("references", False): "called by",
              ("imports", True): "imports", ("imports", False): "imported by",
              ("continues", True): "next part", ("continues", False): "previous part"}
"""A structure edge's kind as read from one end: (kind, this node is its source) -> relation."""
_RELATION_ORDER = ("calls", "called by", "imports", "imported by", "previous part", "next part")


def utc_now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def id_order(node_id: str) -> tuple[int, str]:
    """Sort key for ids in creation order: ``c2`` before ``c10``; other names last."""
    digits = node_id[1:]
    return (int(digits), "") if digits.isdigit() else (1 << 62, node_id)


def sha256_text(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def clean_text(text: str) -> str:
    """``text`` as valid Unicode: surrogate pairs joined, lone surrogates replaced by U+FFFD.

    Lone surrogates (from ``surrogateescape`` decoding or broken JSON) cannot be written
    as UTF-8; they are the only thing a node's text ever loses.
    """
    try:
        text.encode("utf-8")
        return text
    except UnicodeEncodeError:
        return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")


def chunk_mean(chunk_vectors: np.ndarray) -> np.ndarray:
    """A large node's own vector: the unit mean of its chunks' vectors (the direction they
    share), so it ranks by everything it holds, not by its first window.

    >>> [round(float(x), 3) for x in chunk_mean(np.array([[1.0, 0.0], [0.0, 1.0]]))]
    [0.707, 0.707]
    """
    mean = np.asarray(chunk_vectors, dtype=np.float32).mean(axis=0)
    return mean / (np.linalg.norm(mean) or 1.0)


def clean_value(value: Any) -> Any:
    """``value`` with every string in it passed through :func:`clean_text` (for titles,
    provenance and metadata: one lone surrogate there made every later save fail)."""
    if isinstance(value, str):
        return clean_text(value)
    if isinstance(value, dict):
        return {clean_text(str(k)): clean_value(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(clean_value(v) for v in value)
    return value


NODE_ID = re.compile(r"^[A-Za-z][A-Za-z0-9_-]{0,63}$")
"""What a node id may look like: ids name files in the session folder (``content/<id>…``)."""


@dataclass
class Provenance:
    """What created a node and why (seed 000 §4.2)."""

    source: str = "user"
    """Who made it: "user", "model", "indexer", "classifier", "summariser", …"""
    reason: str = ""
    """Why, in a few words ("pasted log split from a question", "answer to turn 3")."""
    direction: str = "input"
    """"input" when it came into the conversation, "output" when a model produced it."""


@dataclass
class Reference:
    """A lazy pointer into a file (seed 000 §13.1): the text is read when loaded."""

    file: str
    lines: tuple[int, int]
    signature: str = ""
    sha256: str = ""
    """Hash of the referenced text when indexed; a mismatch means the file changed."""
    cell: str = ""
    """In a notebook, the cell (its id, or ``#index``) whose cell text ``lines`` count in
    (:mod:`loom_nb.core.notebooks`); empty for any other file."""

    @property
    def location(self) -> str:
        """``path:12-30``, or ``path[cell 3]:1-8`` in a notebook (the cell's key when the
        number is not known here)."""
        where = f"{self.file}[cell {self.cell}]" if self.cell else self.file
        return f"{where}:{self.lines[0]}-{self.lines[1]}"


@dataclass
class LinkReport:
    """How a content node was attached to concepts (seed 000 §4.3), kept for tuning."""

    threshold: float
    linked: list[tuple[str, float]] = field(default_factory=list)
    """Every concept at or above the threshold, with its cosine; in a layer of topics, when
    none is, the topic of the nearest member within the threshold, with that member's cosine."""
    created: str | None = None
    """The concept created for this node when none reached the threshold."""
    near_miss: tuple[str, float] | None = None
    """The most similar concept *below* the threshold: how close a merge came."""

    def __str__(self) -> str:
        parts = [f"{cid} ({sim:.3f})" for cid, sim in self.linked]
        text = f"linked to {', '.join(parts)}" if parts else "linked to nothing"
        if self.created:
            text += f"; created {self.created}"
        if self.near_miss:
            text += f"; near miss {self.near_miss[0]} ({shown_below(self.near_miss[1])} < {self.threshold})"
        return text


@dataclass
class ConceptNode:
    """A topic: an index entry for orchestration, never sent to the model."""

    id: str
    name: str
    description: str
    created: str = field(default_factory=utc_now)
    origin: str | None = None
    """The content node whose text founded this concept."""

    kind = "concept"


@dataclass
class ConceptSpec:
    """A concept to create with :meth:`LoomGraph.replace_concepts`: its name, description,
    vector, and the content ids linked to it with their link weights."""

    name: str
    description: str
    vector: np.ndarray
    members: list[tuple[str, float]]


@dataclass
class ContentNode:
    """Something that may be loaded into the model's context."""

    id: str
    type: str
    tokens: int
    title: str
    sha256: str
    provenance: Provenance = field(default_factory=Provenance)
    created: str = field(default_factory=utc_now)
    last_access_turn: int = 0
    """The graph turn at which this node was last created or loaded (drives staleness)."""
    reference: Reference | None = None
    summary_of: str | None = None
    """For a summary node: the node it summarises (used by the loading decision tree)."""
    chunks: list[tuple[int, int]] = field(default_factory=list)
    """Character spans of the chunks of a large node; each has its own vector."""
    linking: LinkReport | None = None
    meta: dict[str, Any] = field(default_factory=dict)

    kind = "content"

    def __post_init__(self) -> None:
        if self.type not in CONTENT_TYPES:
            raise ValueError(f"content type must be one of {CONTENT_TYPES}, got {self.type!r}")


# -- concept names -----------------------------------------------------------------------

_STOP = STOPWORDS | frozenset(
    """self none true false return def class import from get set new use using used one two
    value values data file line lines""".split()
)
"""Words that never name a concept: the lexical index's English stopwords, and words every
piece of code or data is full of."""
_TERM = re.compile(r"[^\W\d_]\w{2,}")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")


class Namer(Protocol):
    """Writes a concept's name and one-sentence description from the text that founded it."""

    def __call__(self, text: str) -> tuple[str, str]: ...


def extractive_name(text: str, max_terms: int = 3, max_description: int = 160) -> tuple[str, str]:
    """A concept name (the most frequent content words) and a description (first sentence).

    Examples
    --------
    >>> extractive_name("OAuth tokens expire. The OAuth refresh flow renews tokens.")
    ('oauth tokens expire', 'OAuth tokens expire.')

    Words are letters of any script, so accented and non-Latin words stay whole:

    >>> extractive_name("Le café torréfie ses grains. Le café ouvre tôt.")[0]
    'café torréfie ses'
    """
    words = [w.lower() for w in _TERM.findall(text)]
    counts = Counter(w for w in words if w not in _STOP)
    first_seen = {}
    for i, w in enumerate(words):
        first_seen.setdefault(w, i)
    ranked = sorted(counts, key=lambda w: (-counts[w], first_seen[w]))
    name = concept_name(ranked[:max_terms]) or "untitled"
    flat = " ".join(text.split())
    sentence = _SENTENCE_END.split(flat, maxsplit=1)[0] if flat else ""
    if len(sentence) > max_description:
        sentence = sentence[: max_description - 1].rstrip() + "…"
    return name, sentence or name


NAME_TERM_CHARS = 40
"""A term longer than this is clipped in a concept's name (a pasted blob with no spaces once
made one word of 5,000 characters a name). The samples' longest term is 11 characters."""
NAME_CHARS = 120
"""A concept name longer than this (from any namer) is clipped; the samples' longest is 25."""


def _clipped(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def concept_name(terms) -> str:
    """A concept's name from its terms: each clipped at :data:`NAME_TERM_CHARS`, the whole
    at :data:`NAME_CHARS`.

    >>> concept_name(["oauth", "tokens"]), len(concept_name(["x" * 5000]))
    ('oauth tokens', 40)
    """
    return _clipped(" ".join(_clipped(t, NAME_TERM_CHARS) for t in terms), NAME_CHARS)


# -- the graph ------------------------------------------------------------------------------


def _locked(method):
    """Run a method that changes the tables under the graph's lock: a background vector
    fill writes rows in place, and a table that grows meanwhile would lose its write."""
    @functools.wraps(method)
    def run(self, *args, **kwargs):
        with self.lock:
            return method(self, *args, **kwargs)

    return run


_LIVE_GRAPHS: "weakref.WeakValueDictionary[int, LoomGraph]" = weakref.WeakValueDictionary()
"""Every graph alive, by ``id`` (a graph compares by content, so it is not hashable)."""
_HELD_FOR_FORK = threading.local()
"""What the forking thread took (:func:`hold_graph_locks`): per thread, so two threads forking
at once each give back only their own."""
FORK_LOCK_WAIT = 60.0
"""Seconds a fork waits for one graph's lock before it goes on without it."""


def hold_graph_locks() -> None:
    """Take every live graph's lock before a fork (see :func:`release_graph_locks`).

    A background fill writes its batches and rebuilds the concept layer under the graph's
    lock, a chat's indexer applies a turn under it, a query ranks under it. A child forked
    while another thread held it got the lock held by a thread the child does not have, and
    its first query waited forever. Taken here, the lock is held by the forking thread,
    which the child keeps. Locks are taken in one order (by ``id``) so two threads forking at
    once do not wait on each other; one not free within :data:`FORK_LOCK_WAIT` seconds is
    left (the fork goes on, logged) rather than hanging the parent."""
    held = _HELD_FOR_FORK.__dict__.setdefault("graphs", [])
    for _, graph in sorted(list(_LIVE_GRAPHS.items()), key=lambda item: item[0]):
        if graph.lock.acquire(timeout=FORK_LOCK_WAIT):
            held.append(graph)
        else:
            log.warning("a fork went on without a graph's lock, held for over %.0f s by another thread", FORK_LOCK_WAIT)


def release_graph_locks() -> None:
    """Give back what :func:`hold_graph_locks` took, in the parent and in the child."""
    held = _HELD_FOR_FORK.__dict__.get("graphs", [])
    while held:
        held.pop().lock.release()


class LoomGraph:
    """Concept and content nodes over a ``networkx.Graph``, with threshold linking.

    Parameters
    ----------
    config : LoomConfig, optional
        Threshold and edge parameters; defaults to :class:`LoomConfig()`.
    embedding_model : str, optional
        Id of the vector space this graph's vectors belong to; fixed by the first vector.
    namer : Namer, optional
        Names new concepts; :func:`extractive_name` by default.

    Notes
    -----
    Ranking never walks the networkx graph: the vectors, token counts, access turns and
    edge endpoints are kept as numpy arrays beside it, updated as nodes are added. A graph
    loaded from disk builds its node objects and its networkx graph only when first asked
    for them, so a 50k-node session is ready to query in a fraction of a second.

    Examples
    --------
    >>> import numpy as np
    >>> g = LoomGraph(embedding_model="toy")
    >>> node, report = g.add_content("OAuth tokens expire hourly.", np.array([1.0, 0.0]))
    >>> report.created is not None, g.counts()
    (True, {'concepts': 1, 'content': 1, 'edges': 1})
    """

    def __init__(self, config: LoomConfig | None = None, embedding_model: str | None = None, namer: Namer | None = None):
        self.config = config or LoomConfig()
        self.embedding_model = embedding_model
        self.namer: Namer = namer or extractive_name
        self._nx = nx.Graph()
        self.concept_vectors = VectorTable()
        self.content_vectors = VectorTable(columns=3)
        self.chunk_vectors: dict[str, np.ndarray] = {}
        self.turn = 0
        self.metadata: dict[str, Any] = {}
        self.workspace: Path | None = None
        """Root for lazy file references; set by the session that owns the graph, and only
        to a root the user confirmed (see :mod:`loom_nb.core.trust`)."""
        self.unconfirmed_root: Path | None = None
        """A root graph.json names but the user has not confirmed: references stay unread."""
        self.saved_as: tuple[str, int, str | None] | None = None
        """(session folder, generation, session id) this graph was last loaded from or saved
        to: a save or another session there in between is a conflict, not something to
        overwrite. The id is None for a graph.json written before sessions had one."""
        self._texts: dict[str, str] = {}
        self._text_loader: Callable[[str], str] | None = None
        self._next = {"concept": 1, "content": 1}
        # edge endpoints as rows of the vector tables, with their weights: what ranking and
        # saving read, kept in step with networkx so neither has to walk it
        self._link_content: list[int] = []
        self._link_concept: list[int] = []
        self._link_weight: list[float] = []
        self._adjacent: list[tuple[int, int]] = []
        self._adjacent_weight: list[float] = []
        self._structure: list[tuple[int, int]] = []
        self._structure_kind: list[str] = []
        self._summaries: dict[str, str] = {}
        self._paths: list[str | None] = []
        """The workspace file of each content row (None for chat text), for path signals."""
        self._masked: dict[str, int] = {}
        """Credentials masked in the last text read of a node (:meth:`masked`)."""
        self.lexical = LexicalIndex()
        self._lazy = None
        self._version = 0
        self._arrays: GraphArrays | None = None
        self._arrays_version = -1
        self.lock = threading.RLock()
        """Held by a query while it ranks and packs, by a save, and by the background
        vector fill while it writes a batch: a query never sees half a batch."""
        _LIVE_GRAPHS[id(self)] = self

    # -- the networkx graph ----------------------------------------------------------------
    @property
    def nx(self) -> nx.Graph:
        """A read-only view of the networkx graph: node attribute ``data`` holds the node,
        edges ``kind`` and ``weight``, so ``nx.pagerank(graph.nx)`` and the like run on it
        directly. Editing it (a node or an edge, an attribute of one, a field of a node's
        ``data``, or the graph's own attribute dict) raises :class:`LoomError` naming the
        method to call: ``data`` is a read-only proxy of the node, and the
        vector tables, the lexical index and the saved columns follow the graph's own
        methods, not networkx. :meth:`to_networkx` gives a copy with plain attributes for
        export. After a fast load the graph is built on first use."""
        view = self._graph().copy(as_view=True)
        for name in _NX_EDITS:
            setattr(view, name, _refuse_edit)
        view._node = _ReadOnly(view._node, 1)  # node -> attributes
        view._adj = _ReadOnly(view._adj, 2)  # node -> neighbour -> edge attributes
        view.graph = _ReadOnly(view.graph, 0)  # a view shares the graph's own dict otherwise
        return view

    def _graph(self) -> nx.Graph:
        """The networkx graph itself, for this class's own edits."""
        if self._lazy is not None:
            self._materialise()
        return self._nx

    def to_networkx(self) -> nx.Graph:
        """A copy of the graph with plain attribute values (strings and numbers, no None),
        so ``nx.node_link_data`` serialises to JSON and ``nx.write_graphml`` writes it.

        Content nodes carry ``kind``, ``type``, ``title``, ``tokens``, ``sha256``,
        ``source``, ``reason``, ``direction``, ``created``, ``last_access_turn`` and, for a
        file reference, ``file`` and ``lines``; concepts ``kind``, ``name``,
        ``description``, ``created`` and ``origin``. Edges keep ``kind`` and ``weight``, a
        link its ``direction`` and ``created``, a structure edge its direction as
        ``from`` / ``to``.
        """
        out = nx.Graph()
        for node_id, data in self._graph().nodes(data="data"):
            out.add_node(node_id, **_plain_attributes(data))
        for u, v, d in self._nx.edges(data=True):
            attrs = {"kind": d["kind"], "weight": float(d["weight"])}
            attrs.update({k: d[k] for k in ("direction", "created") if d.get(k) is not None})
            if "source" in d:  # structure edges: node_link_data names its own endpoints source / target
                attrs.update({"from": d["source"], "to": d["target"]})
            out.add_edge(u, v, **attrs)
        return out

    def _materialise(self) -> None:
        # filled first, switched over last: a reader without the lock (the indexer's edge
        # resolution, index/structure.py) sees the columns or the whole graph, never half of it
        lazy = self._lazy
        self._nx.add_nodes_from((n.id, {"kind": n.kind, "data": n}) for n in lazy.all_nodes())
        self._nx.add_edges_from(lazy.edges())
        self._lazy = None

    # -- reading ------------------------------------------------------------------------
    def __contains__(self, node_id: str) -> bool:
        if self._lazy is not None:
            return node_id in self._lazy
        return node_id in self._nx

    def __len__(self) -> int:
        return len(self.content_vectors) + len(self.concept_vectors)

    def node(self, node_id: str) -> ContentNode | ConceptNode:
        if self._lazy is not None:
            return self._lazy.node(node_id)
        try:
            return self._nx.nodes[node_id]["data"]
        except KeyError:
            raise UnknownNodeError(f"no node {node_id!r} in the graph") from None

    def content_nodes(self) -> Iterator[ContentNode]:
        for node_id in list(self.content_vectors.ids):
            yield self.node(node_id)

    def concept_nodes(self) -> Iterator[ConceptNode]:
        for node_id in list(self.concept_vectors.ids):
            yield self.node(node_id)

    @property
    def paths(self) -> list[str | None]:
        """Per content row, the file it refers to (its reference, else its ``path`` meta)."""
        return list(self._paths)

    def counts(self) -> dict[str, int]:
        edges = len(self._link_content) + len(self._adjacent) + len(self._summaries) + len(self._structure)
        return {"concepts": len(self.concept_vectors), "content": len(self.content_vectors), "edges": edges}

    def _neighbours(self, node_id: str, kind: str) -> list[tuple[str, float]]:
        return sorted(
            ((nb, d["weight"]) for nb, d in self._graph().adj[node_id].items() if d["kind"] == kind),
            key=lambda item: -item[1],
        )

    def concepts_of(self, content_id: str) -> list[tuple[str, float]]:
        """Concepts a content node links to, with the cosine stored at link time."""
        return self._neighbours(content_id, "link")

    def content_of(self, concept_id: str) -> list[tuple[str, float]]:
        return self._neighbours(concept_id, "link")

    def related_concepts(self, concept_id: str) -> list[tuple[str, float]]:
        return self._neighbours(concept_id, "concept")

    def summary_of(self, node_id: str) -> str | None:
        """The id of a summary node of ``node_id``, if one exists."""
        return self._summaries.get(node_id)

    def text(self, node_id: str) -> str:
        """The text of a content node (from memory, the session folder, or its file) with every
        credential masked at its own length (:mod:`loom_nb.core.secrets`): this is the one
        way node text reaches a context, a prompt, a callback, a view or a report.
        :meth:`masked` says how many were masked."""
        masked, findings = mask_secrets(self._raw_text(node_id))
        if findings:
            self._masked[node_id] = len(findings)
        else:
            self._masked.pop(node_id, None)
        return masked

    def masked(self, node_id: str) -> int:
        """How many credentials the last :meth:`text` of ``node_id`` masked (for pasted text,
        masked as it was added and stored masked, and for a file unit, cut from its file masked
        whole, how many were masked then: ``meta["secrets_masked"]``)."""
        return self._masked.get(node_id) or int(self.node(node_id).meta.get("secrets_masked", 0))

    def _raw_text(self, node_id: str) -> str:
        node = self.node(node_id)
        if node.kind != "content":
            raise LoomError(f"{node_id} is a concept node; concepts carry no content")
        if node_id in self._texts:
            return self._texts[node_id]
        if node.reference is not None:
            return self._read_reference(node)
        if self._text_loader is None:
            raise LoomError(f"the text of {node_id} is not in memory and the graph has no session folder")
        text = self._text_loader(node_id)
        self._texts[node_id] = text
        return text

    def _read_reference(self, node: ContentNode) -> str:
        """Read a reference's lines, refusing text that no longer matches its hash."""
        from .errors import StaleReferenceError, WorkspaceNotConfirmedError
        from .files import indexed_size_limit, resolve_inside

        ref = node.reference
        if self.workspace is None and self.unconfirmed_root is not None:
            raise WorkspaceNotConfirmedError(
                f"{node.id}: the session names {self.unconfirmed_root} as its workspace, which was never confirmed on this "
                f"machine; confirm it with Loom.open(folder, workspace={str(self.unconfirmed_root)!r}) or by indexing it again"
            )
        if self.workspace is None:
            raise LoomError(f"{node.id} refers to {ref.file} but the graph has no workspace folder")
        if not ref.sha256:  # without a hash nothing could tell a changed file from the indexed one
            raise StaleReferenceError(f"{node.id}: {ref.file} has no sha256 to check it against; re-index the workspace")
        try:
            path = resolve_inside(self.workspace, ref.file, backslash_separates=False)  # as the walk wrote it
        except LoomError as exc:  # e.g. a file swapped for a symlink that leaves the workspace
            raise StaleReferenceError(f"{node.id}: {exc}") from None
        try:
            lines = self._reference_lines(path, ref, indexed_size_limit(ref.file, self.metadata.get("workspace")))
        except FileNotFoundError:
            raise StaleReferenceError(f"{node.id}: {ref.file} no longer exists; re-index the workspace") from None
        except OSError as exc:  # unreadable now: say so rather than fail the whole query
            raise StaleReferenceError(f"{node.id}: {ref.file} cannot be read ({exc.strerror or exc})") from None
        except LoomError as exc:  # no longer a readable text file (binary, special, too large)
            raise StaleReferenceError(f"{node.id}: {exc}") from None
        start, end = ref.lines
        text = "\n".join(lines[start - 1 : end])
        if sha256_text(text) != ref.sha256 and not ref.cell and not is_secret_file(ref.file):
            # the indexer hashes a unit as cut from its file masked whole (a key cut across
            # units is masked in every part): the raw lines match only where nothing was masked
            from .files import read_masked_lines_cached

            text = "\n".join(read_masked_lines_cached(path)[start - 1 : end])
        if sha256_text(text) != ref.sha256:
            raise StaleReferenceError(f"{node.id}: {ref.location} changed since indexing (stale); re-index the workspace")
        return text

    @staticmethod
    def _reference_lines(path, ref: Reference, limit: int) -> list[str]:
        """The lines a reference's line numbers count in: the file's (raw), or its notebook
        cell's (masked as it is read, :func:`~loom_nb.core.notebooks.cell_text`). A file over
        ``limit`` bytes is not read (:func:`~loom_nb.core.files.indexed_size_limit`)."""
        import os

        from .errors import StaleReferenceError
        from .files import read_lines_cached

        if is_secret_file(ref.file):  # a credentials file: its name stands for it, its text is never read
            return secret_file_notice(ref.file).split("\n")
        size = os.stat(path).st_size
        if size > limit:  # not what was indexed, and a refresh would skip it: stale, unread
            raise LoomError(f"{ref.file} is {size:,} bytes now, over the {limit:,} indexing reads (stale); re-index the workspace")
        if not ref.cell:
            return read_lines_cached(path)
        from .notebooks import read_cell

        cell = read_cell(path, ref.cell)
        if cell is None:
            raise StaleReferenceError(f"{ref.file}: the cell {ref.cell} is gone; re-index the workspace")
        return cell.text.split("\n")

    # -- writing ------------------------------------------------------------------------
    def _touch(self) -> None:
        self._version += 1

    def _editable(self) -> None:
        """Edge endpoint arrays as lists, ready for appends (a load leaves them as numpy
        arrays: converting 10^5 of them costs a load time that ranking does not need)."""
        for name in ("_link_content", "_link_concept", "_adjacent", "_structure"):
            value = getattr(self, name)
            if isinstance(value, np.ndarray):
                setattr(self, name, value.tolist())

    def _new_id(self, kind: str) -> str:
        prefix = "c" if kind == "concept" else "n"
        while True:
            node_id = f"{prefix}{self._next[kind]}"
            self._next[kind] += 1
            if node_id not in self:
                return node_id

    # -- vectors that arrive after their nodes (loom_nb.index.background) ---------------------
    @property
    def pending_vectors(self) -> list[str]:
        """Content ids added before their vectors (zero vectors until filled in); saved with
        the session, so a re-open goes on embedding them."""
        return list(self.metadata.get("pending_vectors") or [])

    @property
    def embedded_share(self) -> float:
        """The share of content nodes whose vectors are in place (1.0 when none is pending)."""
        pending = len(self.metadata.get("pending_vectors") or [])
        total = len(self.content_vectors)
        return 1.0 - pending / total if total and pending else 1.0

    def set_vector(self, node_id: str, vector: np.ndarray, chunk_vectors: np.ndarray | None = None) -> None:
        """Put the vector (and chunk vectors) of a node added with a placeholder in place. The
        row is written in place, so ranking's cached arrays need no rebuild."""
        node = self.node(node_id)
        if node.kind != "content":
            raise LoomError(f"{node_id} is a concept; only content vectors are filled in")
        self.content_vectors.set(node_id, self._check_vector(vector))
        if chunk_vectors is not None and len(node.chunks):
            self.chunk_vectors[node_id] = np.asarray(chunk_vectors, dtype=np.float32)

    def link_content(self, node_id: str) -> LinkReport:
        """Link a content node added with ``link=False`` to the concepts at the threshold (or
        found one), as :meth:`add_content` would have."""
        node = self.node(node_id)
        try:
            text = self.text(node_id)
        except Exception:  # a reference whose file changed since: its title names the concept
            text = node.title
        self._editable()
        node.linking = self._link(node, text, self.content_vectors.get(node_id))
        self._touch()
        return node.linking

    def _check_vector(self, vector: np.ndarray) -> np.ndarray:
        vector = np.asarray(vector, dtype=np.float32).reshape(-1)
        dim = self.concept_vectors.dim or self.content_vectors.dim
        if dim and vector.shape[0] != dim:
            raise EmbeddingMismatchError(
                f"vector of dimension {vector.shape[0]} does not fit this graph "
                f"({self.embedding_model!r}, dimension {dim}); vector spaces are never mixed"
            )
        norm = float(np.linalg.norm(vector))
        return vector / norm if norm > 0 else vector

    @_locked
    def add_content(
        self,
        text: str,
        vector: np.ndarray,
        *,
        type: str = "input",  # noqa: A002 - a public keyword; builtin type() is not used here
        tokens: int | None = None,
        provenance: Provenance | None = None,
        title: str | None = None,
        reference: Reference | None = None,
        summary_of: str | None = None,
        chunks: list[tuple[int, int]] | None = None,
        chunk_vectors: np.ndarray | None = None,
        meta: dict[str, Any] | None = None,
        node_id: str | None = None,
        fields: dict[str, str] | None = None,
        link: bool = True,
    ) -> tuple[ContentNode, LinkReport]:
        """Add a content node and link it to concepts by threshold (seed 000 §4.3).

        ``fields`` are the texts lexical ranking reads (path, symbol, heading, import,
        content); by default the node's text is its only field, "content". ``link=False``
        leaves it without concepts, for a caller that rebuilds the concept layer next
        (:func:`loom_nb.core.concepts.rebuild_concepts`).
        """
        from .tokens import count_tokens

        graph = self._graph()  # a lazily loaded graph is built before it changes
        vector = self._check_vector(vector)
        # credentials are masked before anything is derived from the text: its title, its
        # lexical terms, the concept it founds and (pasted text) what the session stores
        text, found = mask_secrets(clean_text(text))
        if found and reference is None:
            meta = {**(meta or {}), "secrets_masked": len(found)}
        if summary_of is not None:
            source = self.node(summary_of)
            if source.kind != "content":
                raise LoomError(f"summary_of must name a content node, not concept {summary_of}")
            type = "summary"
        if node_id is not None and node_id in graph:
            raise LoomError(f"a node with id {node_id!r} already exists")
        if node_id is not None and not NODE_ID.match(node_id):
            raise LoomError(f"node id {node_id!r} is not a plain name (a letter, then letters, digits, _ or -; at most 64)")
        provenance = provenance or Provenance()
        # the signature, the provenance and the meta strings (a unit's name) reach graph.json,
        # views and the manifest's label as the text does: masked, with one scan for all of them
        strings = [k for k, v in (meta or {}).items() if isinstance(v, str)]
        signature, *said = mask_each([clean_text(reference.signature) if reference is not None else "",
                                      *(clean_text(str(v)) for v in (provenance.source, provenance.reason, provenance.direction)),
                                      *(clean_text(meta[k]) for k in strings)])
        provenance = Provenance(*said[:3])
        if strings:
            meta = {**meta, **dict(zip(strings, said[3:]))}
        node = ContentNode(
            id=node_id or self._new_id("content"),
            type=type,
            tokens=count_tokens(text) if tokens is None else int(tokens),
            title=mask_secrets(clean_text(title))[0] if title else _title(text),
            sha256=sha256_text(text),
            provenance=provenance,
            last_access_turn=self.turn,
            reference=clean_value(reference) if reference is None else Reference(
                clean_text(reference.file), tuple(reference.lines), signature, reference.sha256,
                clean_text(reference.cell)),
            summary_of=summary_of,
            chunks=list(chunks or []),
            meta=clean_value(dict(meta or {})),
        )
        graph.add_node(node.id, kind="content", data=node)
        row = self.content_vectors.add(node.id, vector, (node.tokens, node.last_access_turn, _TYPE_CODE[node.type]))
        self._paths.append(node.reference.file if node.reference is not None else node.meta.get("path"))
        self.lexical.add(row, {k: mask_secrets(v)[0] for k, v in fields.items()} if fields is not None else {"content": text})
        if reference is None:
            self._texts[node.id] = text
        if chunk_vectors is not None and len(node.chunks):
            self.chunk_vectors[node.id] = np.asarray(chunk_vectors, dtype=np.float32)
        if summary_of is not None:
            graph.add_edge(node.id, summary_of, kind="summarizes", weight=1.0, created=node.created)
            self._summaries[summary_of] = node.id
        node.linking = self._link(node, text, vector) if link else LinkReport(threshold=self.concept_threshold)
        self._touch()
        return node, node.linking

    def _link(self, node: ContentNode, text: str, vector: np.ndarray) -> LinkReport:
        threshold = self.concept_threshold
        report = LinkReport(threshold=threshold)
        direction = node.provenance.direction
        if len(self.concept_vectors):
            sims = self.concept_vectors.matrix @ vector
            ids = self.concept_vectors.ids
            above = np.flatnonzero(sims >= threshold)
            for row in above[np.argsort(-sims[above], kind="stable")]:
                report.linked.append((ids[row], float(sims[row])))
            below = np.flatnonzero(sims < threshold)
            if below.size:
                best = below[np.argmax(sims[below])]
                report.near_miss = (ids[best], float(sims[best]))
            if not report.linked and self.metadata.get("concepts", {}).get("method") == "communities":
                joined = self._nearest_topic_member(node.id, vector, sims, threshold)
                if joined is not None:
                    report.linked.append(joined)
        if not report.linked:
            concept = self.add_concept(text, vector, origin=node.id)
            report.created = concept.id
            report.linked.append((concept.id, 1.0))
        row = self.content_vectors.index[node.id]
        self._editable()
        for concept_id, sim in report.linked:
            self._nx.add_edge(node.id, concept_id, kind="link", weight=sim, direction=direction, created=node.created)
            self._link_content.append(row)
            self._link_concept.append(self.concept_vectors.index[concept_id])
            self._link_weight.append(sim)
        return report

    NEAREST_TOPICS = 3
    """A new node that misses every topic's centre is compared with the members of this many
    of the nearest topics (a few hundred vectors, not the whole graph)."""

    def _nearest_topic_member(self, node_id: str, vector: np.ndarray, sims: np.ndarray,
                              threshold: float) -> tuple[str, float] | None:
        """``(concept, cosine)`` of the topic whose member is nearest ``vector``, when that
        member is within ``threshold``; else None.

        A topic (a community of units, :func:`~loom_nb.core.concepts.rebuild_concepts`) is
        a mean of dozens of vectors, and a new unit of code is rarely within the threshold of
        a mean: linked by threshold alone, the units of a renamed file each founded a concept
        of one member, and a fresh index of the same tree had none. The topic of the nearest
        member is the one a rebuild would most likely put the unit in."""
        ids, index = self.concept_vectors.ids, self.content_vectors.index
        nearest = np.argsort(-sims, kind="stable")[: self.NEAREST_TOPICS]
        best: tuple[str, float] | None = None
        for row in nearest.tolist():
            members = [index[m] for m, _ in self.content_of(ids[row]) if m != node_id and m in index]
            if not members:
                continue
            cosine = float(np.max(self.content_vectors.matrix[np.asarray(members, np.int64)] @ vector))
            if cosine >= threshold and (best is None or cosine > best[1]):
                best = (ids[row], cosine)
        return best

    @_locked
    def add_concept(self, text: str, vector: np.ndarray, *, origin: str | None = None, name: str | None = None, description: str | None = None) -> ConceptNode:
        """Create a concept and its edges to the most similar existing concepts."""
        graph = self._graph()
        vector = self._check_vector(vector)
        if name is None or description is None:
            auto_name, auto_description = self.namer(text)
            name = name or auto_name
            description = description or auto_description
        concept = ConceptNode(id=self._new_id("concept"), name=_clipped(name, NAME_CHARS), description=description, origin=origin)
        neighbours = []
        if len(self.concept_vectors):
            sims = self.concept_vectors.matrix @ vector
            k = min(self.config.concept_edge_k, sims.size)
            top = np.argpartition(-sims, k - 1)[:k]
            neighbours = [int(r) for r in top[np.argsort(-sims[top], kind="stable")] if sims[r] >= self.config.concept_edge_min]
        graph.add_node(concept.id, kind="concept", data=concept)
        new_row = self.concept_vectors.add(concept.id, vector)
        ids = self.concept_vectors.ids
        self._editable()
        for row in neighbours:
            graph.add_edge(concept.id, ids[row], kind="concept", weight=float(sims[row]), created=concept.created)
            self._adjacent.append((new_row, row))
            self._adjacent_weight.append(float(sims[row]))
        self._touch()
        return concept

    @property
    def concept_threshold(self) -> float:
        """The cosine at which new content links to a concept: the config's value, or
        when that is None the one calibrated for this graph's embedder."""
        configured = self.config.concept_threshold
        return configured if configured is not None else calibrated_concept_threshold(self.embedding_model)

    def set_concepts(self, specs: list[ConceptSpec]) -> list[str]:
        """Replace every concept with ``specs`` (see :func:`loom_nb.core.concepts.rebuild_concepts`)."""
        return self.replace_concepts(list(self.concept_vectors.ids), specs)

    @_locked
    def replace_concepts(self, old: list[str], specs: list[ConceptSpec]) -> list[str]:
        """Remove the concepts ``old`` (their links and concept edges) and create ``specs``,
        each joined to its ``concept_edge_k`` most similar concepts at or above
        ``concept_edge_min``. Returns the new ids; ids are never reused."""
        graph = self._graph()
        for concept_id in old:
            if concept_id not in graph or graph.nodes[concept_id]["kind"] != "concept":
                raise LoomError(f"{concept_id!r} is not a concept of this graph")
        self._editable()
        affected = {c for concept_id in old for c, _ in self.content_of(concept_id)}
        affected.update(c for spec in specs for c, _ in spec.members)
        graph.remove_nodes_from(old)
        gone = set(old)
        keep = [c for c in self.concept_vectors.ids if c not in gone]
        self.concept_vectors = VectorTable.from_arrays(keep, self.concept_vectors.matrix[[self.concept_vectors.index[c] for c in keep]])
        new_ids = []
        for spec in specs:
            concept = ConceptNode(id=self._new_id("concept"), name=_clipped(clean_text(spec.name), NAME_CHARS),
                                  description=clean_text(spec.description),
                                  origin=spec.members[0][0] if spec.members else None)
            graph.add_node(concept.id, kind="concept", data=concept)
            self.concept_vectors.add(concept.id, self._check_vector(spec.vector))
            for content_id, weight in spec.members:
                direction = self.node(content_id).provenance.direction
                graph.add_edge(content_id, concept.id, kind="link", weight=float(weight), direction=direction, created=concept.created)
            new_ids.append(concept.id)
        self._join_concepts(new_ids)
        self._reindex_edges()
        for content_id in affected:
            self._relink_record(self.node(content_id))
        self._touch()
        return new_ids

    def _relink_record(self, node: ContentNode) -> None:
        """``node.linking`` as a reload would show it: its current links, strongest first,
        and a founded or near-missed concept only while that concept exists."""
        before = node.linking or LinkReport(threshold=self.concept_threshold)
        linked = sorted(self.concepts_of(node.id), key=lambda cw: (-cw[1], id_order(cw[0])))
        near = before.near_miss if before.near_miss and before.near_miss[0] in self._nx else None
        created = before.created if before.created in self._nx else None
        node.linking = LinkReport(before.threshold, linked, created, near)

    def _join_concepts(self, concept_ids: list[str]) -> None:
        """Concept–concept edges from each of ``concept_ids`` to its nearest concepts."""
        if not concept_ids or len(self.concept_vectors) < 2:
            return
        matrix, index = self.concept_vectors.matrix, self.concept_vectors.index
        rows = np.array([index[c] for c in concept_ids])
        sims = matrix[rows] @ matrix.T
        sims[np.arange(rows.size), rows] = -np.inf
        k = min(self.config.concept_edge_k, sims.shape[1] - 1)
        top = np.argpartition(-sims, k - 1, axis=1)[:, :k]
        ids = self.concept_vectors.ids
        for r, row in enumerate(rows):
            for col in top[r]:
                if sims[r, col] >= self.config.concept_edge_min:
                    self._nx.add_edge(ids[row], ids[col], kind="concept", weight=float(sims[r, col]), created=utc_now())

    @_locked
    def relocate(self, node_id: str, reference: Reference, title: str) -> None:
        """Point a file unit whose text did not change at the lines it has moved to.

        A re-index that finds a unit's text as it was keeps its node, so its id, vector,
        concept links and access history stay: a chat's earlier manifests still name it, and
        the ids of a long-lived session do not grow with every edit.
        """
        self._graph()  # a lazily loaded graph is built before it changes
        node = self.node(node_id)
        if node.kind != "content" or node.reference is None:
            raise LoomError(f"{node_id} is not a file unit; only a unit read from a file can move")
        if reference.file != node.reference.file or reference.sha256 != node.reference.sha256:
            raise LoomError(f"{node_id}: a moved unit keeps its file and its text ({node.reference.location} "
                            f"cannot become {reference.file} with other text)")
        node.reference = Reference(node.reference.file, tuple(reference.lines), mask_secrets(clean_text(reference.signature))[0],
                                   reference.sha256, clean_text(reference.cell))
        node.title = mask_secrets(clean_text(title))[0]  # a title reaches the prompt's manifest and graph.json
        self._touch()

    def remove(self, node_id: str) -> None:
        """Remove a content node; concepts left with no content are removed too."""
        self.remove_many([node_id])

    @_locked
    def remove_many(self, node_ids: list[str]) -> None:
        """Remove content nodes (and concepts left with no content), rescanning edges once."""
        for node_id in node_ids:
            if self.node(node_id).kind != "content":
                raise LoomError(f"{node_id} is a concept; remove its content nodes instead")
        if not node_ids:
            return
        graph = self._graph()
        orphans: set[str] = set()
        for node_id in node_ids:
            node = self.node(node_id)
            orphans.update(c for c, _ in self.concepts_of(node_id))
            graph.remove_node(node_id)
            row, last = self.content_vectors.index[node_id], len(self.content_vectors) - 1
            self.content_vectors.remove(node_id)  # moves the last row into the hole…
            self.lexical.remove(row)
            if row != last:  # …and everything kept by row follows it
                self.lexical.move(last, row)
                self._paths[row] = self._paths[last]
            self._paths.pop()
            self.chunk_vectors.pop(node_id, None)
            self._texts.pop(node_id, None)
            if node.summary_of is not None and self._summaries.get(node.summary_of) == node_id:
                del self._summaries[node.summary_of]
            self._summaries.pop(node_id, None)
        for concept_id in sorted(orphans):
            if concept_id in graph and not any(d["kind"] == "link" for d in graph.adj[concept_id].values()):
                graph.remove_node(concept_id)
                self.concept_vectors.remove(concept_id)
        self._reindex_edges()
        self._touch()

    def _reindex_edges(self) -> None:
        """Rebuild the edge endpoint lists from networkx (after a removal moved rows)."""
        c_index, k_index = self.content_vectors.index, self.concept_vectors.index
        self._link_content, self._link_concept, self._link_weight = [], [], []
        self._adjacent, self._adjacent_weight = [], []
        self._structure, self._structure_kind = [], []
        for u, v, d in self._nx.edges(data=True):
            if d["kind"] == "link":
                content, concept = (u, v) if u in c_index else (v, u)
                self._link_content.append(c_index[content])
                self._link_concept.append(k_index[concept])
                self._link_weight.append(d["weight"])
            elif d["kind"] == "concept":
                self._adjacent.append((k_index[u], k_index[v]))
                self._adjacent_weight.append(d["weight"])
            elif d["kind"] in STRUCTURE_KINDS:
                a, b = d.get("source", u), d.get("target", v)
                self._structure.append((c_index[a], c_index[b]))
                self._structure_kind.append(d["kind"])

    @_locked
    def add_structure(self, source: str, target: str, kind: str) -> bool:
        """A code-structure edge between two content nodes ("imports", "references" or "continues").

        Returns False when the pair is already joined (networkx keeps one edge per pair).
        """
        if kind not in STRUCTURE_KINDS:
            raise ValueError(f"structure kind must be one of {STRUCTURE_KINDS}, got {kind!r}")
        graph = self._graph()
        if source == target or graph.has_edge(source, target):
            return False
        index = self.content_vectors.index
        self._editable()
        graph.add_edge(source, target, kind=kind, weight=1.0, source=source, target=target)
        self._structure.append((index[source], index[target]))
        self._structure_kind.append(kind)
        self._touch()
        return True

    @_locked
    def replace_structure(self, edges) -> int:
        """Every code-structure edge replaced by ``edges``, ``(source, target, kind)`` triples
        as :meth:`add_structure` takes them (one edge per pair, the first one given; none to
        itself, to a node that is gone, or where another kind of edge joins the pair); returns
        how many there are now.

        Only the difference touches networkx. The indexer works the edges out without the
        lock and swaps them in here, so a query on another thread waits for the swap, not for
        resolving every import and reference (README, 'Queries beside a refresh')."""
        index, ids = self.content_vectors.index, self.content_vectors.ids
        graph = self._graph() if len(self._structure) or edges else None  # clearing no edges builds nothing
        current = {}
        for (a, b), kind in zip(self._structure, self._structure_kind):
            source, target = ids[a], ids[b]
            current[(source, target) if source < target else (target, source)] = (source, target, str(kind))
        wanted: dict[tuple[str, str], tuple[str, str, str]] = {}
        for source, target, kind in edges:
            if kind not in STRUCTURE_KINDS:
                raise ValueError(f"structure kind must be one of {STRUCTURE_KINDS}, got {kind!r}")
            pair = (source, target) if source < target else (target, source)
            if source == target or pair in wanted or source not in index or target not in index:
                continue
            if pair not in current and graph.has_edge(source, target):
                continue  # joined by an edge of another kind
            wanted[pair] = (source, target, kind)
        gone = [edge for pair, edge in current.items() if wanted.get(pair) != edge]
        new = [edge for pair, edge in wanted.items() if current.get(pair) != edge]
        if gone or new or len(wanted) != len(self._structure):
            graph.remove_edges_from((a, b) for a, b, _ in gone)
            graph.add_edges_from((a, b, {"kind": kind, "weight": 1.0, "source": a, "target": b}) for a, b, kind in new)
            self._structure = [(index[a], index[b]) for a, b, _ in wanted.values()]
            self._structure_kind = [kind for _, _, kind in wanted.values()]
            self._touch()
        return len(wanted)

    def clear_structure(self) -> None:
        """Remove every code-structure edge."""
        self.replace_structure(())

    def structure_of(self, node_id: str, *, directed: bool = False) -> list[tuple[str, str]]:
        """(neighbour, kind) for each code-structure edge of a content node, by neighbour.

        The networkx graph is undirected; each edge records its ``source`` and ``target``.
        With ``directed``, the kind says which way the edge runs from this node, and the
        list is grouped in that order: "calls", "called by", "imports", "imported by".
        """
        edges = [(nb, d) for nb, d in self._graph().adj[node_id].items() if d["kind"] in STRUCTURE_KINDS]
        if not directed:
            return sorted((nb, d["kind"]) for nb, d in edges)
        named = [(nb, _RELATIONS[d["kind"], d.get("source", node_id) == node_id]) for nb, d in edges]
        return sorted(named, key=lambda pair: (_RELATION_ORDER.index(pair[1]), pair[0]))

    def mark_accessed(self, node_ids: list[str]) -> None:
        """Record that these nodes were loaded at the current turn (resets staleness)."""
        for node_id in node_ids:
            self.node(node_id).last_access_turn = self.turn
            self.content_vectors.cols[self.content_vectors.index[node_id], TURN] = self.turn

    def access_turns(self) -> np.ndarray:
        """The last access turn of every content row (a copy)."""
        return self.content_vectors.cols[:, TURN].copy()

    def rewind(self, turn: int, next_ids: dict[str, int], access_turns: np.ndarray) -> None:
        """Put the clock, the id counters and the access turns of the first
        ``len(access_turns)`` rows back as they were (a failed chat turn's rollback; the
        ids it handed out were never saved, so handing them out again reuses nothing)."""
        cols, ids = self.content_vectors.cols, self.content_vectors.ids
        for row in np.flatnonzero(cols[: len(access_turns), TURN] != access_turns):
            self.node(ids[row]).last_access_turn = int(access_turns[row])
            cols[row, TURN] = access_turns[row]
        self.turn = turn
        self._next = dict(next_ids)
        self._touch()

    @property
    def link_weights(self) -> np.ndarray:
        """The similarity stored on every content-concept link."""
        return np.asarray(self._link_weight, dtype=float)

    def advance_turn(self, turns: int = 1) -> int:
        """Move the graph clock on; staleness is measured in turns."""
        self.turn += turns
        return self.turn

    # -- dense views ----------------------------------------------------------------------
    def arrays(self) -> GraphArrays:
        """Dense arrays for ranking, cached until the graph changes."""
        if self._arrays is not None and self._arrays_version == self._version:
            return self._arrays
        n_concepts = len(self.concept_vectors)
        pairs = _pair_array(self._adjacent)
        src = np.concatenate([pairs[:, 0], pairs[:, 1]])
        dst = np.concatenate([pairs[:, 1], pairs[:, 0]])
        order = np.argsort(src, kind="stable")
        indptr = np.zeros(n_concepts + 1, dtype=np.int64)
        indptr[1:] = np.cumsum(np.bincount(src, minlength=n_concepts))
        cols = self.content_vectors.cols
        structure = _pair_array(self._structure)
        self._arrays = GraphArrays(
            content_ids=list(self.content_vectors.ids),
            content_vectors=self.content_vectors.matrix,
            tokens=cols[:, TOKENS],
            last_access_turn=cols[:, TURN],
            type_codes=cols[:, TYPE],
            concept_ids=list(self.concept_vectors.ids),
            concept_vectors=self.concept_vectors.matrix,
            link_content=np.asarray(self._link_content, dtype=np.int64),
            link_concept=np.asarray(self._link_concept, dtype=np.int64),
            concept_indptr=indptr,
            concept_indices=dst[order],
            structure_a=structure[:, 0],
            structure_b=structure[:, 1],
            paths=list(self._paths),
        )
        self._arrays_version = self._version
        return self._arrays

    # -- columns: what a session folder stores -------------------------------------------------
    @property
    def next_ids(self) -> dict[str, int]:
        """The next number each id prefix hands out (never lowered: ids are not reused)."""
        return dict(self._next)

    @property
    def summaries(self) -> dict[str, str]:
        """Summarised node id → its summary's id."""
        return dict(self._summaries)

    @property
    def structure_count(self) -> int:
        """How many code-structure edges (imports, references, parts) the graph holds."""
        return len(self._structure)

    def edge_columns(self) -> dict[str, dict[str, list]]:
        """Every edge as columns of rows (positions in the vector tables) and weights,
        the way graph.json stores them; summary edges follow from ``summaries``."""
        def plain(values):
            return values.tolist() if isinstance(values, np.ndarray) else list(values)

        adjacent, structure = plain(self._adjacent), plain(self._structure)
        return {
            "links": {"content": plain(self._link_content), "concept": plain(self._link_concept), "weight": list(self._link_weight)},
            "concept_edges": {"a": [a for a, _ in adjacent], "b": [b for _, b in adjacent], "weight": list(self._adjacent_weight)},
            "structure": {"source": [a for a, _ in structure], "target": [b for _, b in structure], "kind": list(self._structure_kind)},
        }

    @classmethod
    def from_columns(cls, *, config: LoomConfig, embedding_model: str | None, turn: int, metadata: dict[str, Any],
                     next_ids: dict[str, int], content_vectors: VectorTable, concept_vectors: VectorTable,
                     chunk_vectors: dict[str, np.ndarray], links: tuple, adjacent: tuple, structure: tuple,
                     summaries: dict[str, str], paths: list[str | None], lexical: LexicalIndex,
                     lazy_nodes: Callable[["LoomGraph"], Any], text_loader: Callable[[str], str]) -> "LoomGraph":
        """A graph from stored columns (the loader's entry; nothing is validated here).

        ``links`` is (content rows, concept rows, weights), ``adjacent`` (row pairs,
        weights), ``structure`` (row pairs, kinds). Node objects and the networkx graph are
        built on first use by what ``lazy_nodes(graph)`` returns.
        """
        graph = cls(config=config, embedding_model=embedding_model)
        graph.turn, graph.metadata = turn, metadata
        graph._next.update(next_ids)
        graph.content_vectors, graph.concept_vectors, graph.chunk_vectors = content_vectors, concept_vectors, chunk_vectors
        graph._link_content, graph._link_concept, graph._link_weight = links
        graph._adjacent, graph._adjacent_weight = adjacent
        graph._structure, graph._structure_kind = structure
        graph._summaries, graph._paths, graph.lexical = dict(summaries), paths, lexical
        graph._lazy = lazy_nodes(graph)
        graph._text_loader = text_loader
        graph._touch()
        return graph

    # -- comparison and printing ------------------------------------------------------------
    def records(self) -> dict[str, Any]:
        """Everything but the vectors and texts, as plain data."""
        nodes = []
        for node_id, data in self._graph().nodes(data="data"):
            record = asdict(data)
            record["kind"] = data.kind
            nodes.append(record)
        edges = [{"source": u, "target": v, **d} for u, v, d in self._graph().edges(data=True)]
        return {"nodes": nodes, "edges": edges, "turn": self.turn, "metadata": self.metadata}

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, LoomGraph):
            return NotImplemented

        def canon(records):
            nodes = sorted(records["nodes"], key=lambda r: r["id"])
            edges = sorted(
                (tuple(sorted((e["source"], e["target"]))), e["kind"], e["weight"]) for e in records["edges"]
            )
            return nodes, edges, records["turn"]

        def vectors(g):
            return (
                {i: g.content_vectors.get(i).tobytes() for i in g.content_vectors.ids},
                {i: g.concept_vectors.get(i).tobytes() for i in g.concept_vectors.ids},
                {i: v.tobytes() for i, v in g.chunk_vectors.items()},
            )

        return (
            self.embedding_model == other.embedding_model
            and canon(self.records()) == canon(other.records())
            and vectors(self) == vectors(other)
        )

    __hash__ = None  # mutable

    def __repr__(self) -> str:
        c = self.counts()
        return (
            f"LoomGraph({c['concepts']} concepts, {c['content']} content nodes, {c['edges']} edges, "
            f"model={self.embedding_model!r}, threshold={self.concept_threshold})"
        )


_TYPE_CODE = {name: i for i, name in enumerate(CONTENT_TYPES)}


def shown_below(similarity: float) -> str:
    """A similarity under a threshold, to three decimals rounded down, so that the printed
    comparison holds: 0.6996 under 0.7 reads 0.699, not 0.700.

    >>> shown_below(0.6996), shown_below(0.25)
    ('0.699', '0.250')
    """
    return f"{math.floor(similarity * 1000) / 1000:.3f}"


def _title(text: str, limit: int = 60) -> str:
    """A one-line label: the first non-empty line, shortened."""
    for line in text.splitlines():
        line = line.strip().strip("#").strip()
        if line:
            return line if len(line) <= limit else line[: limit - 1].rstrip() + "…"
    return "(empty)"


_NX_EDITS = ("add_node", "add_nodes_from", "remove_node", "remove_nodes_from", "add_edge", "add_edges_from",
             "add_weighted_edges_from", "remove_edge", "remove_edges_from", "update", "clear", "clear_edges")


def _refuse_edit(*args, **kwargs):
    raise LoomError(
        "LoomGraph.nx is a read-only view: add content with Loom.add or LoomGraph.add_content, remove it with "
        "LoomGraph.remove, join code units with add_structure, and rebuild concepts with Loom.rebuild_concepts; "
        "LoomGraph.to_networkx() gives an editable copy"
    )


class _ReadOnly(Mapping):
    """A read-only window on one of the networkx view's dicts, and on ``depth`` levels of dicts
    below it: setting an attribute (``G.nodes[n][k] = v``, ``nx.set_node_attributes``) raises
    :class:`LoomError` as a structural edit does, instead of breaking the next query or being
    dropped by the next save. The values of the last level are read-only too (a node's
    ``data`` is a :class:`_ReadOnlyNode`). ``copy()`` gives a plain dict, as networkx's own
    copies expect."""

    __slots__ = ("_d", "_depth")

    def __init__(self, d: dict, depth: int):
        self._d, self._depth = d, depth

    def __getitem__(self, key):
        value = self._d[key]
        return _ReadOnly(value, self._depth - 1) if self._depth > 0 else _read_only(value)

    def __iter__(self):
        return iter(self._d)

    def __len__(self) -> int:
        return len(self._d)

    def __contains__(self, key) -> bool:
        return key in self._d

    def __repr__(self) -> str:
        return repr(self._d)

    def copy(self) -> dict:
        return {key: self[key] for key in self._d}

    def _refuse(self, *args, **kwargs):
        _refuse_edit()

    __setitem__ = __delitem__ = clear = update = pop = popitem = setdefault = _refuse


def _read_only(value):
    """``value`` as the read-only view hands it out: a node (or a dataclass inside one, such
    as its provenance) behind :class:`_ReadOnlyNode`, a dict behind :class:`_ReadOnly`, a list
    as a tuple; strings and numbers as they are."""
    if is_dataclass(value) and not isinstance(value, type):
        return _ReadOnlyNode(value)
    if isinstance(value, dict):
        return _ReadOnly(value, 0)
    if isinstance(value, (list, set)):
        return tuple(_read_only(v) for v in value)
    return value


class _ReadOnlyNode:
    """A node (or one of its dataclass fields) read through :attr:`LoomGraph.nx`: every field
    reads as the node's own, and setting one raises :class:`LoomError` naming the method to
    call. A node's ``type`` or ``tokens`` set here would skip the ranking arrays and the
    checks a save needs (issue: an unknown type saved, then the session would not open)."""

    __slots__ = ("_node",)

    def __init__(self, node):
        object.__setattr__(self, "_node", node)

    def __getattr__(self, name: str):
        if name == "_node":  # not set yet: an instance copy or pickle is making
            raise AttributeError(name)
        return _read_only(getattr(self._node, name))

    def __reduce_ex__(self, protocol):  # copy, deepcopy and pickle: a proxy of (a copy of) the node
        return _ReadOnlyNode, (self._node,)

    @property
    def __class__(self):  # isinstance(G.nodes[n]["data"], ContentNode) holds, as before
        return type(self._node)

    def __setattr__(self, name: str, value) -> None:
        _refuse_edit()

    def __delattr__(self, name: str) -> None:
        _refuse_edit()

    def __eq__(self, other) -> bool:
        return self._node == (other._node if isinstance(other, _ReadOnlyNode) else other)

    __hash__ = None  # as the dataclass it wraps

    def __repr__(self) -> str:
        return repr(self._node)


def _plain_attributes(node: "ContentNode | ConceptNode") -> dict[str, Any]:
    """A node's attributes as strings and numbers (what JSON and GraphML both take)."""
    if node.kind == "concept":
        attrs = {"kind": "concept", "name": node.name, "description": node.description, "created": node.created,
                 "origin": node.origin}
    else:
        attrs = {"kind": "content", "type": node.type, "title": node.title, "tokens": int(node.tokens), "sha256": node.sha256,
                 "source": node.provenance.source, "reason": node.provenance.reason, "direction": node.provenance.direction,
                 "created": node.created, "last_access_turn": int(node.last_access_turn), "summary_of": node.summary_of}
        if node.reference is not None:
            attrs.update(file=node.reference.file, lines="-".join(str(x) for x in node.reference.lines))
    return {k: _xml_text(v) if isinstance(v, str) else v for k, v in attrs.items() if v is not None}


_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")
"""Characters XML 1.0 cannot hold, even escaped (every control character but tab, newline
and carriage return): ``nx.write_graphml`` writes them as they are, and the file it makes
cannot be read back."""


def _xml_text(text: str) -> str:
    r"""``text`` with each character XML 1.0 forbids replaced by U+FFFD (a pasted log's ANSI
    colour codes, ``\x1b[31m``, are the usual ones).

    >>> _xml_text("\x1b[31mERROR\x1b[0m\tok")
    '\ufffd[31mERROR\ufffd[0m\tok'
    """
    return _NOT_XML.sub("\ufffd", text)
