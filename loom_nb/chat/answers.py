"""The post-processing indexer: a model's answer becomes content nodes (``analysis``, or
``output`` for code, data and logs), so a later turn can load what was said before."""

from __future__ import annotations

import logging

from ..core.classify import classify
from ..core.engine import MAX_ADD_CHARS
from .planner import Message
from .turns import Turn

log = logging.getLogger(__name__)


def index_answer(loom, model: str, turn: Turn, message: Message) -> None:
    """Add the answer in ``message`` to ``loom`` and note its node ids on the message and turn.

    A runaway answer is indexed up to ``MAX_ADD_CHARS``; the whole text stays in the chat."""
    if message.content.strip():
        answer = message.content
        if len(answer) > MAX_ADD_CHARS:  # a runaway answer: its start is kept, the rest is in chat.json
            log.warning("turn %d: the answer has %d characters; indexing the first %d", turn.number, len(answer), MAX_ADD_CHARS)
            answer = answer[:MAX_ADD_CHARS]
        kind = classify(answer, loom.graph.config).kind
        added = loom.add(answer, type="output" if kind in ("code", "pasted_data", "logs") else "analysis",
                         source=f"model:{model}", reason=f"answer to turn {turn.number}", meta={"turn": turn.number})
        message.node_ids = added.ids
        turn.answer_nodes = added.ids
