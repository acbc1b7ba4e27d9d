"""What loom-nb keeps per user, outside any session folder: where it lives, and the key that
seals the graph.json files this user's loom-nb writes.

Nothing a session folder holds can change what is here (:mod:`loom_nb.core.trust` keeps the
confirmed workspace roots in the same folder).
"""

from __future__ import annotations

import logging
import os
from pathlib import Path

log = logging.getLogger(__name__)

__all__ = ["SEAL_KEY_FILE", "config_dir", "seal_key"]


def config_dir() -> Path:
    explicit = os.environ.get("LOOM_NB_CONFIG_DIR")
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
    return Path(base) / "loom-nb"


SEAL_KEY_FILE = "seal.key"


def seal_key() -> bytes | None:
    """This user's key for sealing the graph.json files loom-nb writes (32 random bytes,
    made on first use, readable by the user alone), or None where it cannot be kept.

    A save stores ``HMAC(key, graph.json)`` beside the document; an open that finds the
    seal matching skips the schema check, since the bytes are exactly what this user's
    loom-nb wrote after checking them (issue 16: the check is 0.4 s of a cold query at 28k
    units). A file from elsewhere, edited or damaged does not match and is checked in full.
    """
    path = config_dir() / SEAL_KEY_FILE
    try:
        key = path.read_bytes()
        if len(key) == 32:
            return key
    except FileNotFoundError:
        pass
    except OSError as exc:
        log.debug("no seal key (%s): every graph.json is checked in full", exc)
        return None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "wb") as f:
            f.write(os.urandom(32))
        return path.read_bytes()
    except FileExistsError:  # another process made it first
        key = path.read_bytes()
        return key if len(key) == 32 else None
    except OSError as exc:
        log.debug("no seal key (%s): every graph.json is checked in full", exc)
        return None
