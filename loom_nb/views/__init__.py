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
    """One node as a notebook shows it: its text preview, concepts, provenance, links."""

    def __init__(self, loom, node_id: str):
        self.loom = loom
        self.node = loom.graph.node(node_id)  # raises UnknownNodeError for a bad id

    def __str__(self) -> str:
        return text.node_text(self.loom, self.node.id)

    def __repr__(self) -> str:
        return f"NodeView({self.node.id!r})"

    def _repr_mimebundle_(self, include=None, exclude=None):
        return {"text/plain": str(self), "text/html": f"<pre class='loom-node'>{html.escape(str(self))}</pre>"}
