"""Concept names written by a local model, for ``Loom(namer=OllamaNamer(...))``.

The graph names concepts extractively by default (``core.graph.extractive_name``); this
namer asks Ollama instead and falls back to that on any failure, so naming never blocks
an index.
"""

from __future__ import annotations

import json
import logging

from ..core.errors import OllamaUnavailableError
from ..core.graph import extractive_name
from .client import ollama_client
from .errors import explain_ollama_error

log = logging.getLogger(__name__)


class OllamaNamer:
    """Concept names written by a local model; any failure falls back to extractive naming.

    After the server fails to connect or to answer in time, it is not asked again: one
    stalled server would otherwise cost a full timeout for every concept of an indexing run.
    """

    def __init__(self, model: str, host: str | None = None, client=None, timeouts=None):
        self.model = model
        self.host = host
        self.timeouts = timeouts
        self._client = client
        self._given_up: str | None = None

    def __repr__(self) -> str:
        return f"OllamaNamer({self.model!r})"

    @property
    def client(self):
        """The Ollama client, made once (with loom-nb's timeouts) on first use."""
        if self._client is None:
            self._client = ollama_client(self.host, self.timeouts)
        return self._client

    def __call__(self, text: str) -> tuple[str, str]:
        if self._given_up is not None:
            return extractive_name(text)
        prompt = (
            "Give a topic name (2-4 words) and a one-sentence description for this text. "
            'Answer as JSON {"name": ..., "description": ...}.\n\n' + text[:2000]
        )
        try:
            answer = self.client.generate(model=self.model, prompt=prompt, format="json", options={"temperature": 0})
        except Exception as exc:  # naming must never block indexing
            error = explain_ollama_error(exc, self.model, self.host, timeouts=self.timeouts)
            if isinstance(error, OllamaUnavailableError):  # no server, or a stalled one: stop asking
                self._given_up = str(error)
                log.warning("Ollama naming is off for this run, names are extractive: %s", error)
            else:
                log.info("Ollama naming failed (%s); using extractive naming", error)
            return extractive_name(text)
        try:
            data = json.loads(answer["response"])
            name, description = str(data["name"]).strip(), str(data["description"]).strip()
            if name and description:
                return name[:80], description[:300]
        except (ValueError, KeyError, TypeError) as exc:  # the model did not answer in the JSON asked for
            log.info("Ollama naming gave no usable JSON (%s); using extractive naming", exc)
        return extractive_name(text)
