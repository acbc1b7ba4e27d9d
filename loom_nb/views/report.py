"""``export_report``: one self-contained HTML file to share a query's decisions.

The graph drawing, the manifest, the budget split, the decision table and the charts, with
plotly.js included once and vis-network inlined: the file opens in a browser with no
network. Everything taken from the session is escaped.
"""

from __future__ import annotations

from html import escape
from pathlib import Path

from ..core.errors import LoomError
from ..core.store import atomic_write_text
from .html import result_html

_STYLE = """
body{font-family:system-ui,-apple-system,Segoe UI,sans-serif;margin:24px;color:#222}
h1{font-size:1.4em} h2{font-size:1.15em;margin-top:2em}
table{border-collapse:collapse;font-size:.85em} td,th{border-bottom:1px solid #ddd;padding:3px 6px;text-align:left}
pre{background:#f6f6f6;padding:8px;overflow-x:auto} iframe{border:1px solid #ccc;width:100%}
"""


GRAPH_FRAME_HEIGHT = 760
"""The graph's frame: its 640 px drawing, the caption and the page's margins fit without a scroll bar."""


def report_html(loom, result, *, graph_nodes: int = 300) -> str:
    """The report as one HTML string (see :func:`export_report`)."""
    from .figures import budget_figure, contributions_figure, score_histogram

    figures = [contributions_figure(result), budget_figure(result), score_histogram(result)]
    charts = [fig.to_html(full_html=False, include_plotlyjs=(k == 0)) for k, fig in enumerate(figures)]
    graph_section = ""
    try:
        from .graph_view import graph_html

        page = graph_html(loom, result, max_nodes=graph_nodes)
        # the drawing is 640 px under a caption of up to three lines; scripts run, nothing else is allowed
        graph_section = (f'<h2>Graph</h2><iframe height="{GRAPH_FRAME_HEIGHT}" sandbox="allow-scripts" title="loom-nb graph" '
                         f'srcdoc="{escape(page, quote=True)}"></iframe>')
    except ImportError:  # the graph drawing is optional; the rest of the report stands
        graph_section = "<p><i>Graph drawing unavailable (pyvis not installed).</i></p>"
    counts = loom.graph.counts()
    prompt = escape(result.prompt)
    return (
        "<!DOCTYPE html><html><head><meta charset='utf-8'>"
        f"<title>loom-nb report: {escape(result.query[:80])}</title><style>{_STYLE}</style></head><body>"
        f"<h1>loom-nb report</h1><p><b>Session:</b> {escape(str(loom.folder or 'in memory'))} — "
        f"{counts['concepts']} concepts, {counts['content']} content nodes, {counts['edges']} edges; "
        f"embedder {escape(loom.embedder.model_id)}</p>"
        f"<h2>Query and decisions</h2>{result_html(result)}"
        f"<h2>Charts</h2>{''.join(charts)}"
        f"{graph_section}"
        f"<h2>The prompt</h2><pre>{prompt}</pre>"
        "</body></html>"
    )


def export_report(loom, result, path: str | Path, **options) -> Path:
    """Write the report to ``path`` atomically; returns the path.

    Usually called as ``loom.export_report(result, "report.html")``.
    """
    path = Path(path)
    if path.is_dir():
        raise LoomError(f"{path} is a folder; give the report a file name, such as {path / 'report.html'}")
    atomic_write_text(path, report_html(loom, result, **options))
    return path
