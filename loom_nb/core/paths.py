"""What a request says about paths: files it names (full path, basename, stem or folder),
paths it tags (``@path`` or in backticks), the lines its tracebacks and ``file:line`` places
point at, and each path's role (program code, test, other). These are signals of their own in
:mod:`loom_nb.core.rank` (seed 004: an explicitly tagged path is the strongest signal, a
mentioned one a strong one; a traceback frame points as surely as a tag).

Size: four readers of one subject (mentions, tags, line places, roles) and the path table they
share, worked out once per paths column; each reader has its doctests beside it.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from functools import lru_cache

import numpy as np

from .files import CODE_LANGUAGES, FILENAME_LANGUAGES, LANGUAGES
from .query import commit_scopes, message_part

PATH_SCORE, BASENAME_SCORE, STEM_SCORE, FOLDER_SCORE = 1.0, 0.7, 0.4, 0.25
""":func:`path_mentions` values for naming a row's full path, its basename, its stem, or the
folder it is in ("fix(binding): ..." names the files of ``binding/``)."""

MIN_STEM_CHARS = 4
"""A stem must have this many characters to count as a mention: 'io' or 'cli' are ordinary
words in a question far more often than they are a reference to ``io.py`` or ``cli.py``."""

MAX_FILES_PER_NAME = 3
"""A basename or stem that more workspace files of one role (:func:`file_role`) than this share
names none of them: sphinx's test roots hold a hundred ``conf.py`` and every sphinx issue's
template mentions ``conf.py``; a word such as *index* or *utils* is the stem of dozens of files.
On the thirteen labelled sets of public repositories, a query named 1,230 files by a basename more
than three files have and 2 of them were gold; 5,784 by such a stem, 11 gold; by a stem one file
has, 107 of 693 (benchmarks/README.md, 'A name many files share')."""


def _normalise_path(path: str) -> str:
    """POSIX slashes, no leading './', no doubled or trailing slash."""
    path = path.strip().replace("\\", "/")
    path = re.sub(r"/{2,}", "/", path)
    while path.startswith("./"):
        path = path[2:]
    return path.rstrip("/") if path not in ("", "/") else path


_QUALIFIED = re.compile(r"[a-z_]\w*(?:(?:\.|::)[a-z_]\w*)+")
"""A qualified name as code writes one: ``sphinx.util.inspect.object_description``,
``Monolog\\Handler\\StreamHandler`` (read with '.' for '\\'), ``axum::routing::get``. Not a
path with '/': those are paths, and a URL's parts are not modules."""


_MODULE_IMPORT = re.compile(r"^[ \t]*(?:>>>[ \t]*|\.\.\.[ \t]*)?import[ \t]+[\w.]+(?:[ \t]+as[ \t]+\w+)?"
                            r"(?:[ \t]*,[ \t]*[\w.]+(?:[ \t]+as[ \t]+\w+)?)*[ \t]*$", re.M)
"""A line that only imports modules (``import matplotlib.pyplot as plt``), as a pasted
reproduction script begins: it says what the reporter uses, not where the fault is. Of the
194 SWE-bench issues measured, the 8 files named only so were never gold (7 of them
``pyplot.py``), where ``from a.b import c`` named the gold file in 5 of 10 (benchmarks/README.md,
'A module a script imports names no file')."""


def _module_candidates(query: str) -> set[str]:
    """Each qualified name's leading parts of two or more segments, '/'-joined: the module a
    name such as ``sphinx.util.inspect.object_description`` may live in
    (``sphinx/util``, ``sphinx/util/inspect``, ``sphinx/util/inspect/object_description``).
    Names on a line that only imports modules (:data:`_MODULE_IMPORT`) are left out; their
    words still count as words (``pyplot`` names ``pyplot.py``'s stem).

    >>> sorted(_module_candidates("see sphinx.util.inspect.isclass and Monolog\\\\Handler\\\\StreamHandler"))
    ['monolog/handler', 'monolog/handler/streamhandler', 'sphinx/util', 'sphinx/util/inspect', 'sphinx/util/inspect/isclass']
    >>> sorted(_module_candidates("import matplotlib.pyplot as plt\\nfrom matplotlib.colors import LogNorm"))
    ['matplotlib/colors']
    """
    found: set[str] = set()
    for segments in _qualified_names(query):
        found.update("/".join(segments[:j]) for j in range(2, len(segments) + 1))
    return found


def _qualified_names(text: str) -> list[list[str]]:
    """The qualified names of ``text`` (lower-cased, '\\' read as '.'), each split into its
    parts; none from a line that only imports modules (:data:`_MODULE_IMPORT`)."""
    text = _MODULE_IMPORT.sub(" ", text).lower().replace("\\", ".")
    return [re.split(r"\.|::", name) for name in _QUALIFIED.findall(text)]


_TAG = re.compile(r"`([^`\n]+)`|(?<![\w@])@([^\s`'\"<>]+)")
_EXTENSION = re.compile(r"(?:^|[^./])\.[A-Za-z][A-Za-z0-9_]{0,9}$|^\.[\w.-]+$")


def _looks_like_path(text: str) -> bool:
    if not text or any(c.isspace() for c in text):
        return False
    basename = text.rstrip("/").rsplit("/", 1)[-1]
    return "/" in text or bool(_EXTENSION.search(basename))


def tagged_paths(query: str) -> list[str]:
    """Paths the user tagged: ``@loom_nb/rank.py`` or backticked text that looks like a path.

    Seed 004 makes an explicit tag the strongest signal, so the rule is kept narrow: the tagged
    text must contain a '/' or end in a file extension (a letter then up to 9 letters, digits or
    underscores, or a dotfile such as ``.gitignore``). That keeps ``@dataclass``, an e-mail
    address or a backticked ``count_tokens`` out. Dotted names such as ```np.savez``` do
    pass; they are harmless, since :func:`tagged_mask` only boosts rows whose path matches.
    Trailing punctuation after an ``@`` tag is dropped ("see @a/b.py." tags ``a/b.py``).

    Returns the paths normalised (POSIX slashes, no leading './' or trailing '/'), in the order
    they appear, without duplicates.

    >>> tagged_paths("compare @loom_nb/rank.py with `./loom_nb/pack.py` and `count_tokens`, @dataclass")
    ['loom_nb/rank.py', 'loom_nb/pack.py']
    """
    found: list[str] = []
    for match in _TAG.finditer(query):
        backticked, at = match.groups()
        text = backticked.strip() if backticked is not None else at.rstrip(".,;:!?)]}")
        if _looks_like_path(text):
            path = _normalise_path(text)
            if path and path not in found:
                found.append(path)
    return found


def _stem(basename: str) -> str:
    """A basename without its extension; a dotfile (``.env``) is all stem."""
    return basename.rsplit(".", 1)[0] if basename.find(".", 1) > 0 else basename


class _PathTable:
    """The unique paths of one paths column and what the path signals read of them, worked
    out once: ``unique`` (lower-cased, normalised), ``inverse`` (row -> unique), ``has``
    (row has a path), and the basename, stem and folder of each unique path."""

    def __init__(self, paths: list[str | None]):
        column = np.array(paths, dtype=object).reshape(-1)
        has = column != None  # noqa: E711 - elementwise comparison, not identity
        column[~has] = ""
        text = column.astype(str)
        raw, inverse = np.unique(text, return_inverse=True)
        self.raw = raw
        self.unique = np.array([_normalise_path(p).lower() for p in raw.tolist()], dtype=str)
        self.inverse = inverse.reshape(-1)
        self.has = has & (text != "")
        names = [p.rsplit("/", 1)[-1] for p in self.unique.tolist()]
        self.basenames = np.array(names, dtype=str)
        self.stems = np.array([_stem(b) for b in names], dtype=str)
        self.has_extension = self.stems != self.basenames
        # a snake_case or kebab-case stem without its separators: what a CamelCase name of the
        # same words reads as, lower-cased (typed_path.rs is TypedPath's file); "" when it has none
        joined = np.char.replace(np.char.replace(self.stems, "_", ""), "-", "") if self.stems.size else self.stems
        self.joined_stems = np.where(joined != self.stems, joined, "").astype(str)
        # a stem written in CamelCase (RegexHelper.php, HandlerStack.php), as written: in PHP,
        # Java, C#, Kotlin and Swift a class's file is named after it; "" for any other stem
        raw_stems = [_stem(p.replace("\\", "/").rsplit("/", 1)[-1]) for p in raw.tolist()]
        self.camel_stems = np.array([b if _CAMEL_NAME.fullmatch(b) else "" for b in raw_stems], dtype=str)
        self.folders = np.array([p.rsplit("/", 2)[-2] if p.count("/") else "" for p in self.unique.tolist()], dtype=str)
        # each unique file's role (code into ROLES; 0 without a path), read once for the
        # shared-name test below and for roles()
        self.role_codes = np.array([ROLES.index(file_role(p)) if p else 0 for p in raw.tolist()], dtype=np.int64)
        # a name is shared when more files *of one role* have it: src/_pytest/fixtures.py is the
        # one program file named fixtures, whatever the tests and docs beside it are called
        role_prefix = np.char.add(self.role_codes.astype(str), "/")
        self.basename_shared = _shared_by_more(np.char.add(role_prefix, self.basenames), MAX_FILES_PER_NAME)
        self.stem_shared = _shared_by_more(np.char.add(role_prefix, self.stems), MAX_FILES_PER_NAME)
        for array in (self.unique, self.inverse, self.has, self.basenames, self.stems, self.joined_stems, self.camel_stems, self.has_extension,
                      self.folders, self.role_codes, self.basename_shared, self.stem_shared):
            array.setflags(write=False)  # shared by every query on the column
        self._roles: np.ndarray | None = None
        self._module_tails: dict[str, list[int]] | None = None
        self._extensionless: np.ndarray | None = None
        self._slashed: tuple[np.ndarray, np.ndarray] | None = None

    @property
    def module_tails(self) -> dict[str, list[int]]:
        """Each file's module path as code names it (``sphinx.util.inspect``, a PHP namespace, a
        Rust path, which leaves out the crate's ``src``): every tail of two or more segments,
        mapped to the unique paths that have it. A Python package's ``__init__.py`` is not one:
        naming the package names a folder, which the folder mention counts. Rust's
        ``serve/mod.rs`` is the module ``serve``, so it has its folder's path. Worked out on the first
        query that holds a qualified name: 40 ms at 10,000 files against 56 ms for the rest of
        the table, which most queries would pay for nothing."""
        if self._module_tails is None:
            tails: dict[str, list[int]] = {}
            for k, path in enumerate(self.unique.tolist()):
                segments = path.rsplit(".", 1)[0].split("/") if self.has_extension[k] else path.split("/")
                if self.basenames[k] == "mod.rs" and len(segments) > 1:
                    segments = segments[:-1]
                for form in {tuple(segments), tuple(seg for seg in segments if seg != "src")}:
                    for i in range(len(form) - 1):
                        tails.setdefault("/".join(form[i:]), []).append(k)
            self._module_tails = tails
        return self._module_tails

    @property
    def extensionless(self) -> np.ndarray:
        """Each unique path without its file's extension (``middleware/static``)."""
        if self._extensionless is None:
            cut = np.char.rpartition(self.unique, ".")[:, 0]
            self._extensionless = np.where(self.has_extension, cut, self.unique)
        return self._extensionless

    @property
    def slashed(self) -> tuple[np.ndarray, np.ndarray]:
        """Each unique path, and each without its extension, after a ``/``: a folder or a path's
        tail is then found whole (``/serve/``, ``/middleware/static``). Kept for the next scoped
        commit: built per scope, a scoped subject took 17.5 ms at 50,000 paths, 14.7 ms with them kept."""
        if self._slashed is None:
            self._slashed = (np.char.add("/", self.unique), np.char.add("/", self.extensionless))
        return self._slashed

    def roles(self) -> np.ndarray:
        if self._roles is None:
            self._roles = self.role_codes[self.inverse] if self.raw.size else np.zeros(self.has.size, dtype=np.int64)
            self._roles.setflags(write=False)
        return self._roles


def _shared_by_more(names: np.ndarray, limit: int) -> np.ndarray:
    """Whether each name occurs more than ``limit`` times in ``names``."""
    if names.size == 0:
        return np.zeros(0, dtype=bool)
    _, inverse, counts = np.unique(names, return_inverse=True, return_counts=True)
    return counts[inverse.reshape(-1)] > limit


_TABLES: list[tuple[list, int, _PathTable]] = []


def _table(paths: list[str | None]) -> _PathTable:
    """The :class:`_PathTable` of ``paths``, kept for the last two columns seen. Ranking
    passes the same list (``GraphArrays.paths``, rebuilt only after the graph changes) on
    every query, and at 44,000 rows working the table out again was 40 ms of each query.
    A column is known by identity (the cache holds it, so the id is not reused) and length."""
    for column, length, table in _TABLES:
        if column is paths and length == len(paths):
            return table
    table = _PathTable(paths)
    _TABLES.insert(0, (paths, len(paths), table))
    del _TABLES[2:]
    return table


def _unique_paths(paths: list[str | None]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Lower-cased normalised unique paths, the inverse map per row, and a has-path mask.

    Many rows (chunks, symbols) share one file path, so path signals are computed once per
    unique path and broadcast back with the inverse index.
    """
    table = _table(paths)
    return table.unique, table.inverse, table.has


_GERUND = "ing"


def _uninflected(word: str) -> set[str]:
    """The verbs a gerund may come from, for naming a file or folder by its stem:
    "ranking" names ``rank.py``, "parsing" ``parse.go``, "indexing" ``index/``.

    Only "-ing": a gerund names an activity, and the module that does it is often named
    for it, while plurals and past tenses ("sessions", "saved") mostly name what a
    question talks about. A base shorter than :data:`MIN_STEM_CHARS` never counts, so
    "using" does not name ``use.py``.

    >>> sorted(_uninflected("parsing"))
    ['pars', 'parse']
    >>> sorted(_uninflected("planning"))
    ['plan', 'plann', 'planne']
    >>> _uninflected("sessions")
    set()
    """
    if not word.endswith(_GERUND):
        return set()
    base = word[: -len(_GERUND)]
    if len(base) < MIN_STEM_CHARS:
        return set()
    bases = {base, base + "e"}
    if len(base) > MIN_STEM_CHARS and base[-1] == base[-2]:
        bases.add(base[:-1])  # planning -> plan
    return bases


_CAMEL_NAME = re.compile(r"\b[A-Za-z][a-z0-9]+(?:[A-Z][a-z0-9]+)+\b")


def _camel_names(text: str) -> set[str]:
    """The CamelCase names of a text, lower-cased: ``TypedPath`` names the stem
    ``typed_path`` as surely as the word *typed_path* would (Rust and Python name a type's
    file in snake case). Two humps at least, each a capital then small letters.

    >>> sorted(_camel_names("add validations to the TypedPath macro, see parseUrl and HTTP"))
    ['parseurl', 'typedpath']
    """
    return {name.lower() for name in _CAMEL_NAME.findall(text)}


def path_mentions(query: str, paths: list[str | None]) -> np.ndarray:
    """How explicitly the query names each row's file: 1.0 path, 0.7 basename, 0.4 stem, else 0.

    * 1.0 — the full path appears as a path-like token of the query (``loom_nb/rank.py``); a
      longer query path ending in it counts too (``/work/main/loom_nb/rank.py``).
    * 1.0 also — a qualified name as code writes one, whose first two or more parts are the
      tail of the file's module path: ``sphinx.util.inspect.isclass`` names
      ``sphinx/util/inspect.py``, ``Monolog\\Handler\\StreamHandler`` names
      ``src/Monolog/Handler/StreamHandler.php``, ``axum::extract::rejection`` names
      ``axum/src/extract/rejection.rs`` (``src`` may be left out). SWE-bench issues name modules
      this way. Rust's ``serve/mod.rs`` is the module ``axum::serve``. A Python package
      (``sphinx.ext.autodoc``) names a folder, not its ``__init__.py``, and a
      module path more than :data:`MAX_FILES_PER_NAME` files end with names none of them.
    * 0.7 — the basename with its extension appears (``rank.py``), possibly as the end of a
      query path, so ``tests/rank.py`` also gets 0.7 when the query names ``loom_nb/rank.py``.
      So does a CamelCase name of the message written exactly as a file's stem: in PHP, Java,
      C#, Kotlin and Swift a class's file is named after it (``RegexHelper`` names
      ``src/Util/RegexHelper.php``; of the 16 commits of the two PHP sets whose message names
      a file so, 14 changed it).
    * 0.4 — the basename's stem appears as a whole word (``rank`` in "how does rank work"),
      or as the gerund of the message ("ranking", see :func:`_uninflected`), and has at
      least :data:`MIN_STEM_CHARS` characters. A basename without an extension
      (``Makefile``) is only a stem, so 'run' in "how do I run it" does not name ``bin/run``.
      A CamelCase name of the message names the snake_case or kebab-case stem of its words
      (``TypedPath`` names ``typed_path.rs``; see :func:`_camel_names`).
    * A basename or stem more than :data:`MAX_FILES_PER_NAME` files of one role have names
      none of them (a hundred test roots each with a ``conf.py``); the file's folder may still
      count.
    * 0.25 — the name of the folder holding the file appears as a whole word, with at least
      :data:`MIN_STEM_CHARS` characters (``index`` names ``loom_nb/index/walk.py``).
    * A conventional commit's scope (:func:`~loom_nb.core.query.commit_scopes`) names a
      section of the codebase on purpose, so it counts as a basename (0.7) when it is a file's
      stem (``perf(tree):`` names ``tree.go``, ``feat(gin):`` names ``gin.go`` though *gin*
      is short) or the end of its path without the extension (``fix(middleware/static):``),
      and as a folder (0.25) when it is any folder along the path (``feat(axum-extra):``).

    Matching is case-insensitive but for a CamelCase name written as a stem; ``None`` or empty
    paths score 0. Query tokens are parsed once into sets, then every unique path is looked up
    with ``np.isin``.

    >>> path_mentions("why is rank.py slow in loom_nb/pack.py? and tokens", ["loom_nb/pack.py", "loom_nb/rank.py", "loom_nb/tokens.py", None])
    array([1. , 0.7, 0.4, 0. ])
    >>> path_mentions("sphinx.ext.autodoc fails on sphinx.util.inspect.isclass", ["sphinx/ext/autodoc/__init__.py",
    ...                "sphinx/util/inspect.py", "sphinx/util/typing.py"])
    array([0.25, 1.  , 0.25])
    >>> path_mentions("conf.py is read twice", [f"tests/roots/test-{k}/conf.py" for k in range(4)] + ["doc/conf.py"])
    array([0. , 0. , 0. , 0. , 0.7])
    >>> path_mentions("conf.py is read twice", ["tests/roots/test-a/conf.py", "doc/conf.py"])
    array([0.7, 0.7])
    >>> path_mentions("axum::serve::Serve drops the connection", ["axum/src/serve/mod.rs", "axum/src/serve/listener.rs"])
    array([1.  , 0.25])
    >>> path_mentions("feat(gin): add option to use escaped path", ["gin.go", "path.go", "ginS/gins.go"])
    array([0.7, 0.4, 0. ])
    >>> path_mentions("fix(axum-extra, middleware/static): a fix", ["axum-extra/src/lib.rs", "middleware/static.go"])
    array([0.25, 0.7 ])
    >>> path_mentions("validate TypedPath in the macro", ["axum-macros/src/typed_path.rs", "axum-macros/src/lib.rs"])
    array([0.4, 0. ])
    >>> path_mentions("deprecate the RegexHelper constants", ["src/Util/RegexHelper.php", "src/regex_helper.py"])
    array([0.7, 0.4])
    """
    table = _table(paths)
    unique, inverse, has = table.unique, table.inverse, table.has
    if unique.size == 0:
        return np.zeros(has.size)
    lowered = query.lower().replace("\\", "/")
    own = message_part(query)  # the message, without a follow-up's previous exchange
    tokens = {t.rstrip(".") for t in re.findall(r"[\w./-]+", lowered)}
    suffixes: set[str] = set()
    for token in tokens:
        token = _normalise_path(token)
        segments = token.split("/")
        suffixes.update("/".join(segments[i:]) for i in range(len(segments)))
    words = set(re.findall(r"\w+", lowered)) | set(re.findall(r"[\w-]+", lowered))
    # gerunds of the message itself ("ranking" names rank.py); not of a previous exchange
    # glued after it, which talks about modules a follow-up may not be asking for
    words |= {base for word in re.findall(r"\w+", own.lower()) for base in _uninflected(word)}
    basenames, stems, has_extension, folders = table.basenames, table.stems, table.has_extension, table.folders
    suffix_array = np.array(sorted(suffixes), dtype=str)
    word_array = np.array(sorted(words), dtype=str)
    camel_array = np.array(sorted(_camel_names(own)), dtype=str)
    value = np.where(
        np.isin(unique, suffix_array),
        PATH_SCORE,
        np.where(
            has_extension & ~table.basename_shared & np.isin(basenames, suffix_array),
            BASENAME_SCORE,
            np.where(
                (np.char.str_len(stems) >= MIN_STEM_CHARS) & ~table.stem_shared
                & (np.isin(stems, word_array) | np.isin(table.joined_stems, camel_array)),  # a camel name is never ""
                STEM_SCORE,
                np.where((np.char.str_len(folders) >= MIN_STEM_CHARS) & np.isin(folders, word_array), FOLDER_SCORE, 0.0),
            ),
        ),
    )
    written = np.array(sorted(set(_CAMEL_NAME.findall(own))), dtype=str)  # as written, not lower-cased
    if written.size:  # RegexHelper names RegexHelper.php as surely as its basename would
        value = np.where(np.isin(table.camel_stems, written) & has_extension & ~table.stem_shared,
                         np.maximum(value, BASENAME_SCORE), value)
    for module in _module_candidates(query):  # a qualified name is as explicit as the file's path,
        files = table.module_tails.get(module, [])  # unless, as a shared basename, many files have it
        if len(files) <= MAX_FILES_PER_NAME:
            value[files] = PATH_SCORE
    for scope in commit_scopes(own):
        value = np.maximum(value, _scope_mentions(table, scope))
    return np.where(has, value[inverse], 0.0)


_OBJECT_REPR = re.compile(r"<(?:class |function |module )?'?[A-Za-z_]\w*(?:\.\w+)+'?(?: object)?(?: at 0x[0-9a-fA-F]+)?>")
"""An object's repr in pasted output (``<xarray.core.indexes.PandasMultiIndex at 0x7f…>``,
``<class 'astropy.table.column.MaskedColumn'>``): the type an object had when the program ran.
Its module still names the file; its class names no definition to narrow the file to. In the
SWE-bench pool two issues print one, and in both the gold lines lie mostly outside that class
(``xarray-7003``: all 8; benchmarks/README.md, 'A qualified name names its definition')."""


def module_members(query: str, paths: list[str | None]) -> list[tuple[np.ndarray, str]]:
    """For each qualified name that goes on past a module the workspace has
    (``astropy.wcs.utils.wcs_to_celestial_frame``: the module ``astropy/wcs/utils``, then
    ``wcs_to_celestial_frame``), the rows of each file that module names and that name,
    lower-cased: what :func:`~loom_nb.core.rank.lexical_signals` narrows the file's path
    mention to, even when the query names the file by its path as well (an issue links the file
    and names the function). A module more than :data:`MAX_FILES_PER_NAME` files end with names
    none of them, and an object's repr in pasted output (:data:`_OBJECT_REPR`) names no member.

    >>> rows = module_members("astropy.wcs.utils.wcs_to_celestial_frame(w)", ["astropy/wcs/utils.py", "a.py", "astropy/wcs/utils.py"])
    >>> [(r.tolist(), name) for r, name in rows]
    [([0, 2], 'wcs_to_celestial_frame')]
    >>> module_members("[<astropy.wcs.utils.Frame at 0x7f10>]", ["astropy/wcs/utils.py"])
    []
    """
    table = _table(paths)
    if table.unique.size == 0:
        return []
    found: list[tuple[np.ndarray, str]] = []
    seen: set[tuple[int, str]] = set()
    for segments in _qualified_names(_OBJECT_REPR.sub(" ", query)):
        for j in range(2, len(segments)):
            files = table.module_tails.get("/".join(segments[:j]), [])
            if len(files) > MAX_FILES_PER_NAME:
                continue
            for file in files:
                if (file, segments[j]) in seen:
                    continue
                seen.add((file, segments[j]))
                found.append((np.flatnonzero((table.inverse == file) & table.has), segments[j]))
    return found


SCOPE_SCORE = BASENAME_SCORE
"""What a conventional commit's scope gives the file whose stem it is. Measured through the
default path on the sets with scoped subjects (benchmarks/README.md, 'A commit's scope names
its section'): at a stem's 0.4 gin gains one commit; at 0.7 gin gains four, and echo gains three
at 4k and loses one whose scope names the wrong file (``fix(binder):`` for a change in
``bind.go``); at 1.0 that commit costs more and axum loses one at 16k."""


def _scope_mentions(table: _PathTable, scope: str) -> np.ndarray:
    """Per unique path, what a commit's ``scope`` says of it (see :func:`path_mentions`)."""
    slashed, slashed_extensionless = table.slashed
    folder = np.char.find(slashed, f"/{scope.strip('/')}/") >= 0
    if "/" in scope:
        named = np.char.endswith(slashed_extensionless, "/" + scope.strip("/"))
    else:
        named = (table.stems == scope) & ~table.stem_shared
    return np.where(named, SCOPE_SCORE, np.where(folder, FOLDER_SCORE, 0.0))


CODE_EXTENSIONS: frozenset[str] = frozenset(ext for ext, language in LANGUAGES.items() if language in CODE_LANGUAGES)
"""Extensions of program source files: those :data:`~loom_nb.core.files.LANGUAGES` gives a code
language (``.cxx``, ``.lua``, ``.kts``, ``.sh``, ``.sql``... were missing from a list kept by hand,
so their units ranked as documentation)."""
CODE_FILENAMES: frozenset[str] = frozenset(
    name.lower() for name, language in FILENAME_LANGUAGES.items() if language in CODE_LANGUAGES)
"""Whole names of program source files without an extension (``Gemfile``, ``Rakefile``), lower case."""

_TEST_PARTS = frozenset({"test", "tests", "testing", "__tests__", "spec", "specs", "testdata", "fixtures",
                         "testutil", "testutils", "benchmarks", "benchmark", "asv_bench"})
"""Folders of tests, and of benchmarks, which exercise the program as tests do and restate its
names: on xarray's commits ``asv_bench/benchmarks/rolling.py`` outranked the code a message
named (benchmarks/README.md, 'Benchmark folders are not the program'). Rust's ``benches/`` is
not here: a crate's benches call its API and change with it (gold in 4 pydantic commits)."""
_CAMEL_TEST = re.compile(r"[a-z0-9](?:Tests?|TestCase)\.\w+$")
"""A test named as PHPUnit, JUnit and xUnit name them, next to the code in a ``src/`` folder
(flysystem's ``src/Local/LocalFilesystemAdapterTest.php``): lower case then ``Test``,
``Tests`` or ``TestCase``, matched case-sensitively, so ``Contest.php`` stays code. Ranked
as code, 38 of the 53 items a flysystem commit loaded were such tests, and its gold was left out."""
_NOT_CODE_PARTS = frozenset({"docs", "doc", "docs_src", "vendor", "third_party", "node_modules", ".github", "lc_messages",
                             "extern", "cextern", "_vendor", "vendored", "thirdparty", "3rdparty"})
"""Folders whose files are not the program's source whatever their extension. ``LC_MESSAGES`` is
gettext's catalog folder: sphinx ships a generated ``sphinx.js`` per language there, dozens of
near-identical files that a question about locales or languages otherwise fills the budget with
(measured on sphinx issues: benchmarks/README.md, 'Translation catalogs are not code'). The
vendoring folders beside ``vendor`` (astropy's ``extern/`` and ``cextern/``, pip's ``_vendor/``)
hold other projects' code: astropy's commits loaded expat's and cfitsio's C sources. Not
``external``: sympy's ``sympy/external`` is its own code."""
_CATALOG_PARTS = frozenset({"lang", "langs", "language", "languages", "locale", "locales", "i18n", "l10n",
                            "translation", "translations"})
_LOCALE_STEM = re.compile(r"(?:^[a-z]{2}|[._-][a-z]{2,3})(?:[_-](?:[a-z]{2}|[a-z]{4}|\d{3}))?$")
"""A translation catalog: a file in a language folder named by its locale (``en.php``,
``pt_BR.json``, PHPMailer's ``language/phpmailer.lang-ca.php``). It is one of dozens that say
the same messages in other languages, not the program: PHPMailer's 57 catalogs were its code,
and 11 of them took 82 % of the context for "How do I change the language of error messages?".
``sphinx/locale/__init__.py`` stays code."""
_CHANGELOG_STEMS = frozenset({"changelog", "changes", "history", "news", "release-notes", "releasenotes", "release_notes",
                              "whatsnew", "whats-new", "whats_new"})
_CHANGELOG_PARTS = frozenset({"changelog", "changelog.d", "changes", "newsfragments", "whatsnew", "next_whats_new",
                              "next_api_changes", "releases", "release-notes", "release_notes"})
"""Names of a project's change log (``CHANGES.rst``, ``HISTORY.md``, ``whats-new.rst``) and of the
folders that hold its entries (towncrier's ``newsfragments/``, pylint's ``doc/whatsnew/``,
Django's ``docs/releases/``), and an older series' log beside it (commonmark's
``CHANGELOG-1.x.md``: a stem that starts ``changelog-`` or ``changelog_``). Its entries are written
in the words of commit messages, each about another change: fastapi's release notes took 7 % of
the context at 8k on its commits."""
ROLES: tuple[str, ...] = ("", "code", "test", "other", "changelog")
"""Codes of :func:`path_roles`: no path, program source, tests, everything else, and change logs
(a non-code file named or filed as one: ``CHANGELOG.md``, ``changelog.d/123.bugfix``)."""


@lru_cache(maxsize=1 << 16)
def file_role(path: str) -> str:
    """What a workspace file is: ``"code"`` (program source), ``"test"`` (tests and benchmarks),
    ``"changelog"`` (a change log or its entries) or ``"other"`` (docs, configuration, data,
    vendored code, translation catalogs).

    Tests are files under a test folder or named as tests are in their language
    (``test_x.py``, ``x_test.go``, ``x.spec.ts``, ``conftest.py``, ``LocalAdapterTest.php``,
    ``ParserTests.cs``).

    >>> [file_role(p) for p in ("src/flask/app.py", "tests/test_app.py", "context_test.go", "docs/conf.py", "README.md")]
    ['code', 'test', 'test', 'other', 'other']
    >>> file_role("sphinx/locale/fr/LC_MESSAGES/sphinx.js"), file_role("sphinx/locale/__init__.py")
    ('other', 'code')
    >>> [file_role(p) for p in ("language/phpmailer.lang-pt_br.php", "lang/en.php", "src/i18n/zh-Hans.ts", "src/i18n/loader.ts")]
    ['other', 'other', 'other', 'code']
    >>> file_role("asv_bench/benchmarks/rolling.py"), file_role("xarray/computation/rolling.py")
    ('test', 'code')
    >>> file_role("cextern/expat/lib/xmlparse.c"), file_role("astropy/extern/configobj/configobj.py")
    ('other', 'other')
    >>> [file_role(p) for p in ("CHANGES.rst", "doc/whats-new.rst", "changelog.d/123.bugfix.md", "docs/releases/4.2.txt")]
    ['changelog', 'changelog', 'changelog', 'changelog']
    >>> file_role("CHANGELOG-1.x.md"), file_role("docs/history-design-future.md")  # an older series' log; not a log
    ('changelog', 'other')
    >>> file_role("src/changes/history.py"), file_role("docs/history_of_the_project.md")
    ('code', 'other')
    >>> [file_role(p) for p in ("src/Local/LocalFilesystemAdapterTest.php", "src/FilesystemAdapterTestCase.php",
    ...                         "src/Contest.php", "src/LatestTest.php", "internal/testutil/env.go")]
    ['test', 'test', 'code', 'test', 'test']
    """
    parts = path.replace("\\", "/").lower().split("/")
    name, folders = parts[-1], set(parts[:-1])
    stem, dot, ext = name.rpartition(".")
    stem = stem if dot else name
    is_code = (bool(dot) and f".{ext}" in CODE_EXTENSIONS) or name in CODE_FILENAMES
    if folders & _TEST_PARTS or (is_code and (name == "conftest.py" or stem.startswith("test_") or stem == "tests"
                                               or stem.endswith(("_test", "_tests", "_spec", ".test", ".spec"))
                                               or _CAMEL_TEST.search(path))):
        return "test"
    first = name.split(".", 1)[0]
    if not is_code and (first in _CHANGELOG_STEMS or first.startswith(("changelog-", "changelog_"))
                        or folders & _CHANGELOG_PARTS):
        return "changelog"
    if folders & _NOT_CODE_PARTS or (folders & _CATALOG_PARTS and _LOCALE_STEM.search(stem)):
        return "other"
    return "code" if is_code else "other"


def path_roles(paths: list[str | None]) -> np.ndarray:
    """:func:`file_role` of every row as a code into :data:`ROLES` (0 for rows without a path).

    >>> path_roles(["a.go", "a_test.go", "README.md", None, "CHANGELOG.md"]).tolist()
    [1, 2, 3, 0, 4]
    """
    return _table(paths).roles()


def tagged_mask(tags: list[str], paths: list[str | None]) -> np.ndarray:
    """1.0 for rows whose path is a tag or lies under a tagged folder, else 0.

    A tag ``loom_nb/index`` covers ``loom_nb/index/walk.py`` but not ``loom_nb/indexer.py``.
    Tags and paths are normalised as in :func:`tagged_paths` and compared case-insensitively
    (a user typing ``README.md`` for ``readme.md`` still means that file). Empty tags are
    ignored. The loop is over tags (a handful), with each a vectorised test of unique paths.

    >>> tagged_mask(["loom_nb/index"], ["loom_nb/index/walk.py", "loom_nb/indexer.py", None])
    array([1., 0., 0.])
    """
    unique, inverse, has = _unique_paths(paths)
    hit = np.zeros(unique.size, dtype=bool)
    for tag in tags:
        tag = _normalise_path(tag).lower()
        if tag:
            hit |= (unique == tag) | np.char.startswith(unique, tag + "/")
    return np.where(has & hit[inverse], 1.0, 0.0) if unique.size else np.zeros(has.size)


# -- places a traceback or a message points at: a file and a line ---------------------------------

MAX_LINE_MENTIONS = 40
"""At most this many distinct (file, line) places are read from one message, the deepest
(last) ones: a recursion error repeats its few frames hundreds of times."""

MAX_MENTION_PATH = 400
"""Characters of path read before a ``file:line`` place; a longer run is not a path."""

_PY_FRAME = re.compile(r'File "([^"\n]{1,%d})", line (\d{1,7})(?:, in ([\w<>.]{1,200}))?' % MAX_MENTION_PATH)
_CODE_EXT = "|".join(sorted((e[1:] for e in CODE_EXTENSIONS), key=len, reverse=True))
_PLACE_END = re.compile(
    rf"\.({_CODE_EXT})"  # the end of a source file's name, then where in it:
    r"(?::(\d{1,7})(?::\d+)?(?::? in (\w{1,200}))?"  # file.go:12, file.py:12: in name, file.ts:12:5
    r"|\((\d{1,7})\)"  # PHP's #0 /src/Foo.php(45): ...
    r"| on line (\d{1,7}))"  # PHP's "in /src/Foo.php on line 45"
)
_PATH_CHARS = frozenset("_.~\\/-")


def _path_before(text: str, end: int) -> str:
    """The path-like run of characters ending at ``end`` (at most :data:`MAX_MENTION_PATH`).
    Read backwards by hand: a pattern for "path, then .ext:line" retries every start of a
    long run of word characters, quadratic in its length."""
    start, low = end, max(0, end - MAX_MENTION_PATH)
    while start > low and (text[start - 1].isalnum() or text[start - 1] in _PATH_CHARS):
        start -= 1
    return text[start:end]


def line_mentions(query: str) -> list[tuple[str, int, str | None]]:
    """The places a message points at: ``(path, line, function or None)``, one per distinct
    place, in the order they appear, at most the last :data:`MAX_LINE_MENTIONS`.

    Python traceback frames (``File "…/pkg/mod.py", line 12, in name``) and ``file:line``
    forms of other languages' traces and messages (Go's ``/src/pkg/file.go:12 +0x1d``,
    pytest's ``src/pkg/mod.py:12: in name``, PHP's ``Foo.php(45)`` and ``Foo.php on line
    45``). Paths keep what was written (an absolute path from another machine, backslashes);
    :func:`line_mention_rows` finds the workspace file it ends in.

    >>> line_mentions('File "/usr/lib/site-packages/sympy/core/function.py", line 1307, in __new__')
    [('/usr/lib/site-packages/sympy/core/function.py', 1307, '__new__')]
    >>> line_mentions("panic at /go/src/gin/context.go:12 +0x1d; see binding.go:40 and Foo.php(7)")
    [('/go/src/gin/context.go', 12, None), ('binding.go', 40, None), ('Foo.php', 7, None)]
    """
    found: dict[tuple[str, int], str | None] = {}
    frame_starts: list[int] = []  # a frame's own "x.py" is not read again as a place
    frame_ends: list[int] = []
    for match in _PY_FRAME.finditer(query):
        path, line, name = match.group(1), int(match.group(2)), match.group(3)
        found.setdefault((path, line), None if name in (None, "<module>") else name)
        frame_starts.append(match.start())
        frame_ends.append(match.end())
    for match in _PLACE_END.finditer(query):
        stem = _path_before(query, match.start())
        inside = bisect_right(frame_starts, match.start()) - 1
        if not stem or not (stem[-1].isalnum() or stem[-1] in "_-") or (inside >= 0 and match.start() < frame_ends[inside]):
            continue
        line = next(int(g) for g in (match.group(2), match.group(4), match.group(5)) if g)
        found.setdefault((f"{stem}.{match.group(1)}", line), match.group(3))
    places = [(path, line, name) for (path, line), name in found.items() if line > 0]
    return places[-MAX_LINE_MENTIONS:]


def line_mention_rows(query: str, paths: list[str | None], span_of) -> np.ndarray:
    """1.0 for each row a message's :func:`line_mentions` point at, else 0.

    A mention's file is the one workspace path its path ends in (``…\\site-packages\\sympy\\
    core\\function.py`` is ``sympy/core/function.py``); a bare basename counts only when one
    file has it, and a longer path that ends in no workspace path is another tree's (a frame
    in ``site-packages/numpy/core/numeric.py`` does not name ``sympy/core/numeric.py``, but
    it names ``numeric.py`` at the root of a workspace that is the package itself).

    In that file the row is the narrowest unit whose lines hold the line. A traceback may
    come from another version of the code, so when the frame names its function and the
    unit at the line is not that function, the file's unit of that name nearest the line is
    taken instead, if there is one.

    ``span_of(row)`` gives ``(first_line, last_line, title)`` or ``None``; it is called only
    for rows of mentioned files, so the cost follows the mentions, not the graph.
    """
    out = np.zeros(len(paths))
    places = line_mentions(query) if query else []
    if not places or not len(paths):
        return out
    table = _table(paths)
    if table.unique.size == 0:
        return out
    where = {path: k for k, path in enumerate(table.unique.tolist()) if path}
    for path, line, name in places:
        segments = _normalise_path(path).lower().split("/")
        file = next((where[s] for s in ("/".join(segments[i:]) for i in range(len(segments))) if s in where), None)
        if file is None and len(segments) == 1:  # a bare basename; a longer path is another tree's
            same = np.flatnonzero(table.basenames == segments[-1])
            file = int(same[0]) if same.size == 1 else None
        if file is None:
            continue
        rows = np.flatnonzero((table.inverse == file) & table.has)
        spans = [(int(r), span_of(int(r))) for r in rows.tolist()]
        spans = [(r, s) for r, s in spans if s is not None]
        holding = sorted((b - a, r, title) for r, (a, b, title) in spans if a <= line <= b)
        chosen = holding[0][1] if holding else None
        if name and not (holding and _unit_name(holding[0][2]) == name):
            named = sorted((min(abs(a - line), abs(b - line)), r) for r, (a, b, title) in spans if _unit_name(title) == name)
            chosen = named[0][1] if named else chosen
        if chosen is not None:
            out[chosen] = 1.0
    return out


def _unit_name(title: str) -> str:
    """The function or class a unit's title ends with: ``rank.py:10-20 Loom.query`` → ``query``."""
    last = title.rsplit(" ", 1)[-1]
    return last.rsplit(".", 1)[-1]
