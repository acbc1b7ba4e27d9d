"""``make demo``: the engine on two kinds of knowledge, with the embedded default.

1. A debugging conversation (``loom_nb/_data/samples/auth-debugging``): three queries of
   different complexity, each with its manifest, budget split and score table.
2. loom-nb's own source, indexed with tree-sitter (the self-referential dataset of seed 000
   §8.2), answering the seed's three example queries.

Runs on MiniLM in-process; no server is needed. Both sessions are saved.

The folders under ``loom_nb/_data/samples/`` are also *ready* sessions (``graph.json``,
``content/``, ``embeddings/`` beside the ``session.json`` and sources they are built from, by
``tools/build_sample_sessions.py``): :func:`open_sample` opens a copy in a moment, so the
notebooks need not embed anything before their first query.
"""

from __future__ import annotations

import atexit
import json
import shutil
import tempfile
import time
import zipfile
from pathlib import Path

from .core.config import LoomConfig
from .embed import Embedder
from .core.engine import Loom
from .core.errors import LoomError

SAMPLES = Path(__file__).resolve().parent / "_data" / "samples"
"""The ready sample sessions, shipped in the package so that an installed loom-nb opens them too."""
SAMPLE = SAMPLES / "auth-debugging"
SESSION_ENTRIES = ("graph.json", "content", "embeddings")
"""What a ready session adds to a sample folder (the rest is its sources)."""
PACKAGE = Path(__file__).resolve().parent
SELF_QUERIES = (
    ("How does the ranking engine score content?", "core/rank.py"),
    ("What format is graph.json?", "core/store.py"),
    ("Explain input classification", "core/classify.py"),
)


DEMO_MARKER = ".loom-demo"
"""Marks a folder the demo built, so that a later demo may replace it (and nothing else)."""


def build_session(sample: Path, out: Path, embedder: Embedder | None = None, *, verbose: bool = True) -> Loom:
    """A fresh session in ``out`` from ``sample/session.json``: every listed source added,
    or, for a ``"workspace"`` sample, that folder copied into ``out`` and indexed. A
    ``"config"`` object in the spec changes settings (e.g. the concept threshold).

    The workspace root is then stored relative to the session folder (``"workspace"``), so
    the session still finds its files after the folder is copied or cloned elsewhere.
    """
    sample, out = Path(sample), Path(out)
    spec = json.loads((sample / "session.json").read_text(encoding="utf-8"))
    if out.exists():
        if out.is_file() or (any(out.iterdir()) and not (out / DEMO_MARKER).exists()):
            raise LoomError(f"{out} is not empty and was not made by loom-nb demo: refusing to replace it; "
                            "give another --out")
        shutil.rmtree(out)  # an earlier demo build (marked) or an empty folder
    out.mkdir(parents=True)
    (out / DEMO_MARKER).write_text("built by loom-nb demo; `loom-nb demo --out` may replace this folder\n")
    config = LoomConfig().with_(**spec["config"]) if spec.get("config") else None
    loom = Loom(out, embedder=embedder, config=config)
    if "workspace" in spec:
        name = spec["workspace"]
        snapshot_into(sample, name, out)
        report = loom.index(out / name, progress=False, wait=True)
        loom.graph.metadata["workspace"]["root"] = name
        if verbose:
            print(report)
        return loom
    ids_by_file: dict[str, str] = {}
    for item in spec["sources"]:
        if "summary_of" in item:
            target = ids_by_file[item["summary_of"]]
            node = loom.add(item["text"], source=item.get("source", "user"), summary_of=target).nodes[0]
            if verbose:
                print(f"  summary {node.id} of {target}")
            continue
        text = (sample / item["file"]).read_text(encoding="utf-8")
        result = loom.add(text, type=item.get("type", "input"), source=item.get("source", "user"), reason=item.get("reason", ""))
        ids_by_file[item["file"]] = result.nodes[-1].id
        for node, link in zip(result.nodes, result.links):
            if verbose:
                print(f"  {node.id:<4} {node.type:<9} {node.tokens:>5} tok  {item['file']}: {link}")
    quality = loom.rebuild_concepts()  # added one by one; as a whole they make topics
    if verbose:
        print(f"  concepts rebuilt: {quality}")
    return loom


def sample_names() -> list[str]:
    """The sample folders (each with a ``session.json``)."""
    return sorted(p.parent.name for p in SAMPLES.glob("*/session.json"))


def sample_spec(name: str) -> dict:
    """A sample's ``session.json``: its description, sources and example queries."""
    return json.loads((_sample_dir(name) / "session.json").read_text(encoding="utf-8"))


def _sample_dir(name: str | Path) -> Path:
    folder = Path(name) if Path(name).is_absolute() or Path(name).exists() else SAMPLES / str(name)
    if not (folder / "session.json").is_file():
        raise LoomError(f"no sample session {name!r}; the samples are: {', '.join(sample_names())}")
    return folder


def snapshot_into(sample: Path, name: str, target: Path) -> Path:
    """A sample's workspace, laid out at ``target / name``: a folder is copied, a
    ``NAME.zip`` snapshot extracted.

    The loom-nb-code sample keeps its snapshot of the package zipped, so that grep,
    go-to-definition, linters and duplicate finders do not take it for a second copy of
    the package (it is data: the files its references point to).
    """
    out = target / name
    if (sample / name).is_dir():
        shutil.copytree(sample / name, out, ignore=shutil.ignore_patterns("__pycache__"))
    elif (sample / f"{name}.zip").is_file():
        with zipfile.ZipFile(sample / f"{name}.zip") as archive:
            for member in archive.infolist():  # our own archive, but never write outside out/
                if member.filename.startswith("/") or ".." in Path(member.filename).parts:
                    raise LoomError(f"{sample / name}.zip: member {member.filename!r} leaves the workspace")
            archive.extractall(out)
    else:
        raise LoomError(f"{sample} has no {name}/ or {name}.zip: run tools/build_sample_sessions.py --refresh-code")
    return out


_TEMPORARY: list[Path] = []
"""Folders :func:`open_sample` made this process: removed when Python exits."""


def _temporary_folder(prefix: str) -> Path:
    """A new temporary folder, removed at exit: a notebook that opens a sample on every run
    would otherwise leave a copy of it in the temp folder each time."""
    if not _TEMPORARY:
        atexit.register(_remove_temporary)
    _TEMPORARY.append(Path(tempfile.mkdtemp(prefix=prefix)))
    return _TEMPORARY[-1]


def _remove_temporary() -> None:
    while _TEMPORARY:
        shutil.rmtree(_TEMPORARY.pop(), ignore_errors=True)


def open_sample(name: str = "auth-debugging", *, copy: bool = True, embedder: Embedder | None = None) -> Loom:
    """Open a ready sample session (``loom_nb/_data/samples/NAME``) without building anything.

    With ``copy`` (the default) the session is copied to a new temporary folder first, so
    queries that record access, ``add`` and ``save`` change the copy, never the committed
    sample. The copy is removed when Python exits (copy ``loom.folder`` to keep it). With
    ``copy=False`` the sample is read in place and the Loom has no folder: ``save()`` then
    needs a folder of its own.

    Examples
    --------
    >>> loom = open_sample("sourdough-notes")
    >>> loom.graph.counts()
    {'concepts': 3, 'content': 20, 'edges': 23}
    >>> print(loom.view("c22").__str__().splitlines()[0])
    Concept c22: loaf oven dough
    """
    folder = _sample_dir(name)
    if not (folder / "graph.json").is_file():
        raise LoomError(f"{folder} holds no ready session: run tools/build_sample_sessions.py")
    if copy:
        target = _temporary_folder(f"loom-{folder.name}-") / folder.name
        spec = json.loads((folder / "session.json").read_text(encoding="utf-8"))
        target.mkdir()
        if spec.get("workspace"):
            snapshot_into(folder, spec["workspace"], target)
        for entry in (*SESSION_ENTRIES, "session.json"):
            if entry and (folder / entry).is_dir():
                shutil.copytree(folder / entry, target / entry, ignore=shutil.ignore_patterns("__pycache__"))
            elif entry and (folder / entry).is_file():
                shutil.copy2(folder / entry, target / entry)
        folder = target
    loom = Loom.open(folder, embedder=embedder, create=False)
    root = loom.graph.metadata.get("workspace", {}).get("root")
    if root and not Path(root).is_absolute():  # stored relative to the session folder
        loom.graph.workspace = folder / root
        if not loom.graph.workspace.is_dir():  # read in place from a zipped snapshot: unpack it aside
            loom.graph.workspace = snapshot_into(folder, root, _temporary_folder(f"loom-{folder.name}-"))
    if not copy:
        loom.folder = None  # read in place: never written back
    return loom


def run_demo(out: Path, sample: Path = SAMPLE, embedder: Embedder | None = None, window: int = 4096) -> Loom:
    started = time.perf_counter()
    print(f"Building a session from {sample.name} into {out} …")
    loom = build_session(sample, out, embedder)
    print(f"\n{loom}\n")
    queries = json.loads((sample / "session.json").read_text(encoding="utf-8"))["queries"]
    for n, query in enumerate(queries, 1):
        result = loom.query(query, window=window)
        print("=" * 100)
        print(f"Query {n} of {len(queries)} (window {window:,} tokens)")
        print(result)
        print()
    path = loom.save()
    print("=" * 100)
    print(f"Saved the session to {path.parent} ({time.perf_counter() - started:.1f} s).")
    print(f"Try: loom-nb show {path.parent}   or   loom-nb query {path.parent} \"your question\"")
    return loom


def run_self_demo(out: Path, embedder: Embedder | None = None, budget: int = 2000) -> Loom:
    """Index loom-nb's own package and answer seed 000's example queries, through the
    default call (``loom.query(q, budget=…)``, mode ``auto``) a user makes."""
    started = time.perf_counter()
    print("=" * 100)
    print(f"Indexing loom-nb's own source ({PACKAGE}) into {out} …")
    loom = Loom.open(out, embedder=embedder)
    called = time.perf_counter()
    report = loom.index(PACKAGE)
    print(report)
    if report.vectors_pending:  # a first run: index() returned before the vectors
        query, _ = SELF_QUERIES[0]
        early = loom.query(query, budget=budget)
        print("-" * 100)
        print(f"Asked {time.perf_counter() - called:.1f} s after index() was called, before the vectors are in: {query}")
        print(f"  {early.embedding_note}")
        for row in early.rows(3):
            print(f"  {row.score:.3f}  {row.decision:<13} {row.title[:72]}")
        loom.wait()
        print(f"All {len(loom.graph.content_vectors)} vectors in place {time.perf_counter() - called:.1f} s after index() "
              "was called (loom.wait()); the queries below rank with them.")
    for query, expected in SELF_QUERIES:
        result = loom.query(query, budget=budget)
        top = result.rows(5)
        print("-" * 100)
        place = next((k for k, row in enumerate(top, 1) if row.title.startswith(expected)), None)
        found = f"first at rank {place}" if place else "not in the top 5"
        print(f"{query}  (expected in the top 3: {expected}; {found}; mode {result.mode.name.upper()})")
        for row in top:
            print(f"  {row.score:.3f}  {row.decision:<13} {row.title[:72]}")
        print(f"  manifest: {result.packed.relevant_count} relevant, {len(result.loaded)} loaded, "
              f"{result.packed.context_tokens:,} of {budget:,} tokens; {result.seconds * 1000:.0f} ms")
    path = loom.save()
    print(f"Saved the code session to {path.parent} ({time.perf_counter() - started:.1f} s; a second run re-indexes only what changed).")
    return loom
