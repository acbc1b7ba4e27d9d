"""The chat's own file in the session folder, ``chat.json``: messages, turns, summaries and
the model, written atomically beside the graph (which :mod:`loom_nb.core.store` writes) and
checked whole when read."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ..core.errors import SessionFormatError
from ..core.store import atomic_write_text

CHAT_FILE = "chat.json"
CHAT_SCHEMA = "loom-nb.chat/1"


def write_chat(folder: Path, state: dict[str, Any]) -> Path:
    """Write ``state`` (without its schema mark, added here) as the folder's ``chat.json``."""
    path = folder / CHAT_FILE
    atomic_write_text(path, json.dumps({"schema": CHAT_SCHEMA, **state}, indent=1, ensure_ascii=False))
    return path


def read_chat(folder: Path) -> dict[str, Any] | None:
    """The stored chat of ``folder`` (None when there is none), checked before anything of it
    is used: a broken ``chat.json`` fails the open, never a later turn."""
    path = folder / CHAT_FILE
    if not path.exists():
        return None
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise SessionFormatError(path, f"not valid JSON ({exc})") from None
    if not isinstance(data, dict) or data.get("schema") != CHAT_SCHEMA:
        raise SessionFormatError(path, f"not a loom-nb chat (expected schema {CHAT_SCHEMA!r})")
    for key in ("messages", "turns", "summaries", "summarised"):
        if key not in data:
            raise SessionFormatError(path, f"missing {key!r}")
    return data
