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
    problem = chat_problem(data)
    if problem:
        raise SessionFormatError(path, problem)
    return data


def _is(value: Any, kind: Any) -> bool:
    """``value`` is of ``kind``: a type, ``"count"`` (an int ≥ 0, not a bool), ``"number"``,
    ``"texts"`` (a list of str), ``"counts"`` (a dict of str to count), ``"span"`` (two counts),
    or a tuple of these."""
    if isinstance(kind, tuple):
        return any(_is(value, k) for k in kind)
    if kind == "count":
        return isinstance(value, int) and not isinstance(value, bool) and value >= 0
    if kind == "number":
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if kind == "texts":
        return isinstance(value, list) and all(isinstance(v, str) for v in value)
    if kind == "span":
        return isinstance(value, list) and len(value) == 2 and all(_is(v, "count") for v in value)
    if kind == "counts":
        return isinstance(value, dict) and all(isinstance(k, str) and _is(v, "count") for k, v in value.items())
    return isinstance(value, kind)


MESSAGE_FIELDS = {"role": str, "content": str, "turn": "count", "tokens": "count", "node_ids": "texts"}
TURN_FIELDS = {"number": "count", "query": str, "window": "count", "zones": "counts", "answer": str, "loaded": "texts",
               "offered": "texts", "input_nodes": "texts", "answer_nodes": "texts", "history_messages": "count",
               "summary_node": (str, type(None)), "callbacks": list, "calls": list, "seconds": "number"}
CALL_FIELDS = {"estimated_prompt": "count", "prompt_eval_count": ("count", type(None)),
               "eval_count": ("count", type(None)), "seconds": "number", "requested": "texts"}
SUMMARY_FIELDS = {"first_turn": "count", "last_turn": "count", "messages": "span", "node_id": str, "text": str,
                  "by": str}
_REQUIRED = {"message": ("role", "content", "turn", "tokens"), "turn": ("number", "query", "window", "zones"),
             "call": ("estimated_prompt", "seconds"), "summary": ("node_id", "text")}


def _record_problem(record: Any, fields: dict[str, Any], name: str, where: str) -> str | None:
    if not isinstance(record, dict):
        return f"{where} is not an object"
    for key in _REQUIRED[name]:
        if key not in record:
            return f"{where} has no {key!r}"
    for key, value in record.items():
        if key not in fields:
            return f"{where} has an unknown field {key!r}"
        if not _is(value, fields[key]):
            return f"{where}.{key} is {json.dumps(value)[:40]}: the wrong type"
    return None


def chat_problem(data: dict[str, Any]) -> str | None:
    """What is wrong with a chat.json document (None: nothing). Each check stands for a crash
    a later turn met: ``summarised: -3`` (IndexError), a message's ``tokens: "x"`` (TypeError),
    ``zones: null``; and values that passed and were wrong: ``summarised: 99``, ``model: 5``."""
    if "model" in data and not (isinstance(data["model"], str) and data["model"].strip()):
        return f"'model' is {json.dumps(data['model'])[:40]}, not a model name"
    for key in ("messages", "turns", "summaries"):
        if not isinstance(data[key], list):
            return f"{key!r} is not a list"
    checks = [("message", MESSAGE_FIELDS, "messages"), ("turn", TURN_FIELDS, "turns"), ("summary", SUMMARY_FIELDS, "summaries")]
    for name, fields, key in checks:
        for i, record in enumerate(data[key]):
            problem = _record_problem(record, fields, name, f"{key}[{i}]")
            if problem:
                return problem
    for i, turn in enumerate(data["turns"]):
        for j, call in enumerate(turn.get("calls") or []):
            problem = _record_problem(call, CALL_FIELDS, "call", f"turns[{i}].calls[{j}]")
            if problem:
                return problem
        if not all(isinstance(c, dict) for c in turn.get("callbacks") or []):
            return f"turns[{i}].callbacks is not a list of objects"
    summarised = data["summarised"]
    if not _is(summarised, "count") or summarised > len(data["messages"]):
        return f"'summarised' is {json.dumps(summarised)[:40]}: not a count of the {len(data['messages'])} messages"
    return None
