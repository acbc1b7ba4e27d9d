"""A stand-in Ollama server on 127.0.0.1 for tests: the real ``ollama`` client talks to it.

It speaks the parts of Ollama's HTTP API that loom-nb uses, with canned answers, so the
client code path (requests, errors, parsing) is exercised without a model.
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import numpy as np


class StandIn:
    def __init__(self, models=("nomic-embed-text",), dim=8, show=None):
        self.models = set(models)
        self.dim = dim
        self.show = show or {}
        self.requests: list[tuple[str, dict]] = []
        self.generate_response = '{"name": "token rotation", "description": "How refresh tokens are rotated."}'
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):  # keep test output clean
                pass

            def _send(self, status, body):
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
                outer.requests.append((self.path, body))
                model = body.get("model", "")
                if model.split(":")[0] not in outer.models:
                    return self._send(404, {"error": f'model "{model}" not found, try pulling it first'})
                if self.path == "/api/embed":
                    texts = body["input"] if isinstance(body["input"], list) else [body["input"]]
                    vectors = [outer.vector(t) for t in texts]
                    return self._send(200, {"model": model, "embeddings": vectors})
                if self.path == "/api/show":
                    return self._send(200, outer.show)
                if self.path == "/api/generate":
                    return self._send(200, {"model": model, "response": outer.generate_response, "done": True})
                self._send(404, {"error": "unknown endpoint"})

            def do_GET(self):
                if self.path == "/api/tags":
                    return self._send(200, {"models": [{"name": m, "model": m} for m in sorted(outer.models)]})
                self._send(404, {"error": "unknown endpoint"})

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.host = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def vector(self, text: str) -> list[float]:
        rng = np.random.default_rng(abs(hash(text)) % (2**32))
        return rng.normal(size=self.dim).tolist()

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.server.shutdown()
        self.server.server_close()
