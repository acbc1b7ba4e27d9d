"""Index a workspace into lazy reference nodes, and keep them fresh (seed 000 §13).

``index_workspace`` walks the folder, outlines each file with tree-sitter, turns the outline
into units (functions, classes, sections, windows), embeds them in batches and adds one
``file_reference`` node per unit. The text stays in the file: a node holds the path, line
range, signature and a hash, and is read (and checked) only when loaded.

Re-indexing touches only what changed: git says which files differ from the last indexed
commit; outside git, or for uncommitted edits, the size, mtime and content hash decide.

Size: the pipeline in the order it runs (walk, mask, cut, keep what is unchanged, embed,
add, link), with the refresh rules that decide what each step redoes.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

import numpy as np

from ..core.errors import LoomError
from ..core.graph import Provenance, Reference, chunk_mean, sha256_text
from ..core.chunks import chunk_spans
from ..core.tokens import count_tokens_many, truncate_to_tokens
from .git import changed_since, dirty_files, head_commit
from .symbols import outline
from .background import BACKGROUND_ABOVE, FillJob, VectorFill, jobs_for_pending, rebuild_due
from .structure import MAX_SHARED_DEFINITIONS, STRUCTURE_VERSION, link_structure, resolve_import, structure_edges  # noqa: F401 - importable from here as before
from .units import EMBED_TOKENS, Unit, file_units, window_units
from .notebooks import cells_units, is_percent_script, percent_units
from ..core.notebooks import NotebookError, notebook_cells
from ..core.secrets import RULES_VERSION as SECRETS_VERSION, Finding, find_secrets, is_secret_file, line_spans, mask_secrets, secret_file_notice
from ..core.concepts import REBUILD_SHARE, needs_concept_rebuild, rebuild_concepts  # noqa: F401 - importable from here as before
from ..core.display import Displayable
from .walk import WalkLimits, read_text, walk_workspace

log = logging.getLogger(__name__)

EMBED_BATCH = 64
UNITS_VERSION = 14
"""How files are cut into units and analysed into terms. A session indexed with another
version is re-cut in full on its next refresh (2: Go methods are units of their own;
comments above a symbol belong to it; 3: identifiers such as ``__version__`` are terms;
4: units over ``max_unit_tokens`` that symbols cannot split are cut into parts; 5: notebooks and
percent scripts are cut cell by cell; 6: C, C++, C#, Ruby, Kotlin, Swift, Bash, Lua, Scala and SQL
are outlined, and JSON, YAML, TOML and INI files are cut by top-level key; 7: Go's module-level
units are named by the constants and variables they declare, which they define; 8: a ``.h``
header that uses C++ is outlined as C++, and a YAML list at its key's column stays that key's;
9: titles and lexical terms are made from the text with its credentials masked, and a 4.5
notebook written without cell ids keys its cells by position; 10: each file is masked whole before
it is cut, so a key cut across units is masked in every part, and a notebook cell's source and
outputs are masked before its outputs are clipped; a split class keeps the code between and after
its members as units, a Go type group keeps its parentheses, and a file cut into windows keeps its
imports; 11: a Markdown file's last section ends on its last line, a notebook's heading-less
cell is titled in a subfolder too, minified bundles are skipped, windows of dense text are cut to
``max_unit_tokens``, and a Rust ``macro_rules!`` defines its name; 12 (not released): scraps
joined more widely and gaps titled by code; 13: a scrap of comments between symbols, or of
comments and one line that only opens a block (``else:``), joins the unit below it, a member of a
split class keeps the comment above it, and a Go file of declarations alone is one unit that
defines them; 14: a letter alone beside digits stays with them as a term (``S3``, ``k8s``), and
the parts of module code titled by its first line are titled by their own)."""


@dataclass
class IndexReport(Displayable):
    """What one indexing run did, for the closing summary and for tests."""

    root: Path
    files_seen: int = 0
    """Files the walk accepted under the root (indexed or unchanged); skipped ones are apart."""
    files_indexed: int = 0
    """Files parsed into units this run: new, or changed since the last index."""
    files_unchanged: int = 0
    """Files whose units were kept as they were (git, then size / mtime / hash said so)."""
    files_removed: int = 0
    """Files gone since the last index; their units were removed."""
    files_skipped: int = 0
    """Files the walk left out (binary, too large, unreadable); :attr:`skipped_reasons` says why."""
    files_unreadable_kept: int = 0
    """Files indexed before that the walk could not read this time (a file or its folder): not
    known to be gone, so their nodes stay as they were, ids, links and history with them."""
    nodes_added: int = 0
    nodes_removed: int = 0
    nodes_kept: int = 0
    """Units of changed files whose text was as before: their nodes stay, moved to their new lines."""
    texts_embedded: int = 0
    """Unit and chunk texts the embedder computed; those it had seen came from its cache."""
    parse_errors: int = 0
    """Files whose outline reported a parse error (they are still cut into units)."""
    parse_error_paths: list[str] = field(default_factory=list)
    """Those files' paths, in the order they were parsed (the summary names the first three)."""
    concepts: int = 0
    structure_edges: int = 0
    """Import and reference edges between units after this run."""
    seconds: float = 0.0
    git: bool = False
    """Whether change detection asked git first."""
    skipped_reasons: dict[str, int] = field(default_factory=dict)
    skipped_paths: dict[str, list[str]] = field(default_factory=dict)
    """The first few paths skipped for each reason of :attr:`skipped_reasons` (folders end with
    ``/``): a count alone does not say which file to look at."""
    vectors_pending: int = 0
    """Units whose vectors were still being embedded in the background when the run returned."""
    secrets: list[tuple[str, int, str]] = field(default_factory=list)
    """Credentials found in the files parsed this run: (path, line, kind), never the value;
    masked wherever their text is read (line 0: a credentials file, indexed by name only)."""
    walk_options: list[str] = field(default_factory=list)
    """The walk options this run used that differ from the defaults (``"gettext catalogues
    kept"``): the session records them and a later refresh that names none walks the same way."""


    def __str__(self) -> str:
        parts = [
            f"Indexed {self.root}: {self.files_seen} files ({self.files_indexed} parsed, {self.files_unchanged} unchanged, "
            f"{self.files_removed} removed), {self.files_skipped} skipped",
            f"  {self.nodes_added} nodes added, {self.nodes_removed} removed"
            f"{f', {self.nodes_kept} kept in changed files' if self.nodes_kept else ''}; {self.texts_embedded} texts embedded; "
            f"{self.concepts} concepts; {self.structure_edges} structure edges; {self.parse_errors} files with parse errors{_first(self.parse_error_paths, self.parse_errors)}",
            f"  {self.seconds:.1f} s; change detection by {'git, then size/mtime/hash' if self.git else 'size/mtime/hash'}",
        ]
        if self.vectors_pending:
            parts.append(f"  vectors: {self.vectors_pending} units embedding in the background (queries rank them by "
                         "their terms until then; loom.wait() blocks until they are in)")
        if self.secrets:
            parts.append(f"  secrets: {len(self.secrets)} found and masked wherever their text is read "
                         "(loom-nb index --report-secrets lists them)")
        if self.files_unreadable_kept:
            parts.append(f"  {self.files_unreadable_kept} unreadable files kept as last indexed (they are not known to be gone)")
        if self.walk_options:
            parts.append("  walk: " + "; ".join(self.walk_options) + " (recorded: a refresh that names no options keeps them)")
        if self.skipped_reasons:
            parts.append("  skipped: " + ", ".join(f"{n} {r}{_first(self.skipped_paths.get(r, []), n)}"
                                                   for r, n in sorted(self.skipped_reasons.items(), key=lambda x: -x[1])))
        return "\n".join(parts)


def _first(paths: list[str], total: int, most: int = 3) -> str:
    """`` (a.py, b.ipynb, c.json and 4 more)``: the first paths of a count, for a summary line.

    >>> _first(["a.py", "b.ipynb", "c.json", "d.py"], 4), _first([], 0)
    (' (a.py, b.ipynb, c.json and 1 more)', '')
    """
    if not paths:
        return ""
    more = f" and {total - most} more" if total > most else ""
    return f" ({', '.join(paths[:most])}{more})"


def mask_file(path: str, language: str, text: str) -> tuple[str, list[Finding]]:
    """A file's text with its credentials masked, whole, before it is cut into units, and what
    was found (for :attr:`IndexReport.secrets`).

    Masking a unit at a time missed a key cut across units: its pattern needs the BEGIN line,
    which only the first part holds, so the later parts were stored, embedded and served raw.
    Every unit, title, signature and embedded text is made from this text. A notebook's JSON
    is left as it is (a mask across its strings would break it): its cells are masked one by
    one as they are read (:func:`loom_nb.core.notebooks.cell_text`).
    """
    if is_secret_file(path):
        return text, []
    if language == "notebook":
        return text, find_secrets(text)
    return mask_secrets(text, remember=False)


def cut_file(path: str, language: str, text: str, max_unit_tokens: int = 800) -> tuple[list[Unit], int]:
    """The units of one file and how many parse errors its outline(s) reported: a notebook
    cell by cell (one that is not notebook JSON as plain text), a percent script cell by
    cell, anything else by its outline. ``text`` is the file's raw text: it is masked
    whole (:func:`mask_file`) before it is cut."""
    masked, found = mask_file(path, language, text)
    units, errors, _ = _cut(path, language, masked, line_spans(masked, found), max_unit_tokens)
    return units, errors


def _cut(path: str, language: str, text: str, spans: tuple[tuple[int, int], ...],
         max_unit_tokens: int) -> tuple[list[Unit], int, list[int]]:
    """:func:`cut_file` of a text :func:`mask_file` masked (``spans``: the lines of each
    credential it masked), and how many credentials each unit's lines hold (a notebook's
    counted per cell, its JSON is not masked)."""
    if is_secret_file(path):  # a credentials file: one unit that names it; its text never enters the session
        return [Unit(path, language, "window", "credentials file (name only)", "", "", 1, 1, secret_file_notice(path))], 0, [0]
    if language == "notebook":
        try:
            cells = notebook_cells(text, path)
        except NotebookError as exc:  # cut as plain text, masked as plain text is
            log.warning("%s", exc)
            masked, found = mask_secrets(text, remember=False)
            units, errors, spans = window_units(path, "text", masked, max_unit_tokens), 1, line_spans(masked, found)
        else:
            units, errors = cells_units(path, cells, max_unit_tokens)
            by_cell = {cell.key: cell.secrets for cell in cells}
            return units, errors, [_count(u, by_cell.get(u.cell, ())) for u in units]
    elif is_percent_script(language, text):
        units, errors = percent_units(path, language, text, max_unit_tokens)
    else:
        result = outline(path, text, language)
        units, errors = file_units(path, language, text, result, max_unit_tokens), int(bool(result.error))
    return units, errors, [_count(u, spans) for u in units]


def _count(unit: Unit, spans: tuple[tuple[int, int], ...]) -> int:
    return sum(first <= unit.end and last >= unit.start for first, last in spans)


def recorded_walk(graph) -> tuple[WalkLimits, tuple[str, ...]]:
    """The walk options the session's last index used, or the defaults.

    A refresh that names no options walks as the index before it did: a session indexed with
    its translations kept (or with an ``--ignore``) lost them, without a word, at the next plain
    ``loom-nb index``. A record that is not what :func:`index_workspace` writes (a foreign or
    older session, an edited file) is read field by field; what does not fit is left at its default.

    >>> from loom_nb.core.graph import LoomGraph
    >>> g = LoomGraph()
    >>> g.metadata["workspace"] = {"walk": {"limits": {"include_translations": True, "max_files": "x", "nope": 1},
    ...                                     "extra_ignores": ["build/", 3]}}
    >>> limits, ignores = recorded_walk(g)
    >>> limits.include_translations, limits.max_files == WalkLimits().max_files, ignores
    (True, True, ('build/',))
    >>> g.metadata["workspace"] = {"max_file_bytes": 2000}   # indexed before the walk was recorded
    >>> recorded_walk(g)[0].max_file_bytes
    2000
    """
    state = graph.metadata.get("workspace")
    state = state if isinstance(state, dict) else {}
    record = state.get("walk")
    if not isinstance(record, dict):  # a session indexed before the record: its size limits were kept alone
        record = {"limits": {k: state[k] for k in ("max_file_bytes", "max_notebook_bytes") if k in state}}
    defaults = WalkLimits()
    given = record.get("limits") if isinstance(record.get("limits"), dict) else {}
    fields = {}
    for f in dataclasses.fields(WalkLimits):
        value, default = given.get(f.name), getattr(defaults, f.name)
        if type(value) is type(default):  # bool is not int here: True is no file size
            fields[f.name] = value
    ignores = record.get("extra_ignores")
    ignores = tuple(p for p in ignores if isinstance(p, str)) if isinstance(ignores, list) else ()
    return dataclasses.replace(defaults, **fields), ignores


def walk_differences(limits: WalkLimits, extra_ignores: Sequence[str]) -> list[str]:
    """What a walk with these options does that the default walk does not, in words.

    >>> walk_differences(WalkLimits(include_translations=True, max_files=10), ["build/"])
    ['at most 10 files', 'gettext catalogues kept', "ignoring 'build/'"]
    >>> walk_differences(WalkLimits(), [])
    []
    """
    defaults, said = WalkLimits(), []
    wording = {
        "max_file_bytes": "files up to {:,} bytes",
        "max_files": "at most {:,} files",
        "max_notebook_bytes": "notebooks up to {:,} bytes",
        "max_data_file_bytes": "data files up to {:,} bytes",
    }
    for f in dataclasses.fields(WalkLimits):
        value = getattr(limits, f.name)
        if value == getattr(defaults, f.name):
            continue
        if f.name == "include_translations":
            said.append("gettext catalogues kept")
        elif f.name == "include_unknown_text":
            said.append("files of unknown type left out")
        else:
            said.append(wording.get(f.name, f.name.replace("_", " ") + " {}").format(value))
    said += [f"ignoring {p!r}" for p in extra_ignores]
    return said


def scan_secrets(root: str | Path, limits: WalkLimits | None = None, extra_ignores: Sequence[str] = ()) -> list[tuple[str, int, str]]:
    """Every credential in the files an index of ``root`` takes: (path, line, kind), never the
    value (``loom-nb index --report-secrets``). Credentials files are listed by name, line 0."""
    root = Path(root)
    found: list[tuple[str, int, str]] = []
    for entry in walk_workspace(root, limits=limits or WalkLimits(), extra_ignores=extra_ignores).files:
        if is_secret_file(entry.path):
            found.append((entry.path, 0, "credentials file (name only)"))
            continue
        try:
            text = read_text(root / entry.path)
        except OSError:
            continue
        found += [(entry.path, f.line, f.kind) for f in find_secrets(text)]
    return found


def _progress(iterable, total: int, desc: str, enabled: bool | None):
    if enabled is False:  # no tqdm at all: even a disabled bar takes tqdm's cross-process lock,
        return iterable   # which a process killed while holding it never gives back (a fork's kill -9)
    try:
        import ipywidgets  # noqa: F401  (tqdm.auto draws a widget only with it, and warns without)

        from tqdm.auto import tqdm
    except ImportError:
        from tqdm import tqdm
    return tqdm(iterable, total=total, desc=desc, unit="file" if "pars" in desc else "batch", disable=None if enabled is None else not enabled, leave=False)


def _unchanged_units(graph, path: str, units: list[Unit], old_ids: list[str]) -> dict[tuple[str, int], str]:
    """Which of a changed file's new units are old nodes whose text has not changed: same
    text, name, kind, notebook cell and imports (a unit moved by lines added above it, or a
    cell next to the one edited; the preamble holds the file's imports, which an import added
    in a function below changes). Each old node is kept at most once."""
    pool: dict[tuple, list[str]] = {}
    for node_id in old_ids:
        node = graph.node(node_id)
        ref = node.reference
        if ref is None or "name" not in node.meta:
            continue
        key = (ref.sha256, node.meta["name"], node.meta.get("kind"), ref.cell, tuple(node.meta.get("imports", ())))
        pool.setdefault(key, []).append(node_id)
    kept = {}
    for k, unit in enumerate(units):
        same = pool.get((sha256_text(unit.text), unit.name, unit.kind, unit.cell, tuple(unit.imports)))
        if same:
            kept[(path, k)] = same.pop(0)
    return kept


def index_workspace(  # noqa: C901 - the indexing pipeline in order: walk, parse, embed, link, report
    loom,
    root: str | Path,
    *,
    limits: WalkLimits | None = None,
    extra_ignores: Sequence[str] | None = None,
    max_unit_tokens: int = 800,
    progress: bool | None = None,
    wait: bool | None = None,
) -> IndexReport:
    """Index (or refresh) the folder ``root`` into ``loom``'s graph.

    Parameters
    ----------
    loom : Loom
    root : path
        The workspace; a session indexes one workspace.
    limits : WalkLimits, optional
        File size and count limits (what is skipped is reported). By default the limits the
        session's last index used (:func:`recorded_walk`), else :class:`WalkLimits`'s.
    extra_ignores : sequence of str, optional
        More gitignore-style patterns; by default those of the last index, else none.
    max_unit_tokens : int
        A class bigger than this is split into its header and its methods; any other
        unit bigger than this is cut into parts (:func:`~loom_nb.index.units.split_large`).
    progress : bool, optional
        Show tqdm bars (default: when attached to a terminal or notebook).
    wait : bool, optional
        Whether to embed before returning. By default only when fewer than
        :data:`~loom_nb.index.background.BACKGROUND_ABOVE` texts need the model; otherwise
        the units are added with their vectors pending and embedded on a background thread
        (:mod:`loom_nb.index.background`; ``loom.wait()`` blocks until they are in).

    Length: the pipeline in order (walk, parse, embed, link, report), each step a call.
    """
    started = time.perf_counter()
    graph = loom.graph
    root = Path(root).expanduser().resolve()
    state = graph.metadata.get("workspace")
    if state and state.get("root") != str(root):
        raise LoomError(f"this session indexes {state['root']}; open another session folder to index {root}")
    state = state or {"root": str(root), "commit": None, "files": {}, "units_version": UNITS_VERSION, "secrets_version": SECRETS_VERSION}
    recut = state.get("units_version", 1) != UNITS_VERSION or state.get("secrets_version", 1) != SECRETS_VERSION
    graph.workspace = root
    recorded_limits, recorded_ignores = recorded_walk(graph)
    limits = recorded_limits if limits is None else limits
    extra_ignores = recorded_ignores if extra_ignores is None else tuple(extra_ignores)
    walk = walk_workspace(root, limits, extra_ignores=extra_ignores)
    report = IndexReport(root=root, files_seen=len(walk.files), files_skipped=walk.skipped_count, skipped_reasons=dict(walk.reason_counts),
                         skipped_paths=walk.paths_by_reason(), walk_options=walk_differences(limits, extra_ignores))

    head = head_commit(root)
    report.git = head is not None
    changed = changed_since(root, state["commit"]) if head and state.get("commit") else None
    dirty = dirty_files(root) if head else None
    # a copy of the file entries, committed at the end: a refresh that failed (the embedder
    # raised) or was interrupted left them changed in place, and the retry added the units of
    # a half-done file again, each loaded twice for ever
    files: dict[str, dict] = {path: dict(entry) for path, entry in state["files"].items()}
    current = {entry.path: entry for entry in walk.files}
    doomed = _orphans(graph, state["files"])  # what such a refresh left in a session saved since

    # 1. what is gone or changed; a file the walk could not read (chmod 000, an unreadable
    # folder) is not known to be gone: its nodes stay, or they came back with new ids
    unreadable = set(walk.unreadable)
    kept_unread = {p for p in files if p not in current and _under(p, unreadable)}
    report.files_unreadable_kept = len(kept_unread)
    stale_paths = [p for p in files if p not in current and p not in kept_unread]
    todo: list[tuple[str, str, str]] = []  # (path, language, text)
    previous: dict[str, list[str]] = {}  # a changed file's nodes, kept where its units' text is as it was
    for path, entry in current.items():
        old = files.get(path)
        if old is not None and not recut:
            if changed is not None and dirty is not None and old.get("clean") and path not in changed and path not in dirty:
                report.files_unchanged += 1
                continue
            if old["size"] == entry.size and old["mtime_ns"] == entry.mtime_ns:
                report.files_unchanged += 1
                continue
        try:
            text = read_text(root / path)
        except OSError as exc:
            reason = f"unreadable: {type(exc).__name__}"
            report.skipped_reasons[reason] = report.skipped_reasons.get(reason, 0) + 1
            report.skipped_paths.setdefault(reason, []).append(path)
            continue
        digest = sha256_text(text)
        if old is not None and old["sha256"] == digest and not recut:
            old.update(size=entry.size, mtime_ns=entry.mtime_ns, clean=dirty is not None and path not in dirty)
            report.files_unchanged += 1
            continue
        if old is not None:
            previous[path] = files.pop(path)["nodes"]
        todo.append((path, entry.language, text))

    for path in stale_paths:
        doomed.extend(node_id for node_id in files.pop(path)["nodes"] if node_id in graph)
        if path not in current:
            report.files_removed += 1

    # 2. outline and cut into units
    units_by_file: list[tuple[str, str, str, list[Unit]]] = []
    masked_in: dict[tuple[str, int], int] = {}  # (path, unit position) -> credentials masked in its lines
    for path, language, text in _progress(todo, len(todo), "parsing", progress):
        masked, found = mask_file(path, language, text)
        units, errors, counts = _cut(path, language, masked, line_spans(masked, found), max_unit_tokens)
        if errors:
            report.parse_errors += 1
            report.parse_error_paths.append(path)
        report.secrets += ([(path, 0, "credentials file (name only)")] if is_secret_file(path)
                           else [(path, f.line, f.kind) for f in found])
        masked_in.update(((path, k), n) for k, n in enumerate(counts) if n)
        units_by_file.append((path, language, text, units))
    report.files_indexed = len(units_by_file)
    kept: dict[tuple[str, int], str] = {}  # (path, unit position) -> the node it keeps
    if not recut:
        pending = set(graph.pending_vectors)
        for path, _, _, units in units_by_file:
            old_ids = [n for n in previous.get(path, ()) if n in graph and n not in pending]
            kept.update(_unchanged_units(graph, path, units, old_ids))
    reused = set(kept.values())
    doomed.extend(n for ids in previous.values() for n in ids if n in graph and n not in reused)
    report.nodes_removed = len(doomed)
    report.nodes_kept = len(kept)

    # 3. embed in batches (the cache skips text it has seen), then add the nodes
    all_units = [u for path, _, _, units in units_by_file for k, u in enumerate(units) if (path, k) not in kept]
    tokens = count_tokens_many([u.text for u in all_units])
    config = graph.config
    pieces: list[str] = []
    plan: list[tuple[int, list[tuple[int, int]]]] = []  # per unit: first piece index, chunk spans
    for unit, n in zip(all_units, tokens):
        spans = chunk_spans(unit.text, config.chunk_tokens) if n > config.large_node_tokens else []
        plan.append((len(pieces), spans))
        pieces.extend([truncate_to_tokens(unit.text[s:e], EMBED_TOKENS) for s, e in spans] if spans else [unit.embed_text()])
    background = not wait and pieces and (wait is False or _uncached(loom.embedder, pieces) >= BACKGROUND_ABOVE)
    vectors = None
    if pieces and not background:
        misses_before = loom.embedder.misses
        vectors = np.zeros((len(pieces), loom.embedder.dim), dtype=np.float32)
        batches = range(0, len(pieces), EMBED_BATCH)
        for start in _progress(batches, len(batches), "embedding", progress):
            vectors[start : start + EMBED_BATCH] = loom.embedder.embed(pieces[start : start + EMBED_BATCH])
        report.texts_embedded = loom.embedder.misses - misses_before
    jobs: list[FillJob] = []

    # the graph changes from here on (what failed above left it as it was); until the new entries
    # are committed, the old ones of the files being redone say "read me again", so the refresh
    # after one that raised or was interrupted redoes them, and removes what no entry names
    _redo_later(state["files"], [path for path, _, _ in todo])
    graph.remove_many(doomed)
    # many new units: add them unlinked and rebuild the concept layer once at the end;
    # a few: link them by threshold to the concepts there are (issue 15)
    rebuild = needs_concept_rebuild(graph, added=len(all_units), removed=len(doomed))
    position = 0
    for path, language, text, units in units_by_file:
        ids = []
        for k, unit in enumerate(units):
            if (path, k) in kept:  # its text is as it was: the node stays, at the unit's lines now
                graph.relocate(kept[(path, k)], Reference(unit.path, (unit.start, unit.end), unit.signature,
                                                          sha256_text(unit.text), unit.cell), unit.title)
                ids.append(kept[(path, k)])
                continue
            first, spans = plan[position]
            n_tokens = tokens[position]
            position += 1
            if vectors is None:  # embedded later, in the background
                chunk_vecs, vector = None, np.zeros(loom.embedder.dim, dtype=np.float32)
            elif spans:
                chunk_vecs = vectors[first : first + len(spans)]
                vector = chunk_mean(chunk_vecs)
            else:
                chunk_vecs, vector = None, vectors[first]
            node, _ = graph.add_content(
                unit.text,
                vector,
                type="file_reference",
                tokens=n_tokens,
                title=unit.title,
                reference=Reference(unit.path, (unit.start, unit.end), unit.signature, sha256_text(unit.text), unit.cell),
                provenance=Provenance("indexer", f"{unit.kind} {unit.name}", "input"),
                chunks=spans,
                chunk_vectors=chunk_vecs,
                fields=unit.fields(),
                link=not rebuild and vectors is not None,
                meta={
                    "path": unit.path,
                    "language": unit.language if language == "notebook" else language,  # a cell: its kernel's
                    "kind": unit.kind,
                    "name": unit.name,
                    "defines": list(unit.defines),
                    "references": list(unit.references),
                    "imports": list(unit.imports),
                    # its text was cut from the file masked: what the manifest says was masked
                    **({"secrets_masked": masked_in[(path, k)]} if (path, k) in masked_in else {}),
                    # what a re-open needs to embed a pending unit as this run would have
                    **({"embed_doc": unit.doc} if vectors is None and unit.doc and unit.doc not in unit.text else {}),
                },
            )
            if vectors is None:
                jobs.append(FillJob(node.id, tuple(pieces[first : first + max(len(spans), 1)]), bool(spans)))
            ids.append(node.id)
            report.nodes_added += 1
        entry = current[path]
        files[path] = {
            "sha256": sha256_text(text),
            "size": entry.size,
            "mtime_ns": entry.mtime_ns,
            "commit": head,
            "clean": dirty is not None and path not in dirty,
            "nodes": ids,
        }

    # units left pending before this run (a fill that failed or was stopped, an open that could
    # not read them) stay listed beside this run's, before the entries name them: a retry never
    # keeps a node without its vector
    left = [node_id for node_id in graph.pending_vectors if node_id in graph]
    if left or jobs:
        graph.metadata["pending_vectors"] = left + [job.node_id for job in jobs]
    else:
        graph.metadata.pop("pending_vectors", None)
    # the edges are worked out without the lock and swapped in under it: a query on another
    # thread (a chat's background indexer, the warm-up ranking an open starts) reads the edges
    # and compacts the lexical index itself, and two compactions at once left its row and
    # length tables of different sizes
    relink = todo or stale_paths or graph.structure_count == 0 or state.get("structure_version") != STRUCTURE_VERSION
    edges = structure_edges(graph, files) if relink else None
    with graph.lock:
        report.structure_edges = graph.replace_structure(edges) if relink else graph.structure_count
        graph.lexical.compact()
    state["files"] = files
    state["commit"] = head
    state["units_version"] = UNITS_VERSION
    state["secrets_version"] = SECRETS_VERSION
    state["structure_version"] = STRUCTURE_VERSION
    # a query reads no file over these (indexed_size_limit): a refresh would skip it
    state["max_file_bytes"], state["max_notebook_bytes"] = limits.max_file_bytes, limits.max_notebook_bytes
    state["walk"] = {"limits": dataclasses.asdict(limits), "extra_ignores": list(extra_ignores)}  # recorded_walk
    state["dirty"] = sorted(dirty) if dirty else []  # read by the git_dirty signal until the next refresh
    graph.metadata["workspace"] = state
    # and this run's fill embeds them too: they kept zero vectors for the rest of the session
    resumed = jobs_for_pending(graph, left) if left else []
    if jobs or resumed:
        report.vectors_pending = len(jobs) + len(resumed)
        rebuild = rebuild or (bool(resumed) and rebuild_due(graph, len(left)))
        loom._fill = VectorFill(graph, loom.embedder, jobs + resumed, rebuild=rebuild, progress=progress).start()
        if wait:  # embedded before it returns, as asked
            loom._fill.wait()
            report.vectors_pending = len(graph.pending_vectors)
    elif rebuild:
        rebuild_concepts(graph)
    report.concepts = len(graph.concept_vectors)
    report.seconds = time.perf_counter() - started
    log.info("%s", report)
    return report


def _orphans(graph, files: dict[str, dict]) -> list[str]:
    """The indexer's reference nodes that no file entry names: added by a refresh that failed
    or was interrupted before it committed its entries (before the entries were committed at
    the end, a session saved then loaded each unit of a half-done file twice). Every refresh
    removes them."""
    named = {node_id for entry in files.values() for node_id in entry["nodes"]}
    found = []
    for node_id in graph.content_vectors.ids:
        if node_id in named:
            continue
        node = graph.node(node_id)
        if node.reference is not None and node.type == "file_reference" and node.provenance.source == "indexer":
            found.append(node_id)
    return found


def _redo_later(files: dict[str, dict], paths: list[str]) -> None:
    """Mark the committed entries of ``paths`` to be read again, whatever git, their size,
    mtime and hash say: a refresh that stops while it changes the graph leaves them naming
    nodes it removed or moved; the next keeps those whose text is as it was and replaces the rest."""
    for path in paths:
        if path in files:
            files[path] = {**files[path], "sha256": "", "size": -1, "mtime_ns": -1, "clean": False}


def _under(path: str, unreadable: set[str]) -> bool:
    """Whether ``path`` is one of the walk's unreadable files, or in one of its unreadable folders."""
    if path in unreadable:
        return True
    parts = path.split("/")
    return any("/".join(parts[:k]) + "/" in unreadable for k in range(1, len(parts)))


def _uncached(embedder, texts: list[str]) -> int:
    """Texts the model would embed (all of them for an embedder without a cache)."""
    counter = getattr(embedder, "uncached", None)
    return counter(texts) if counter is not None else len(texts)
