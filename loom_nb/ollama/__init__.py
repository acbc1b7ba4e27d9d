"""Everything that talks to an Ollama server, with limits and one-line errors (issue 13).

One lazily made client with timeouts (:func:`ollama_client`, :class:`Timeouts` from
:class:`~loom_nb.core.config.LoomConfig`), a stream that cannot hang (:class:`WatchedStream`),
and :func:`explain_ollama_error`, which turns whatever the ``ollama`` package raised into a
:class:`~loom_nb.core.errors.LoomError` of one line that says what to do. This package sits
beside ``embed`` and ``index``: it imports only the core; the chat uses it. Also here: :class:`OllamaNamer`, concept names
written by a model.
"""

from .client import Timeouts, WatchedStream, host_of, ollama_client, watched_call
from .errors import explain_ollama_error
from .namer import OllamaNamer

__all__ = ["OllamaNamer", "Timeouts", "WatchedStream", "explain_ollama_error", "host_of", "ollama_client", "watched_call"]
