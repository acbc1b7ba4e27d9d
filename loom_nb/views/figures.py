"""plotly figures of a query's decisions: what each signal contributed, where the budget
went, how scores spread, and where nodes sit in embedding space.

Each function returns a ``plotly.graph_objects.Figure``; in a notebook it draws itself, and
``fig.to_html(include_plotlyjs=True)`` makes a page that needs no network.
"""

from __future__ import annotations

from html import escape

import numpy as np

from ..core.config import SIGNALS
from .html import COLOURS
from .text import clip

DECISION_COLOURS = {
    "loaded": "#2ca02c",
    "summary": "#17becf",
    "chunk": "#bcbd22",
    "manifest_only": "#ff7f0e",
    "excluded": "#c7c7c7",
}


def _go():
    try:
        import plotly.graph_objects as go
    except ImportError as exc:  # pragma: no cover - plotly is a dependency
        from ..core.errors import LoomError

        raise LoomError("figures need plotly: pip install plotly") from exc
    return go


def contributions_figure(result, top: int = 20):
    """Stacked bars: each signal's contribution to the score of the ``top`` nodes.

    The bars add up to the score, so the chart explains the ranking exactly; the label
    says what was decided for the node.
    """
    go = _go()
    rows = result.rows(top)[::-1]  # plotly draws horizontal bars bottom-up
    # plotly reads <b>, <a href> and the like in text as markup: titles are escaped as the table escapes them
    labels = [escape(f"{r.node_id} · {clip(r.title, 40)} [{r.decision}]") for r in rows]
    fig = go.Figure()
    for name in SIGNALS:
        values = [r.contributions[name] for r in rows]
        if any(values):
            fig.add_bar(y=labels, x=values, name=name, orientation="h", marker_color=COLOURS[name],
                        hovertemplate=f"{name}: %{{x:.3f}}<extra></extra>")
    fig.update_layout(barmode="stack", title=escape(f"Signal contributions — {clip(result.query, 60)}"),
                      xaxis_title="score", height=max(300, 26 * len(rows) + 120), legend_title="signal")
    return fig


ZONE_COLOURS = {
    "system prompt": "#8c9fb5", "decisions": "#a5b8a0", "workspace summary": "#b5a58c", "tool definitions": "#b59bb5",
    "query": "#9fb5c9", "output reserved": "#c9b98f", "history": "#a8c4c0", "context used": "#4c78a8",
    "context unused": "#e3e3e3",
}
"""Zones in muted colours, the context used in the table's blue, unused budget in light grey:
nothing is drawn in the colour of a loss."""


def budget_figure(result):
    """One bar: the window (or the context budget) split into the zones that took tokens,
    the context used and what was left unused. Zones of 0 tokens are left out."""
    go = _go()
    split = {name: tokens for name, tokens in result.budget_split().items() if tokens}  # zero zones say nothing
    whole = result.budget.window or result.budget.context
    label = f"window {whole:,}" if result.budget.window else f"context budget {whole:,}"
    fig = go.Figure()
    for name, tokens in split.items():
        fig.add_bar(y=[label], x=[tokens], name=name, orientation="h", marker_color=ZONE_COLOURS.get(name, "#bab0ac"),
                    text=[f"{tokens:,}"], textposition="inside", insidetextanchor="middle", cliponaxis=False,
                    hovertemplate=f"{escape(name)}: %{{x:,}} tokens<extra></extra>")
    fig.update_layout(barmode="stack", title=f"Where the {label} tokens went ({result.mode.name.upper()} mode)",
                      xaxis_title="tokens", height=230, margin={"l": 130, "r": 30, "t": 60, "b": 40},
                      legend={"orientation": "h", "y": -0.45}, xaxis={"range": [0, whole]})
    return fig


def score_histogram(result, bins: int = 30):
    """How scores spread, one colour per decision."""
    go = _go()
    rows = result.table
    fig = go.Figure()
    for decision, colour in DECISION_COLOURS.items():
        scores = [r.score for r in rows if r.decision == decision]
        if scores:
            fig.add_histogram(x=scores, name=decision, marker_color=colour, nbinsx=bins)
    fig.update_layout(barmode="stack", title="Score distribution", xaxis_title="score", yaxis_title="nodes")
    return fig


def embedding_map(loom, result=None, max_points: int = 5000, seed: int = 7):
    """Concepts and content in 2-D (the first two principal components of their vectors).

    Content is coloured by the query's decision when a result is given, else by type.
    """
    go = _go()
    graph = loom.graph
    content = graph.content_vectors.matrix
    concepts = graph.concept_vectors.matrix
    if len(content) + len(concepts) == 0:
        return go.Figure().update_layout(title="Embedding map (empty graph)")
    rng = np.random.default_rng(seed)
    c_rows = np.arange(len(content))
    if len(c_rows) > max_points:
        c_rows = np.sort(rng.choice(c_rows, max_points, replace=False))
    stacked = np.vstack([content[c_rows], concepts]).astype(np.float64)
    centred = stacked - stacked.mean(axis=0)
    _, _, vt = np.linalg.svd(centred, full_matrices=False)
    xy = centred @ vt[:2].T if vt.shape[0] >= 2 else np.column_stack([centred @ vt[0], np.zeros(len(centred))])
    ids = [graph.content_vectors.ids[i] for i in c_rows]
    decisions = {}
    if result is not None:
        decisions = {r.node_id: r.decision for r in result.rows(len(result.ranking))} if len(result.ranking) <= max_points else {
            r.node_id: r.decision for r in result.rows(500)}
    fig = go.Figure()
    groups: dict[str, list[int]] = {}
    for k, node_id in enumerate(ids):
        key = decisions.get(node_id, "excluded") if result is not None else graph.node(node_id).type
        groups.setdefault(key, []).append(k)
    for key, members in groups.items():
        fig.add_scatter(x=xy[members, 0], y=xy[members, 1], mode="markers", name=key,
                        marker={"size": 7, "color": DECISION_COLOURS.get(key)},
                        text=[escape(f"{ids[k]}: {clip(graph.node(ids[k]).title, 48)}") for k in members],
                        hovertemplate="%{text}<extra></extra>")
    offset = len(ids)
    fig.add_scatter(x=xy[offset:, 0], y=xy[offset:, 1], mode="markers", name="concept",
                    marker={"size": 11, "symbol": "diamond", "color": "#7f7f7f"},
                    text=[escape(f"{c.id}: {clip(c.name, 48)}") for c in graph.concept_nodes()],
                    hovertemplate="%{text}<extra></extra>")
    fig.update_layout(title="Concepts and content in embedding space (PCA)", xaxis_title="PC 1", yaxis_title="PC 2")
    return fig


def budget_curves(reports: dict, metrics: tuple[str, ...] = ("line_recall", "precision")):
    """Quality against budget, one line per strategy: ``reports`` maps a budget to the
    :class:`~loom_nb.evaluation.run.EvalReport` measured at it (a precision/recall curve over budgets)."""
    from plotly.subplots import make_subplots

    budgets = sorted(reports)
    strategies = list(reports[budgets[0]].strategies) if budgets else []
    fig = make_subplots(rows=1, cols=len(metrics), subplot_titles=[m.replace("_", " ") for m in metrics])
    # one colour per strategy the evaluation knows (loom, its three forced modes, four
    # baselines): a ninth (an ablation) wraps round, dashed so it never passes for another
    palette = ("#d62728", "#ff9896", "#c49c94", "#9467bd", "#1f77b4", "#2ca02c", "#17becf", "#7f7f7f")
    for s_index, strategy in enumerate(strategies):
        for m_index, metric in enumerate(metrics):
            values = []
            for budget in budgets:
                row = next((r for r in reports[budget].table() if r["strategy"] == strategy), {})
                values.append(row.get(metric))
            fig.add_scatter(x=budgets, y=values, mode="lines+markers", name=strategy, legendgroup=strategy,
                            showlegend=m_index == 0, line={"color": palette[s_index % len(palette)],
                                                           "width": 3 if strategy == "loom" else 1.5,
                                                           "dash": "dash" if s_index >= len(palette) else "solid"},
                            row=1, col=m_index + 1)
    fig.update_xaxes(title_text="budget (tokens)", type="log")
    fig.update_yaxes(range=[0, 1.05])
    fig.update_layout(title="Selection quality against budget", height=420)
    return fig


OFFLINE_RENDERER = "loom_offline"


def use_offline_plotly() -> str:
    """Draw plotly figures in notebooks with no network, in JupyterLab and in an HTML export.

    Registers and selects the plotly renderer ``"loom_offline"``. Selecting it puts plotly.js
    (about 4.8 MB, once) in the output of the current cell. Each figure then travels twice:
    as plotly's JSON mimetype, which JupyterLab draws with the jupyterlab-plotly extension
    even in an untrusted notebook, and as HTML calling the plotly.js already on the page,
    which is what ``jupyter nbconvert --to html`` keeps and a browser draws offline.
    plotly's own ``"notebook"`` renderer does the same but links MathJax from a CDN in every
    figure; ``"notebook_connected"`` and ``"cdn"`` draw nothing offline.

    Returns the renderer's name.
    """
    import plotly.io as pio
    from plotly.io._base_renderers import MimetypeRenderer

    class OfflineRenderer(MimetypeRenderer):
        def activate(self):
            from IPython.display import display_html
            from plotly.offline import get_plotlyjs

            display_html(f'<script type="text/javascript">window.PlotlyConfig = {{MathJaxConfig: "local"}};</script>'
                         f'<script type="text/javascript">{get_plotlyjs()}</script>', raw=True)

        def to_mimebundle(self, fig_dict):
            bundle = dict(pio.renderers["plotly_mimetype"].to_mimebundle(fig_dict))
            bundle["text/html"] = pio.to_html(fig_dict, include_plotlyjs=False, include_mathjax=False, full_html=False,
                                              default_width="100%", default_height=525, validate=False)
            return bundle

    pio.renderers[OFFLINE_RENDERER] = OfflineRenderer()
    pio.renderers.default = OFFLINE_RENDERER
    return OFFLINE_RENDERER


def telemetry_figure(events: list[dict]):
    """Each event's duration over time, one trace per kind (``loom.telemetry_figure()``);
    hovering a point shows its fields. An empty figure says telemetry is off or idle."""
    import plotly.graph_objects as go

    fig = go.Figure()
    kinds = list(dict.fromkeys(e["kind"] for e in events))
    for kind in kinds:
        mine = [e for e in events if e["kind"] == kind]
        hover = [escape(", ".join(f"{k} {v}" for k, v in e.items() if k not in ("time", "kind", "seconds"))[:300]) for e in mine]
        fig.add_scatter(x=[e["time"] for e in mine], y=[1000 * float(e["seconds"]) for e in mine], mode="markers+lines",
                        name=escape(kind), text=hover, hovertemplate="%{y:.1f} ms<br>%{text}<extra>%{fullData.name}</extra>")
    title = "Telemetry: milliseconds per step" if events else "Telemetry: no events (loom.telemetry(True) switches it on)"
    fig.update_layout(title=title, xaxis_title="time", yaxis_title="ms", yaxis_type="log" if events else None, height=380)
    return fig
