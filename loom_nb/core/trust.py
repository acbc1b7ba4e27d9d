"""Which workspace roots the user confirmed for which session folders, on this machine.

A session folder names its workspace root in graph.json, and references are read from
there at query time. A folder from elsewhere could name ``/`` and a reference to
``etc/passwd``. So a root is used only when the user confirmed it: by indexing it
(``loom.index(root)``), by passing it again (``Loom.open(folder, workspace=root)``), or
because it lies inside the session folder itself (a copied sample). Confirmations are
remembered per user, like git's ``safe.directory``, in
``$LOOM_NB_CONFIG_DIR`` (default ``$XDG_CONFIG_HOME/loom-nb``, then ``~/.config/loom-nb``).
Nothing a session folder holds can add to that list.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path

from .userdir import config_dir

log = logging.getLogger(__name__)

TRUST_FILE = "trusted_workspaces.json"


def _read(path: Path) -> dict[str, list[str]]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as exc:
        log.warning("%s unreadable (%s): no workspace is confirmed until it is rewritten", path, exc)
        return {}
    if not isinstance(data, dict):
        return {}
    return {k: [r for r in v if isinstance(r, str)] for k, v in data.items() if isinstance(k, str) and isinstance(v, list)}


def _key(path: str | Path) -> str:
    return str(Path(path).resolve())


def is_confirmed(session_folder: str | Path, root: str | Path) -> bool:
    """Whether ``root`` may serve references to the session in ``session_folder``."""
    folder, target = Path(_key(session_folder)), Path(_key(root))
    if target.is_relative_to(folder):
        return True
    return str(target) in _read(config_dir() / TRUST_FILE).get(str(folder), [])


def confirm(session_folder: str | Path, root: str | Path) -> None:
    """Remember that the user gave ``root`` as the workspace of ``session_folder``.

    A confirmation that cannot be written (a read-only home) is logged, not raised: the
    session still works in this process, and the next one asks again.
    """
    folder, target = _key(session_folder), _key(root)
    if Path(target).is_relative_to(folder):
        return
    _remember(TRUST_FILE, folder, target)


def _remember(name: str, folder: str, value: str) -> None:
    """Add ``value`` to ``folder``'s confirmations in the file ``name``, and forget the
    confirmations of session folders that no longer exist: the file would otherwise grow with
    every temporary session (a test run left a thousand), and a folder made later at a deleted
    one's path is not the folder the user confirmed."""
    path = config_dir() / name
    try:
        from .folder_lock import session_lock

        with session_lock(path.parent, timeout=10):
            data = _read(path)
            values = data.setdefault(folder, [])
            gone = [k for k in data if k != folder and not Path(k).is_dir()]
            if value in values and not gone:
                return
            for k in gone:
                del data[k]
            if value not in values:
                values.append(value)
            from .store import atomic_write_text

            atomic_write_text(path, json.dumps(data, indent=1, sort_keys=True))
    except Exception as exc:  # noqa: BLE001 - trust is remembered for convenience only
        log.warning("could not remember %s for %s (%s)", value, folder, exc)


VECTORS_TRUST_FILE = "trusted_vector_stores.json"
"""Vector stores (Qdrant locations) confirmed per session folder: graph.json names where its
vectors are, and a folder from elsewhere could name any server or any local folder, so a
load contacts one only after the user named it (``vectors=``, ``--vectors``) or saved there."""


def vectors_confirmed(session_folder: str | Path, location_key: str) -> bool:
    """Whether the vector store ``location_key`` (``VectorLocation.key``) was confirmed for
    the session in ``session_folder`` on this machine."""
    return location_key in _read(config_dir() / VECTORS_TRUST_FILE).get(_key(session_folder), [])


def confirm_vectors(session_folder: str | Path, location_key: str) -> None:
    """Remember that the user named ``location_key`` as the vector store of ``session_folder``."""
    _remember(VECTORS_TRUST_FILE, _key(session_folder), location_key)
