"""One turn's exchange with the model: the streamed request, the callbacks the model asks for
(a ``load_context`` tool call, or a ``[[load: ID]]`` marker), served within the window, and
the follow-up requests that carry them (seed 000 §11).

The :class:`~loom_nb.chat.session.Session` plans the turn and keeps its state; this object
only talks: it reads the graph for callback bodies and marks what it served as accessed.
"""

from __future__ import annotations

import logging
import re
import time
from typing import Any, Callable

from ..core.errors import LoomError
from ..core.pack import one_line
from ..core.prompt import BLOCK_END
from ..core.prompt_safety import escape_evidence
from ..core.secrets import mask_secrets
from ..core.tokens import count_tokens, truncate_to_tokens
from ..ollama import Timeouts, WatchedStream
from .planner import message_tokens
from .turns import ChatCall, Turn

log = logging.getLogger(__name__)

MARKER = re.compile(r"\[\[load:\s*([A-Za-z0-9_.:-]+)\s*\]\]")

TOOL_NAMES = ("load_context", "search_context", "record_decision")
"""The tools a turn serves; each call counts against the turn's callback limit and allowance."""


def _ask_of(call) -> str:
    """What a tool call asks for, as the turn's records name it: a node id, ``search: …`` or
    ``decision: …``; masked, as everything a model writes is before it is kept or sent again."""
    arguments = call.function.arguments or {}
    if call.function.name == "search_context":
        return mask_secrets(f"search: {' '.join(str(arguments.get('query', '')).split())[:80]}")[0]
    if call.function.name == "record_decision":
        return mask_secrets(f"decision: {arguments.get('type', '')}")[0]
    return mask_secrets(str(arguments.get("node_id", "")))[0]


def _masked(value: Any) -> Any:
    """A tool call's arguments with every string in them masked (keys and shape kept)."""
    if isinstance(value, str):
        return mask_secrets(value)[0]
    if isinstance(value, dict):
        return {key: _masked(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_masked(item) for item in value]
    return value


def _sent_call(call) -> dict[str, Any]:
    """A tool call as the follow-up carries it back to the model: a credential the model put in
    an argument (a search query, a node id) goes back masked, as its text does."""
    data = call.model_dump()
    function = data.get("function") or {}
    if function.get("arguments"):
        function["arguments"] = _masked(function["arguments"])
    return data

OVERRUN = 1.25
"""How far past its ``num_predict`` (by loom-nb's token estimate) an answer is read before it is
cut here: a server that ignores the cap (a proxy, an old Ollama) must not stream forever, and
the model's tokenizer counts differently from ours."""

FOLLOW_UP_TEXT_MAX = 200
"""Tokens of words a follow-up after a callback repeats: the question (restated after the
served nodes when the model asked by marker) and what the model wrote before it asked. A
longer question is named ("the question above": it is in the first message already), a
longer preamble is cut to the ask itself; repeating them whole took 9 of 191 calls past
``num_ctx`` (issue 13)."""


class Conversation:
    """The model side of a turn, given what it needs and nothing more.

    Parameters
    ----------
    loom : Loom
        Where callback bodies are read and served nodes marked accessed.
    client : callable
        Returns the Ollama client (made lazily by the session, on first use).
    model, host : str
    timeouts : Timeouts
    zones : Zones
        For ``callback_share``: how much of the answer's reservation callbacks may use.
    max_callbacks : int
    """

    def __init__(self, loom, client: Callable[[], Any], model: str, host: str | None, timeouts: Timeouts, zones,
                 max_callbacks: int, record: Callable[[str, str, list[str]], str] | None = None):
        self.loom, self.client, self.model, self.host = loom, client, model, host
        self.timeouts, self.zones, self.max_callbacks = timeouts, zones, max_callbacks
        self.record = record

    def call(self, messages: list[dict[str, Any]], tools: list | None, window: int,
             on_token: Callable[[str], None] | None, stop_at_marker: bool, num_predict: int) -> tuple[str, list, Any]:
        """One streamed request: its text, its tool calls, and its final part (None when it
        was stopped at a ``[[load: ID]]`` marker, or cut past ``num_predict``). Ollama's faults
        raise one-line errors.

        ``num_predict`` caps the answer's tokens: Ollama's default (-1) lets a looping model
        generate until it is stopped. Past :data:`OVERRUN` times the cap the stream is cut here."""
        sent = list(messages)
        options = {"num_ctx": window, "num_predict": num_predict}
        stream = WatchedStream(
            lambda: self.client().chat(self.model, sent, tools=tools, stream=True, options=options),
            self.timeouts, model=self.model, host=self.host, what="the answer")
        text, tool_calls, final = "", [], None
        check_at = num_predict  # characters: a token is at least one, so counting starts here
        with stream:  # leaving early (a marker, an exception in on_token) drops the connection
            for part in stream:
                piece = part.message.content or ""
                if piece:
                    text += piece
                    if on_token is not None:
                        on_token(piece)
                    if len(text) > check_at:
                        over = count_tokens(text) - int(num_predict * OVERRUN)
                        if over > 0:
                            log.warning("the answer from %r ran past its %d reserved tokens and was cut "
                                        "(the server did not stop at num_predict)", self.model, num_predict)
                            break
                        check_at = len(text) + max(-over, 16)  # no fewer characters than tokens to go
                if part.message.tool_calls:
                    tool_calls.extend(part.message.tool_calls)
                if part.done:
                    final = part
                elif stop_at_marker and piece and MARKER.search(text, max(len(text) - len(piece) - 100, 0)):
                    break  # the model asked for a node: stop here and serve it
        return text, tool_calls, final

    def converse(self, turn: Turn, messages: list[dict[str, Any]], tools: list | None, question: str,  # noqa: C901 - the streaming loop with its callbacks, each branch one server event
                  on_token: Callable[[str], None] | None) -> None:
        """Call the model; serve up to ``max_callbacks`` callbacks; fill in the turn.

        A follow-up request carries the first one, what the model wrote and what it was
        given. Served text comes out of one allowance per turn (``callback_share`` of the
        answer's reservation), and no follow-up grows past ``window − (reservation −
        allowance)``: the answer keeps the rest of its room, and every request fits the window.

        Length: one loop over the stream, a branch per server event (text, tool call, marker,
        done); split, the events lose their order.
        """
        available = set(turn.offered)
        reserved = turn.zones["reserved output"]
        allowance = int(reserved * self.zones.callback_share)  # shared by all of a turn's callbacks
        ceiling = turn.window - (reserved - allowance)
        tool_tokens = turn.zones["tool definitions"]
        via = "tool" if tools else "marker"
        left = self.max_callbacks
        messages = list(messages)
        restate = f"Now answer: {question}" if count_tokens(question) <= FOLLOW_UP_TEXT_MAX else \
            "Now answer the question above."
        while True:
            estimated = message_tokens(messages) + tool_tokens
            started = time.perf_counter()
            # the answer's reservation, or what is left of the window after a follow-up's callbacks
            num_predict = max(min(reserved, turn.window - estimated), 16)
            text, tool_calls, final = self.call(messages, tools, turn.window, on_token, not tools and left > 0, num_predict)
            asks = [(_ask_of(c), c) for c in tool_calls if c.function.name in TOOL_NAMES] if tools else \
                [(mask_secrets(r)[0], None) for r in MARKER.findall(text)]
            requested = [node_id for node_id, _ in asks]
            turn.calls.append(ChatCall(estimated, getattr(final, "prompt_eval_count", None),
                                       getattr(final, "eval_count", None), time.perf_counter() - started, requested))
            if not requested:
                turn.answer = text if text.strip() else self.no_answer(tool_calls, on_token)
                return
            if left <= 0:  # over the limit: whatever it said is the answer
                self.refuse(turn, text, requested, via, "refused: callback limit reached")
                return
            said = mask_secrets(text)[0] if count_tokens(text) <= FOLLOW_UP_TEXT_MAX else \
                ("" if tools else " ".join(f"[[load: {r}]]" for r in requested))  # a long preamble: the ask alone

            def follow_up(calls: list, bodies: list[str]) -> list[dict[str, Any]]:
                """The next request: this one, what the model said (and the calls answered), what it got."""
                if tools:
                    carried = {"role": "assistant", "content": said, "tool_calls": [_sent_call(c) for c in calls]}
                    return messages + [carried] + [{"role": "tool", "content": b, "tool_name": c.function.name}
                                                   for c, b in zip(calls, bodies)]
                return messages + [{"role": "assistant", "content": said},
                                   {"role": "user", "content": "\n\n".join(bodies) + f"\n\n{restate}"}]

            def fits(calls: list, bodies: list[str]) -> int:
                """Tokens left under the ceiling with this follow-up (negative: over it)."""
                return ceiling - tool_tokens - message_tokens(follow_up(calls, bodies))

            calls, bodies, served = [], [], []
            for position, (node_id, call) in enumerate(asks):
                if left <= 0:
                    break
                extra = [call] if tools else []
                room = fits(calls + extra, bodies + [""]) - 2  # 2: where the texts join
                body, status, tokens = self.serve(node_id, call, available, min(allowance, room), exclude=turn.loaded)
                if fits(calls + extra, bodies + [body]) < 0:  # a note does not fit where a body did not
                    body, status, tokens = f"[{node_id}] does not fit in the window.", "refused: the window is full", 0
                if fits(calls + extra, bodies + [body]) < 0:  # not even that: stop serving here
                    served += [{"node_id": n, "via": via, "status": "refused: the window is full", "tokens": 0}
                               for n, _ in asks[position:]]
                    break
                left -= 1
                if status.startswith("loaded"):
                    available.discard(node_id)  # served once; asking again is refused
                allowance -= tokens  # a node, a search's pack or a decision's note: one allowance
                calls += extra
                bodies.append(body)
                served.append({"node_id": node_id, "via": via, "status": status, "tokens": tokens})
            if not bodies:  # nothing fits beside what the window holds already
                self.refuse(turn, text, requested, via, "refused: the window is full")
                return
            turn.callbacks.extend(served)
            for callback in served:
                if callback["status"].startswith("loaded"):
                    self.loom.graph.mark_accessed([callback["node_id"]])
                if on_token is not None:
                    on_token(f"\n[loom-nb: {callback['node_id']} {callback['status']}]\n")
            messages = follow_up(calls, bodies)

    @staticmethod
    def no_answer(tool_calls: list, on_token: Callable[[str], None] | None) -> str:
        """A note that stands for an answer with no text (a call to a tool this turn does not
        serve, or a bare ``done``): stored and shown, so the user and the next turn see what
        happened instead of an empty message."""
        names = sorted({mask_secrets(one_line(str(c.function.name)))[0][:60] for c in tool_calls})
        note = (f"(no answer: the model called {', '.join(names)}, which loom-nb does not serve)" if names
                else "(no answer: the model sent no text)")
        if on_token is not None:
            on_token(note)
        return note

    @staticmethod
    def refuse(turn: Turn, text: str, requested: list[str], via: str, status: str) -> None:
        """End the turn without serving ``requested``: what the model wrote is the answer."""
        turn.answer = MARKER.sub("", text).strip() or f"(the model asked for more context: {status})"
        turn.callbacks.append({"node_id": ", ".join(requested), "via": via, "status": status, "tokens": 0})

    def serve(self, ask: str, call, available: set[str], cap: int, exclude: list[str]) -> tuple[str, str, int]:
        """What one ask gets: a node (``load_context``, or a marker), a context pack
        (``search_context``), or a recorded decision (``record_decision``)."""
        name = call.function.name if call is not None else "load_context"
        if name == "search_context":
            return self.search_text(str((call.function.arguments or {}).get("query", "")), cap, exclude)
        if name == "record_decision":
            return self.decision_text(call.function.arguments or {})
        return self.callback_text(ask, available, cap)

    def search_text(self, query: str, cap: int, exclude: list[str]) -> tuple[str, str, int]:
        """The engine run on the model's own question: a small context pack within ``cap``
        (what the turn already loaded is not found again)."""
        query = mask_secrets(query)[0]  # the model's words: searched, and named back to it, masked
        if not query.strip():
            return "search_context needs a query.", "refused: empty query", 0
        head = f"--- [search: {one_line(query)[:120]}] ---\n"
        tail = f"\n{BLOCK_END}"
        room = cap - count_tokens(head + tail) - 16
        if room < 64:
            return "search_context does not fit: the callback allowance of this turn is spent.", "refused: allowance spent", 0
        result = self.loom.query(query, budget=room, record=False, exclude=list(exclude),
                                 exclude_reason="already in this turn's context")
        pack = result.pack(max_items=3, lines_around=2, max_snippet_chars=400).prompt_text()  # escaped evidence
        if count_tokens(pack) > room:
            pack = truncate_to_tokens(pack, room) + "\n… (cut to fit)"
        body = f"{head}{pack}{tail}"
        return body, f"searched: {len(result.loaded)} item(s)", count_tokens(body)

    def decision_text(self, arguments: dict) -> tuple[str, str, int]:
        """Record the model's decision (when the session gave a recorder) and say so."""
        if self.record is None:
            return "record_decision is not available here.", "refused: no decision graph", 0
        kind, text = str(arguments.get("type", "")), str(arguments.get("text", ""))
        links = [str(x) for x in arguments.get("links") or [] if isinstance(x, (str, int))]
        try:
            node_id = self.record(kind, text, links)
        except LoomError as exc:
            return f"record_decision failed: {exc}", f"failed: {exc}", 0
        body = f"Recorded {kind} {node_id}: {' '.join(mask_secrets(text)[0].split())[:200]}"
        return body, f"recorded {node_id}", count_tokens(body)

    def callback_text(self, node_id: str, available: set[str], cap: int) -> tuple[str, str, int]:
        """The text served for a callback, its status and its tokens (within ``cap``)."""
        if node_id not in available:
            return (f"[{node_id}] is not in the 'Available on request' list (or was already given).",
                    "refused: not offered", 0)
        frame = f"--- [{node_id}]  () ---\n\n{BLOCK_END}"
        if cap - count_tokens(frame) < 32:
            return f"[{node_id}] does not fit: the callback allowance of this turn is spent.", "refused: allowance spent", 0
        try:
            node = self.loom.graph.node(node_id)
            text = escape_evidence(self.loom.graph.text(node_id))  # as in pack: a body cannot forge a frame
        except LoomError as exc:
            return f"[{node_id}] could not be loaded: {exc}", f"failed: {exc}", 0
        status = "loaded"
        marker = one_line(node_id)  # like the manifest: an id or title cannot forge a line
        head = f"--- [{marker}] {one_line(node.title)} ({node.type}) ---\n"
        tail = f"\n{BLOCK_END}"
        cap -= count_tokens(head + tail) + 16  # the frame and the cut note come out of the cap
        if node.tokens > cap:  # the top of the node, ending on a whole line when one is near
            cut = truncate_to_tokens(text, max(cap, 0))
            if "\n" in cut[len(cut) // 2:]:
                cut = cut[: cut.rfind("\n") + 1]
            text = cut + f"\n… (cut at {cap} tokens of {node.tokens})"
            status = "loaded (cut to fit)"
        body = f"{head}{text}{tail}"
        return body, status, count_tokens(body)
