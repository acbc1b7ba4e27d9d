"""How loom-nb objects show themselves: text for terminals, HTML for notebooks.

Every object's ``_repr_mimebundle_`` lands here, so a terminal user and a notebook user see
the same facts (rich's ``jupyter.py`` works the same way). All HTML escapes what it shows.
"""

from __future__ import annotations

from typing import Any

from . import html, text

__all__ = ["NodeView", "mimebundle"]


def mimebundle(obj: Any) -> dict[str, str]:
    """``text/plain`` and ``text/html`` for a loom-nb object."""
    return {"text/plain": text.render(obj), "text/html": html.render(obj)}


class NodeView:
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

    def _repr_mimebundle_(self, include=None, exclude=None):
        return {"text/plain": str(self), "text/html": self._repr_html_()}
