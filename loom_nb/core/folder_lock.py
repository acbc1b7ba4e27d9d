"""One writer at a time per session folder.

Two processes that save one session at once used to pick the same generation and each
delete the other's files. Every writer now holds ``<folder>/.loom.lock`` (an OS file lock
through ``filelock``: released by the kernel when the process dies, so a kill -9 never
leaves a stale lock). A second writer waits up to ``timeout`` seconds, then fails with the
process id of the holder.

The lock belongs to a thread: the thread that holds it may take it again (a CLI command
holds it from open to save; the save inside takes it again without blocking), and another
thread of the same process waits as another process does. (The file lock alone is the
process's: a second thread once walked in, both threads saved the same generation, and one
thread's nodes were lost though both were told "saved".)
"""

from __future__ import annotations

import errno
import os
import threading
import time
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

_locks: dict[str, tuple[threading.RLock, FileLock]] = {}
_guard = threading.Lock()
if hasattr(os, "register_at_fork"):  # a forked child holds no lock of its parent's
    os.register_at_fork(after_in_child=_locks.clear)


def _lock_for(folder: Path) -> tuple[threading.RLock, FileLock]:
    """The folder's thread lock and file lock: only the thread holding the first takes the
    second, so the file lock's count is that thread's re-entries alone."""
    key = str(folder.resolve())
    with _guard:
        locks = _locks.get(key)
        if locks is None:
            locks = _locks[key] = (threading.RLock(), FileLock(os.path.join(key, LOCK_FILE), thread_local=False))
        return locks


_READ_ONLY = {errno.EACCES, errno.EPERM, errno.EROFS}


def not_writable(folder: Path, exc: OSError) -> LoomError | None:
    """The error to raise for ``exc`` when it says ``folder`` cannot be written (no
    permission, read-only media), else None: what to do instead of a raw PermissionError
    that names .loom.lock."""
    if exc.errno not in _READ_ONLY:
        return None
    return LoomError(f"{folder}: the folder is not writable ({exc.strerror or exc}), so the session cannot be saved there; "
                     "save it to another folder with save(folder), or copy the folder somewhere writable")


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
        Another thread or process held the lock for longer than ``timeout`` seconds
        (a negative ``timeout`` waits for ever).
    """
    folder = Path(folder)
    if folder.exists() and not folder.is_dir():
        raise LoomError(f"{folder} is a file, not a session folder")
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise not_writable(folder, exc) or exc from None
    mine, lock = _lock_for(folder)
    wait = DEFAULT_TIMEOUT if timeout is None else timeout
    deadline = time.monotonic() + wait
    if not mine.acquire(timeout=-1 if wait < 0 else wait):
        raise SessionLockedError(
            f"{folder}: the session is being written by another thread of this process (waited {wait:g} s); "
            "try again when it has finished"
        )
    try:
        try:
            lock.acquire(timeout=wait if wait < 0 else max(0.0, deadline - time.monotonic()))
        except Timeout:
            raise SessionLockedError(
                f"{folder}: the session is being written by {holder(folder)} (waited {wait:g} s); "
                "try again when it has finished"
            ) from None
        except OSError as exc:  # the lock file cannot be made or opened for writing
            raise not_writable(folder, exc) or exc from None
        try:
            if lock.lock_counter == 1:
                try:
                    (folder / LOCK_FILE).write_text(f"{os.getpid()}\n")  # for the message of a waiting writer
                except OSError:  # the process id is only for that message
                    pass
            yield
        finally:
            lock.release()
    finally:
        mine.release()
