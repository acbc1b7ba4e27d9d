"""Minimal escaped HTML for notebooks. Everything shown passes through ``html.escape``."""

from __future__ import annotations

from html import escape

from ..core.config import SIGNALS
from ..core.graph import shown_below
from ..core.display import TABLE_STYLE, html_table
from .text import clip

__all__ = ["COLOURS", "classification_html", "concept_html", "content_html", "escape", "loom_html", "node_html", "result_html"]

COLOURS = dict(zip(SIGNALS, ("#4c78a8", "#f58518", "#54a24b", "#b279a2", "#e45756", "#72b7b2",
                               "#eeca3b", "#ff9da6", "#9d755d", "#bab0ac", "#6b6ecf")))


def _bar(contributions: dict[str, float]) -> str:
    parts = "".join(
        f'<span title="{escape(name)} {value:.3f}" style="display:inline-block;height:10px;'
        f'width:{max(value, 0) * 200:.1f}px;background:{COLOURS[name]}"></span>'
        for name, value in contributions.items()
    )
    return f'<span style="white-space:nowrap">{parts}</span>'


SHOWN_ROWS = 50


def _result_rows(rows) -> str:
    return "".join(
        f"<tr><td class='n'>{r.rank}</td><td>{escape(r.node_id)}</td><td>{escape(r.title)}</td><td>{escape(r.type)}</td>"
        f"<td class='n'>{r.tokens:,}</td><td class='n'>{r.score:.3f}</td><td>{_bar(r.contributions)}</td>"
        f"<td>{escape(r.decision)}</td><td>{escape(r.reason)}</td></tr>"
        for r in rows
    )


_RESULT_HEAD = ("<thead><tr><th class='n'>#</th><th>node</th><th>title</th><th>type</th><th class='n'>tokens</th>"
                "<th class='n'>score</th><th>contributions</th><th>decision</th><th>reason</th></tr></thead>")


def result_html(result) -> str:
    """The decision table's first rows (excluded ones folded), with how many there are in all,
    the manifest, the budget's non-empty zones and the signal legend."""
    rows = result.rows(SHOWN_ROWS)
    total = len(result.ranking.node_ids)
    kept = [r for r in rows if r.decision != "excluded"]
    excluded = [r for r in rows if r.decision == "excluded"]
    legend = " ".join(f'<span style="color:{c}">&#9632; {escape(n)}</span>' for n, c in COLOURS.items())
    split = " · ".join(f"{escape(k)}: {v:,}" for k, v in result.budget_split().items() if v or k.startswith("context"))
    count = (f"showing {len(rows)} of {total:,} nodes; <code>result.rows({min(4 * SHOWN_ROWS, total)})</code> for more"
             if total > len(rows) else f"all {total:,} nodes")
    folded = (f"<details><summary>{len(excluded)} excluded row(s) among these</summary>"
              f"<table class='loom-t'>{_RESULT_HEAD}<tbody>{_result_rows(excluded)}</tbody></table></details>"
              if excluded else "")
    return (
        f"{STYLE}<div class='loom-result'><b>Query:</b> {escape(result.query)}<br>"
        f"<b>Mode:</b> {escape(result.mode.name.upper())} · <b>complexity</b> {result.classification.complexity:.2f}"
        f"<pre>{escape(result.manifest)}</pre><div>{split}</div><div>{legend}</div>"
        f"<div class='loom-count'>{count}</div>"
        f"<table class='loom-t'>{_RESULT_HEAD}<tbody>{_result_rows(kept)}</tbody></table>{folded}</div>"
    )


STYLE = TABLE_STYLE


def _table(head: list[str], rows: list[list[str]]) -> str:
    """Rows of cells that are already HTML (each value escaped by the caller)."""
    return html_table(head, rows, raw=True)


def _facts(pairs: list[tuple[str, str]]) -> str:
    """A two-column table of label / already-escaped value."""
    rows = "".join(f"<tr><th>{escape(k)}</th><td>{v}</td></tr>" for k, v in pairs)
    return f"<table class='loom-t'>{rows}</table>"


def _meter(value: float, colour: str = "#4c78a8", width: int = 80) -> str:
    """A small bar for a value in [0, 1], then the number."""
    v = min(max(float(value), 0.0), 1.0)
    return (f'<span style="display:inline-block;width:{width}px;height:8px;background:#eee;margin-right:4px">'
            f'<span style="display:block;width:{v * width:.1f}px;height:8px;background:{colour}"></span></span>{value:.3f}')


def loom_html(loom) -> str:
    """The session: counts, content by type, the concepts with most content, the largest nodes."""
    from .facts import session_facts

    f = session_facts(loom)
    c = f.counts
    head = (f"<b>Loom session</b> <code>{escape(f.where)}</code><br>{c['concepts']:,} concepts · {c['content']:,} content nodes · "
            f"{c['edges']:,} edges · embedder <code>{escape(f.embedder)}</code> · threshold {f.threshold} · turn {f.turn}"
            + (f"<br>vectors: {escape(f.vectors)}" if f.vectors else ""))
    types = " · ".join(f"{escape(t)} {n:,}" for t, n in f.types.items())
    concepts = _table(["concept", "name", "content", "description"],
                      [[escape(k.id), escape(k.label), str(int(k.weight)), escape(clip(k.detail, 80))] for k in f.concepts])
    largest = _table(["node", "type", "tokens", "title"],
                     [[escape(n.id), escape(n.detail), f"{int(n.weight):,}", escape(n.label)] for n in f.largest])
    parts = [f"{STYLE}<div class='loom-session'>{head}"]
    if types:
        parts.append(f"<br>content by type: {types}")
    if f.concepts:
        parts.append(f"<div><b>Concepts with the most content</b> ({len(f.concepts)} of {f.concepts_total})</div>{concepts}")
    if f.largest:
        parts.append(f"<div><b>Largest content nodes</b></div>{largest}")
    parts.append("</div>")
    return "".join(parts)


def content_html(loom, node_id: str) -> str:
    """A content node: its facts, its concepts with link similarity, a preview of its text."""
    from .facts import content_facts

    f = content_facts(loom, node_id)
    facts = [
        ("type", escape(f.type)),
        ("tokens", f"{f.tokens:,}"),
        ("created", escape(f.created)),
        ("provenance", escape(f"{f.source} ({f.direction})") + (f": {escape(f.reason)}" if f.reason else "")),
        ("staleness", _meter(f.staleness, COLOURS["staleness"]) +
         escape(f" — last used at turn {f.last_access_turn}, now turn {f.turn} (half-life {f.half_life:g} turns)")),
    ]
    if f.reference is not None:
        facts.append(("reference", f"<code>{escape(f.reference)}</code> <code>{escape(clip(f.signature, 80))}</code>"))
    colour = "#d62728" if f.freshness.startswith(("stale", "text unavailable")) else "#2ca02c"
    facts.append(("text", f'<span style="color:{colour}">{escape(f.freshness)}</span>'))
    if f.summary_of:
        facts.append(("summary of", escape(f.summary_of)))
    if f.summary:
        facts.append(("summarised by", escape(f.summary)))
    if f.chunks:
        facts.append(("chunks", f"{f.chunks} (each with a vector of its own)"))
    concepts = _table(["concept", "name", "link similarity"],
                      [[escape(r.id), escape(r.label), _meter(r.weight, COLOURS["semantic"])] for r in f.concepts])
    parts = [f"{STYLE}<div class='loom-node'><b>Content {escape(f.id)}</b>: {escape(f.title)}", _facts(facts),
             f"<div><b>Concepts</b></div>{concepts if f.concepts else '<i>none</i>'}"]
    if f.near_miss is not None:
        parts.append(f"<div>near miss: {escape(f.near_miss.id)} {escape(f.near_miss.label)} "
                     f"({shown_below(f.near_miss.weight)} &lt; threshold {f.threshold})</div>")
    if f.structure:
        more = f"<div>… and {f.structure_more} more</div>" if f.structure_more else ""
        parts.append("<div><b>Code structure</b></div>" + _table(
            ["relation", "node", "title"], [[escape(r.detail), escape(r.id), escape(r.label)] for r in f.structure]) + more)
    more = f"\n… {f.more_lines} more lines" if f.more_lines else ""
    parts.append(f"<pre style='max-height:16em;overflow:auto'>{escape(chr(10).join(f.preview) + more)}</pre></div>")
    return "".join(parts)


def concept_html(loom, concept_id: str) -> str:
    """A concept: description, the content linked to it, its neighbour concepts."""
    from .facts import concept_facts

    f = concept_facts(loom, concept_id)
    facts = [("description", escape(f.description)), ("created", escape(f.created))]
    if f.terms:
        facts.append(("distinctive terms", ", ".join(f"<code>{escape(t.label)}</code> {t.weight:.3f}" for t in f.terms)))
    if f.origin is not None:
        facts.append(("founded by", f"{escape(f.origin.id)} {escape(f.origin.label)}"))
    content = _table(["node", "title", "", "link similarity"],
                     [[escape(r.id), escape(r.label), escape(r.detail), _meter(r.weight, COLOURS["semantic"])] for r in f.content])
    neighbours = _table(["concept", "name", "", "cosine"],
                        [[escape(r.id), escape(r.label), escape(r.detail), _meter(r.weight, COLOURS["hop"])] for r in f.neighbours])
    return (
        f"{STYLE}<div class='loom-concept'><b>Concept {escape(f.id)}</b>: {escape(f.name)}{_facts(facts)}"
        f"<div><b>Content</b> ({len(f.content)} nodes, {f.members} with this as their strongest concept, "
        f"{f.tokens:,} tokens)</div>{content}"
        f"<div><b>Neighbour concepts</b></div>{neighbours if f.neighbours else '<i>none</i>'}</div>"
    )


def node_html(loom, node_id: str) -> str:
    if loom.graph.node(node_id).kind == "concept":
        return concept_html(loom, node_id)
    return content_html(loom, node_id)


def classification_html(c) -> str:
    """The classifier's verdict: kind, complexity, split, the measured signals and the reasons."""
    facts = [
        ("kind", f"<b>{escape(c.kind)}</b>"),
        ("complexity", _meter(c.complexity, COLOURS["provenance"])),
        ("tokens", f"{c.tokens:,}"),
        ("split", "yes" if c.should_split else "no"),
    ]
    signals = _table(["signal", "value"], [[escape(k), f"{v:.3f}" if isinstance(v, float) else escape(str(v))]
                                           for k, v in c.signals.items()])
    segments = _table(["segment", "lines", "first line"],
                      [[escape(s.kind), f"{s.start_line}-{s.end_line}", escape(clip(s.text.strip().split(chr(10))[0] if s.text.strip() else "", 60))]
                       for s in c.segments])
    reasons = "".join(f"<li>{escape(r)}</li>" for r in c.reasons)
    return (
        f"{STYLE}<div class='loom-classification'><b>Classification</b>{_facts(facts)}"
        f"<div><b>Segments</b></div>{segments if c.segments else '<i>none</i>'}"
        f"<div><b>Reasons</b></div><ul style='margin:2px 0'>{reasons}</ul>"
        f"<details><summary>signals</summary>{signals}</details></div>"
    )



