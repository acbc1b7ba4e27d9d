"""Chat with a local model through Ollama, with loom-nb choosing every turn's context.

One turn of :meth:`Session.send`:

1. The user's text is classified, split when it mixes structures, and added to the graph.
2. The window (Ollama's real ``num_ctx``, from ``/api/show``) is split into zones, after
   seeds 001 and 003: system prompt, decision context, workspace summary (a repo map), tool
   definitions, reserved output, history, and the engine's context (manifest + evidence).
3. History is windowed newest first (each message costs its tokens plus
   :data:`MESSAGE_OVERHEAD`); messages that fall out are *summarised* once (by the model
   when it answers, extractively otherwise) into a summary node the engine can load later,
   and the newest summaries ride at the head of the history zone.
4. The engine ranks every node and packs the context zone; the current message and the
   messages already in the history window are excluded, so nothing is paid for twice.
   Nodes loaded are marked accessed and the graph clock advances: staleness decays per turn.
5. ``ollama.chat`` streams the answer. The model may ask for a node the manifest listed as
   available but not loaded (*callback retrieval*, seed 000 §11): a ``load_context`` tool
   call when the model has the ``tools`` capability, a ``[[load: ID]]`` marker otherwise;
   at most ``max_callbacks`` per turn.
6. The *post-processing indexer* adds the answer to the graph (as ``analysis`` or
   ``output`` nodes) on a background thread while the user reads, then saves the session;
   the next turn waits for it only if it has not finished.

Every call's estimated prompt tokens are kept next to what Ollama reports
(``prompt_eval_count``, ``eval_count``): :meth:`Session.accounting`.

A turn is a transaction (issue 13): every Ollama call has its timeouts
(:mod:`loom_nb.ollama`), and a turn that fails for any reason, a stalled or broken
server or an exception in ``on_token``, changes nothing in memory or on disk
(:class:`~loom_nb.chat.transaction.GraphCheckpoint`). A follow-up after a callback stays
within the window like the first call.

Around this module: the turn's plan is :mod:`~loom_nb.chat.planner`, the exchange with the
model (streaming, callbacks, follow-ups) :mod:`~loom_nb.chat.conversation`, a turn and its calls
:mod:`~loom_nb.chat.turns`, the summaries' fallback :mod:`~loom_nb.chat.history`, the accounting
views :mod:`~loom_nb.chat.accounting`, the chat file :mod:`~loom_nb.chat.store`, the answer
indexer :mod:`~loom_nb.chat.answers`. What stays here is the session's state and the turn's steps.

Size: the session's state (open, save, close), the turn's steps in order, the history's
summaries and the repo-map zone.
"""

from __future__ import annotations

import html
import json
import logging
import re
import time
from collections import Counter
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import asdict
from pathlib import Path
from typing import Any, Callable

from .planner import Message, plan_turn, window_history
from .transaction import GraphCheckpoint
from ..core.budget import Zones
from ..core.display import TABLE_STYLE, Displayable, html_table
from ..core.prompt_safety import escape_path
from ..core.query import Query
from ..core.secrets import mask_secrets
from ..core.rules import ProjectRules, RulesReader
from .accounting import AccountingTable, accounting_figure  # noqa: F401 - importable from here as before
from .conversation import FOLLOW_UP_TEXT_MAX, MARKER, Conversation  # noqa: F401 - importable from here as before
from .answers import index_answer
from .decisions import NODE_TYPES, DecisionGraph
from .history import extractive_summary
from .store import CHAT_FILE, CHAT_SCHEMA, read_chat, write_chat  # noqa: F401 - importable from here as before
from .turns import ZONE_COLOURS, ChatCall, Turn  # noqa: F401
from ..core.engine import Loom
from ..core.errors import LoomError, OllamaUnavailableError, SessionConflictError, SessionFormatError
from ..core.store import GRAPH_FILE, check_not_replaced
from ..ollama.probe import probe_ollama  # noqa: F401 - importable from here as before
from ..ollama import Timeouts, WatchedStream, ollama_client, watched_call
from ..core.pack import MESSAGE_OVERHEAD
from ..core.tokens import ContextWindow, count_tokens, parse_show, truncate_to_tokens

log = logging.getLogger(__name__)


DEFAULT_SYSTEM_PROMPT = (
    "You are a careful assistant in a local chat. Each question comes with a context manifest "
    "and evidence blocks chosen for it; answer from them, cite node ids like [n12], and say "
    "plainly when the evidence is not enough."
)

def _tool(name: str, description: str, properties: dict[str, Any] | None = None, required: list[str] | None = None,
          **strings: str) -> dict[str, Any]:
    """An Ollama (OpenAI-style) function tool definition; each keyword is a required string
    parameter and its description."""
    properties = {**(properties or {}), **{key: {"type": "string", "description": text} for key, text in strings.items()}}
    return {"type": "function", "function": {"name": name, "description": description, "parameters": {
        "type": "object", "properties": properties, "required": required or list(strings)}}}


LOAD_CONTEXT_TOOL = _tool("load_context", "Load one context node listed under 'Available on request' by its id, when "
                          "the evidence given is not enough to answer.", node_id="the node id, e.g. n12")
SEARCH_CONTEXT_TOOL = _tool("search_context", "Search the session for evidence on a new, focused question when the "
                            "context given does not cover it; returns a short context pack (items with why they match, "
                            "and open questions).", query="what to look for, in a few words")
RECORD_DECISION_TOOL = _tool(
    "record_decision",
    "Record a goal, decision, option, action, outcome, observation or point to revisit in the session's decision "
    "graph, so later turns remember it (the user sees who recorded it).",
    {
        "type": {"type": "string", "enum": list(NODE_TYPES)},
        "text": {"type": "string", "description": "one line: what was decided or found"},
        "links": {"type": "array", "description": 'earlier decision ids this one follows from, e.g. ["d2"]',
                  "items": {"type": "string"}},
    },
    ["type", "text"],
)

SUMMARY_MAX_TOKENS = 320
"""``num_predict`` of a summary request, which asks for at most 120 words (about 160 tokens):
twice that, so a wordy model finishes its sentence, and a looping one stops."""

_LONE_SURROGATE = re.compile("[\ud800-\udfff]")

EXPLORE_FROM_WINDOW = 4096
"""Windows below this offer ``load_context`` alone: the two other tools' definitions cost
about 250 tokens, which a small window needs for evidence."""

MARKER_INSTRUCTIONS = (
    "If you need a node listed under 'Available on request', reply with only the line "
    "[[load: ID]] (for example [[load: n12]]) and it will be given to you."
)


class Session(Displayable):
    """A chat with a local Ollama model whose context loom-nb chooses, turn by turn.

    Parameters
    ----------
    loom : Loom
        The graph and its folder (the chat is saved next to ``graph.json``).
    model : str
        An Ollama chat model, e.g. ``llama3.2``.
    client : ollama.Client, optional
        Defaults to one for ``host`` (or ``OLLAMA_HOST``).
    window : int, optional
        Override the window; by default the ``num_ctx`` Ollama reports for the model.
    max_callbacks : int
        Callback retrievals allowed per turn (seed 000 §11 suggests 2); 0 turns them off.
    tools : "auto" | bool
        Offer the ``load_context`` tool ("auto": when the model has the ``tools`` capability);
        otherwise callbacks use the ``[[load: ID]]`` marker.
    summarize : "model" | "extractive"
        How turns that fall out of the history are summarised; "model" falls back to
        extractive whenever the model cannot answer.
    summary_block : int
        Messages summarised together at least (4: two turns); the oldest kept messages
        join the block when fewer than that fell out, but never the newest exchange (so a
        block holds one turn when the only other exchange is the newest).
    background : bool
        Index answers on a background thread (the default); ``False`` does it inline.
    timeouts : loom_nb.ollama.Timeouts, optional
        Limits of every Ollama call; by default the ``ollama_*_timeout`` fields of the
        graph's :class:`~loom_nb.core.config.LoomConfig`. A ``client`` you pass keeps its own
        httpx timeouts, but its streams and ``/api/show`` are still held to these.
    """

    def __init__(
        self,
        loom: Loom,
        *,
        model: str,
        client: Any = None,
        host: str | None = None,
        window: int | None = None,
        zones: Zones | None = None,
        system_prompt: str = DEFAULT_SYSTEM_PROMPT,
        max_callbacks: int = 2,
        tools: str | bool = "auto",
        summarize: str = "model",
        summary_block: int = 4,
        background: bool = True,
        timeouts: Timeouts | None = None,
    ):
        if not model:
            raise LoomError("a chat session needs a model name, e.g. model='llama3.2'")
        if window is not None and int(window) < 1:
            raise LoomError(f"window must be at least 1 token, got {window!r} (None: the num_ctx Ollama reports)")
        if int(max_callbacks) < 0:
            raise LoomError(f"max_callbacks must be 0 (off) or more, got {max_callbacks!r}")
        if summarize not in ("model", "extractive"):
            raise LoomError(f"summarize must be 'model' or 'extractive', got {summarize!r}")
        self.loom = loom
        self.model = model
        # a client given without a host: its errors name the server it really talks to
        given = getattr(getattr(client, "_client", None), "base_url", None) if host is None else None
        self.host = str(given).rstrip("/") if given else host
        self._client = client
        self.window_override = window
        self.zones = zones or Zones()
        self.system_prompt = system_prompt
        self.max_callbacks = int(max_callbacks)
        self.tools_setting = tools
        self.summarize = summarize
        self.summary_block = max(int(summary_block), 1)
        self.decisions = DecisionGraph()
        self.messages: list[Message] = []
        self.turns: list[Turn] = []
        self.summaries: list[dict[str, Any]] = []
        """Each: ``{"first_turn", "last_turn", "messages": [i, j), "node_id", "text", "by"}``."""
        self._summarised = 0
        self._window: ContextWindow | None = None
        self._tools: bool | None = None
        self._pending: Future | None = None
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="loom-indexer") if background else None
        self._workspace_cache: tuple[tuple, str] | None = None
        self._rules = RulesReader()
        self._rules_error = ""
        self._opened: tuple = self._state_key()
        self._graph_seen = self._graph_file_key()
        self.last_error: BaseException | None = None
        """The post-processing indexer's last failure, if any: indexing the answer (the chat
        goes on without it) or saving the turn (the turn was taken back out)."""
        self._timeouts = timeouts
        self._closed = False

    # -- opening and saving ------------------------------------------------------------------
    @classmethod
    def open(cls, folder: str | Path, *, model: str | None = None, embedder=None, workspace=None, vectors=None,
             **options) -> "Session":
        """Open (or start) the chat stored in ``folder``; it resumes where it stopped.

        ``model`` defaults to the one the stored chat used; ``workspace`` confirms the
        session's workspace root and ``vectors`` names its vector store, as in :meth:`Loom.open`.
        """
        folder = Path(folder)
        state = read_chat(folder)  # a broken chat.json fails before anything else is read
        decisions = DecisionGraph.load(folder)
        model = model or (state or {}).get("model")
        if not model:
            raise LoomError(f"{folder}: no chat stored here yet; give a model (--model llama3.2, or model='llama3.2')")
        loom = Loom.open(folder, embedder=embedder, workspace=workspace, vectors=vectors)
        session = cls(loom, model=model, **options)
        session.decisions = decisions
        if state:
            try:
                session.messages = [Message(**{**m, "content": mask_secrets(m["content"])[0]}) for m in state["messages"]]
                session.turns = [Turn.from_dict({**t, "query": mask_secrets(t["query"])[0], "answer": mask_secrets(t.get("answer", ""))[0]})
                                 for t in state["turns"]]
                session.summaries = [{**s, "text": mask_secrets(s["text"])[0]} for s in state["summaries"]]
                session._summarised = int(state["summarised"])
            except (TypeError, ValueError, KeyError) as exc:
                raise SessionFormatError(folder / CHAT_FILE, f"malformed message or turn: {exc}") from None
        session._opened = session._state_key()
        session._graph_seen = session._graph_file_key()
        return session

    @property
    def folder(self) -> Path | None:
        return self.loom.folder

    def _state_key(self) -> tuple:
        return (len(self.turns), len(self.summaries), json.dumps(self.decisions.to_dict(), sort_keys=True))

    @property
    def changed_since_open(self) -> bool:
        """Whether a turn, a summary or a decision was added since the session was opened
        (a chat that failed to start must leave its folder as it was)."""
        return self._state_key() != self._opened

    def save(self) -> Path:
        """Write graph, chat and decisions atomically (waits for the indexer first)."""
        self.wait()
        return self._save()

    def _save(self) -> Path:
        if self.folder is None:
            raise LoomError("this session has no folder: open it with Session.open(folder, ...)")
        self.loom.save()
        self._graph_seen = self._graph_file_key()
        self.decisions.save(self.folder)
        return write_chat(self.folder, {
            "model": self.model, "messages": [asdict(m) for m in self.messages],
            "turns": [t.to_dict() for t in self.turns], "summaries": self.summaries, "summarised": self._summarised,
        })

    def wait(self) -> None:
        """Wait for the post-processing indexer (if a turn's answer is still being indexed).

        Raises what saving the last turn raised (a
        :class:`~loom_nb.core.errors.SessionConflictError` when another session saved the
        folder meanwhile), once, after taking that turn back out of the session."""
        pending, self._pending = self._pending, None
        if pending is not None:
            future, undo = pending
            try:
                future.result()
            except Exception as exc:  # indexing failures are logged there: this is the save
                raise self._drop_turn(undo, exc) from exc

    def _graph_file_key(self) -> tuple | None:
        """What tells one save of the folder's graph.json from another (every save replaces it)."""
        try:
            stat = (self.folder / GRAPH_FILE).stat() if self.folder is not None else None
        except OSError:
            return None
        return None if stat is None else (stat.st_ino, stat.st_mtime_ns, stat.st_size)

    def _check_folder(self) -> None:
        """Refuse a turn that could not be saved: two sessions on one folder, one saved after
        the other was read, lost every later turn of the other (only a log line said why)."""
        key = self._graph_file_key()
        if self.folder is None or key == self._graph_seen:
            return
        try:
            check_not_replaced(self.loom.graph, self.folder)
        except SessionConflictError as exc:
            raise SessionConflictError(
                f"this message was not sent: {self.folder} was saved by another chat or process since this session "
                "read it, so this session's turns can no longer be saved there; open it again (Session.open, or "
                "a new `loom-nb chat`) to go on from what it holds now") from exc
        self._graph_seen = key  # saved by this session's own Loom (loom.save()): still ours

    def _drop_turn(self, undo: tuple, exc: BaseException) -> LoomError:
        """Take a turn whose save failed back out of the session; the error that says so."""
        checkpoint, before, turns, messages = undo
        number = self.turns[turns].number if len(self.turns) > turns else turns + 1
        checkpoint.rollback()
        decisions, summaries, self._summarised = before
        self.decisions.restore(decisions)
        del self.summaries[summaries:]
        del self.turns[turns:]
        del self.messages[messages:]
        kind = SessionConflictError if isinstance(exc, SessionConflictError) else LoomError
        error = kind(f"saving turn {number} failed, so it was taken back out of this session: {exc}")
        self.last_error = error
        return error

    def close(self) -> None:
        """Wait for the indexer and stop it, then save what changed since the session was
        opened (a decision added after the last answer too); a closed session refuses to send."""
        self._closed = True
        try:
            self.wait()
        finally:
            if self._executor is not None:
                self._executor.shutdown(wait=True)
        if self.folder is not None and self.changed_since_open:
            self._save()

    @property
    def closed(self) -> bool:
        return self._closed

    # -- the server --------------------------------------------------------------------------
    @property
    def timeouts(self) -> Timeouts:
        """The limits of this session's Ollama calls (see the ``timeouts`` parameter); set them
        before the first call, as ``loom-nb chat --first-token-timeout`` does, for the client
        this session makes to use them too."""
        return self._timeouts or Timeouts.from_config(self.loom.graph.config)

    @timeouts.setter
    def timeouts(self, value: Timeouts) -> None:
        self._timeouts = value

    @property
    def client(self):
        if self._client is None:
            self._client = ollama_client(self.host, self.timeouts)
        return self._client

    def connect(self) -> ContextWindow:
        """Ask Ollama for the model's window and capabilities (once per session).

        Raises :class:`~loom_nb.core.errors.OllamaUnavailableError` (no server: start it with
        ``ollama serve``) or :class:`~loom_nb.core.errors.ModelNotFoundError` (``ollama pull``).
        """
        if self._window is None:
            show = watched_call(lambda: self.client.show(self.model), self.timeouts, model=self.model,
                                host=self.host, what="/api/show")
            window = parse_show(self.model, show)
            if self.window_override:
                if window.max_context and self.window_override > window.max_context:
                    # a prompt planned for more than the model reads would be cut from the front
                    log.warning("a window of %s tokens is more than %s reads (%s): turns are planned for %s",
                                f"{int(self.window_override):,}", self.model, f"{window.max_context:,}",
                                f"{window.max_context:,}")
                    window = ContextWindow(self.model, window.max_context, window.max_context, "given, capped at the maximum")
                else:
                    window = ContextWindow(self.model, int(self.window_override), window.max_context, "given")
            data = show.model_dump() if hasattr(show, "model_dump") else dict(show)
            capabilities = data.get("capabilities") or []
            self._tools = ("tools" in capabilities) if self.tools_setting == "auto" else bool(self.tools_setting)
            self._window = window
        return self._window

    @property
    def uses_tools(self) -> bool:
        """Whether callbacks go through the ``load_context`` tool (else the marker)."""
        self.connect()
        return bool(self._tools) and self.max_callbacks > 0

    # -- one turn ----------------------------------------------------------------------------
    def send(self, text: str, *, on_token: Callable[[str], None] | None = None, echo: bool = False) -> Turn:
        """Send one user message; stream the answer (``on_token`` per piece, or ``echo`` it).

        Returns the :class:`Turn`, with the zones, what was loaded and the accounting. A turn
        that fails (an Ollama error, a timeout, an exception raised by ``on_token``, Ctrl-C)
        raises and leaves the session, its graph and its folder as they were.
        """
        if self._closed:
            raise LoomError("this session is closed: open it again with Session.open(folder) to go on")
        if not isinstance(text, str):
            raise TypeError(f"send takes the message as a str, got {type(text).__name__} (decode bytes first)")
        if not text.strip():
            raise LoomError("the message is empty")
        # a lone surrogate (bytes decoded with surrogateescape, a broken JSON string) cannot be
        # encoded for the request: the turn failed inside the client, blamed on Ollama
        text = _LONE_SURROGATE.sub("\ufffd", text)
        text = mask_secrets(text)[0]  # as sent, stored and shown: the user's credentials are masked too
        if echo and on_token is None:
            on_token = lambda piece: print(piece, end="", flush=True)  # noqa: E731
        self.wait()
        self._check_folder()  # before the model is paid for a turn that could not be saved
        window = self.connect()  # fails before anything is changed when no server answers
        started = time.perf_counter()
        number = len(self.turns) + 1
        checkpoint = GraphCheckpoint.take(self.loom)
        before = (self.decisions.to_dict(), len(self.summaries), self._summarised)
        try:
            self.decisions.turn = number
            input_ids = self.loom.add(text, type="input", source="user", meta={"turn": number}).ids
            turn, messages, tools, question = self._plan(text, number, window.num_ctx, input_ids)
            conversation = Conversation(self.loom, lambda: self.client, self.model, self.host, self.timeouts, self.zones,
                                        self.max_callbacks, record=self._record_decision)
            conversation.converse(turn, messages, tools, question, on_token)
            turn.answer = mask_secrets(_LONE_SURROGATE.sub("\ufffd", turn.answer))[0]  # streamed as written; kept, indexed and sent again masked
        except BaseException:  # the failed turn leaves no trace: nodes, clock, marks, summaries, decisions
            checkpoint.rollback()
            decisions, summaries, self._summarised = before
            self.decisions.restore(decisions)
            del self.summaries[summaries:]
            raise
        turn.seconds = time.perf_counter() - started
        undo = (checkpoint, before, len(self.turns), len(self.messages))  # a save that fails takes the turn back
        self.turns.append(turn)
        self._emit_turn(turn)
        self.messages.append(Message("user", text, number, count_tokens(text), input_ids))
        answer = Message("assistant", turn.answer, number, count_tokens(turn.answer))
        self.messages.append(answer)
        if self._executor is not None:
            self._pending = (self._executor.submit(self._index_answer, turn, answer), undo)
        else:
            try:
                self._index_answer(turn, answer)
            except Exception as exc:
                raise self._drop_turn(undo, exc) from exc
        return turn

    def _record_decision(self, kind: str, text: str, links: list[str]) -> str:
        """A model's ``record_decision`` call: the node, linked from the decisions it names
        (``leads_to``), stamped with the model's name and the turn. Returns its id."""
        node_id = self.decisions.add(kind, text, by=f"model:{self.model}")
        for source in links:
            self.decisions.link(source, node_id, "leads_to")
        return node_id

    def _emit_turn(self, turn: Turn) -> None:
        """Telemetry (when on): a ``chat request`` event per call, a ``callback`` per node asked for."""
        for k, call in enumerate(turn.calls, 1):
            self.loom.emit("chat request", call.seconds, model=self.model, turn=turn.number, call=k, window=turn.window,
                           estimated_prompt=call.estimated_prompt, prompt_eval_count=call.prompt_eval_count,
                           eval_count=call.eval_count, requested=list(call.requested))
        for callback in turn.callbacks:
            self.loom.emit("callback", 0.0, turn=turn.number, node_id=callback.get("node_id"), via=callback.get("via"),
                           status=callback.get("status"))

    def _plan(self, text: str, number: int, window: int,
              input_ids: list[str]) -> tuple[Turn, list[dict[str, Any]], list | None, str]:
        """Plan the turn with :func:`loom_nb.chat.planner.plan_turn`, as ``loom-nb eval`` does.

        Returns the turn, the first call's messages, the tools offered and the message as
        sent (clipped, with a warning, when it did not fit the window)."""
        z = self.zones
        tools = ([LOAD_CONTEXT_TOOL] + ([SEARCH_CONTEXT_TOOL, RECORD_DECISION_TOOL] if window >= EXPLORE_FROM_WINDOW else [])
                 if self.uses_tools else None)
        callbacks_on = self.max_callbacks > 0
        system_text = self.system_prompt
        if callbacks_on and not tools:
            system_text += "\n\n" + MARKER_INSTRUCTIONS
        query = Query(text, [{"role": m.role, "content": m.content} for m in self.messages[-2:]])
        try:
            plan = plan_turn(
                self.loom, query, window=window, select_history=lambda cap: self._history(cap, window),
                system_prompt=system_text, rules_text=self.project_rules().render(z.rules_cap(window)),
                decision_text=self.decisions.render(z.decision_cap(window)),
                workspace_text=self.workspace_summary(z.workspace_cap(window)), tools=tools,
                callbacks=callbacks_on, shares=z, exclude=input_ids, record=True,
            )
        except ValueError as exc:  # the fixed zones fill the window
            raise LoomError(str(exc)) from None
        turn = Turn(number, text, window, plan.zones, loaded=list(plan.result.loaded), offered=plan.offered,
                    input_nodes=list(input_ids), history_messages=len(plan.history), result=plan.result,
                    messages=plan.messages, summary_node=self.summaries[-1]["node_id"] if plan.summary_ids else None)
        return turn, plan.messages, tools, plan.message or text

    def _history(self, cap: int, window: int) -> tuple[list[Message], str, list[str]]:
        """Newest-first messages within ``cap``; summarise what falls out; the summary text."""
        kept = window_history(self.messages, cap)
        used = sum(m.cost() for m in kept)
        first_kept = len(self.messages) - len(kept)
        if first_kept > self._summarised:
            # summarise a block of at least summary_block messages (fewer, fuller summaries,
            # fewer model calls); kept messages it covers leave the history with it
            end = max(first_kept, min(self._summarised + self.summary_block, len(self.messages) - 2))
            self._summarise(self._summarised, end, window)
            kept = self.messages[max(end, first_kept):]
            used = sum(m.cost() for m in kept)
        # the newest summaries that fit in what history left, oldest first in the text
        texts, ids, left = [], [], cap - used - MESSAGE_OVERHEAD
        for summary in reversed(self.summaries):
            cost = count_tokens(summary["text"]) + 2
            if cost > left:
                break
            texts.insert(0, summary["text"])
            ids.append(summary["node_id"])
            left -= cost
        return kept, "\n\n".join(texts), ids

    def _summarise(self, start: int, end: int, window: int) -> None:
        """Summarise messages[start:end] into a summary node (once; it can be loaded later)."""
        dropped = self.messages[start:end]
        first, last = dropped[0].turn, dropped[-1].turn
        span = f"turn {first}" if first == last else f"turns {first}-{last}"
        body, by = None, "extractive"
        if self.summarize == "model":
            body = self._model_summary(dropped, window)
            by = "model" if body else "extractive"
        if not body:
            body = extractive_summary(dropped)
        text = mask_secrets(f"Summary of {span} (earlier in this chat):\n{body.strip()}")[0]
        node = self.loom.add(text, type="summary", source=f"model:{self.model}" if by == "model" else "loom-nb",
                             reason=f"{span} fell out of the history window", split=False,
                             meta={"turns": [first, last]}).nodes[0]
        self.summaries.append({"first_turn": first, "last_turn": last, "messages": [start, end],
                               "node_id": node.id, "text": text, "by": by})
        self._summarised = end

    def _model_summary(self, dropped: list[Message], window: int) -> str | None:
        transcript = mask_secrets("\n".join(f"{m.role}: {m.content}" for m in dropped))[0]
        # keep the request inside the window, whatever the text's characters per token
        transcript = truncate_to_tokens(transcript, max(window // 2, 256))
        prompt = ("Summarise this earlier part of a conversation in at most 120 words. Keep decisions, "
                  "file and function names, numbers and open questions.\n\n" + transcript)
        messages = [{"role": "user", "content": prompt}]
        try:
            options = {"num_ctx": window, "num_predict": SUMMARY_MAX_TOKENS}
            stream = WatchedStream(lambda: self.client.chat(self.model, messages, stream=True, options=options),
                                   self.timeouts, model=self.model, host=self.host, what="a summary")
            with stream:
                text = "".join(part.message.content or "" for part in stream)
            return text.strip() or None
        except OllamaUnavailableError:
            raise  # no server, or a stalled one: fail the turn now instead of waiting on it twice
        except Exception as exc:  # degrade: an extractive summary is still a summary
            log.info("model summary failed (%s); summarising extractively", exc)
            return None

    def _index_answer(self, turn: Turn, message: Message) -> None:
        """The post-processing indexer: the answer becomes nodes, then the session is saved.

        An answer that cannot be indexed stays in the history (logged); a save that fails
        raises, and the turn is taken back out (:meth:`_drop_turn`)."""
        try:
            index_answer(self.loom, self.model, turn, message)
        except Exception as exc:
            self.last_error = exc
            log.warning("indexing the answer of turn %d failed (it stays in the chat, unindexed): %s", turn.number, exc)
        if self.folder is not None:
            self._save()

    # -- the repo map zone -----------------------------------------------------------------------
    def project_rules(self) -> "ProjectRules":
        """The workspace's standing instructions (``.loom.toml`` or ``LOOM.md`` at its root),
        read again when the file changes; a malformed file is logged once and left out."""
        rules = self._rules.current(self.loom.graph.workspace)
        if rules.error and rules.error != self._rules_error:
            log.warning("%s", rules.error)
        self._rules_error = rules.error
        return rules

    def workspace_summary(self, max_tokens: int) -> str:
        """A repo map for the workspace zone: files most referenced by others first, with
        their symbols, within ``max_tokens``. Empty when nothing was indexed.

        In-degree over import and reference edges from other files stands in for aider's
        PageRank: cheap, and it puts the modules everything leans on at the top. Edges within a
        file (a call to its own helper, the parts of a long class) say nothing of its use.
        """
        graph = self.loom.graph
        state = graph.metadata.get("workspace") or {}
        files = {path: info["nodes"] for path, info in (state.get("files") or {}).items() if info.get("nodes")}
        if not files:
            return ""
        # chat turns add no files: the map only changes when the workspace is (re)indexed
        key = (state.get("commit"), len(files), sum(map(len, files.values())), graph.structure_count, max_tokens)
        if self._workspace_cache is not None and self._workspace_cache[0] == key:
            return self._workspace_cache[1]
        arrays = graph.arrays()
        paths = arrays.paths
        used_by = Counter(paths[int(b)] for a, b in zip(arrays.structure_a, arrays.structure_b) if paths[int(a)] != paths[int(b)])
        ranked = sorted(files, key=lambda p: (-used_by.get(p, 0), p))
        name = escape_path(Path(state.get("root", "")).name)  # names go in as data: none may break a line
        lines = [f"Workspace {name} ({len(files)} files), most used first:"]
        used = count_tokens(lines[0])
        for path in ranked:
            titles = [graph.node(node_id).title for node_id in files[path][:8] if node_id in graph]
            line = f"- {escape_path(path)}: " + "; ".join(escape_path(" ".join(t.split())[:60]) for t in titles)
            cost = count_tokens(line) + 1
            if used + cost > max_tokens:
                break
            lines.append(line)
            used += cost
        text = "\n".join(lines) if len(lines) > 1 else ""
        self._workspace_cache = (key, text)
        return text

    # -- accounting --------------------------------------------------------------------------
    def accounting(self) -> list[dict[str, Any]]:
        """Per turn: estimated prompt tokens against Ollama's counts, output and zones.

        ``prompt_eval_count`` can be lower than the prompt, or missing, when Ollama reuses
        its cache for a prompt prefix (ollama/ollama#2068, #3427); ``error`` is then not a
        measure of the estimate.
        """
        rows = []
        for t in self.turns:
            actual = t.actual_prompt
            rows.append({
                "turn": t.number, "window": t.window, "estimated prompt": t.estimated_prompt,
                "reported prompt": actual,
                "error %": None if not actual else round(100.0 * (t.estimated_prompt - actual) / actual, 1),
                "reserved output": t.zones["reserved output"], "output": t.output_tokens,
                "history": t.zones["history"], "context": t.zones["context"], "loaded": len(t.loaded),
                "callbacks": len(t.callbacks), "calls": len(t.calls), "seconds": round(t.seconds, 2),
            })
        return rows

    def accounting_table(self) -> "AccountingTable":
        """:meth:`accounting` as a table that prints in a terminal and draws in a notebook."""
        return AccountingTable(self.accounting())

    def accounting_figure(self):
        """plotly: estimated against reported prompt tokens per turn, and output against reserved."""
        return accounting_figure(self.accounting())

    # -- display -----------------------------------------------------------------------------
    def __str__(self) -> str:
        where = self.folder or "(memory)"
        lines = [f"Session with {self.model} in {where}: {len(self.turns)} turns, {len(self.messages)} messages, "
                 f"{len(self.summaries)} summaries, {len(self.decisions)} decision nodes"]
        for m in self.messages[-6:]:
            lines.append(f"  [{m.turn}] {m.role}: {' '.join(m.content.split())[:100]}")
        return "\n".join(lines)

    def __repr__(self) -> str:
        return f"<Session {self.model}: {len(self.turns)} turns>"

    def _repr_html_(self) -> str:
        table = html_table(["turn", "role", "message", "nodes"],
                           [[m.turn, m.role, m.content[:600], ", ".join(m.node_ids)] for m in self.messages])
        return f"{TABLE_STYLE}<div class='loom-session'><b>{html.escape(str(self).splitlines()[0])}</b>{table}</div>"
