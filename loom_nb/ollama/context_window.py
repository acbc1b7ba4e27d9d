"""A model's context window, asked of the Ollama server when the caller wants it."""

from __future__ import annotations

import logging
from typing import Any

from ..core import tokens
from ..core.tokens import ContextWindow

log = logging.getLogger(__name__)


def context_window(model: str | None, *, client: Any = None, ask_ollama: bool = False) -> ContextWindow:
    """The context window of ``model``.

    Asks Ollama (``/api/show``) when ``ask_ollama`` is true or a ``client`` is given, and
    falls back to the table, then to :data:`~loom_nb.core.tokens.UNKNOWN_MODEL_CONTEXT`. The
    window *in use* is Ollama's default ``num_ctx`` unless the model sets its own.

    Without a server to ask, the table answers (and the window in use is Ollama's default):

    >>> window = context_window("llama3.1:8b")
    >>> window.source, window.max_context > window.num_ctx
    ('table', True)
    """
    if model and client is None and ask_ollama:
        from .client import ollama_client

        try:
            client = ollama_client()
        except Exception as exc:  # no ollama package, a bad host: the table still answers
            log.info("could not make an Ollama client (%s); using the table", exc)
    return tokens.context_window(model, client=client)
