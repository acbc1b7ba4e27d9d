"""Telemetry: one structured event per step, for seeing where time and tokens go (seed 003;
issue 19).

With ``LoomConfig(telemetry=True)`` (or ``loom.telemetry(True)``) every query emits
``classify``, ``embed``, ``rank`` and ``pack`` events, every index run an ``index`` event,
and every chat turn a ``chat request`` event per call to the model and a ``callback`` event
per node the model asked for. Each event has its time, its kind, its duration in seconds
and the counts and ids that say what it did. Events are kept in memory (the last
:data:`MEMORY_EVENTS`) and appended, one JSON object per line, to ``events.jsonl`` in the
session folder. Off by default: nothing is written unless it is switched on.

An append of one short line is a single ``write`` to a file opened in append mode, so two
threads or processes never interleave inside a line; a process killed mid-write leaves at
most a torn last line, which :func:`read_events` skips.
"""

from __future__ import annotations

import json
import os
import threading
from collections import deque
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

__all__ = ["EVENTS_FILE", "EventLog", "MAX_EVENTS_BYTES", "MEMORY_EVENTS", "read_events"]

EVENTS_FILE = "events.jsonl"
MAX_EVENTS_BYTES = 20_000_000
"""Past this size ``events.jsonl`` is renamed ``events.1.jsonl`` (replacing an older one) and
a new file starts: telemetry never grows a session folder without bound."""
MEMORY_EVENTS = 5000


class EventLog:
    """A session's events: the recent ones in memory, all of them in ``events.jsonl``."""

    def __init__(self):
        self.recent: deque[dict[str, Any]] = deque(maxlen=MEMORY_EVENTS)
        self._lock = threading.Lock()

    def emit(self, folder: Path | None, kind: str, seconds: float, **fields: Any) -> dict[str, Any]:
        """Record one event (and append it to ``folder``'s file when there is a folder)."""
        event = {"time": datetime.now(timezone.utc).isoformat(timespec="milliseconds"), "kind": kind,
                 "seconds": round(float(seconds), 6), **fields}
        line = json.dumps(event, ensure_ascii=False, default=str) + "\n"
        with self._lock:
            self.recent.append(event)
            if folder is not None:
                _append(Path(folder), line)
        return event

    def events(self, folder: Path | None = None) -> list[dict[str, Any]]:
        """Every event of the session: from its file when it has a folder, else from memory."""
        if folder is not None and (Path(folder) / EVENTS_FILE).exists():
            return read_events(folder)
        return list(self.recent)


def _append(folder: Path, line: str) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / EVENTS_FILE
    try:
        if path.stat().st_size > MAX_EVENTS_BYTES:
            os.replace(path, folder / "events.1.jsonl")
    except FileNotFoundError:
        pass
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    try:
        os.write(fd, line.encode("utf-8"))
    finally:
        os.close(fd)


def read_events(folder: str | Path) -> list[dict[str, Any]]:
    """The events in ``folder``'s ``events.jsonl``, oldest first; lines that are not a JSON
    object (a torn last line) are skipped."""
    path = Path(folder) / EVENTS_FILE
    if not path.exists():
        return []
    events = []
    with open(path, encoding="utf-8", errors="replace") as fh:
        for line in fh:
            try:
                event = json.loads(line)
            except json.JSONDecodeError:
                continue
            if isinstance(event, dict) and "kind" in event:
                events.append(event)
    return events
