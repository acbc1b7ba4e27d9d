"""The tests' stand-in Ollama server: :class:`loom_nb.chat.replay.OllamaStandIn`, and :class:`FaultyOllama`.

Kept as a module of its own so older tests import ``StandIn`` unchanged; its default
``/api/show`` answer is empty (tests that need a model card pass ``show=``).

:class:`FaultyOllama` adds the ways a real server fails (issue 13): it stalls before the
first token or mid-answer, closes the connection mid-answer, sends a malformed chunk, ends
a stream without ``done``, hangs up without answering, or never answers ``/api/show``.
"""

from __future__ import annotations

import json
import re
import threading
import time

from loom_nb.chat.replay import OllamaStandIn, default_show  # noqa: F401


class StandIn(OllamaStandIn):
    def __init__(self, models=("nomic-embed-text",), dim=8, show=None, **kwargs):
        super().__init__(models, dim=dim, show=show if show is not None else {}, **kwargs)


FAULTS = ("silent", "hang_up", "refuse", "stall_first", "slow_first", "stall_mid", "close_mid", "malformed", "not_json",
          "no_done")
"""What :class:`FaultyOllama` can do to one ``/api/chat`` answer:

``silent``       read the request, then send nothing at all (no headers)
``hang_up``      read the request, then close the connection without a response
``refuse``       answer HTTP 403, as Ollama does to an origin it does not allow
``stall_first``  send the headers, then no chunk
``slow_first``   wait ``after`` seconds, then answer normally
``stall_mid``    send ``after`` chunks, then stall
``close_mid``    send ``after`` chunks, then close the connection (no end of stream)
``malformed``    send ``after`` chunks, then a JSON chunk of the wrong shape
``not_json``     send ``after`` chunks, then a line that is not JSON
``no_done``      send every chunk, then end the stream cleanly without ``done: true``
"""


class FaultyOllama(OllamaStandIn):
    """The stand-in, with faults on chosen ``/api/chat`` requests and on ``/api/show``.

    Parameters
    ----------
    faults : dict
        ``{key: kind}`` or ``{key: (kind, after)}``: an ``/api/chat`` request fails as
        :data:`FAULTS` describes, after ``after`` chunks of its answer (default 2). An int
        key is the request's number (0-based, summary requests included); a str key is a
        regular expression, and every request whose last message matches it fails.
    stall_show : bool
        ``/api/show`` reads the request and never answers.
    stall_seconds : float
        A stall ends after this long at most, or when the server stops, so that no
        thread outlives a test.
    """

    def __init__(self, models=("llama3.2",), *, faults=None, stall_show=False, stall_seconds=10.0, **kwargs):
        super().__init__(models, **kwargs)
        self.faults = {k: (v if isinstance(v, tuple) else (v, 2)) for k, v in (faults or {}).items()}
        for kind, _ in self.faults.values():
            if kind not in FAULTS:
                raise ValueError(f"unknown fault {kind!r}; known: {FAULTS}")
        self.stall_show = stall_show
        self.stall_seconds = stall_seconds
        self.released = threading.Event()

    def stall(self) -> None:
        self.released.wait(self.stall_seconds)

    def stop(self) -> None:
        self.released.set()
        super().stop()

    def _handler(self):
        base = super()._handler()
        outer = self

        class Handler(base):
            def do_POST(self):
                if self.path == "/api/show" and outer.stall_show:
                    self.rfile.read(int(self.headers.get("Content-Length", 0)))
                    outer.requests.append((self.path, {}))
                    outer.stall()
                    self.close_connection = True
                    return None
                return super().do_POST()

        return Handler

    def fault_for(self, body) -> tuple[str, float] | None:
        number = len(self.chat_requests) - 1
        last = str(((body.get("messages") or [{}])[-1]).get("content") or "")
        for key, fault in self.faults.items():
            if key == number if isinstance(key, int) else re.search(key, last):
                return fault
        return None

    def _chat(self, handler, body):  # noqa: C901 - one branch per fault the stand-in server can play
        fault = self.fault_for(body)
        if fault is None:
            return super()._chat(handler, body)
        kind, after = fault
        if kind == "slow_first":  # a cold model load: a pause, then the answer
            time.sleep(after)
            return super()._chat(handler, body)
        if kind == "refuse":
            return handler._send(403, {"error": "forbidden"})
        answer = self.next_answer(body)
        model = body.get("model", "")
        words = re.findall(r"\S+\s*|\s+", answer["content"])
        parts = [{"model": model, "created_at": "2026-01-01T00:00:00Z", "done": False,
                  "message": {"role": "assistant", "content": "".join(words[i:i + self.chunk_words])}}
                 for i in range(0, len(words), self.chunk_words)]
        handler.close_connection = True
        if kind == "silent":
            return self.stall()
        if kind == "hang_up":
            return None
        handler.send_response(200)
        handler.send_header("Content-Type", "application/x-ndjson")
        handler.send_header("Transfer-Encoding", "chunked")
        handler.end_headers()
        handler.wfile.flush()

        def chunk(data: bytes) -> None:
            handler.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
            handler.wfile.flush()

        try:
            if kind == "stall_first":
                return self.stall()
            sent = parts if kind == "no_done" else parts[:after]
            for part in sent:
                chunk(json.dumps(part).encode() + b"\n")
            if kind == "stall_mid":
                self.stall()
            elif kind == "malformed":  # valid JSON, not a chat chunk: message is not an object
                chunk(json.dumps({"model": model, "done": False, "message": 42}).encode() + b"\n")
            elif kind == "not_json":
                chunk(b"<html>502 Bad Gateway</html>\n")
            if kind in ("malformed", "not_json", "no_done"):
                handler.wfile.write(b"0\r\n\r\n")  # a clean end of the stream
                handler.wfile.flush()
            # close_mid (and a stall that ends): the connection closes with no end of stream
        except (BrokenPipeError, ConnectionResetError):  # the client gave up first
            pass
        return None
