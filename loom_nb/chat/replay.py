"""A stand-in Ollama server on 127.0.0.1 that replays recorded answers.

Why it exists: the tests and the chat tutorial must exercise the *real* ``ollama`` client
(requests, streaming, tool calls, errors) with no model on the machine. :class:`OllamaStandIn`
speaks the parts of Ollama's HTTP API that loom-nb uses:

``POST /api/chat``
    streamed (NDJSON) or whole; each answer comes from the recorded queue, word by word,
    with ``tool_calls`` when the recorded answer has them; the final chunk reports
    ``prompt_eval_count`` and ``eval_count`` as Ollama does (counted with cl100k here).
``POST /api/embed``, ``POST /api/show``, ``POST /api/generate``, ``GET /api/tags``
    deterministic vectors, a model card with ``context_length``, ``num_ctx`` and
    ``capabilities``, one canned completion, and the model list.

An unknown model gets Ollama's 404 ``model "x" not found, try pulling it first``.

Examples
--------
>>> import ollama
>>> with OllamaStandIn(models=["llama3.2"], answers=["Hello there."]) as server:
...     client = ollama.Client(host=server.host)
...     parts = [p.message.content for p in client.chat("llama3.2", [{"role": "user", "content": "hi"}], stream=True)]
>>> "".join(parts)
'Hello there.'
"""

from __future__ import annotations

import json
import re
import threading
import zlib
from collections import deque
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Callable, Iterable

import numpy as np

Answer = str | dict[str, Any] | Callable[[dict[str, Any]], "str | dict[str, Any]"]
"""A recorded answer: its text, ``{"content": ..., "tool_calls": [...]}``, ``{"error": ...}``
(answered with HTTP 500, as Ollama reports a failed runner), or a function of the request
body that returns one of those.

Two forms let a recording follow a conversation whose details vary with the engine:

- ``{"match": REGEX, ...}`` answers requests whose last message matches ``REGEX`` (for
  example loom-nb's own summary requests) out of turn: several for one pattern are used in
  order, and the last of them *stands* (it is never used up);
- ``$AVAILABLE_k`` in a recorded tool call's arguments or text stands for the k-th node id
  the request listed under ``Available on request:`` (what the engine offered this time).
"""

_AVAILABLE = re.compile(r"^Available on request:\n((?:- .*\n?)+)", re.MULTILINE)


RECORDED_CHAT = Path(__file__).parent.parent / "_data" / "recorded_chat.json"
"""The chat the tutorial replays when no Ollama server answers (answers written by hand)."""


def load_recording(path: str | Path = RECORDED_CHAT) -> list[dict[str, Any]]:
    """The answers of a recorded chat (JSON: ``{"answers": [...]}``), in the order given."""
    data = json.loads(Path(path).read_text(encoding="utf-8"))
    answers = data.get("answers") if isinstance(data, dict) else None
    if not isinstance(answers, list):
        raise ValueError(f"{path}: a recording is a JSON object with an 'answers' list")
    return answers


class OllamaStandIn:
    """A local HTTP server that answers like Ollama, from recorded answers.

    Parameters
    ----------
    models : iterable of str
        Model names it "has" (the tag after ``:`` is ignored).
    answers : iterable of Answer, optional
        Chat answers, served in order; when they run out, :attr:`fallback` answers.
    dim : int
        Dimension of the ``/api/embed`` vectors (deterministic per text).
    show : dict, optional
        The ``/api/show`` answer; default: a 32k-token model run at ``num_ctx`` 8192
        with the ``completion`` and ``tools`` capabilities.
    chunk_words : int
        Words per streamed chunk.
    """

    def __init__(
        self,
        models: Iterable[str] = ("llama3.2",),
        *,
        answers: Iterable[Answer] = (),
        dim: int = 8,
        show: dict[str, Any] | None = None,
        chunk_words: int = 3,
    ):
        self.models = {m.split(":")[0] for m in models}
        self.dim = dim
        self.show = show if show is not None else default_show()
        answers = list(answers)
        self.standing = [a for a in answers if isinstance(a, dict) and "match" in a]
        self.answers: deque[Answer] = deque(a for a in answers if not (isinstance(a, dict) and "match" in a))
        self.fallback: Answer = "(the recording has no more answers)"
        self.chunk_words = chunk_words
        self.requests: list[tuple[str, dict]] = []
        self.generate_response = '{"name": "token rotation", "description": "How refresh tokens are rotated."}'
        self._lock = threading.Lock()
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.server.daemon_threads = True
        self.host = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    # -- what it answers ---------------------------------------------------------------------
    def vector(self, text: str) -> list[float]:
        rng = np.random.default_rng(zlib.crc32(text.encode("utf-8")))
        return rng.normal(size=self.dim).tolist()

    def next_answer(self, body: dict[str, Any]) -> dict[str, Any]:
        messages = body.get("messages") or [{}]
        last = str(messages[-1].get("content") or "")
        with self._lock:
            matching = [a for a in self.standing if re.search(a["match"], last)]
            if matching:
                answer = matching[0]
                if len(matching) > 1:  # used in order; the last one stands
                    self.standing.remove(answer)
            else:
                answer = self.answers.popleft() if self.answers else self.fallback
        if callable(answer):
            answer = answer(body)
        if isinstance(answer, str):
            answer = {"content": answer}
        answer = {"content": answer.get("content", ""), "tool_calls": answer.get("tool_calls") or [],
                  "error": answer.get("error")}
        if "$AVAILABLE_" in json.dumps(answer):
            answer = json.loads(self._fill_available(json.dumps(answer), messages))
        return answer

    @staticmethod
    def _fill_available(text: str, messages: list[dict[str, Any]]) -> str:
        """Replace ``$AVAILABLE_k`` with the k-th id offered in the request (or ``none``)."""
        offered: list[str] = []
        for m in messages:
            match = _AVAILABLE.search(str(m.get("content") or ""))
            if match:
                offered = [line[2:].split(":", 1)[0] for line in match.group(1).splitlines() if line.startswith("- ")]
        return re.sub(r"\$AVAILABLE_(\d+)",
                      lambda m: offered[int(m.group(1)) - 1] if int(m.group(1)) <= len(offered) else "none", text)

    @property
    def chat_requests(self) -> list[dict[str, Any]]:
        """The bodies of every ``/api/chat`` request received, oldest first."""
        return [body for path, body in self.requests if path == "/api/chat"]

    # -- the server --------------------------------------------------------------------------
    def _handler(self):  # noqa: C901 - one HTTP route table of the stand-in server, read top to bottom
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):  # keep test and notebook output clean
                pass

            def _send(self, status: int, body: Any) -> None:
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _stream(self, parts: list[dict[str, Any]]) -> None:
                self.send_response(200)
                self.send_header("Content-Type", "application/x-ndjson")
                self.send_header("Transfer-Encoding", "chunked")
                self.end_headers()
                try:
                    for part in parts:
                        line = json.dumps(part).encode() + b"\n"
                        self.wfile.write(f"{len(line):x}\r\n".encode() + line + b"\r\n")
                        self.wfile.flush()
                    self.wfile.write(b"0\r\n\r\n")
                except (BrokenPipeError, ConnectionResetError):  # the client stopped reading
                    pass

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
                outer.requests.append((self.path, body))
                model = str(body.get("model", ""))
                if model.split(":")[0] not in outer.models:
                    return self._send(404, {"error": f'model "{model}" not found, try pulling it first'})
                if self.path == "/api/chat":
                    return outer._chat(self, body)
                if self.path == "/api/embed":
                    texts = body["input"] if isinstance(body["input"], list) else [body["input"]]
                    return self._send(200, {"model": model, "embeddings": [outer.vector(t) for t in texts]})
                if self.path == "/api/show":
                    return self._send(200, outer.show)
                if self.path == "/api/generate":
                    return self._send(200, {"model": model, "response": outer.generate_response, "done": True})
                self._send(404, {"error": "unknown endpoint"})

            def do_GET(self):
                if self.path == "/api/tags":
                    names = sorted(outer.models)
                    return self._send(200, {"models": [{"name": n, "model": n} for n in names]})
                if self.path in ("/", "/api/version"):
                    return self._send(200, {"version": "0.0.0-standin"})
                self._send(404, {"error": "unknown endpoint"})

        return Handler

    def _chat(self, handler, body: dict[str, Any]) -> None:
        from ..core.tokens import count_tokens

        answer = self.next_answer(body)
        if answer["error"]:  # a recorded server failure, e.g. the model runner crashing
            return handler._send(500, {"error": answer["error"]})
        model = body.get("model", "")
        messages = body.get("messages") or []
        prompt_tokens = sum(count_tokens(str(m.get("content") or "")) + 4 for m in messages)
        if body.get("tools"):
            prompt_tokens += count_tokens(json.dumps(body["tools"]))
        content = answer["content"]
        final = {
            "model": model, "created_at": "2026-01-01T00:00:00Z", "done": True, "done_reason": "stop",
            "message": {"role": "assistant", "content": ""},
            "prompt_eval_count": prompt_tokens, "eval_count": count_tokens(content) if content else 1,
            "total_duration": 1, "load_duration": 1, "prompt_eval_duration": 1, "eval_duration": 1,
        }
        tool_calls = [{"function": {"name": c["name"], "arguments": c.get("arguments", {})}} if "function" not in c else c
                      for c in answer["tool_calls"]]
        if body.get("stream", True):
            words = re.findall(r"\S+\s*|\s+", content)
            parts = [
                {"model": model, "created_at": final["created_at"], "done": False,
                 "message": {"role": "assistant", "content": "".join(words[i:i + self.chunk_words])}}
                for i in range(0, len(words), self.chunk_words)
            ]
            if tool_calls:
                parts.append({"model": model, "created_at": final["created_at"], "done": False,
                              "message": {"role": "assistant", "content": "", "tool_calls": tool_calls}})
            handler._stream(parts + [final])
        else:
            final["message"] = {"role": "assistant", "content": content, **({"tool_calls": tool_calls} if tool_calls else {})}
            handler._send(200, final)

    def start(self) -> "OllamaStandIn":
        self.thread.start()
        return self

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    def __enter__(self) -> "OllamaStandIn":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()


def default_show(context_length: int = 32768, num_ctx: int | None = 8192, tools: bool = True) -> dict[str, Any]:
    """An ``/api/show`` answer: the model's maximum, the ``num_ctx`` it runs at, its capabilities."""
    parameters = f"num_ctx                        {num_ctx}\nstop                           \"<|eot_id|>\"" if num_ctx else ""
    return {
        "model_info": {"general.architecture": "llama", "llama.context_length": context_length},
        "parameters": parameters,
        "capabilities": ["completion", "tools"] if tools else ["completion"],
        "details": {"family": "llama", "parameter_size": "3.2B", "quantization_level": "Q4_K_M"},
    }
