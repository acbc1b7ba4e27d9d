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


class SessionLockedError(LoomError):
    """Another process is writing the session folder and did not finish in time."""


class SessionConflictError(LoomError):
    """The session folder was saved by someone else since this session was opened.

    Saving would silently drop their changes, so nothing is written: reopen the session,
    redo the change, and save again.
    """


class WorkspaceNotConfirmedError(StaleReferenceError):
    """A session names a workspace root that was never confirmed on this machine.

    A session folder from elsewhere could name any folder (``/``) as its workspace and
    read any file into a prompt. Its references are left out until the user confirms the
    root: ``Loom.open(folder, workspace=root)`` or ``loom-nb … --workspace root``.
    """


class OllamaTimeoutError(OllamaUnavailableError):
    """An Ollama call ran past one of its timeouts (connect, first token, between tokens).

    ``setting`` names the :class:`~loom_nb.core.config.LoomConfig` field to raise and ``seconds``
    its value, so the message can say exactly which limit was hit.
    """

    def __init__(self, message: str, *, setting: str, seconds: float):
        self.setting = setting
        self.seconds = seconds
        super().__init__(message)


class OllamaStreamError(LoomError):
    """Ollama answered, but the answer broke: closed mid-stream, a malformed chunk, or a
    stream that ended without ``done``. Such an answer is incomplete and is never stored."""


def warn_caller(message: str, category: type[Warning]) -> None:
    """Warn with the location of the first frame outside loom-nb: the user's own line (a
    notebook cell, a script), not the library line that noticed. A fixed ``stacklevel`` is
    right for one call path only; ``Loom.query(model=…)`` and ``context_window(…)`` reach the
    same check at different depths. (Python 3.12's ``skip_file_prefixes`` does this.)"""
    import os
    import sys
    import warnings
    from pathlib import Path

    package = os.path.join(str(Path(__file__).resolve().parent.parent), "")  # ".../loom_nb/", not ".../loom_nb_x"
    level, frame = 2, sys._getframe(1)  # stacklevel 2: the frame that called this function
    while frame is not None and str(Path(frame.f_code.co_filename).resolve()).startswith(package):
        frame, level = frame.f_back, level + 1
    warnings.warn(message, category, stacklevel=level)
