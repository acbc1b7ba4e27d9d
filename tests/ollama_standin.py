"""The tests' stand-in Ollama server: :class:`loom_nb.replay.OllamaStandIn`.

Kept as a module of its own so older tests import ``StandIn`` unchanged; its default
``/api/show`` answer is empty (tests that need a model card pass ``show=``).
"""

from __future__ import annotations

from loom_nb.replay import OllamaStandIn, default_show  # noqa: F401


class StandIn(OllamaStandIn):
    def __init__(self, models=("nomic-embed-text",), dim=8, show=None, **kwargs):
        super().__init__(models, dim=dim, show=show if show is not None else {}, **kwargs)
