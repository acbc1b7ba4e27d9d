"""What older turns become when they leave the window: a summary. The model writes one when
it can (``Session._model_summary``); this extractive fallback needs no model and keeps the
first sentence of each message."""

from __future__ import annotations

import re

from .planner import Message


def extractive_summary(messages: list[Message], words: int = 30) -> str:
    """One line per message: who, and its first sentence (at most ``words`` words).

    >>> extractive_summary([Message("user", "Why does refresh fail? Logs attached.", 1, 8)])
    '- user: Why does refresh fail?'
    """
    lines = []
    for m in messages:
        flat = " ".join(m.content.split())
        first = re.split(r"(?<=[.!?])\s", flat, maxsplit=1)[0]
        cut = first.split()
        lines.append(f"- {m.role}: {' '.join(cut[:words])}{' …' if len(cut) > words else ''}")
    return "\n".join(lines)
