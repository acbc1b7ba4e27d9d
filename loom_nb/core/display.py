"""How an object of the engine shows itself, without the engine importing the views.

The views are a leaf: they import the engine's types, never the reverse. So an object
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

__all__ = ["Displayable", "register_html", "register_text", "render_html", "render_text"]

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
