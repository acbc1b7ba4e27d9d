"""The one owner of the window: how a model's window splits into zones.

Seed 000 §6.1 gives the budget (window − system prompt − query − output reservation); seeds
001 and 003 add the zones a chat needs: decisions, a workspace summary, tool definitions,
history, and the list of nodes *available on request*. :func:`plan_window` computes all of
them, for :meth:`Loom.query(window=…) <loom_nb.core.engine.Loom.query>` (no tools) and for
every chat turn (:func:`loom_nb.chat.planner.plan_turn`) alike, and :func:`window_history`
keeps the newest messages that fit the history zone, so both split a window the same way.

The zones, in the order they are drawn:

``system prompt`` · ``project rules`` · ``decision context`` · ``workspace summary`` · ``tool definitions`` ·
``reserved output`` · ``query`` · ``history`` · ``context`` (manifest + evidence) ·
``available on request`` · ``unused``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Sequence, TypeVar

import numpy as np

from .config import LoomConfig

ZONE_NAMES: tuple[str, ...] = (
    "system prompt", "project rules", "decision context", "workspace summary", "tool definitions", "reserved output",
    "query", "history", "context", "available on request", "unused",
)


M = TypeVar("M")


class BudgetOverWindowWarning(UserWarning):
    """A context budget was given with a window (or a model) that leaves less room for
    context: the context is cut to what the window leaves."""


@dataclass(frozen=True)
class Zones:
    """How a window is shared beyond the system prompt, the query and the output.

    Seed 001's fixed zones (1k decisions, 2k repo map, 2k tools, 4k output) assume a 200k
    window; a local model runs at 2k–32k, so each zone here is a share of the window with
    the seed's size as its ceiling. Whatever a zone does not use goes to the context.
    """

    rules_share: float = 0.05
    """Share of the window the project rules may take (:mod:`loom_nb.core.rules`)."""
    rules_max: int = 1024
    decision_share: float = 0.06
    decision_max: int = 1024
    workspace_share: float = 0.08
    workspace_max: int = 2048
    history_share: float = 0.35
    """Share of what is left (after the fixed zones) that history may take; the rest, and
    whatever history leaves unused, is the engine's context."""
    available_max: int = 200
    """Tokens for the 'Available on request' list when callbacks are on."""
    available_items: int = 8
    callback_share: float = 0.5
    """Share of the output reservation that callback text may use. A round that asks for a
    node writes almost nothing, so half the answer's room can carry what it asked for."""

    def __post_init__(self) -> None:
        for name in ("rules_share", "decision_share", "workspace_share", "history_share", "callback_share"):
            if not 0.0 <= getattr(self, name) < 1.0:
                raise ValueError(f"{name} must be in [0, 1)")

    def rules_cap(self, window: int) -> int:
        """Tokens the project rules may take in ``window``."""
        return min(int(window * self.rules_share), self.rules_max)

    def decision_cap(self, window: int) -> int:
        """Tokens the decision context may take in ``window``."""
        return min(int(window * self.decision_share), self.decision_max)

    def workspace_cap(self, window: int) -> int:
        """Tokens the workspace summary may take in ``window``."""
        return min(int(window * self.workspace_share), self.workspace_max)


def output_reservation(complexity: float | None, config: LoomConfig) -> float:
    """Share of the window kept for the answer: 30 % by default, 20–40 % by complexity.

    >>> output_reservation(None, LoomConfig()), round(output_reservation(1.0, LoomConfig()), 2)
    (0.3, 0.4)
    """
    if complexity is None:
        return config.output_reservation
    lo, hi = config.output_reservation_range
    return lo + (hi - lo) * float(np.clip(complexity, 0.0, 1.0))


@dataclass(frozen=True)
class WindowPlan:
    """A window split into its fixed zones, with what is left for history and context.

    :meth:`with_history` closes the plan once the history actually kept is known.
    """

    window: int
    zones: dict[str, int]
    """Tokens per zone planned so far (every name of :data:`ZONE_NAMES`)."""
    history_cap: int
    """Tokens the history may take at most."""
    available_reserve: int
    """Tokens kept for the 'Available on request' list (0 without callbacks)."""

    @property
    def rest(self) -> int:
        """Tokens left after the fixed zones (for history, context and the available list)."""
        fixed = ("system prompt", "project rules", "decision context", "workspace summary", "tool definitions", "reserved output",
                 "query")
        return self.window - sum(self.zones[name] for name in fixed)

    @property
    def context(self) -> int:
        """Tokens for the manifest and the evidence, given the history planned so far."""
        return max(self.rest - self.zones["history"] - self.available_reserve, 0)

    def with_history(self, tokens: int) -> "WindowPlan":
        """The plan once ``tokens`` of history are kept (never more than its cap)."""
        if tokens > self.history_cap:
            raise ValueError(f"history of {tokens} tokens is over its cap of {self.history_cap}")
        zones = dict(self.zones, history=int(tokens))
        zones["context"] = max(self.rest - int(tokens) - self.available_reserve, 0)
        return WindowPlan(self.window, zones, self.history_cap, self.available_reserve)

    def used(self, *, context: int, available: int) -> dict[str, int]:
        """The zones as spent: the context and the available list as rendered, the rest unused."""
        zones = dict(self.zones, context=int(context))
        zones["available on request"] = int(available)
        zones["unused"] = 0
        zones["unused"] = self.window - sum(zones.values())
        return zones


def plan_window(
    window: int,
    *,
    config: LoomConfig,
    complexity: float | None,
    system_tokens: int,
    query_tokens: int,
    rules_tokens: int = 0,
    decision_tokens: int = 0,
    workspace_tokens: int = 0,
    tool_tokens: int = 0,
    history: bool = False,
    callbacks: bool = False,
    shares: Zones | None = None,
) -> WindowPlan:
    """Split ``window`` into zones (the caller counts the texts that fill the fixed ones).

    The output reservation follows the message's complexity (:func:`output_reservation`);
    history may take ``shares.history_share`` of what the fixed zones leave, when there is
    history; the 'Available on request' list gets at most ``shares.available_max`` tokens,
    and a tenth of the rest, when callbacks are on. Everything else is context.

    Raises ``ValueError`` when the fixed zones already fill the window.

    >>> plan = plan_window(8192, config=LoomConfig(), complexity=None, system_tokens=40, query_tokens=20)
    >>> plan.zones["reserved output"], plan.context
    (2457, 5675)
    """
    shares = shares or Zones()
    zones = dict.fromkeys(ZONE_NAMES, 0)
    zones.update({
        "system prompt": int(system_tokens),
        "project rules": int(rules_tokens),
        "decision context": int(decision_tokens),
        "workspace summary": int(workspace_tokens),
        "tool definitions": int(tool_tokens),
        "reserved output": int(window * output_reservation(complexity, config)),
        "query": int(query_tokens),
    })
    plan = WindowPlan(int(window), zones, 0, 0)
    rest = plan.rest
    if rest <= 0:
        fixed = window - rest
        raise ValueError(f"a window of {window:,} tokens holds nothing beyond the fixed zones "
                         f"({fixed:,} tokens); use a model with a larger num_ctx")
    history_cap = int(rest * shares.history_share) if history else 0
    reserve = min(shares.available_max, rest // 10) if callbacks else 0
    zones["context"] = max(rest - reserve, 0)
    return WindowPlan(int(window), zones, history_cap, reserve)


def window_history(messages: Sequence[M], cap: int, cost: Callable[[M], int] | None = None) -> list[M]:
    """The newest messages whose costs fit ``cap`` together, oldest first (seed 001).

    A message's cost is its tokens with the per-message overhead: by default its ``cost()``
    (:class:`loom_nb.chat.planner.Message` has one), else ``cost(message)``. The walk stops
    at the first message that does not fit, so what is kept is always the newest run of the
    conversation, never a gap. Chat turns (:func:`loom_nb.chat.planner.plan_turn`) and
    :meth:`Loom.query(Query(…), window=…) <loom_nb.core.engine.Loom.query>` both keep history by it.

    >>> window_history(["one two three", "four", "five"], 9, cost=len)
    ['four', 'five']
    >>> window_history(["one two three", "four"], 3, cost=len)
    []
    """
    measure = cost or (lambda message: message.cost())
    kept, used = [], 0
    for message in reversed(messages):
        if used + measure(message) > cap:
            break
        kept.append(message)
        used += measure(message)
    kept.reverse()
    return kept
