"""What git knows about a workspace: the commit, what changed since one, what is dirty.

Every function degrades to ``None`` outside a repository or when git is missing, so the
indexer falls back to modification times and content hashes (seed 000 §13.3).
"""

from __future__ import annotations

import logging
import shutil
import subprocess
from pathlib import Path

log = logging.getLogger(__name__)


def _git(root: Path, *args: str) -> str | None:
    if shutil.which("git") is None:
        return None
    try:
        done = subprocess.run(
            ["git", "-C", str(root), *args], capture_output=True, text=True, timeout=30, check=False,
            env={"GIT_OPTIONAL_LOCKS": "0", "PATH": "/usr/bin:/bin:/usr/local/bin", "LC_ALL": "C"},
        )
    except (OSError, subprocess.SubprocessError) as exc:
        log.info("git %s failed: %s", " ".join(args), exc)
        return None
    if done.returncode != 0:
        return None
    return done.stdout


def repo_prefix(root: Path) -> str | None:
    """The workspace's path inside its repository ("" at the top), or ``None`` if not in git."""
    out = _git(root, "rev-parse", "--show-prefix")
    return None if out is None else out.strip()


def head_commit(root: Path) -> str | None:
    out = _git(root, "rev-parse", "--verify", "--quiet", "HEAD")
    return out.strip() if out else None


def _relative(paths: list[str], prefix: str) -> set[str]:
    """Repository paths → workspace paths (those outside the workspace dropped)."""
    return {p[len(prefix):] for p in paths if p and p.startswith(prefix)}


def changed_since(root: Path, commit: str) -> set[str] | None:
    """Workspace paths that differ between ``commit`` and HEAD (``git diff --name-only``).

    Renames count as a deletion and an addition; ``None`` when git cannot tell (not a
    repository, or the commit is gone after a rebase), and the caller must check every file.
    """
    prefix = repo_prefix(root)
    if prefix is None:
        return None
    out = _git(root, "diff", "--name-only", "--no-renames", "-z", f"{commit}..HEAD", "--", ".")
    if out is None:
        return None
    return _relative(out.split("\0"), prefix)


class DirtyPaths(set):
    """Workspace paths with uncommitted changes (the set's members, read by the ``git_dirty``
    signal), which also *contains* the paths git does not vouch for: every path under a folder
    git sees only from outside (``?? vendor/lib/``, a nested repository; a submodule), a
    symlink, whose target's edits git reports under the target's path, not the link's, and any
    path git does not track (``tracked``: a file the walk takes though a ``.gitignore`` above
    the workspace, or a ``!`` pattern of ``extra_ignores``, makes git ignore it: ``git status``
    never names its edits). A refresh checks those itself."""

    def __init__(self, paths: set[str], unseen: set[str], tracked: set[str] | None = None) -> None:
        super().__init__(paths)
        self.unseen = frozenset(path.rstrip("/") for path in unseen)
        self.folders = tuple(sorted(path + "/" for path in self.unseen))
        self.tracked = None if tracked is None else frozenset(tracked)

    def __contains__(self, path: object) -> bool:
        if set.__contains__(self, path):
            return True
        if not isinstance(path, str):
            return False
        return path in self.unseen or path.startswith(self.folders) or (self.tracked is not None and path not in self.tracked)


def dirty_files(root: Path) -> DirtyPaths | None:
    """Workspace paths with uncommitted changes or untracked, from ``git status``, and the
    paths git cannot see into or does not track (:class:`DirtyPaths`): a refresh must check
    those itself."""
    prefix = repo_prefix(root)
    if prefix is None:
        return None
    out = _git(root, "status", "--porcelain=v1", "-z", "--untracked-files=all", "--no-renames", "--", ".")
    # --full-name: paths from the repository's top, as status gives them (without it, a
    # workspace in a sub-folder got paths the prefix did not match, and lost its symlinks)
    staged = _git(root, "ls-files", "--stage", "--full-name", "-z", "--", ".")
    if out is None or staged is None:
        return None
    paths = [entry[3:] for entry in out.split("\0") if len(entry) > 3]
    listed = [entry.split("\t", 1) for entry in staged.split("\0") if "\t" in entry]
    opaque = [path for mode, path in listed if mode.startswith(("120000 ", "160000 "))]  # symlinks, submodules
    unseen = _relative([p for p in paths if p.endswith("/")] + opaque, prefix)
    tracked = _relative([path for _, path in listed], prefix)
    return DirtyPaths(_relative([p for p in paths if not p.endswith("/")], prefix), unseen, tracked)
