"""One chat turn and what it cost: the zones of its window, its calls to Ollama (several
after a callback), the nodes it loaded and requested, with text and HTML views."""

from __future__ import annotations

import html
from dataclasses import asdict, dataclass, field, replace
from typing import Any

from ..core.budget import ZONE_NAMES
from ..core.display import TABLE_STYLE, Displayable, html_table
from ..core.engine import QueryResult


ZONE_COLOURS = dict(zip(ZONE_NAMES, ("#4c78a8", "#8c6d9e", "#9d755d", "#b279a2", "#bab0ac", "#e45756", "#72b7b2",
                                      "#f58518", "#54a24b", "#eeca3b", "#dddddd")))
"""A colour per zone of :data:`~loom_nb.core.budget.ZONE_NAMES`."""


@dataclass
class ChatCall:
    """One request to Ollama within a turn (a turn has more than one after a callback)."""

    estimated_prompt: int
    prompt_eval_count: int | None
    eval_count: int | None
    seconds: float
    requested: list[str] = field(default_factory=list)


@dataclass
class Turn(Displayable):
    """What one turn did: its zones, what was loaded, the calls, the answer."""

    number: int
    query: str
    window: int
    zones: dict[str, int]
    """Tokens planned per zone (they add up to the window)."""
    answer: str = ""
    loaded: list[str] = field(default_factory=list)
    offered: list[str] = field(default_factory=list)
    """Nodes listed under 'Available on request' (what a callback may ask for)."""
    input_nodes: list[str] = field(default_factory=list)
    answer_nodes: list[str] = field(default_factory=list)
    history_messages: int = 0
    summary_node: str | None = None
    callbacks: list[dict[str, Any]] = field(default_factory=list)
    calls: list[ChatCall] = field(default_factory=list)
    seconds: float = 0.0
    result: QueryResult | None = field(default=None, repr=False, compare=False)
    """The engine's result for this turn (in memory only; the table behind the manifest)."""
    messages: list[dict[str, Any]] = field(default_factory=list, repr=False, compare=False)
    """Exactly what was sent in the first call (in memory only)."""

    @property
    def estimated_prompt(self) -> int:
        return self.calls[0].estimated_prompt if self.calls else 0

    @property
    def actual_prompt(self) -> int | None:
        return self.calls[0].prompt_eval_count if self.calls else None

    @property
    def output_tokens(self) -> int:
        return sum(c.eval_count or 0 for c in self.calls)

    def to_dict(self) -> dict[str, Any]:
        data = asdict(replace(self, result=None, messages=[]))  # the result holds the graph (and its lock): never copied
        data.pop("result")
        data.pop("messages")
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "Turn":
        calls = [ChatCall(**c) for c in data.pop("calls", [])]
        return cls(**data, calls=calls)

    def __str__(self) -> str:
        actual = "?" if self.actual_prompt is None else f"{self.actual_prompt:,}"
        lines = [
            f"Turn {self.number}: {len(self.loaded)} nodes loaded, {self.history_messages} history messages, "
            f"{len(self.callbacks)} callbacks; prompt ~{self.estimated_prompt:,} tokens estimated, {actual} "
            f"reported; {self.output_tokens:,} output tokens; window {self.window:,}",
            "  zones: " + ", ".join(f"{k} {v:,}" for k, v in self.zones.items()),
        ]
        if self.loaded:
            lines.append("  loaded: " + ", ".join(self.loaded))
        for cb in self.callbacks:
            lines.append(f"  callback ({cb['via']}): {cb['node_id']} {cb['status']}")
        return "\n".join(lines)

    def zones_html(self) -> str:
        """The window as one horizontal bar, a segment per zone (width ∝ tokens)."""
        segments = []
        for name, tokens in self.zones.items():
            colour = ZONE_COLOURS.get(name, "#bab0ac")
            if tokens <= 0:
                continue
            share = 100.0 * tokens / max(self.window, 1)
            label = html.escape(f"{name}: {tokens:,} tokens")
            segments.append(f"<div title='{label}' style='width:{share:.2f}%;background:{colour};height:18px;"
                            f"overflow:hidden;font-size:10px;color:#fff;white-space:nowrap'>"
                            f"{html.escape(name) if share > 9 else ''}</div>")
        return f"<div style='display:flex;width:100%;max-width:900px;border:1px solid #ccc'>{''.join(segments)}</div>"

    def _repr_html_(self) -> str:
        esc = html.escape
        head = esc(str(self).splitlines()[0])
        zones = html_table(["zone", "tokens"], [[k, f"{v:,}"] for k, v in self.zones.items()])
        callbacks = "".join(f"<li>{esc(cb['node_id'])} ({esc(cb['via'])}): {esc(cb['status'])}</li>" for cb in self.callbacks)
        return (
            f"{TABLE_STYLE}<div class='loom-turn'><b>{head}</b>{self.zones_html()}"
            f"<details><summary>zones</summary>{zones}</details>"
            f"<div>loaded: {esc(', '.join(self.loaded)) or 'nothing'}</div>"
            + (f"<div>callbacks:<ul>{callbacks}</ul></div>" if callbacks else "")
            + f"<details><summary>answer</summary><pre style='white-space:pre-wrap'>{esc(self.answer)}</pre></details></div>"
        )
