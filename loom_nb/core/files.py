"""Reading files safely: what a path's language is, whether its bytes are text, opening
only regular files, decoding, and resolving a relative path without leaving a root.

The session folder (reading a reference's text back), the engine (outlines) and the walk
(indexing) all read files this way; it is the bottom layer's, so ``core`` never reaches up
into ``index`` for it.
"""

from __future__ import annotations

import codecs
import errno
import os
import re
import stat as stat_mod
from pathlib import Path, PurePosixPath
from typing import Any, BinaryIO, Mapping

from .errors import LoomError
from .lru import BoundedLRU

LANGUAGES: dict[str, str] = {
    ".py": "python", ".pyi": "python",
    ".js": "javascript", ".mjs": "javascript", ".cjs": "javascript", ".jsx": "javascript",
    ".ts": "typescript", ".tsx": "tsx",
    ".go": "go", ".rs": "rust", ".java": "java", ".php": "php",
    ".md": "markdown", ".markdown": "markdown", ".ipynb": "notebook",
    ".rst": "text", ".txt": "text",
    ".json": "json", ".toml": "toml", ".yaml": "yaml", ".yml": "yaml",
    ".cfg": "config", ".ini": "config",
    ".sh": "shell", ".bash": "shell",
    ".c": "c", ".h": "c",
    ".cpp": "cpp", ".hpp": "cpp", ".cc": "cpp", ".cxx": "cpp", ".hh": "cpp", ".hxx": "cpp",
    ".rb": "ruby", ".rake": "ruby", ".gemspec": "ruby", ".cs": "csharp",
    ".kt": "kotlin", ".kts": "kotlin", ".swift": "swift", ".lua": "lua", ".scala": "scala", ".sc": "scala",
    ".sql": "sql", ".html": "html", ".css": "css", ".xml": "xml", ".csv": "csv", ".tsv": "tsv",
}
"""File extension (lower case, with the dot) -> language name used by the indexers."""

FILENAME_LANGUAGES: dict[str, str] = {
    "Makefile": "text", "Dockerfile": "text", "LICENSE": "text", "README": "text",
    "Gemfile": "ruby", "Rakefile": "ruby",
}
"""Whole file names without an extension that are known text."""

CODE_LANGUAGES: frozenset[str] = frozenset({
    "python", "javascript", "typescript", "tsx", "go", "rust", "java", "php", "shell", "c", "cpp",
    "ruby", "csharp", "kotlin", "swift", "lua", "scala", "sql",
})
"""The languages of :data:`LANGUAGES` that are program source; prose, markup, data and
configuration (Markdown, JSON, YAML, TOML, INI, HTML, CSS, XML, CSV) are not. The ranking's code
role (:data:`loom_nb.core.paths.CODE_EXTENSIONS`) is read from here, so a new extension of a code
language is code at once."""

MAX_FILE_BYTES = 1_000_000
"""The largest file the walk indexes by default (:class:`~loom_nb.index.walk.WalkLimits`):
bigger ones are usually generated or data."""
MAX_NOTEBOOK_BYTES = 20_000_000
"""The largest notebook the walk indexes by default: its size is mostly images in outputs."""

SNIFF_BYTES = 8192
"""How much of a file is read to decide whether it is binary (git reads the same 8 KiB)."""

BINARY_CONTROL_RATIO = 0.30
"""A head with more than this share of non-text control bytes is binary (the heuristic
of ``binaryornot`` and Perl's ``-B``)."""

_UTF16_BOMS = (codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)
# Bytes that occur in text: BEL, BS, TAB, LF, FF, CR, ESC and everything from space up,
# except DEL. Deleting them from a head leaves the suspicious control bytes.
_TEXT_BYTES = bytes(sorted({7, 8, 9, 10, 12, 13, 27} | (set(range(0x20, 0x100)) - {0x7F})))
_WINDOWS_DRIVE = re.compile(r"^[A-Za-z]:")


def detect_language(path: str) -> str | None:
    """The language of a file from its name, or None when the name says nothing.

    Examples
    --------
    >>> detect_language("src/App.TSX"), detect_language("Makefile"), detect_language("a.bin")
    ('tsx', 'text', None)
    """
    name = PurePosixPath(str(path).replace("\\", "/")).name
    if name in FILENAME_LANGUAGES:
        return FILENAME_LANGUAGES[name]
    dot = name.rfind(".")
    if dot <= 0:  # no extension, or a dotfile such as ".gitignore"
        return None
    return LANGUAGES.get(name[dot:].lower())


def is_binary(head: bytes) -> bool:
    """Whether the first bytes of a file look binary.

    A NUL byte in the first 8 KiB (git's test) or more than 30% control bytes means binary;
    UTF-16 with a byte-order mark is text even though it is full of NULs.

    Examples
    --------
    >>> is_binary(b"\\x89PNG\\r\\n\\x1a\\n\\x00\\x00"), is_binary("café".encode())
    (True, False)
    """
    head = head[:SNIFF_BYTES]
    if not head or head.startswith(_UTF16_BOMS):
        return False
    if b"\0" in head:
        return True
    control = len(head.translate(None, _TEXT_BYTES))
    return control / len(head) > BINARY_CONTROL_RATIO


class NotRegularFileError(OSError):
    """A path that is not a regular file (a FIFO, socket, device or folder): never read.

    An ``OSError``, so every caller that already copes with an unreadable file (the walk, the
    indexer, reading a reference at query time) copes with this one too.
    """

    def __init__(self, path: str | os.PathLike, kind: str):
        super().__init__(errno.EINVAL, f"not a regular file ({kind})", os.fspath(path))
        self.kind = kind

    def __str__(self) -> str:
        return f"{self.filename}: {self.strerror}"


_OPEN_FLAGS = (
    os.O_RDONLY
    | getattr(os, "O_NONBLOCK", 0)  # opening a FIFO with no writer returns at once instead of blocking
    | getattr(os, "O_NOCTTY", 0)  # a terminal device never becomes our controlling terminal
    | getattr(os, "O_CLOEXEC", 0)
    | getattr(os, "O_BINARY", 0)  # Windows: no newline translation
)


def _kind(mode: int) -> str:
    """What a file that is not regular is, for a message."""
    for test, name in ((stat_mod.S_ISFIFO, "a FIFO"), (stat_mod.S_ISSOCK, "a socket"), (stat_mod.S_ISCHR, "a character device"),
                       (stat_mod.S_ISBLK, "a block device"), (stat_mod.S_ISDIR, "a folder")):
        if test(mode):
            return name
    return "a special file"


def open_regular(path: str | os.PathLike, *, stat_first: bool = True) -> BinaryIO:
    """Open ``path`` for binary reading if it is a regular file (a symlink to one counts).

    A FIFO would block the reader until someone writes to it, a device such as
    ``/dev/zero`` never ends, and opening some devices has effects of its own: anything that
    is not a regular file raises :class:`NotRegularFileError` instead. The path is checked
    with ``stat`` before it is opened, and the descriptor with ``fstat`` after: it is opened
    with ``O_NONBLOCK``, so a regular file swapped for a FIFO between the two calls is caught
    without blocking.

    Parameters
    ----------
    path : str or PathLike
        The file.
    stat_first : bool
        ``False`` skips the first ``stat`` when the caller has just made it (the walk has).

    Raises
    ------
    NotRegularFileError
        If ``path`` is a FIFO, socket, device or folder.
    OSError
        If it cannot be opened (missing, no permission).

    Examples
    --------
    >>> import tempfile
    >>> folder = tempfile.mkdtemp()
    >>> try:
    ...     open_regular(folder)
    ... except NotRegularFileError as exc:
    ...     print(exc.strerror)
    not a regular file (a folder)
    """
    if stat_first:
        mode = os.stat(path).st_mode
        if not stat_mod.S_ISREG(mode):
            raise NotRegularFileError(path, _kind(mode))
    return open(path, "rb", opener=_open_regular_fd)


def _open_regular_fd(path: str, _flags: int) -> int:
    """The ``opener`` of :func:`open_regular`: a descriptor, checked to be a regular file."""
    fd = os.open(path, _OPEN_FLAGS)
    try:
        mode = os.fstat(fd).st_mode
        if not stat_mod.S_ISREG(mode):
            raise NotRegularFileError(path, _kind(mode))
        if _OPEN_FLAGS & getattr(os, "O_NONBLOCK", 0):
            os.set_blocking(fd, True)  # O_NONBLOCK was for the open; read the file as any other
        return fd
    except BaseException:
        os.close(fd)
        raise


def read_text(path: Path, max_bytes: int | None = None) -> str:
    """Decode a file whatever its encoding, with ``\\n`` line ends.

    UTF-8 (a BOM is dropped), UTF-16 when it starts with a UTF-16 BOM, else cp1252 with
    undecodable bytes replaced: old Windows files are the usual non-UTF-8 text, and a
    mangled character is better than a file left out. Never raises ``UnicodeDecodeError``;
    ``OSError`` from reading is the caller's to handle, and that includes
    :class:`NotRegularFileError`: a FIFO, socket or device is refused, never read
    (:func:`open_regular`).

    Parameters
    ----------
    path : Path
        The file.
    max_bytes : int, optional
        Read at most this many bytes; a character cut in half at the end is dropped.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "w.txt"
    >>> _ = p.write_bytes(b"caf\\xe9\\r\\nok")
    >>> read_text(p)
    'café\\nok'
    """
    with open_regular(path) as fh:
        data = fh.read() if max_bytes is None else fh.read(max(0, max_bytes))
    truncated = max_bytes is not None and len(data) >= max_bytes
    return normalise_newlines(decode_bytes(data, truncated))


def decode_bytes(data: bytes, truncated: bool) -> str:
    """Bytes to text; see :func:`read_text` for the order of encodings tried."""
    if data.startswith(_UTF16_BOMS):
        # errors="replace": an odd byte count (a cut file) must not raise.
        return data.decode("utf-16", errors="replace")
    if data.startswith(codecs.BOM_UTF8):
        data = data[len(codecs.BOM_UTF8):]
    try:
        # Incremental with final=False keeps a multi-byte character cut by max_bytes
        # from making the whole file fall back to cp1252.
        return codecs.getincrementaldecoder("utf-8")().decode(data, final=not truncated)
    except UnicodeDecodeError:
        return data.decode("cp1252", errors="replace")


def indexed_size_limit(path: str, workspace: Mapping[str, Any] | None) -> int:
    """The largest ``path`` can be and still be a file the last index of its workspace took:
    the walk's size limit for its type, as that run recorded it (``workspace`` is the graph's
    ``metadata["workspace"]``), else the defaults. A bigger file is stale without being read:
    the next refresh skips it, and reading a 300 MB file that replaced a 2-line one only to
    find its units changed took 39 s and 1.6 GB.

    >>> indexed_size_limit("a.py", {"max_file_bytes": 2000}), indexed_size_limit("n.ipynb", None)
    (2000, 20000000)
    """
    notebook = detect_language(path) == "notebook"
    recorded = (workspace or {}).get("max_notebook_bytes" if notebook else "max_file_bytes")
    return int(recorded) if recorded else MAX_NOTEBOOK_BYTES if notebook else MAX_FILE_BYTES


def file_stamp(st: os.stat_result) -> tuple[int, ...]:
    """What tells one version of a file from another without reading it: size, mtime, ctime
    (a chmod or a write with the mtime set back), inode and device."""
    return (st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino, st.st_dev)


_LINES: BoundedLRU[str, tuple[tuple, list[str]]] = BoundedLRU(512, 32_000_000, size=lambda v: sum(map(len, v[1])))
"""Files' lines with the :func:`file_stamp` they were read under (32M characters at most)."""


def read_lines_cached(path: Path) -> list[str]:
    """``read_text(path).split("\\n")``, from memory while the file's :func:`file_stamp` is
    unchanged. The list is shared: do not modify it.

    A query reads the lines of every unit it loads from the unit's file, often several units
    of one file; reading, decoding and splitting the whole file each time was a third of a
    warm query at 16k tokens (issue 16). The caller still checks the lines it takes against
    their sha256.
    """
    st = os.stat(path)
    if not stat_mod.S_ISREG(st.st_mode):
        read_text(path)  # raises NotRegularFileError, as an uncached read does
    stamp = file_stamp(st)
    found = _LINES.get(str(path))
    if found is not None and found[0] == stamp:
        return found[1]
    lines = read_text(path).split("\n")
    _LINES.put(str(path), (stamp, lines))
    return lines


_MASKED_LINES: BoundedLRU[str, tuple[list[str], list[str]]] = BoundedLRU(64, 8_000_000, size=lambda v: sum(map(len, v[1])))
"""Files' lines masked as a whole, keyed by the :func:`read_lines_cached` list they were made of."""


def read_masked_lines_cached(path: Path) -> list[str]:
    """:func:`read_lines_cached` with the file's credentials masked as the indexer masks them:
    the whole file at once, so a key cut across units is masked in every part
    (:func:`loom_nb.index.indexer.mask_file`). Only units whose raw lines no longer match their
    hash ask for it. The list is shared: do not modify it."""
    from .secrets import mask_secrets

    lines = read_lines_cached(path)
    found = _MASKED_LINES.get(str(path))
    if found is not None and found[0] is lines:
        return found[1]
    masked, findings = mask_secrets("\n".join(lines), remember=False)
    result = masked.split("\n") if findings else lines
    _MASKED_LINES.put(str(path), (lines, result))
    return result


def normalise_newlines(text: str) -> str:
    return text.replace("\r\n", "\n").replace("\r", "\n")


# --------------------------------------------------------------------------- paths


def _inside(real: str, real_root: str) -> bool:
    """Whether an already-resolved path is the root or below it."""
    if real == real_root:
        return True
    prefix = real_root if real_root.endswith(os.sep) else real_root + os.sep
    return real.startswith(prefix)


def resolve_inside(root: Path, relative: str, *, backslash_separates: bool = True) -> Path:
    """The absolute path of `relative` under `root`; raises LoomError if it would leave the workspace (.., absolute paths, symlinks pointing out).

    The path need not exist. ``..`` that stays inside (``a/../b``) is allowed; backslashes
    count as separators, since paths from a model or a Windows user use them. A path the
    walk itself recorded is passed with ``backslash_separates=False`` on POSIX, where a
    backslash is a character of a file name (``we\\ird.py``).

    Examples
    --------
    >>> import tempfile
    >>> root = Path(tempfile.mkdtemp())
    >>> resolve_inside(root, "src/../a.py") == root.resolve() / "a.py"
    True
    """
    text = str(relative).replace("\\", "/") if backslash_separates or os.sep == "\\" else str(relative)
    if "\0" in text:
        raise LoomError(f"{relative!r} contains a NUL byte: give a plain path inside the workspace.")
    if text.startswith("/") or _WINDOWS_DRIVE.match(text):
        raise LoomError(
            f"{relative!r} is an absolute path: give a path relative to the workspace {root}."
        )
    parts: list[str] = []
    for part in text.split("/"):
        if part in ("", "."):
            continue
        if part == "..":
            if not parts:
                raise LoomError(
                    f"{relative!r} leaves the workspace {root}: give a path inside it."
                )
            parts.pop()
        else:
            parts.append(part)
    real_root = os.path.realpath(root)
    candidate = Path(real_root, *parts)
    # realpath resolves every symlink on the way, existing or not (strict=False).
    if not _inside(os.path.realpath(candidate), real_root):
        raise LoomError(
            f"{relative!r} is a symlink that points outside the workspace {root}; "
            "use a path to a file inside it."
        )
    return candidate

