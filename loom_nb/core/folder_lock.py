"""One writer at a time per session folder.

Two processes that save one session at once used to pick the same generation and each
delete the other's files. Every writer now holds ``<folder>/.loom.lock`` (an OS file lock
through ``filelock``: released by the kernel when the process dies, so a kill -9 never
leaves a stale lock). A second writer waits up to ``timeout`` seconds, then fails with the
process id of the holder.

The lock is re-entrant within a process (a CLI command holds it from open to save; the
save inside takes it again without blocking).
"""

from __future__ import annotations

import os
import threading
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from filelock import FileLock, Timeout

from .errors import LoomError, SessionLockedError

LOCK_FILE = ".loom.lock"
DEFAULT_TIMEOUT = 30.0
"""Seconds a writer waits for another: a save of a 50k-node session takes about a second,
an index of a large repository a few minutes, so a waiting CLI command usually gets its
turn; a notebook cell does not hang for ever behind a forgotten process."""

_locks: dict[str, FileLock] = {}
_guard = threading.Lock()
if hasattr(os, "register_at_fork"):  # a forked child holds no lock of its parent's
    os.register_at_fork(after_in_child=_locks.clear)


def _lock_for(folder: Path) -> FileLock:
    key = str(folder.resolve())
    with _guard:
        lock = _locks.get(key)
        if lock is None:
            lock = _locks[key] = FileLock(os.path.join(key, LOCK_FILE), thread_local=False)
        return lock


def holder(folder: Path) -> str:
    """Who holds the lock, as far as its owner file says ("process 1234", or "another process")."""
    try:
        pid = (Path(folder) / LOCK_FILE).read_text().strip()
    except OSError:
        pid = ""
    return f"process {pid}" if pid.isdigit() else "another process"


@contextmanager
def session_lock(folder: str | Path, timeout: float | None = None) -> Iterator[None]:
    """Hold the write lock of the session ``folder`` for the ``with`` block.

    Raises
    ------
    SessionLockedError
        Another process held the lock for longer than ``timeout`` seconds.
    """
    folder = Path(folder)
    if folder.exists() and not folder.is_dir():
        raise LoomError(f"{folder} is a file, not a session folder")
    folder.mkdir(parents=True, exist_ok=True)
    lock = _lock_for(folder)
    wait = DEFAULT_TIMEOUT if timeout is None else timeout
    try:
        lock.acquire(timeout=wait)
    except Timeout:
        raise SessionLockedError(
            f"{folder}: the session is being written by {holder(folder)} (waited {wait:g} s); "
            "try again when it has finished"
        ) from None
    try:
        if lock.lock_counter == 1:
            try:
                (folder / LOCK_FILE).write_text(f"{os.getpid()}\n")  # for the message of a waiting writer
            except OSError:  # the process id is only for that message
                pass
        yield
    finally:
        lock.release()
