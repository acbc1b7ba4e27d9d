"""One line that says what went wrong with an Ollama call, and what to do about it.

The ``ollama`` package lets its transport's errors through as they are: a connection
closed mid-answer came out as "no Ollama server answered … `ollama serve`", a malformed
chunk as a multi-line pydantic report, a stall as nothing at all (issue 13). Here every
failure becomes a :class:`~loom_nb.core.errors.LoomError` of one line, so ``loom-nb chat`` can
print it as it is.
"""

from __future__ import annotations

import json
from typing import Any

from ..core.errors import LoomError, ModelNotFoundError, OllamaStreamError, OllamaUnavailableError
from .limits import Timeouts, host_of

MAX_DETAIL = 160
"""Characters of a server's or parser's own words kept in an error (one readable line)."""


def one_line(text: Any, limit: int = MAX_DETAIL) -> str:
    """``text`` on one line, shortened to ``limit`` characters.

    >>> one_line("a\\n  b\\tc")
    'a b c'
    """
    flat = " ".join(str(text).split())
    return flat if len(flat) <= limit else flat[: limit - 1].rstrip() + "…"


def _chain(exc: BaseException) -> list[BaseException]:
    """``exc`` and what it was raised from or during: ``ollama`` raises a plain
    ``ConnectionError`` *from None* over httpx's ``ConnectError``, which still names the cause."""
    seen: list[BaseException] = []
    while exc is not None and exc not in seen and len(seen) < 8:
        seen.append(exc)
        exc = exc.__cause__ or exc.__context__
    return seen


def _why_no_connection(chain: list[BaseException]) -> str:
    text = " ".join(str(e) for e in chain).lower()
    if "refused" in text:
        return "connection refused"
    if "name or service not known" in text or "nodename nor servname" in text or "getaddrinfo" in text:
        return "cannot resolve the host name"
    if "unreachable" in text:
        return "network unreachable"
    return one_line(chain[-1]) or type(chain[-1]).__name__


def explain_ollama_error(exc: BaseException, model: str, host: str | None, *, timeouts: Timeouts | None = None,  # noqa: C901 - one failure kind per branch, each with its own one-line message
                         parts: int | None = None) -> LoomError:
    """Turn an ``ollama`` client error into a one-line :class:`LoomError` that says what to do.

    Parameters
    ----------
    exc : BaseException
        What the client raised (a ``LoomError`` is returned unchanged).
    timeouts : Timeouts, optional
        The limits the call ran with, to name the one that ran out.
    parts : int, optional
        Chunks of a streamed answer received before ``exc`` (None: the call does not stream).

    >>> str(explain_ollama_error(ConnectionRefusedError(111, "Connection refused"), "llama3.2", "http://127.0.0.1:9"))
    'no Ollama server answered at http://127.0.0.1:9 (connection refused): start it with `ollama serve` (or the desktop app), or set OLLAMA_HOST to where it runs'
    
    Length: one branch per failure kind, each with its own line; the order of the checks is
    the point (a timeout is an httpx error too, a 404 a response error), so they stay together.
    """
    if isinstance(exc, LoomError):
        return exc
    if isinstance(exc, UnicodeError):  # raised while the request was written: ours, not the server's
        return LoomError(f"the request for {model!r} could not be encoded ({one_line(exc)}): its text holds a character "
                         "UTF-8 cannot carry (a lone surrogate); nothing reached Ollama")
    import httpx
    import ollama
    import pydantic

    where = host_of(host)
    timeouts = timeouts or Timeouts.from_config()
    chain = _chain(exc)
    streamed = parts is not None
    after = f" after {parts} chunks" if streamed else ""

    if any(isinstance(e, httpx.ConnectTimeout) for e in chain):
        return timeouts.error("connect", host, "did not accept a connection")
    if isinstance(exc, httpx.TimeoutException):  # read, write or pool: the server went quiet
        try:
            path = exc.request.url.path
        except RuntimeError:  # httpx raises when the error carries no request
            path = "the request"
        if not streamed:
            return timeouts.error(timeouts.answer, host, f"did not answer {path} for {model!r}")
        if parts == 0:
            return timeouts.error("first_token", host, f"sent no first token of the answer from {model!r}")
        return timeouts.error("idle", host, f"stopped in the middle of the answer from {model!r}: no chunk "
                                            f"after chunk {parts}")
    if isinstance(exc, ollama.ResponseError):
        status, text = exc.status_code, one_line(exc.error)
        if status == 404 or "not found" in text.lower():
            return ModelNotFoundError(f"Ollama at {where} does not have model {model!r}: run `ollama pull {model}`")
        if status in (401, 403):
            return OllamaUnavailableError(
                f"Ollama at {where} refused the request (HTTP {status}: {text}): check OLLAMA_ORIGINS, "
                "OLLAMA_API_KEY or the proxy in front of it")
        if status >= 500:  # the server is up; its model runner is not (crashed, out of memory, killed)
            return LoomError(f"Ollama at {where} failed for model {model!r}{after} (HTTP {status}: {text}): see the "
                             "Ollama server's log (`journalctl -u ollama`, or ~/.ollama/logs/server.log); a runner that "
                             "stops is often out of memory: try a smaller model or a smaller window (--window)")
        return LoomError(f"Ollama at {where} failed for model {model!r}{after}: {text}")
    broken = isinstance(exc, (httpx.ReadError, httpx.RemoteProtocolError)) or (parts and isinstance(exc, OSError))
    if broken or any(isinstance(e, httpx.RemoteProtocolError) for e in chain):
        if not parts and "without sending a response" in str(exc):
            return OllamaUnavailableError(f"something at {where} accepted the connection and closed it without an "
                                          "answer: is it an Ollama server? (check --host / OLLAMA_HOST)")
        return OllamaStreamError(f"Ollama at {where} closed the connection in the middle of the answer from "
                                 f"{model!r}{after}: the server or its model runner stopped (see its log)")
    if isinstance(exc, (ConnectionError, OSError, httpx.ConnectError, httpx.NetworkError)):
        return OllamaUnavailableError(
            f"no Ollama server answered at {where} ({_why_no_connection(chain)}): start it with `ollama serve` "
            "(or the desktop app), or set OLLAMA_HOST to where it runs")
    if isinstance(exc, json.JSONDecodeError):
        return OllamaStreamError(f"Ollama at {where} sent a chunk that is not JSON{after} ({one_line(exc.doc, 60)!r}): "
                                 "is it an Ollama server, or a proxy's error page?")
    if isinstance(exc, pydantic.ValidationError):
        first = exc.errors()[0] if exc.errors() else {}
        field = ".".join(str(p) for p in first.get("loc", ())) or "?"
        return OllamaStreamError(f"Ollama at {where} sent a malformed chunk{after} ({field}: "
                                 f"{one_line(first.get('msg', exc), 80)}): upgrade the ollama package or the server")
    if isinstance(exc, httpx.HTTPError):
        return LoomError(f"Ollama at {where} failed for model {model!r}{after}: {type(exc).__name__}: {one_line(exc)}")
    return LoomError(f"Ollama at {where} failed for model {model!r}{after}: {one_line(exc) or type(exc).__name__}")
