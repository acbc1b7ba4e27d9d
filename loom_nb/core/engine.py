"""``Loom``: the engine in one object — add text, ask a query, save the session.

Each call runs the pipeline of seed 000 §3: classify → graph → rank → pack. The notebook
views, the CLI and the evaluation harness all go through these same methods.

Size: the Loom facade, one method per public verb (add, query, index, open, save), each
delegating; their docstrings are the API reference.
"""

from __future__ import annotations

import atexit
import gc
import logging
import math
import numbers
import os
import threading
import time
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable, Iterator

import numpy as np

from .classify import Classification, classify, split_input
from .concepts import ConceptQuality, concept_quality, rebuild_concepts
from .relink import ThresholdPlan, apply_threshold, threshold_plan
from .config import LoomConfig, Weights
from .embedding import CachedEmbedder, Embedder
from .errors import EmbeddingMismatchError, LoomError, UnknownNodeError
from .graph import (ContentNode, LinkReport, LoomGraph, Namer, Provenance, chunk_mean, clean_text, hold_graph_locks,
                    release_graph_locks)
from .display import Displayable, NodeView
from .modes import Mode, get_mode, message_weights
from .query import Query
from .pack import (
    Budget,
    NodeDecision,
    Packed,
    assemble_prompt,
    budget_within,
    explicit_budget,
    fit_window,
    pack,
)
from .prompt import render_prompt
from .chunks import chunk_spans
from .rank import Ranking, rank
from .secrets import is_secret_file
from .folder_lock import LOCK_FILE, session_lock
from .telemetry import EventLog
from .trust import confirm, confirm_vectors, is_confirmed, vectors_confirmed
from .store import GRAPH_FILE, data_files, load_cache, load_graph, orphaned_data_error, read_document, save_graph
from .vector_store import VectorLocation, parse_location, stored_location
from .tokens import ContextWindow, context_window

if TYPE_CHECKING:
    from .context_pack import ContextPack
    from ..index import IndexReport

log = logging.getLogger(__name__)


@dataclass
class AddResult(Displayable):
    """What :meth:`Loom.add` did: the classification and each node made, with its links."""

    classification: Classification
    nodes: list[ContentNode]
    links: list[LinkReport]

    @property
    def ids(self) -> list[str]:
        return [n.id for n in self.nodes]

    def __str__(self) -> str:
        lines = [f"added {len(self.nodes)} node(s) from {self.classification.kind} input"]
        for node, link in zip(self.nodes, self.links):
            lines.append(f"  {node.id} [{node.type}, {node.tokens} tokens] {node.title!r}: {link}")
        return "\n".join(lines)

    def __repr__(self) -> str:
        return f"AddResult(ids={self.ids}, kind={self.classification.kind!r})"



@dataclass
class QueryResult(Displayable):
    """Everything one query decided: the prompt text and the table behind it.

    ``messages`` / :attr:`prompt` are what goes to the model: the system prompt, the
    conversation before the message when the query carries one (each earlier turn as it
    was said, oldest first; with a window, the newest turns that fit its history zone), and
    the user message, which holds the context and ``Question:`` with the message. A chat
    turn's result holds the messages the turn sent: its system prompt with the project rules
    and decisions, the summary of older turns, and the history that fit its window.
    :attr:`table` holds every content node with its signals, score, decision and reason
    (GraphRAG keeps these apart the same way: the rendered context, and the records that
    explain it).
    """

    query: str
    classification: Classification
    mode: Mode
    budget: Budget
    window: ContextWindow | None
    ranking: Ranking
    packed: Packed
    messages: list[dict[str, str]]
    seconds: float
    graph_counts: dict[str, int] = field(default_factory=dict)
    request: Query | None = None
    """The query as asked: the message (:attr:`query`) and the history before it."""
    embedded_share: float = 1.0
    """Share of content nodes with their vectors in place when the query ran (below 1 while
    an index embeds in the background: the rest had a semantic signal of 0)."""
    timings: dict[str, float] = field(default_factory=dict)
    """Seconds per step: classify, embed (the query vector), rank, pack."""

    @property
    def embedding_note(self) -> str:
        """"semantic: 41 % of units embedded; …" while vectors are pending, else ""."""
        if self.embedded_share >= 1.0:
            return ""
        return (f"semantic: {self.embedded_share:.0%} of units embedded; the rest were ranked by their terms, path and "
                "structure (vectors are still being computed in the background)")

    @property
    def stale_note(self) -> str:
        """"stale: 9 nodes left out, …; re-index to load them" when files changed after they
        were indexed, else "". The model's manifest counts them among the nodes not loaded;
        this line tells the user why, and what to run."""
        stale = self.packed.stale
        if not stale:
            return ""
        files = self.packed.stale_files()
        shown = ", ".join(files[:3]) + (f" and {len(files) - 3} more" if len(files) > 3 else "")
        where = f" ({shown})" if shown else ""
        many = len(stale) > 1
        return (f"stale: {len(stale)} {'nodes' if many else 'node'} left out because {'their files' if many else 'its file'} "
                f"changed after indexing{where}; re-index (loom.index or loom-nb index) to load {'them' if many else 'it'}")

    @property
    def manifest(self) -> str:
        """The context manifest, after a line on pending vectors and one on stale files: what
        the prompt carries before its evidence, and what the packer decided even when a budget
        too small for the manifest itself leaves the prompt without context (:attr:`context`
        is then empty)."""
        notes = "".join(f"[{note}]\n" for note in (self.embedding_note, self.stale_note) if note)
        return notes + self.packed.manifest

    @property
    def context(self) -> str:
        return self.packed.context

    @property
    def prompt(self) -> str:
        """The whole prompt as text: each message under a ``### role`` line. A line of an
        earlier turn that reads as such a header is escaped, so it cannot start a message of
        its own (:func:`~loom_nb.core.prompt.render_prompt`)."""
        return render_prompt(self.messages)

    @property
    def table(self) -> list[NodeDecision]:
        return self.packed.decisions

    @property
    def loaded(self) -> list[str]:
        """Ids of the nodes whose text (whole, summary or chunks) is in the context."""
        return [b.node_id for b in self.packed.blocks]

    def rows(self, limit: int | None = None) -> list[NodeDecision]:
        """The first ``limit`` rows of :attr:`table` (cheap even on a huge graph)."""
        return self.packed.rows(limit)

    def decision(self, node_id: str) -> NodeDecision:
        """The table row of one node."""
        return self.packed.decision_of(node_id)

    def budget_split(self) -> dict[str, int]:
        """Tokens per zone, with the context zone split into used and unused."""
        zones = self.budget.zones()
        used = self.packed.context_tokens
        zones.pop("context (manifest + evidence)")
        zones["context used"] = used
        zones["context unused"] = self.budget.context - used
        return zones

    def to_dict(self) -> dict[str, Any]:
        """Plain data for JSON: the budget, the manifest, the prompt and the table."""
        return {
            "query": self.query,
            "classification": {"kind": self.classification.kind, "complexity": self.classification.complexity},
            "mode": asdict(self.mode),
            "budget": asdict(self.budget),
            "budget_split": self.budget_split(),
            "manifest": self.manifest,
            "messages": self.messages,
            "table": [asdict(row) for row in self.table],
            "seconds": self.seconds,
            "timings": self.timings,
        }

    def contributions_figure(self, top: int = 20):
        """plotly stacked bars of each signal's contribution for the top nodes."""
        from ..views.figures import contributions_figure

        return contributions_figure(self, top)

    def budget_figure(self):
        """plotly waterfall of the budget: window, zones, context used and unused."""
        from ..views.figures import budget_figure

        return budget_figure(self)

    def pack(self, **options) -> "ContextPack":
        """The loaded items with why each was chosen in words, the query terms each matched,
        an evidence snippet, and the open questions (:func:`~loom_nb.core.context_pack.context_pack`)."""
        from .context_pack import context_pack

        return context_pack(self, **options)

    def to_frame(self):
        """The table as a pandas DataFrame (needs pandas)."""
        try:
            import pandas as pd
        except ImportError as exc:
            raise LoomError("to_frame() needs pandas: pip install pandas") from exc
        rows = []
        for r in self.table:
            row = {"rank": r.rank, "node": r.node_id, "title": r.title, "type": r.type, "tokens": r.tokens, "score": r.score}
            row.update({f"{k}": v for k, v in r.contributions.items()})
            row.update({"decision": r.decision, "reason": r.reason})
            rows.append(row)
        return pd.DataFrame(rows).set_index("rank")

    def __repr__(self) -> str:
        return f"QueryResult(query={self.query!r}, mode={self.mode.name!r}, loaded={self.loaded}, tokens={self.packed.context_tokens})"



MAX_ADD_CHARS = 1_000_000
"""The longest text one :meth:`Loom.add` takes. A node is meant to be loaded whole or in a
few chunks; a 5 MB paste made one node no budget could ever hold."""

MAX_TOKENS_ARGUMENT = 10_000_000
"""The largest budget or window :meth:`Loom.query` takes: well past any model's window."""


def _checked(text: str) -> str:
    """``text`` cleaned, if one add takes it: a string, not blank, at most :data:`MAX_ADD_CHARS`."""
    if not isinstance(text, str):
        raise TypeError(f"text must be str, got {text.__class__.__name__}")
    if not text.strip():
        raise LoomError("cannot add empty text")
    if len(text) > MAX_ADD_CHARS:
        raise LoomError(
            f"text of {len(text):,} characters is over the {MAX_ADD_CHARS:,} one add takes (about 250k tokens, more "
            "than any model's window): save it as a file and index its folder (loom.index(folder), or "
            "`loom-nb index SESSION FOLDER`), which splits it into units"
        )
    return clean_text(text)


def _check_tokens_arguments(budget, window) -> None:
    """A budget of 0 or more tokens, a window of 1 or more: whole numbers (``True`` and
    ``0.99`` were truncated to 1 and 0 without a word), at most :data:`MAX_TOKENS_ARGUMENT`."""
    for name, value, low in (("budget", budget, 0), ("window", window, 1)):
        if value is None:
            continue
        if (isinstance(value, bool) or not isinstance(value, numbers.Real) or not math.isfinite(value)
                or value != int(value)):
            raise LoomError(f"{name} must be a whole number of tokens, got {value!r}")
        if not low <= value <= MAX_TOKENS_ARGUMENT:
            raise LoomError(f"{name} must be {low}-{MAX_TOKENS_ARGUMENT:,} tokens, got {value}")


def _node_ids(ids: str | Iterable[str], graph: LoomGraph) -> list[str]:
    """``ids`` as a list of node ids the graph holds: a string is one id (iterating it gave
    its characters, and excluded nothing); an unknown id is an error, not silently ignored."""
    ids = [ids] if isinstance(ids, str) else list(ids)
    wrong = [i for i in ids if not isinstance(i, str)]
    if wrong:
        raise TypeError(f"exclude takes node ids (str), got {wrong[0]!r}")
    unknown = [i for i in ids if i not in graph]
    if unknown:
        raise UnknownNodeError(f"cannot exclude {', '.join(map(repr, unknown[:5]))}: no such node in this session")
    return ids


def _direction(type: str) -> str:  # noqa: A002 - the node type, as add() names it
    """Whether a node of this type came into the conversation or out of the model."""
    return "output" if type in ("output", "analysis") else "input"


_WARMING: list[threading.Thread] = []
WARM_UP_QUERY = "Warm up: what does the first query need?"


def _start_warming(name: str, run) -> threading.Thread:
    """Start ``run`` on a daemon thread that the interpreter's exit waits for (finished ones
    are forgotten, so a process that opens many sessions does not keep them all)."""
    thread = threading.Thread(target=run, name=name, daemon=True)
    _WARMING[:] = [t for t in _WARMING if t.is_alive()]
    _WARMING.append(thread)
    thread.start()
    return thread


def warm_up(embedder) -> threading.Thread:
    """Load what a first query needs on a daemon thread: the tokenizer's BPE table, the
    hyphenation rules of the classifier and the embedding model (about 0.5 s together with
    MiniLM). A session is opened before it is asked, so its first query then costs about
    what the second does (issue 16). Whatever fails here fails again, with its message, in
    the query that needs it."""
    def run():
        # the model first: most of its set-up runs outside the GIL, beside the graph's parsing.
        # An embedder with nothing to load (hashing, Ollama) has no prepare(); the tokenizer
        # and the readability rules still are.
        for step in (getattr(embedder, "prepare", None), lambda: classify(WARM_UP_QUERY)):
            try:
                if step is not None:
                    step()
            except Exception as exc:  # reported where it matters: in the query
                log.debug("warm-up: %s", exc)

    return _start_warming("loom-nb warm-up", run)


WARM_RANKING_DELAY = 0.25
"""Seconds after an open before the warm-up ranking starts, unless a query came first."""


def warm_ranking(graph: LoomGraph, asked: threading.Event) -> threading.Thread:
    """Rank once on a daemon thread, under the graph's lock: what every query of this graph
    reads and the first one would build (the ranking arrays, the path tables, the file
    numbering, the lexical index) is then built before it is asked. At 44,000 units that was
    30–40 ms of a first query asked a second after the open (issue 16). The probe is one of
    the graph's own vectors, not a question's (the model may still be loading), so the
    semantic path runs too: the first product with the vectors, and the concept hops, whose
    first ``np.unique`` imports ``numpy.ma`` (20 ms). The secret-file patterns the packer
    checks each loaded path against are compiled here as well. Last, unless a query came
    meanwhile, one full garbage collection: the objects the open created are still young to
    the collector, and its first full pass over them otherwise fell inside a later query
    (150–190 ms of one query at 44,000 units).

    It waits :data:`WARM_RANKING_DELAY` first and skips if ``asked`` is set by then: a
    query asked at once (``loom-nb query``) builds the same itself, and measured 40–50 ms
    slower when it had to wait for the lock. Nothing is recorded: a ranking changes no
    state but these caches."""
    _STAND_DOWN[:] = [e for e in _STAND_DOWN if not e.is_set()]
    _STAND_DOWN.append(asked)

    def run():
        if asked.wait(WARM_RANKING_DELAY):
            return
        try:
            is_secret_file(WARM_UP_QUERY)
            with graph.lock:  # never beside a write
                vectors = graph.content_vectors.matrix
                rank(graph, vectors[0] if len(vectors) else None, query=WARM_UP_QUERY)
        except Exception as exc:  # the query that needs it says what is wrong
            log.debug("warm-up ranking: %s", exc)
        if not asked.is_set():
            gc.collect()

    return _start_warming("loom-nb warm-up ranking", run)


_STAND_DOWN: list[threading.Event] = []
"""The ``asked`` events of warm-up rankings not yet started: the exit sets them, so a command
that opens a session and ends at once does not wait for a ranking nobody will use."""


@atexit.register
def _join_warm_up() -> None:
    for event in _STAND_DOWN:
        event.set()
    for thread in _WARMING:  # a thread killed inside onnxruntime's set-up aborts the process
        thread.join(30)


def _before_fork() -> None:
    _join_warm_up()  # first: a warm ranking waits for its graph's lock
    hold_graph_locks()


if hasattr(os, "register_at_fork"):
    # A process forked while another thread holds a lock (tiktoken's table loading under its
    # lock and ours, the model's set-up, a graph's lock in the warm ranking, a background
    # fill's write or a chat indexer's turn) gives the child that lock held by a thread the
    # child does not have: its first token count or query waited forever (``multiprocessing``
    # forks by default on Linux). The fork waits for the warm-ups and for each graph's lock.
    os.register_at_fork(before=_before_fork, after_in_parent=release_graph_locks, after_in_child=release_graph_locks)


class Loom(Displayable):
    """A session: a :class:`LoomGraph`, the embedder that made its vectors, and a folder.

    Parameters
    ----------
    folder : path, optional
        The session folder (``graph.json``, ``content/``, ``embeddings/``); ``None`` keeps
        everything in memory until :meth:`save` is given a folder.
    embedder : Embedder or str, optional
        Defaults to all-MiniLM-L6-v2 in-process (:class:`~loom_nb.embed.MiniLMEmbedder`); a
        name works too: "minilm", "hashing", "ollama:MODEL".
    config : LoomConfig, optional
    vectors : str, optional
        Where :meth:`save` keeps the vectors: "numpy" (the default: ``embeddings/*.npy`` in
        the folder), a Qdrant server ``"http://HOST:6333/COLLECTION"``, or qdrant-client's
        local mode ``"qdrant+local:///FOLDER/COLLECTION"`` (:mod:`loom_nb.core.vector_store`).
        A Qdrant location is checked at once: one that does not answer, or whose collection
        holds another embedder's vectors, raises here.

    Examples
    --------
    >>> from loom_nb import Loom, HashingEmbedder
    >>> loom = Loom(embedder=HashingEmbedder())
    >>> _ = loom.add("OAuth tokens expire after one hour; refresh them with the refresh token.")
    >>> result = loom.query("Why do OAuth tokens expire?", budget=500)
    >>> result.loaded
    ['n1']
    """

    def __init__(
        self,
        folder: str | Path | None = None,
        *,
        embedder: Embedder | None = None,
        config: LoomConfig | None = None,
        namer: Namer | None = None,
        graph: LoomGraph | None = None,
        vectors: str | VectorLocation | None = None,
    ):
        from ..embed import default_embedder, embedder_named  # the facade picks a model a layer up

        inner = embedder_named(embedder) if embedder is not None else default_embedder()
        self.embedder = inner if isinstance(inner, CachedEmbedder) else CachedEmbedder(inner)
        self.folder = Path(folder) if folder is not None else None
        if self.folder is not None and self.folder.exists() and not self.folder.is_dir():
            raise LoomError(f"{self.folder} is a file, not a session folder; name a folder (a new one is made)")
        self.graph = graph if graph is not None else LoomGraph(config=config, embedding_model=self.embedder.model_id, namer=namer)
        if config is not None:
            self.graph.config = config
        if namer is not None:
            self.graph.namer = namer
        if self.graph.embedding_model is None:
            self.graph.embedding_model = self.embedder.model_id
        if self.graph.embedding_model != self.embedder.model_id:
            raise EmbeddingMismatchError(
                f"the graph's vectors come from {self.graph.embedding_model!r}, the embedder is {self.embedder.model_id!r}"
            )
        self.vectors = parse_location(vectors)
        """Where :meth:`save` keeps the vectors (:class:`~loom_nb.core.vector_store.VectorLocation`)."""
        if self.vectors.is_qdrant and graph is None:
            from .qdrant_store import check_collection

            check_collection(self.vectors, self.folder, self.embedder.model_id)
        self._saved_scores: dict[str, Any] = {}
        self._asked = threading.Event()
        """Set by the first :meth:`query`: a warm-up ranking that has not started by then skips."""
        self._last_query: tuple | None = None
        self._fill = None
        """The background vector fill of the last index run (loom_nb.index.background)."""
        self._refresh_lock = threading.RLock()
        """Held by :meth:`index` and :meth:`save`: a save waits for a running refresh (one saved
        half way through was a half-refreshed session), and a second refresh for the first (two
        at once each added the units of the files they both found changed)."""
        self.event_log = EventLog()

    # -- opening and saving -----------------------------------------------------------------
    @classmethod
    def open(
        cls,
        folder: str | Path,
        *,
        embedder: Embedder | None = None, config: LoomConfig | None = None, namer: Namer | None = None,  # as Loom()
        create: bool = True,
        workspace: str | Path | None = None,
        vectors: str | VectorLocation | None = None,
    ) -> "Loom":
        """Open the session in ``folder``, or start a new one there if it has none.

        Without ``embedder``, the one that made the stored vectors is used (by model id:
        MiniLM, hashing or an Ollama model); a new session gets the default, MiniLM. A
        given embedder must match the stored vectors.

        ``workspace`` confirms the root the session's file references are read from. A
        root inside the session folder, or one indexed or confirmed on this machine
        before, needs no confirmation; any other root named by graph.json is not read
        (its references are left out, with the reason), since a session folder from
        elsewhere could name any folder.

        ``vectors`` says where the session keeps its vectors from the next save on (see
        :class:`Loom`); by default where graph.json says they are. A Qdrant location that
        graph.json names is read only once confirmed on this machine: by naming it here (or
        ``--vectors``), by a save there, or because it is local storage inside the folder.
        """
        folder = Path(folder)
        if not (folder / GRAPH_FILE).exists():
            if folder.exists() and not folder.is_dir():
                raise LoomError(f"{folder} is a file, not a session folder")
            if (folder / GRAPH_FILE).is_symlink():
                read_document(folder)  # raises: a dangling link is not an empty folder
            found = data_files(folder) if folder.is_dir() else []
            if found:
                raise orphaned_data_error(folder, found)
            if not create:
                raise LoomError(f"{folder}: no session here (no {GRAPH_FILE}); start one by adding text or indexing a folder")
            return cls(folder, embedder=embedder, config=config, namer=namer, vectors=vectors)
        doc = read_document(folder)
        from ..embed import embedder_for, embedder_named

        inner = embedder_named(embedder) if embedder is not None else embedder_for(doc["embedding"].get("model"))
        if (doc.get("content") or {}).get("id"):
            # the model's set-up releases the GIL: it loads while the graph's columns are
            # parsed below, so a query asked at once waits less (issue 16)
            warm_up(inner)
        stored, wanted = _vector_locations(folder, doc, vectors)
        graph, doc = load_graph(folder, expect_model=inner.model_id, doc=doc)
        _settle_vectors(folder, stored, wanted, inner.model_id, doc.get("session"))
        cached = inner if isinstance(inner, CachedEmbedder) else CachedEmbedder(inner)
        saved = load_cache(folder, doc)
        if saved is not None:
            cached.preload(*saved)
        loom = cls(folder, embedder=cached, config=config, namer=namer, graph=graph, vectors=wanted)
        root = (graph.metadata.get("workspace") or {}).get("root")
        if root:
            named = folder / root  # a relative root (a copied sample) is the session's own
            if workspace is not None:
                if Path(workspace).resolve() != named.resolve():
                    raise LoomError(f"{folder} indexes {named}, not {workspace}: open another session folder for {workspace}")
                confirm(folder, named)
                graph.workspace = named
            elif is_confirmed(folder, named):
                graph.workspace = named
            else:
                graph.unconfirmed_root = named
                log.warning("%s names %s as its workspace, never confirmed on this machine: its file references are "
                            "left out until you pass workspace=%r", folder, named, str(named))
        loom._saved_scores = doc.get("scores", {})
        loom._get_ready()
        return loom

    def _get_ready(self) -> None:
        """After an open: build what ranking reads, and go on embedding what a save left
        pending (the warm-up of the model and tokenizer started before the graph was parsed)."""
        if len(self.graph.content_vectors):
            warm_ranking(self.graph, self._asked)
        if self.graph.pending_vectors:
            from ..index.background import resume_fill  # the facade reaches a layer up, as index() does

            self._fill = resume_fill(self)

    @property
    def last_scores(self) -> dict[str, Any]:
        """The last query's scores per node (saved in graph.json as ``scores``)."""
        if self._last_query is None:
            return self._saved_scores
        text, turn, mode, ranking, loaded = self._last_query
        by_node = dict(zip(ranking.node_ids, np.round(ranking.scores, 6).tolist()))
        return {"query": text, "turn": turn, "mode": mode, "by_node": by_node, "loaded": loaded}

    def save(self, folder: str | Path | None = None) -> Path:
        """Write the session atomically to ``folder`` (default: where it was opened).

        A save waits for a refresh (:meth:`index`) running on another thread, and writes
        what it left."""
        if folder is not None:
            self.folder = Path(folder)
        if self.folder is None:
            raise LoomError("this session has no folder yet: call save(folder)")
        # the folder's lock before the graph's: a save waiting up to 30 s for another writer
        # held the graph's lock meanwhile, and every query of this session waited with it
        with self._refresh_lock, session_lock(self.folder), self.graph.lock:  # never half of a refresh, nor of a background batch
            path = save_graph(self.graph, self.folder, cache_items=list(self.embedder.items()), scores=self.last_scores,
                              vectors=self.vectors)
        if self.graph.workspace is not None:  # set only by index() or a confirmed open
            confirm(self.folder, self.graph.workspace)
        if self.vectors.is_qdrant and not vectors_confirmed(self.folder, self.vectors.key(self.folder)):
            confirm_vectors(self.folder, self.vectors.key(self.folder))
        log.info("saved %s", path)
        return path

    @classmethod
    @contextmanager
    def editing(cls, folder: str | Path, *, lock_timeout: float | None = None, **options) -> Iterator["Loom"]:
        """Open, change and save the session in ``folder`` while holding its write lock.

        Two processes that each open, add and save would otherwise race: the second
        save is refused (:class:`~loom_nb.core.errors.SessionConflictError`) rather than drop
        the first one's nodes, but its work is lost. Inside this block other writers
        wait for their turn (up to ``lock_timeout`` seconds, then
        :class:`~loom_nb.core.errors.SessionLockedError`). The session is saved when the
        block ends without an exception, and left untouched when it raises.

        A new session needs a folder of its own: an existing folder that holds files but no
        ``graph.json`` (a source folder, a ``.git``) is refused before anything is written
        into it, and a folder this call made is removed again when the block raises.
        """
        folder = Path(folder)
        if not options.get("create", True) and not (folder / GRAPH_FILE).exists():
            cls.open(folder, **options)  # raises "no session here" before the lock makes a folder
        made = [p for p in (folder, *folder.parents) if not p.exists()]  # what the lock's mkdir creates
        if folder.is_dir() and not (folder / GRAPH_FILE).exists() and not data_files(folder):
            if any(entry.name != LOCK_FILE for entry in folder.iterdir()):
                raise LoomError(f"{folder} holds files but no session (no {GRAPH_FILE}): a session is a folder of its own, "
                                "written into as it changes; give a new or empty folder for it")
        try:
            with session_lock(folder, lock_timeout):
                loom = cls.open(folder, **options)
                yield loom
                loom.save()
        except BaseException:
            for path in made:  # the leaf first; only folders left holding nothing but the lock
                try:
                    (path / LOCK_FILE).unlink(missing_ok=True)
                    path.rmdir()
                except OSError:
                    break
            raise

    # -- adding --------------------------------------------------------------------------
    def classify(self, text: str) -> Classification:
        """The rule-based classification of ``text`` (no model call)."""
        return classify(text, self.graph.config)

    def add(
        self,
        text: str,
        *,
        type: str = "input",  # noqa: A002 - a public keyword; builtin type() is not used here
        source: str = "user",
        reason: str = "",
        title: str | None = None,
        split: bool = True,
        summary_of: str | None = None,
        meta: dict[str, Any] | None = None,
    ) -> AddResult:
        """Classify ``text``, split it when it mixes structures, and add the pieces.

        A question followed by a pasted log becomes two content nodes (seed 000 §7.2);
        inputs under ``config.split_threshold_tokens`` are never split.
        """
        text = _checked(text)
        classification = classify(text, self.graph.config)
        pieces = [text]
        kinds = [classification.kind]
        if split and summary_of is None and classification.should_split:
            segments = split_input(text, self.graph.config)
            if len(segments) > 1:
                pieces = [s.text for s in segments]
                kinds = [s.kind for s in segments]
        direction = _direction(type)
        nodes, links = [], []
        for i, (piece, kind) in enumerate(zip(pieces, kinds)):
            why = reason or ("" if len(pieces) == 1 else f"{kind} part {i + 1} of {len(pieces)} split from one input")
            node, link = self._add_one(
                piece,
                type=type,
                provenance=Provenance(source=source, reason=why, direction=direction),
                title=title if len(pieces) == 1 else None,
                summary_of=summary_of,
                meta={**(meta or {}), "segment_kind": kind} if len(pieces) > 1 else meta,
            )
            nodes.append(node)
            links.append(link)
        return AddResult(classification, nodes, links)

    def add_file(self, path: str | Path, *, type: str = "input", source: str = "file") -> AddResult:  # noqa: A002 - as in add()
        """Add a document as content nodes, one per section (issue 18).

        A PDF is cut by its bookmarks (else by page), an HTML page by its headings, a notebook
        by cell (its outputs' gist kept, images dropped), and each section is titled with where it
        came from (``paper.pdf p. 3-5: Results``, ``guide.html § Install``, ``churn.ipynb[cell 2]``;
        :mod:`loom_nb.index.documents`). Any other text file is
        added as :meth:`add` would add its text. The text is stored in the session: a
        document is not a workspace file that indexing keeps fresh. A credentials file
        (``.env``, ``id_rsa``, ``*.pem``: :data:`~loom_nb.core.secrets.SECRET_FILES`) is refused
        unread, as indexing reads it by name only.
        """
        from ..index.documents import DOCUMENT_SUFFIXES, document_sections
        from .files import decode_bytes, is_binary, normalise_newlines, open_regular
        from .secrets import is_secret_file

        path = Path(path)
        if is_secret_file(path.name):
            raise LoomError(f"{path.name} is a credentials file: add_file never reads one (index() lists such files by "
                            "name only); add() the lines you need instead, and their credentials are masked")
        if path.suffix.lower() in DOCUMENT_SUFFIXES:
            sections = document_sections(path)
        else:
            limit = 4 * MAX_ADD_CHARS
            try:
                if path.stat().st_size > limit:  # refused before it is read into memory
                    raise LoomError(f"{path.name} is {path.stat().st_size:,} bytes, more than one add takes: "
                                    "index() its folder instead, which cuts it into units")
                # open_regular, as the walk and the document branch read: plain open() of a
                # FIFO named notes.txt blocked until someone wrote to it; a device never ends
                with open_regular(path) as fh:
                    data = fh.read(limit + 1)  # the file may have grown since its stat
            except OSError as exc:
                raise LoomError(f"{path}: cannot be read ({exc.strerror or exc})") from None
            if is_binary(data[:8192]):
                raise LoomError(f"{path.name} is binary: add_file reads PDF, HTML, notebooks and text files")
            if len(data) > limit:
                raise LoomError(f"{path.name} is over {limit:,} bytes, more than one add takes: "
                                "index() its folder instead, which cuts it into units")
            text = normalise_newlines(decode_bytes(data, truncated=False))
            return self.add(text, type=type, source=source, title=path.name, meta={"path": path.name})
        # all or nothing: every section is checked and embedded before any is added (a section
        # add() refused, or an embedder gone half-way, left the first ones in, and a retry added
        # them twice), and what was added is removed again if adding a later one fails
        texts = [_checked(section.text) for section in sections]
        embedded = [self._embedded(text) for text in texts]
        nodes, links = [], []
        try:
            for section, text, vectors in zip(sections, texts, embedded):
                node, link = self.graph.add_content(
                    text, **vectors, type=type, provenance=Provenance(source=source, reason=section.title, direction=_direction(type)),
                    title=section.title, meta={"path": path.name, **section.where})
                nodes.append(node)
                links.append(link)
        except BaseException:
            self.graph.remove_many([node.id for node in nodes])
            raise
        return AddResult(classify(texts[0], self.graph.config), nodes, links)

    def _add_one(self, text: str, **kwargs) -> tuple[ContentNode, LinkReport]:
        """Embed and add one piece (:meth:`_embedded`)."""
        return self.graph.add_content(text, **self._embedded(text), **kwargs)

    def _embedded(self, text: str) -> dict[str, Any]:
        """What ``add_content`` takes besides the text: its vector, tokens and chunks. The
        embedder reads it masked (an Ollama embedder is a model too, and a server);
        ``add_content`` gets it as given, to count what it masks."""
        from .secrets import mask_secrets
        from .tokens import count_tokens

        masked = mask_secrets(text)[0]  # the same length: chunk spans hold for both
        tokens = count_tokens(masked)
        config = self.graph.config
        spans, chunk_vecs = [], None
        if tokens > config.large_node_tokens:
            spans = chunk_spans(masked, config.chunk_tokens)
            chunk_vecs = self.embedder.embed([masked[s:e] for s, e in spans])
            vector = chunk_mean(chunk_vecs)
        else:
            vector = self.embedder.embed([masked])[0]
        return {"vector": vector, "tokens": tokens, "chunks": spans, "chunk_vectors": chunk_vecs}

    def index(self, root: str | Path, **options) -> "IndexReport":
        """Index (or refresh) a workspace folder into reference nodes; see :func:`loom_nb.index.index_workspace`.

        A large run returns before its vectors are in (``wait=None``); they are embedded in
        the background, and :meth:`wait` blocks until they are. ``wait=True`` embeds first.

        One refresh at a time: a second (another thread's) waits for the first, and so does
        :meth:`save`. A query asked meanwhile does not wait: it sees the graph before the
        refresh or, while the refresh applies its changes, part of them (each under the
        graph's lock; a file being redone may be missing some of its units)."""
        from ..index import index_workspace

        _check_utf8_root(root)
        with self._refresh_lock:
            self.wait()  # one fill at a time: a refresh starts from complete vectors
            report = index_workspace(self, root, **options)
        if report.nodes_added or report.nodes_removed:
            self._warm_after_index()
        self.emit("index", report.seconds, root=str(report.root), files_indexed=report.files_indexed,
                  files_unchanged=report.files_unchanged, files_removed=report.files_removed, nodes_added=report.nodes_added,
                  nodes_removed=report.nodes_removed, texts_embedded=report.texts_embedded, vectors_pending=report.vectors_pending)
        return report

    def _warm_after_index(self) -> None:
        """What :meth:`open` warms, after an index run changed the graph: the classifier's
        rules and the model (a fresh ``Loom()`` never opened has not loaded them), then one
        ranking and one garbage collection, so the first query after ``index()`` costs what the
        second does. On celery (hashing) that first query took 277 ms, 210 of them the
        collector's first full pass over what indexing created."""
        warm_up(getattr(self.embedder, "inner", self.embedder))
        self._asked = threading.Event()  # a query asked before the ranking starts stands it down
        warm_ranking(self.graph, self._asked)

    # -- telemetry (loom_nb.core.telemetry) -------------------------------------------------
    def telemetry(self, on: bool = True) -> None:
        """Switch telemetry on (or off) for this session; saved with its config."""
        self.graph.config = self.graph.config.with_(telemetry=bool(on))

    def emit(self, kind: str, seconds: float, **fields: Any) -> dict[str, Any] | None:
        """Record one event when telemetry is on (None when it is off)."""
        if not self.graph.config.telemetry:
            return None
        return self.event_log.emit(self.folder, kind, seconds, **fields)

    def events(self) -> list[dict[str, Any]]:
        """The session's events, oldest first (from ``events.jsonl`` when it has a folder)."""
        return self.event_log.events(self.folder)

    def telemetry_figure(self):
        """Plotly: each event's duration over time, a trace per kind."""
        from ..views.figures import telemetry_figure

        return telemetry_figure(self.events())

    def wait(self, timeout: float | None = None) -> bool:
        """Block until the vectors an index run is embedding in the background are in (or
        ``timeout`` seconds pass); True when none is pending. Raises what stopped the fill."""
        if self._fill is None:
            return not self.graph.pending_vectors
        return self._fill.wait(timeout) and not self.graph.pending_vectors

    @property
    def embedded_share(self) -> float:
        """The share of content nodes whose vectors are in place (see :meth:`wait`)."""
        return self.graph.embedded_share

    def export_report(self, result: "QueryResult", path: str | Path, **options) -> Path:
        """One self-contained HTML file (graph, manifest, table, charts) that opens offline."""
        from ..views.report import export_report

        return export_report(self, result, path, **options)

    def graph_view(self, result: "QueryResult | None" = None, **options):
        """The graph drawn with pyvis (offline), loaded nodes marked; shows in a notebook."""
        from ..views.graph_view import GraphView

        return GraphView(self, result, **options)

    def tune(self, query: str, **options):
        """Sliders for the weights, the relevance floor, the concept threshold, the mode
        and the budget over one query (ipywidgets); the table redraws as they move."""
        from ..views.widgets import weight_sliders

        return weight_sliders(self, query, **options)

    def skeleton(self, path: str) -> str:
        """A signature-only view of an indexed file: the cheap alternative to its body. Made as
        indexing makes units: from the file masked whole (a credentials file: its name only),
        and masked again, as node text is."""
        from ..index import outline, read_text, resolve_inside, skeleton
        from .files import detect_language, indexed_size_limit
        from .secrets import is_secret_file, mask_secrets, secret_file_notice

        if self.graph.workspace is None:
            raise LoomError("no workspace has been indexed in this session")
        full = resolve_inside(self.graph.workspace, path)
        if is_secret_file(str(path)):  # never read, as the indexer never reads it
            return secret_file_notice(str(path))
        limit = indexed_size_limit(str(path), self.graph.metadata.get("workspace"))
        try:
            size = full.stat().st_size
            if size > limit:  # as the walk would skip it: a file grown to 300 MB is not read whole and masked
                raise LoomError(f"{path} is {size:,} bytes, over the {limit:,} indexing reads: it has no skeleton")
            text = read_text(full, max_bytes=limit + 1)  # it may have grown since the stat
        except OSError as exc:
            raise LoomError(f"{path}: cannot be read ({exc.strerror or exc})") from None
        if str(path).lower().endswith(".ipynb"):  # cell by cell, as it is indexed, not its JSON (cells are read masked)
            from ..index.notebooks import cell_outline
            from .notebooks import notebook_cells

            view = "\n".join(f"[cell {cell.number}] {cell.kind}\n" + skeleton(cell.text, cell_outline(path, cell.language, cell.text))
                              for cell in notebook_cells(text, str(path)) if cell.text.strip())
        else:
            text = mask_secrets(text, remember=False)[0]
            view = skeleton(text, outline(path, text, detect_language(path) or "text"))
        return mask_secrets(view)[0]

    def add_summary(self, node_id: str, summary: str, *, source: str = "user") -> ContentNode:
        """Attach a summary to a node; a large node can then be loaded as its summary."""
        return self.add(summary, source=source, summary_of=node_id, reason=f"summary of {node_id}").nodes[0]

    # -- querying ------------------------------------------------------------------------
    def query(
        self,
        text: str | Query,
        *,
        budget: int | None = None,
        model: str | None = None,
        window: int | None = None,
        mode: str | Mode | None = None,
        weights: Weights | dict[str, float] | None = None,
        callback: bool = False,
        record: bool = False,
        ask_ollama: bool = False,
        exclude: Iterable[str] = (),
        exclude_reason: str = "excluded by the caller",
    ) -> QueryResult:
        """Rank every content node against ``text`` and pack the best into a prompt.

        This is the one path from a question to a prompt: ``loom-nb query``, every chat
        turn and the ``loom`` strategy of ``loom-nb eval`` all come here with the same
        defaults.

        Parameters
        ----------
        text : str or Query
            The user's message, or a :class:`~loom_nb.core.query.Query` carrying the
            message and the conversation before it. The classifier grades the message
            alone; ranking reads the message and, clipped, the previous exchange. The
            result's ``messages`` carry the conversation too, between the system prompt
            and the user message (context and question), so that they can be sent to a
            model as they are.
        budget : int, optional
            Tokens for the context (manifest + evidence). Without it the budget comes from
            the window: model window − system prompt − query − history − output
            reservation, where the history is the newest turns of the query's history that
            fit the history zone (at most 35 % of what the fixed zones leave, as in a chat
            turn; older turns are not sent). Given with ``window`` or ``model``, the budget
            is used within the window: when it is more than the window leaves for context it
            is cut to that, with a :class:`~loom_nb.core.budget.BudgetOverWindowWarning`
            (the prompt must fit the model, whatever the budget asked for). Given alone, it
            is the context's and nothing else's: the history is sent whole beside it, and
            counting it is the caller's part.
        model : str, optional
            A model name, to look its window up (table; Ollama via :meth:`ask_ollama`).
        window : int, optional
            The window in tokens, overriding the model's; default ``config.default_window``
            (only when no ``budget`` is given: a budget alone is not bounded by any window).
            A question the window cannot hold beside the system prompt and the answer's
            reservation is sent clipped to its start and end, with a logged warning.
        mode : "bare" | "fast" | "fused" | "auto" | Mode, optional
            Retrieval preset (:mod:`loom_nb.core.modes`); by default ``auto``, which picks
            one from the message's complexity by ``config.bare_below`` / ``fast_below``
            (FUSED for every query with the defaults: the cheaper modes lost recall).
        weights : Weights or dict, optional
            Signal weights for this query only.
        record : bool
            Advance the graph clock and mark loaded nodes as accessed (chat turns do).
        ask_ollama : bool
            Ask the Ollama server (``OLLAMA_HOST``) for ``model``'s window and the ``num_ctx``
            it really uses; falls back to the table when it cannot answer.
        exclude : str or iterable of str, optional
            Node ids never to load, e.g. a chat's current message and the messages already
            in its history window (loading them again would spend the budget twice). They
            stay in the table as *excluded* with ``exclude_reason``. A string is one id; an
            id the session does not hold raises :class:`~loom_nb.core.errors.UnknownNodeError`.
        """
        self._asked.set()  # a warm-up ranking not yet started is no longer worth its lock
        request = Query.of(text) if isinstance(text, (str, Query)) else None
        if request is None or request.blank:
            raise LoomError("the query is empty")
        request = request.masked()  # the prompt, the result, its report and the embedder get no credential
        text = request.message
        _check_tokens_arguments(budget, window)
        if model is not None and not (isinstance(model, str) and model.strip()):
            raise LoomError(f"model must be a model's name, got {model!r}")
        exclude = _node_ids(exclude, self.graph)
        started = time.perf_counter()
        config = self.graph.config
        prompt_text = text  # the question as the prompt carries it (clipped when it overflows the window)
        classification = classify(text, config)  # the message alone, not the history
        timings = {"classify": time.perf_counter() - started}
        chosen = get_mode(mode, classification.complexity, config)
        base = message_weights(config.weights, text, config, follow_up=request.follows_up)  # weights you pass are used as they are
        if isinstance(weights, dict):
            base = config.with_(weights=weights).weights
        elif weights is not None:
            base = weights
        retrieval = request.retrieval_text()
        embed_started = time.perf_counter()
        query_vector = self.embedder.embed([request.vector_text()])[0] if chosen.embeds_query else None
        timings["embed"] = time.perf_counter() - embed_started
        with self.graph.lock:  # a background fill writes between queries, never during one
            result = self._rank_and_pack(request, text, prompt_text, classification, chosen, base, retrieval, query_vector,
                                         budget=budget, model=model, window=window, callback=callback, record=record,
                                         ask_ollama=ask_ollama, exclude=exclude, exclude_reason=exclude_reason,
                                         started=started, timings=timings)
        if config.telemetry:
            self._emit_query(result)
        return result

    def _emit_query(self, result: "QueryResult") -> None:
        t, c, packed = result.timings, result.classification, result.packed
        query_id = f"turn {self.graph.turn}"
        self.emit("classify", t["classify"], query=query_id, input_kind=c.kind, complexity=round(c.complexity, 3), tokens=c.tokens)
        self.emit("embed", t["embed"], query=query_id, embedded=result.mode.embeds_query)
        self.emit("rank", t["rank"], query=query_id, mode=result.mode.name, nodes=len(result.ranking.node_ids),
                  relevant=int(result.ranking.relevant.sum()))
        self.emit("pack", t["pack"], query=query_id, budget=result.budget.context, context_tokens=packed.context_tokens,
                  loaded=[b.node_id for b in packed.blocks])

    def _rank_and_pack(self, request, text, prompt_text, classification, chosen, base, retrieval, query_vector, *,
                       budget, model, window, callback, record, ask_ollama, exclude, exclude_reason, started,
                       timings) -> QueryResult:
        """The part of :meth:`query` that reads the graph (held under its lock)."""
        config = self.graph.config
        index = self.graph.content_vectors.index  # ranking rows are content_vectors rows
        excluded_rows = [index[n] for n in exclude if n in index]
        rank_started = time.perf_counter()
        ranking = rank(self.graph, query_vector, query=retrieval, weights=chosen.weights(base), config=config,
                       exclude=excluded_rows, lexical=chosen.lexical)
        if excluded_rows:
            ranking.relevant = ranking.relevant.copy()
            ranking.relevant[excluded_rows] = False
        timings["rank"] = time.perf_counter() - rank_started
        pack_started = time.perf_counter()
        win, history = None, request.history  # a budget alone is the context's: the history is sent whole beside it
        if budget is not None and window is None and model is None:
            plan = explicit_budget(int(budget), chosen)
        else:
            if window is None:
                if model is not None:
                    if ask_ollama:  # the facade asks the server a layer up
                        from ..ollama.context_window import context_window as ask_window

                        win = ask_window(model, ask_ollama=True)
                    else:
                        win = context_window(model)
                    window = win.num_ctx
                else:
                    window = config.default_window
            plan, prompt_text, history = fit_window(int(window), system_prompt=config.system_prompt, question=text,
                                                    complexity=classification.complexity, config=config, mode=chosen,
                                                    history=request.history)
            if budget is not None:  # a budget and a window: the budget, within what the window leaves for context
                plan = budget_within(plan, int(budget))
        packed = pack(self.graph, ranking, plan, mode=chosen, query_vector=query_vector, callback_available=callback,
                      config=config, excluded={row: exclude_reason for row in excluded_rows})
        messages = assemble_prompt(config.system_prompt, packed.context, prompt_text, history)
        timings["pack"] = time.perf_counter() - pack_started
        if record:
            self.graph.advance_turn()
            self.graph.mark_accessed([b.node_id for b in packed.blocks])
        self._last_query = (text, self.graph.turn, chosen.name, ranking, [b.node_id for b in packed.blocks])
        return QueryResult(
            query=text, classification=classification, mode=chosen, budget=plan, window=win,
            ranking=ranking, packed=packed, messages=messages, seconds=time.perf_counter() - started,
            graph_counts=self.graph.counts(), request=request, embedded_share=self.graph.embedded_share,
            timings={k: round(v, 6) for k, v in timings.items()},
        )

    # -- concepts ------------------------------------------------------------------------
    def rebuild_concepts(self, target_size: int | None = None, *, seed: int = 0) -> ConceptQuality:
        """Make the concept layer topics again: communities of the content vectors, about
        ``target_size`` members each (``config.concept_size``; √n in a small session).
        ``index()`` does this after a run that changes many units; call it after adding
        many notes or answers, which link one by one."""
        return rebuild_concepts(self.graph, target_size, seed=seed)

    def concept_quality(self) -> ConceptQuality:
        """How many concepts, how large, and how much closer members are to each other than
        to other concepts' members."""
        return concept_quality(self.graph)

    def preview_threshold(self, threshold: float) -> ThresholdPlan:
        """The merges, splits and extra links a concept threshold would make; nothing
        changes (the tuner's threshold slider shows this)."""
        return threshold_plan(self.graph, threshold)

    def apply_threshold(self, threshold: float) -> ConceptQuality:
        """Keep ``threshold`` as the session's concept threshold and re-link the concept
        layer at it (the merges and splits :meth:`preview_threshold` shows; new concept
        ids). New content links at it too. ``save()`` keeps it."""
        return apply_threshold(self.graph, threshold)

    # -- reading -------------------------------------------------------------------------
    def node(self, node_id: str):
        return self.graph.node(node_id)

    def view(self, node_id: str):
        """A node as a notebook shows it (text preview, concepts with link similarity,
        provenance, staleness); prints the same facts in a terminal."""
        return NodeView(self, node_id)

    def text(self, node_id: str) -> str:
        return self.graph.text(node_id)

    def __len__(self) -> int:
        return len(self.graph)

    def __repr__(self) -> str:
        where = str(self.folder) if self.folder else "in memory"
        c = self.graph.counts()
        store = f", vectors={self.vectors.spelling!r}" if self.vectors.is_qdrant else ""
        return f"Loom({where!r}, {c['concepts']} concepts, {c['content']} content nodes, embedder={self.embedder.model_id!r}{store})"


def _check_utf8_root(root: str | Path) -> None:
    """Refuse, before any work, a workspace whose path is not UTF-8 (a Latin-1 folder name
    from an old archive): graph.json keeps the root as UTF-8 text, and such a root used to
    be indexed in full and then fail every save."""
    resolved = str(Path(root).expanduser().resolve())
    try:
        resolved.encode("utf-8")
    except UnicodeEncodeError:
        shown = resolved.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
        raise LoomError(f"cannot index {shown}: its path is not valid UTF-8, and graph.json keeps the workspace root "
                        "as UTF-8 text; rename the folder (e.g. with convmv) and index it again") from None


def _vector_locations(folder: Path, doc: dict[str, Any], vectors) -> tuple[VectorLocation, VectorLocation]:
    """Where graph.json keeps the vectors, and where the session keeps them from the next
    save; refuses a Qdrant location graph.json names that this machine never confirmed."""
    try:
        stored = stored_location(doc)
    except LoomError as exc:
        raise LoomError(f"{folder / GRAPH_FILE}: its vector store is not readable ({exc})") from None
    wanted = parse_location(vectors) if vectors is not None else stored
    if stored.is_qdrant:
        key = stored.key(folder)
        named = vectors is not None and wanted.key(folder) == key
        if not (named or stored.inside(folder) or vectors_confirmed(folder, key)):
            raise LoomError(f"{folder} keeps its vectors at {stored.spelling}, never confirmed on this machine: open it with "
                            f"vectors={stored.spelling!r} (loom-nb ... --vectors {stored.spelling}) to read them from there")
    return stored, wanted


def _settle_vectors(folder: Path, stored: VectorLocation, wanted: VectorLocation, model: str, session: str | None) -> None:
    """After a load: remember the Qdrant location it read, and check the one the session
    moves to at its next save (it must answer, and hold no other embedder's or session's
    vectors: refused now, not at the save after the work)."""
    if stored.is_qdrant and not vectors_confirmed(folder, stored.key(folder)):
        confirm_vectors(folder, stored.key(folder))
    if wanted.is_qdrant and wanted.key(folder) != stored.key(folder):
        from .qdrant_store import check_collection

        check_collection(wanted, folder, model, session if isinstance(session, str) else None)

