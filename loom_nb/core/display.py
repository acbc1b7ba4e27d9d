"""How an object of the engine shows itself, without the engine importing the views.

The views are a leaf: they import the engine's types, and the engine needs none of them to
show its own objects (it imports the views only to make a figure or a page). So an object
of the engine inherits :class:`Displayable`, which answers Jupyter's
``_repr_mimebundle_`` (honouring ``include`` / ``exclude``, as rich's ``JupyterMixin``
does) from ``str()`` and from the HTML renderer that ``loom_nb.views`` registered for
its type. Registration happens when ``loom_nb`` is imported; an unregistered type shows
its text in a ``<pre>``.

>>> class Note(Displayable):
...     def __str__(self):
...         return "a <note>"
>>> Note()._repr_mimebundle_(include=["text/html"])
{'text/html': '<pre>a &lt;note&gt;</pre>'}
"""

from __future__ import annotations

from html import escape
from typing import Any, Callable

__all__ = ["Displayable", "NodeView", "TABLE_STYLE", "html_table", "register_html", "register_text", "render_html", "render_text"]

TABLE_STYLE = ("<style>table.loom-t{border-collapse:collapse;font-size:12px;margin:4px 0}"
               "table.loom-t.loom-t tr>td,table.loom-t.loom-t tr>th{padding:1px 8px 1px 0;text-align:left;vertical-align:top}"
               "table.loom-t.loom-t tr>td.n,table.loom-t.loom-t tr>th.n{text-align:right;font-variant-numeric:tabular-nums}</style>")
"""One small style block per view (every view is self-contained, in a notebook or a page).
Text is left-aligned and numbers (class ``n``) right-aligned; the doubled class outranks the
right-aligned cells of JupyterLab's and nbconvert's ``.jp-RenderedHTMLCommon td`` rule."""


def html_table(head: list[str], rows, *, raw: bool = False) -> str:
    """A ``loom-t`` table: every header and cell escaped (None shows empty), unless ``raw``
    says the cells are HTML already escaped by the caller.

    The one place the engine's types and the views write a table, so escaping is never
    left to each call.

    >>> html_table(["id", "title"], [["n1", "<b>x</b>"], ["n2", None]])
    "<table class='loom-t'><thead><tr><th>id</th><th>title</th></tr></thead><tbody><tr><td>n1</td><td>&lt;b&gt;x&lt;/b&gt;</td></tr><tr><td>n2</td><td></td></tr></tbody></table>"
    """
    def cell(value: Any) -> str:
        if raw:
            return str(value)
        return "" if value is None else escape(str(value))

    th = "".join(f"<th>{escape(h)}</th>" for h in head)
    body = "".join("<tr>" + "".join(f"<td>{cell(v)}</td>" for v in row) + "</tr>" for row in rows)
    return f"<table class='loom-t'><thead><tr>{th}</tr></thead><tbody>{body}</tbody></table>"


_HTML: dict[type, Callable[[Any], str]] = {}
_TEXT: dict[type, Callable[[Any], str]] = {}


def register_html(cls: type, renderer: Callable[[Any], str]) -> None:
    """Show instances of ``cls`` (and its subclasses) in notebooks with ``renderer``."""
    _HTML[cls] = renderer


def register_text(cls: type, renderer: Callable[[Any], str]) -> None:
    """Print instances of ``cls`` with ``renderer`` (what ``str()`` returns)."""
    _TEXT[cls] = renderer


def _lookup(table: dict[type, Callable[[Any], str]], obj: Any) -> Callable[[Any], str] | None:
    for cls in type(obj).__mro__:
        found = table.get(cls)
        if found is not None:
            return found
    return None


def render_html(obj: Any) -> str:
    """The registered HTML of ``obj``, or its escaped text."""
    renderer = _lookup(_HTML, obj)
    return renderer(obj) if renderer is not None else f"<pre>{escape(str(obj))}</pre>"


def render_text(obj: Any, default: Callable[[Any], str] = repr) -> str:
    """The registered text of ``obj``, or ``default(obj)``."""
    renderer = _lookup(_TEXT, obj)
    return renderer(obj) if renderer is not None else default(obj)


class Displayable:
    """``_repr_mimebundle_`` and ``_repr_html_`` for a class; ``str()`` gives the text.

    A class may define its own ``_repr_html_``; the bundle then uses it.
    """

    def __str__(self) -> str:
        return render_text(self, repr)

    def _repr_html_(self) -> str:
        return render_html(self)

    def _repr_mimebundle_(self, include=None, exclude=None) -> dict[str, str]:
        makers = {"text/plain": lambda: str(self), "text/html": self._repr_html_}
        return {mime: make() for mime, make in makers.items()
                if (not include or mime in include) and not (exclude and mime in exclude)}


class NodeView(Displayable):
    """One node as a notebook shows it (``loom.view(node_id)``).

    A content node: its preview, its concepts with the link similarity, provenance,
    staleness and, for a reference, whether its file still matches. A concept: its
    description, the content linked to it and its neighbour concepts. ``print()`` gives the
    same facts as text. Its text and HTML are what :mod:`loom_nb.views` registers, so
    ``Loom.view`` needs no import of the views.
    """

    def __init__(self, loom, node_id: str):
        self.loom = loom
        self.node = loom.graph.node(node_id)  # raises UnknownNodeError for a bad id

    @property
    def kind(self) -> str:
        return self.node.kind

    def __repr__(self) -> str:
        return f"NodeView({self.node.id!r})"
