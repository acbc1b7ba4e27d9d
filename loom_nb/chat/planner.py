"""The turn planner: from a message and the conversation so far to the first call's messages.

A :class:`~loom_nb.chat.session.Session` plans every turn here, and ``loom-nb eval`` plans its
follow-up cases (cases with a ``history``) here too, with no model: what a chat turn loads
is measured by the code that loads it.

One plan:

1. the window is split into zones by :func:`loom_nb.core.budget.plan_window` (the module
   :meth:`Loom.query(window=…) <loom_nb.core.engine.Loom.query>` uses as well);
2. history is kept newest first within its zone (:func:`window_history`; a session also
   summarises what falls out);
3. the engine ranks against a :class:`~loom_nb.core.query.Query` that carries the message
   and the history as separate fields, and never loads the message itself or what is
   already in the history window;
4. relevant nodes the budget left out are listed under *Available on request*.

A message too large for the window is clipped to half the room the fixed zones leave
(its head and tail: :func:`loom_nb.core.prompt_safety.clip_message`,
:data:`~loom_nb.core.prompt_safety.CLIPPED_MESSAGE_SHARE`), with a logged warning, so the
turn still has room for history and evidence.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Sequence

from ..core.budget import WindowPlan, Zones, plan_window, window_history  # window_history: importable from here as before
from ..core.prompt_safety import CLIPPED_MESSAGE_SHARE, clip_message
from ..core.query import Query
from ..core.secrets import mask_secrets
from ..core.pack import MESSAGE_OVERHEAD, SAME_TEXT
from ..core.tokens import count_tokens

log = logging.getLogger(__name__)


@dataclass
class Message:
    """One chat message as stored: who said it, in which turn, and its graph nodes."""

    role: str
    content: str
    turn: int
    tokens: int
    node_ids: list[str] = field(default_factory=list)

    def cost(self) -> int:
        return self.tokens + MESSAGE_OVERHEAD

    @classmethod
    def of(cls, role: str, content: str, turn: int = 0, node_ids: Sequence[str] = ()) -> "Message":
        """A message with its tokens counted."""
        return cls(role, content, turn, count_tokens(content), list(node_ids))


HistorySelector = Callable[[int], tuple[list[Message], str, list[str]]]
"""Given the history zone's cap in tokens: the messages kept, a summary text of older ones
(may be empty) and the ids of the summary nodes behind it."""


@dataclass
class TurnPlan:
    """What one turn will send, and the engine's decision behind it."""

    zones: dict[str, int]
    """Tokens per zone (they add up to the window; without a window, what was planned)."""
    result: Any
    """The engine's :class:`~loom_nb.core.engine.QueryResult`."""
    history: list[Message]
    summary_text: str
    summary_ids: list[str]
    available: str
    """The 'Available on request' list as it is sent ("" when off or empty)."""
    offered: list[str]
    messages: list[dict[str, Any]]
    """The first call's chat messages."""
    message: str = ""
    """The user's message as sent: clipped when it did not fit the window (else as given)."""


def plan_turn(
    loom,
    query: Query,
    *,
    window: int | None = None,
    budget: int | None = None,
    history: Sequence[Message] = (),
    select_history: HistorySelector | None = None,
    system_prompt: str = "",
    rules_text: str = "",
    decision_text: str = "",
    workspace_text: str = "",
    tools: list | None = None,
    callbacks: bool = False,
    shares: Zones | None = None,
    exclude: Sequence[str] = (),
    record: bool = False,
    mode: Any = None,
) -> TurnPlan:
    """Plan one chat turn: zones, history, the engine's context and the messages.

    Length: the turn's steps in order (mask, zones, history, context, messages), each a few
    lines that read the one before.

    Parameters
    ----------
    loom : Loom
    query : Query
        The message and the conversation before it.
    window : int, optional
        The model's window: every zone is planned from it (a session's way).
    budget : int, optional
        Instead of a window, the context zone in tokens (an evaluation's way: a case's
        budget is what the context may use); history is then kept whole.
    history : sequence of Message
        Earlier messages, oldest first, kept newest first within the history zone.
    select_history : callable, optional
        Replaces the plain windowing of ``history`` (a session summarises what falls out).
    exclude : sequence of str
        Node ids never to load (the message's own nodes); the history's nodes join them.
    """
    shares = shares or Zones()
    if (window is None) == (budget is None):
        raise ValueError("plan a turn from a window or from a context budget: give exactly one")
    # every text a request carries is masked before it is counted and sent: the message, the
    # fixed zones (rules, decisions) and, below, the history and its summary
    query = query.masked()
    system_prompt, rules_text, decision_text, workspace_text = (
        mask_secrets(t)[0] for t in (system_prompt, rules_text, decision_text, workspace_text))
    config = loom.graph.config
    complexity = loom.classify(query.message).complexity  # the message alone
    callbacks_on = bool(callbacks)
    system_full = "\n\n".join(p for p in (system_prompt, rules_text, decision_text, workspace_text) if p)
    select = select_history or (lambda cap: (window_history(history, cap), "", []))
    plan: WindowPlan | None = None
    if window is not None:
        def planned(query_tokens: int) -> WindowPlan:
            return plan_window(
                int(window), config=config, complexity=complexity,
                system_tokens=count_tokens(system_prompt) + MESSAGE_OVERHEAD, query_tokens=query_tokens,
                rules_tokens=count_tokens("\n\n" + rules_text) if rules_text else 0,
                decision_tokens=count_tokens("\n\n" + decision_text) if decision_text else 0,
                workspace_tokens=count_tokens("\n\n" + workspace_text) if workspace_text else 0,
                tool_tokens=count_tokens(json.dumps(tools)) if tools else 0,
                history=True, callbacks=callbacks_on, shares=shares,
            )

        frame = count_tokens("\n\nQuestion: ") + MESSAGE_OVERHEAD
        try:
            plan = planned(count_tokens(f"\n\nQuestion: {query.message}") + MESSAGE_OVERHEAD)
        except ValueError:
            room = planned(0).rest  # raises in turn when the fixed zones alone fill the window
            query = clip_to_window(query, int(room * CLIPPED_MESSAGE_SHARE) - frame, int(window))
            plan = planned(count_tokens(f"\n\nQuestion: {query.message}") + MESSAGE_OVERHEAD)
        kept, summary_text, summary_ids = select(plan.history_cap)
    else:
        kept, summary_text, summary_ids = select(10**9)
    summary_text = mask_secrets(summary_text)[0]
    history_tokens = sum(m.cost() for m in kept) + (count_tokens(summary_text) + MESSAGE_OVERHEAD if summary_text else 0)
    if plan is not None:
        plan = plan.with_history(min(history_tokens, plan.history_cap))
        context_budget, reserve = plan.context, plan.available_reserve
    else:
        context_budget, reserve = int(budget), (min(shares.available_max, int(budget) // 10) if callbacks_on else 0)
    # a node a message names may have gone since (removed, or dropped by a refresh): nothing to exclude then
    in_history = [n for n in [n for m in kept for n in m.node_ids] + list(summary_ids) if n in loom.graph]
    result = loom.query(
        query, budget=context_budget, record=record, callback=callbacks_on, mode=mode,
        exclude=list(exclude) + in_history, exclude_reason="already in this turn's messages (query or history)",
    )
    available, offered = available_list(result, reserve, shares.available_items) if callbacks_on else ("", [])
    context_tokens = count_tokens(result.context) if result.context else 0
    available_tokens = count_tokens("\n\n" + available) if available else 0
    if plan is not None:
        zones = plan.used(context=context_tokens, available=available_tokens)
    else:
        zones = {"history": history_tokens, "context": context_tokens, "available on request": available_tokens}
    parts = [p for p in (result.context, available) if p]
    user = "\n\n".join(parts) + f"\n\nQuestion: {query.message}" if parts else query.message
    messages: list[dict[str, Any]] = [{"role": "system", "content": system_full}]
    if summary_text:
        messages.append({"role": "system", "content": summary_text})
    messages += [{"role": m.role, "content": mask_secrets(m.content)[0]} for m in kept]
    messages.append({"role": "user", "content": user})
    result.messages = messages  # the result shows what the turn sends, not the engine's plain prompt
    return TurnPlan(zones, result, list(kept), summary_text, list(summary_ids), available, offered, messages,
                    query.message)


def clip_to_window(query: Query, max_tokens: int, window: int) -> Query:
    """``query`` with its message clipped to ``max_tokens``, and a warning that says so."""
    tokens = count_tokens(query.message)
    clipped = clip_message(query.message, max(max_tokens, 0))
    log.warning("the message is %s tokens, more than a %s-token window holds beside its fixed zones: sent "
                "clipped to %s tokens (its start and its end)", f"{tokens:,}", f"{window:,}",
                f"{count_tokens(clipped):,}")
    return Query(clipped, query.history)


def message_tokens(messages: Sequence[Mapping[str, Any]]) -> int:
    """Estimated prompt tokens of chat messages: each text and its tool calls (as JSON),
    plus :data:`~loom_nb.core.pack.MESSAGE_OVERHEAD` per message (tool definitions not included).

    >>> message_tokens([{"role": "user", "content": "hello world"}])
    6
    """
    total = 0
    for m in messages:
        total += count_tokens(str(m.get("content") or "")) + MESSAGE_OVERHEAD
        if m.get("tool_calls"):
            total += count_tokens(json.dumps(m["tool_calls"], default=str))
    return total


def available_list(result, reserve: int, items: int) -> tuple[str, list[str]]:
    """The 'Available on request' list: relevant nodes the budget left out, best first.

    Walks the ranking in score order over relevant nodes only and stops after ``items``:
    the full table of a 50k-node graph is never built.
    """
    ranking = result.ranking
    order = ranking.order[ranking.relevant[ranking.order]]
    lines, ids, used = [], [], count_tokens("Available on request:\n")
    for position, i in enumerate(order):
        if len(lines) >= items:
            break
        row = result.packed.row(int(i), position + 1)
        if row.decision != "manifest_only" or row.reason.startswith(("stale", SAME_TEXT)):  # nothing new to load
            continue
        line = f"- {row.node_id}: {' '.join(row.title.split())[:80]} ({row.tokens} tokens, relevance {row.score:.2f})"
        cost = count_tokens(line + "\n")
        if used + cost > reserve:
            break
        lines.append(line)
        ids.append(row.node_id)
        used += cost
    return ("Available on request:\n" + "\n".join(lines) if lines else ""), ids
