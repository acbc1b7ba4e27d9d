"""How loom-nb objects show themselves: text for terminals, HTML for notebooks.

The views are a leaf: they import the engine's types and register a renderer for each
(:mod:`loom_nb.core.display`), :class:`~loom_nb.core.display.NodeView` included. The engine
reaches them only for what is a view outright (figures, the graph page, the report, the
sliders), lazily, from the methods that make them. A terminal user and a
notebook user see the same facts (rich's ``jupyter.py`` works the same way). All HTML
escapes what it shows.
"""

from __future__ import annotations

from ..core.classify import Classification
from ..core.display import NodeView, register_html, register_text
from ..core.engine import Loom, QueryResult
from . import html, text

__all__ = ["NodeView"]

register_text(QueryResult, text.result_text)
register_text(Loom, text.loom_text)
register_html(QueryResult, html.result_html)
register_html(Loom, html.loom_html)
register_html(Classification, html.classification_html)
register_text(NodeView, lambda view: text.node_text(view.loom, view.node.id))
register_html(NodeView, lambda view: html.node_html(view.loom, view.node.id))
