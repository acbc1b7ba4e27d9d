"""Files that are replaced whole or not at all: a temporary file in the same folder,
fsynced, then swapped in with ``os.replace``. The session folder, the vector files and the
chat and report writers all save this way."""

from __future__ import annotations

import os
import stat
import tempfile
import threading
from contextlib import contextmanager
from pathlib import Path

import numpy as np


_UMASK: list[int] = []
_UMASK_LOCK = threading.Lock()


def _new_file_mode(path: Path) -> int:
    """The mode ``open()`` would give ``path``: the mode of the file it replaces, else 0666
    less the umask. ``mkstemp`` makes every file 0600, so a shared report or a team's session
    folder came out readable by its owner alone, and a replaced file lost its mode."""
    try:
        return stat.S_IMODE(os.stat(path).st_mode)
    except OSError:
        pass
    with _UMASK_LOCK:  # os.umask can only be read by setting it: once, under a lock
        if not _UMASK:
            _UMASK.append(os.umask(0o022))
            os.umask(_UMASK[0])
    return 0o666 & ~_UMASK[0]


@contextmanager
def atomic_file(path: Path, *, fsync: bool = True):
    """A binary file that replaces ``path`` only when the ``with`` block succeeds.

    Readers see the old file or the new one, never half of one: the data goes to a
    temporary file in the same folder, is fsynced, and ``os.replace`` swaps it in; on any
    failure the temporary file is removed. ``fsync=False`` leaves the sync to the caller
    (a save writes many content files and syncs them once).
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            if hasattr(os, "fchmod"):  # not on Windows, where mkstemp's mode is not the issue
                os.fchmod(f.fileno(), _new_file_mode(path))
            yield f
            if fsync:
                f.flush()
                os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def atomic_write_bytes(path: Path, data: bytes) -> None:
    with atomic_file(path) as f:
        f.write(data)


def atomic_write_text(path: Path, text: str) -> None:
    atomic_write_bytes(path, text.encode("utf-8"))


def save_npy(path: Path, array: np.ndarray) -> None:
    """A float32 matrix as a ``.npy`` file, written atomically (raw: a round trip is bit-identical)."""
    with atomic_file(path) as f:
        np.save(f, np.ascontiguousarray(array, dtype=np.float32), allow_pickle=False)
