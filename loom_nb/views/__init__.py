"""How loom-nb objects show themselves: text for terminals, HTML for notebooks.

Every object's ``_repr_mimebundle_`` lands here, so a terminal user and a notebook user see
the same facts (rich's ``jupyter.py`` works the same way). All HTML escapes what it shows.
"""

from __future__ import annotations

from typing import Any

from . import html, text

__all__ = ["mimebundle"]


def mimebundle(obj: Any) -> dict[str, str]:
    """``text/plain`` and ``text/html`` for a loom-nb object."""
    return {"text/plain": text.render(obj), "text/html": html.render(obj)}
