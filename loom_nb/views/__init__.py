"""How loom-nb objects show themselves: text for terminals, HTML for notebooks.

The views are a leaf: they import the engine's types and register a renderer for each
(:mod:`loom_nb.core.display`); the engine never imports them. A terminal user and a
notebook user see the same facts (rich's ``jupyter.py`` works the same way). All HTML
escapes what it shows.
"""

from __future__ import annotations

from ..core.classify import Classification
from ..core.display import Displayable, register_html, register_text
from ..core.engine import Loom, QueryResult
from . import html, text

__all__ = ["NodeView"]

register_text(QueryResult, text.result_text)
register_text(Loom, text.loom_text)
register_html(QueryResult, html.result_html)
register_html(Loom, html.loom_html)
register_html(Classification, html.classification_html)


class NodeView(Displayable):
    """One node as a notebook shows it (``loom.view(node_id)``).

    A content node: its preview, its concepts with the link similarity, provenance,
    staleness and, for a reference, whether its file still matches. A concept: its
    description, the content linked to it and its neighbour concepts. ``print()`` gives the
    same facts as text.
    """

    def __init__(self, loom, node_id: str):
        self.loom = loom
        self.node = loom.graph.node(node_id)  # raises UnknownNodeError for a bad id

    @property
    def kind(self) -> str:
        return self.node.kind

    def __str__(self) -> str:
        return text.node_text(self.loom, self.node.id)

    def __repr__(self) -> str:
        return f"NodeView({self.node.id!r})"

    def _repr_html_(self) -> str:
        return html.node_html(self.loom, self.node.id)
