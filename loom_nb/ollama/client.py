"""The one Ollama client loom-nb makes, and the watch that keeps a call from hanging.

The ``ollama`` package makes its httpx client with ``timeout=None``: a server that never
answered, or stopped mid-answer, held a chat turn until Ctrl-C (issue 13). Every client
loom-nb makes comes from :func:`ollama_client`, with the connect and read limits of
:class:`Timeouts`; every streamed answer is read through :class:`WatchedStream`.

Why a watch as well as httpx's timeouts: httpx has one read timeout per request, but the
first chunk may legitimately take minutes (a cold model load, a long prompt on a CPU)
while a gap of minutes between two chunks means the server is stuck. Measured against
the stand-in server (``tests/ollama_standin.py``) with a 0.3 s read timeout, httpx raises
after 0.31 s both before the first chunk and mid-stream: it cannot tell the two apart. So
the client's read timeout is the longer of the two limits (a backstop that frees the
reading thread), and :class:`WatchedStream` reads on a worker thread and waits at most
``first_token`` seconds for the first part and ``idle`` seconds for each part after it.
"""

from __future__ import annotations

import os
import queue
import threading
from typing import Any, Callable, Iterable, Iterator

from ..core.errors import LoomError, OllamaStreamError, OllamaTimeoutError
from .errors import explain_ollama_error
from .limits import DEFAULT_HOST, Timeouts, host_of

__all__ = ["DEFAULT_HOST", "Timeouts", "WatchedStream", "host_of", "ollama_client", "watched_call"]

def ollama_client(host: str | None = None, timeouts: Timeouts | None = None):
    """An ``ollama.Client`` for ``host`` (default: ``OLLAMA_HOST``, then localhost:11434),
    with ``timeouts`` (default: :class:`LoomConfig`'s). Every client loom-nb makes is made here.
    """
    try:
        import ollama
    except ImportError as exc:  # pragma: no cover - a dependency, but fail with the fix
        raise LoomError("the Ollama integration needs the 'ollama' package: pip install ollama") from exc
    timeouts = timeouts or Timeouts.from_config()
    return ollama.Client(host=host or os.environ.get("OLLAMA_HOST") or None, timeout=timeouts.httpx())


_PART, _END, _ERROR = "part", "end", "error"


class WatchedStream:
    """The parts of a streamed Ollama answer, read on a worker thread, within the limits.

    Iterating waits at most ``timeouts.first_token`` seconds for the first part and
    ``timeouts.idle`` seconds for each one after it; past that it raises
    :class:`~loom_nb.core.errors.OllamaTimeoutError` saying which limit it was. A failure of the
    call comes out as the one-line error of
    :func:`~loom_nb.ollama.errors.explain_ollama_error`, and a stream that ends without a
    part marked ``done`` raises :class:`~loom_nb.core.errors.OllamaStreamError` (an answer cut
    short is not an answer). Breaking out of the loop early is fine: call :meth:`close`
    (or use ``with``) and the worker drops the connection at its next part.

    Parameters
    ----------
    open_stream : callable
        Starts the call and returns its iterator of parts, e.g.
        ``lambda: client.chat(model, messages, stream=True)``; called on the worker.
    expect_done : bool
        Check that the last part has ``done`` true (False for a single-answer call).
    """

    def __init__(self, open_stream: Callable[[], Iterable[Any]], timeouts: Timeouts, *, model: str,
                 host: str | None = None, what: str = "the answer", expect_done: bool = True):
        self.timeouts = timeouts
        self.model = model
        self.host = host
        self.what = what
        self.expect_done = expect_done
        self.parts = 0
        """Parts received so far."""
        self._open = open_stream
        self._queue: queue.Queue = queue.Queue()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._pump, name="loom-ollama-stream", daemon=True)
        self._thread.start()

    def _pump(self) -> None:
        # The worker owns the stream from start to end: a generator cannot be closed from
        # another thread while it runs, so a caller that gives up only sets _stop.
        try:
            stream = self._open()
            try:
                for part in stream:
                    self._queue.put((_PART, part))
                    if self._stop.is_set():
                        break
            finally:
                close = getattr(stream, "close", None)
                if close is not None:
                    close()  # drops the connection, so the server stops generating
        except BaseException as exc:  # handed to the caller, which explains it
            self._queue.put((_ERROR, exc))
        else:
            self._queue.put((_END, None))

    def __iter__(self) -> Iterator[Any]:
        last = None
        try:
            while True:
                which = "first_token" if self.parts == 0 else "idle"
                try:
                    kind, value = self._queue.get(timeout=self.timeouts.seconds(which))
                except queue.Empty:
                    raise self._timeout(which) from None
                if kind == _PART:
                    self.parts += 1
                    last = value
                    yield value
                elif kind == _ERROR:
                    if _read_timeout(value):  # httpx's backstop ran out with the watch: the same line
                        raise self._timeout(which) from value
                    raise explain_ollama_error(value, self.model, self.host, timeouts=self.timeouts,
                                               parts=self.parts if self.expect_done else None) from value
                else:
                    if self.expect_done and not getattr(last, "done", False):
                        raise OllamaStreamError(
                            f"Ollama at {host_of(self.host)} ended {self.what} of {self.model!r} without "
                            f"`done: true` after {self.parts} chunks: the answer is incomplete")
                    return
        finally:
            self.close()

    def _timeout(self, which: str) -> OllamaTimeoutError:
        if which == "idle":
            doing = f"stopped in the middle of {self.what} from {self.model!r}: no chunk after chunk {self.parts}"
        elif self.expect_done:
            doing = f"sent no first token of {self.what} from {self.model!r}"
        else:
            doing = f"did not answer {self.what} for {self.model!r}"
        return self.timeouts.error(which, self.host, doing)

    def close(self) -> None:
        """Stop reading: the worker closes the stream when its next part arrives."""
        self._stop.set()

    def __enter__(self) -> "WatchedStream":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def _read_timeout(exc: BaseException) -> bool:
    """Whether ``exc`` is httpx running out of time after connecting (reading, writing, pooling)."""
    import httpx

    return isinstance(exc, httpx.TimeoutException) and not isinstance(exc, httpx.ConnectTimeout)


def watched_call(call: Callable[[], Any], timeouts: Timeouts, *, model: str, host: str | None = None,
                 what: str = "the request") -> Any:
    """The result of one Ollama call that does not stream, within ``timeouts.first_token``.

    For a client made elsewhere (its own timeouts, perhaps none) the limit still holds.
    """
    for result in WatchedStream(lambda: (call(),), timeouts, model=model, host=host, what=what, expect_done=False):
        return result
    raise OllamaStreamError(f"Ollama at {host_of(host)} gave no answer to {what}")  # pragma: no cover
