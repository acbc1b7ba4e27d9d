"""Minimal escaped HTML for notebooks. Everything shown passes through ``html.escape``."""

from __future__ import annotations

from html import escape

__all__ = ["COLOURS", "escape", "render", "result_html"]
from typing import Any

from ..config import SIGNALS

COLOURS = dict(zip(SIGNALS, ("#4c78a8", "#f58518", "#54a24b", "#b279a2", "#e45756", "#72b7b2",
                               "#eeca3b", "#ff9da6", "#9d755d", "#bab0ac")))


def _bar(contributions: dict[str, float]) -> str:
    parts = "".join(
        f'<span title="{escape(name)} {value:.3f}" style="display:inline-block;height:10px;'
        f'width:{max(value, 0) * 200:.1f}px;background:{COLOURS[name]}"></span>'
        for name, value in contributions.items()
    )
    return f'<span style="white-space:nowrap">{parts}</span>'


def result_html(result) -> str:
    rows = "".join(
        f"<tr><td>{r.rank}</td><td>{escape(r.node_id)}</td><td>{escape(r.title)}</td><td>{escape(r.type)}</td>"
        f"<td>{r.tokens}</td><td>{r.score:.3f}</td><td>{_bar(r.contributions)}</td>"
        f"<td>{escape(r.decision)}</td><td>{escape(r.reason)}</td></tr>"
        for r in result.rows(50)
    )
    legend = " ".join(f'<span style="color:{c}">&#9632; {escape(n)}</span>' for n, c in COLOURS.items())
    split = "".join(f"<li>{escape(k)}: {v:,}</li>" for k, v in result.budget_split().items())
    return (
        f"<div class='loom-result'><b>Query:</b> {escape(result.query)}<br>"
        f"<b>Mode:</b> {escape(result.mode.name.upper())} · <b>complexity</b> {result.classification.complexity:.2f}"
        f"<pre>{escape(result.manifest)}</pre><ul>{split}</ul><div>{legend}</div>"
        "<table><thead><tr><th>#</th><th>node</th><th>title</th><th>type</th><th>tokens</th><th>score</th>"
        f"<th>contributions</th><th>decision</th><th>reason</th></tr></thead><tbody>{rows}</tbody></table></div>"
    )


def render(obj: Any) -> str:
    from ..engine import QueryResult

    if isinstance(obj, QueryResult):
        return result_html(obj)
    return f"<pre>{escape(str(obj))}</pre>"
