"""The errors loom-nb raises: each says what went wrong and what to do about it."""

from __future__ import annotations


class LoomError(Exception):
    """Base class of every error loom-nb raises on purpose."""


class SessionFormatError(LoomError):
    """A session file is corrupt, truncated, foreign or from a newer loom-nb.

    The message names the file and the problem; nothing on disk has been changed.
    """

    def __init__(self, path, problem: str):
        self.path = str(path)
        self.problem = problem
        super().__init__(f"{self.path}: {problem}")


class EmbeddingMismatchError(LoomError):
    """Vectors from two embedding models (or dimensions) would be mixed."""


class OllamaUnavailableError(LoomError):
    """No Ollama server answered at the configured host."""


class ModelNotFoundError(LoomError):
    """The Ollama server answered but does not have the model."""


class StaleReferenceError(LoomError):
    """A file reference's text changed (or vanished) since it was indexed: re-index it.

    Stale text is never served silently: the packer leaves such a node out of the context
    and says why in its decision.
    """


class UnknownNodeError(LoomError, KeyError):
    """A node id that is not in the graph."""

    def __str__(self) -> str:  # KeyError would print the repr of its argument
        return str(self.args[0]) if self.args else "unknown node"
