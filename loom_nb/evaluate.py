"""Evaluation: labelled queries, reference precision and recall, and baselines (seed 000 §8).

A *case* is a query with the answer a person knows: the files (or nodes, or line ranges)
that answer it. :func:`evaluate` asks the engine and four baselines to fill the same token
budget for every case, records exactly what each one loaded (path, line range, tokens,
score), and grades it. The cases live in JSON Lines (:func:`load_cases`; the format is in
``datasets/README.md``).

The strategies, all given the same budget and the same files:

``loom``
    The engine as a user calls it: ``Loom.query(query, budget=budget)``, mode ``auto`` (a
    case with ``history`` goes through :func:`loom_nb.chat.planner.plan_turn`, as a chat
    turn does). Each loaded block is its
    node's file and line range; for a "chunk" decision, the line ranges of the chunks loaded;
    a "summary" counts for its file but covers no lines. Tokens used are the whole context
    (manifest and evidence), as the engine counts them.
``loom-bare``, ``loom-fast``, ``loom-fused``
    The same call with that mode forced: what each mode costs and earns beside the default.
``bm25``
    Retrieve-top-k files: plain BM25 (k1 1.2, b 0.75, one field: the path and the text) over
    whole files; files with a positive score are loaded whole in score order and loading
    stops at the first file that does not fit. What a lexical search tool hands over.
``whole-file``
    Seed §8.6 Strategy A, whole-file references with no index optimisation: the same BM25
    order, then *every* file (zero-score files last, in path order) is loaded whole while it
    fits; one that does not fit is skipped and the next tried. It fills the budget with
    whole files, as pasting the workspace would.
``bm25-chunks``
    Plain BM25 over fixed windows of :data:`WINDOW_LINES` lines (non-overlapping) of every
    file; windows with a positive score are packed greedily by score (one that does not fit
    is skipped) until nothing more fits.
``dense``
    The same windows, ranked by cosine with the query under the Loom's own embedder, packed
    greedily by score the same way.
``loom-no-<signal>`` (:func:`ablations`)
    The engine with one signal's weight set to 0 (``loom-no-terms``, ``loom-no-semantic``, …):
    the ablation that shows what each signal earns. Same query, same budget; only the
    weights differ.

Baselines count the tokens of the text they load with :func:`~loom_nb.tokens.count_tokens`;
no strategy ever goes over the budget.
"""

from __future__ import annotations

import codecs
import hashlib
import json
import logging
import re
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Sequence

import numpy as np

from .config import SIGNALS, LoomConfig
from .errors import LoomError
from .lexical import LexicalIndex
from .tokens import count_tokens_many

log = logging.getLogger(__name__)

MODE_STRATEGIES: tuple[str, ...] = ("loom-bare", "loom-fast", "loom-fused")
"""The engine with one mode forced (:mod:`loom_nb.core.modes`), beside ``loom``, the
default path: one table shows what each mode costs and earns."""

STRATEGIES: tuple[str, ...] = ("loom", *MODE_STRATEGIES, "bm25", "bm25-chunks", "dense", "whole-file")
"""The engine as a user calls it, the engine with each mode forced, and the four baselines,
in the order tables show them; the ablations (``loom-no-<signal>``, :func:`ablations`) are
known too."""

ABLATION_PREFIX = "loom-no-"


def ablations(config: LoomConfig | None = None) -> tuple[str, ...]:
    """One ablation strategy per signal with a weight above 0 in ``config`` (the defaults
    when None): ``loom-no-semantic``, ``loom-no-terms``, …

    >>> ablations()[:2]
    ('loom-no-semantic', 'loom-no-staleness')
    """
    weights = (config or LoomConfig()).weights
    return tuple(ABLATION_PREFIX + name for name in SIGNALS if getattr(weights, name) > 0)


def _forced_mode(strategy: str) -> str | None:
    """The mode a ``loom-<mode>`` strategy forces, or None (``loom`` runs the default path)."""
    return strategy[len("loom-"):] if strategy in MODE_STRATEGIES else None


def is_engine(strategy: str) -> bool:
    """Whether ``strategy`` runs the engine (the default path, a forced mode, an ablation)."""
    return strategy == "loom" or strategy in MODE_STRATEGIES or _ablated_signal(strategy) is not None


def _ablated_signal(strategy: str) -> str | None:
    """The signal a ``loom-no-<signal>`` strategy switches off, or None for any other."""
    if strategy.startswith(ABLATION_PREFIX) and strategy[len(ABLATION_PREFIX):] in SIGNALS:
        return strategy[len(ABLATION_PREFIX):]
    return None


WINDOW_LINES = 40
"""Lines per window for ``bm25-chunks`` and ``dense``: about one function or one screen, the
usual size of a retrieval chunk for code."""

DEFAULT_BUDGET = 8000
"""Tokens of context per query unless a case gives its own ``budget``."""

METRICS: tuple[str, ...] = (
    "precision", "recall", "file_precision", "file_recall", "line_recall",
    "tokens", "budget_use", "token_efficiency", "seconds", "relevant_share", "relevant_precision", "unused_with_room",
)
"""The columns of :meth:`EvalReport.table`, each a mean over the cases that define it."""


# -- cases ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Case:
    """One labelled query: where to look, and what answers it."""

    id: str
    query: str
    workspace: Path | None = None
    """A folder to index (resolved against the cases file's folder)."""
    session: Path | None = None
    """Or a session folder, opened as it is."""
    gold_files: tuple[str, ...] = ()
    """Workspace-relative POSIX paths of the files that answer the query."""
    gold_nodes: tuple[str, ...] = ()
    """Or node ids (for sessions, whose content is not files)."""
    gold_ranges: dict[str, tuple[tuple[int, int], ...]] = field(default_factory=dict)
    """Line ranges (1-based, inclusive) that answer it, per path: graded by line recall."""
    budget: int | None = None
    line: int = 0
    """Line of the cases file the case came from (0 when built in code)."""
    history: tuple[tuple[str, str], ...] = ()
    """Earlier chat messages ``(role, content)``, oldest first: the case is a follow-up
    turn, planned by the chat's turn planner (:func:`loom_nb.chat.planner.plan_turn`)."""


def _str_list(value: Any, name: str) -> tuple[str, ...]:
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
        raise ValueError(f"{name} must be a list of non-empty strings")
    return tuple(v.replace("\\", "/").removeprefix("./") for v in value)


def _ranges(value: Any) -> dict[str, tuple[tuple[int, int], ...]]:
    if not isinstance(value, dict):
        raise ValueError('gold_ranges must be an object {"path": [[start, end], ...]}')
    out = {}
    for path, spans in value.items():
        if not isinstance(spans, list) or not spans:
            raise ValueError(f"gold_ranges[{path!r}] must be a non-empty list of [start, end]")
        clean = []
        for span in spans:
            ok = isinstance(span, list) and len(span) == 2 and all(isinstance(x, int) and not isinstance(x, bool) for x in span)
            if not ok or not 1 <= span[0] <= span[1]:
                raise ValueError(f"gold_ranges[{path!r}]: {span!r} is not [start, end] with 1 <= start <= end")
            clean.append((span[0], span[1]))
        out[path.replace("\\", "/").removeprefix("./")] = tuple(clean)
    return out


def parse_case(data: Any, base: Path, line: int = 0) -> Case:
    """One case from a parsed JSON object; ``ValueError`` says what is wrong with it.

    Paths in ``workspace`` and ``session`` resolve against ``base``; unknown fields are
    ignored.
    """
    if not isinstance(data, dict):
        raise ValueError("a case must be a JSON object")
    for key in ("id", "query"):
        if not isinstance(data.get(key), str) or not data[key].strip():
            raise ValueError(f"{key!r} must be a non-empty string")
    if ("workspace" in data) == ("session" in data):
        raise ValueError("give exactly one of 'workspace' and 'session'")
    where = data.get("workspace", data.get("session"))
    if not isinstance(where, str) or not where:
        raise ValueError("'workspace' / 'session' must be a folder path")
    try:
        folder = (base / where).resolve()
    except (OSError, RuntimeError) as exc:  # pathlib raises RuntimeError on a symlink loop
        raise ValueError(f"'workspace' / 'session' {where!r} cannot be resolved ({exc})") from None
    gold_files = _str_list(data["gold_files"], "gold_files") if "gold_files" in data else ()
    gold_nodes = _str_list(data["gold_nodes"], "gold_nodes") if "gold_nodes" in data else ()
    gold_ranges = _ranges(data["gold_ranges"]) if "gold_ranges" in data else {}
    if not gold_files and not gold_nodes:
        raise ValueError("give 'gold_files' or 'gold_nodes'")
    budget = data.get("budget")
    if budget is not None and (not isinstance(budget, int) or isinstance(budget, bool) or budget <= 0):
        raise ValueError("'budget' must be a positive integer")
    history = _history(data["history"]) if "history" in data else ()
    return Case(
        id=data["id"], query=data["query"],
        workspace=folder if "workspace" in data else None,
        session=folder if "session" in data else None,
        gold_files=gold_files, gold_nodes=gold_nodes, gold_ranges=gold_ranges, budget=budget, line=line,
        history=history,
    )


def _history(value: Any) -> tuple[tuple[str, str], ...]:
    if not isinstance(value, list):
        raise ValueError('history must be a list of {"role": "user"|"assistant", "content": "..."}')
    out = []
    for k, message in enumerate(value):
        ok = isinstance(message, dict) and message.get("role") in ("user", "assistant") and isinstance(message.get("content"), str)
        if not ok:
            raise ValueError(f'history[{k}] must be {{"role": "user"|"assistant", "content": "..."}}')
        out.append((message["role"], message["content"]))
    return tuple(out)


def load_cases(path: str | Path) -> tuple[list[Case], list[str]]:
    """Read a JSON Lines cases file: the valid cases, and one message per bad line.

    Blank lines and lines starting with ``#`` are skipped. A malformed line (bad JSON,
    nested too deeply, a number too long, a case with a missing or wrong field) does not
    stop the others; its message names the file and line number. A repeated ``id`` is an
    error for the later line. Lines end at ``\\n`` only, as JSON Lines says: a query may hold
    U+2028 or a form feed.

    Raises
    ------
    LoomError
        If the file cannot be read, or is not UTF-8 (the message names the line and byte).
        Nothing else escapes, whatever the file holds.

    >>> import tempfile
    >>> folder = Path(tempfile.mkdtemp())
    >>> _ = (folder / "cases.jsonl").write_text(
    ...     '{"id": "a", "query": "q", "workspace": ".", "gold_files": ["x.py"]}\\n{"id": "b"\\n')
    >>> cases, errors = load_cases(folder / "cases.jsonl")
    >>> [c.id for c in cases], len(errors), errors[0].endswith(":2: not valid JSON (Expecting ',' delimiter, column 11)")
    (['a'], 1, True)
    """
    path = Path(path)
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise LoomError(f"{path}: cannot read the cases file ({exc.strerror or exc})") from None
    text = _decode_cases(path, data)
    cases, errors, seen = [], [], set()
    for number, raw in enumerate(text.split("\n"), 1):
        raw = raw.removesuffix("\r")
        if not raw.strip() or raw.lstrip().startswith("#"):
            continue
        try:
            data = json.loads(raw)
        except json.JSONDecodeError as exc:
            errors.append(f"{path}:{number}: not valid JSON ({exc.msg}, column {exc.colno})")
            continue
        except RecursionError:  # "[[[[…": json's decoder recurses once per level
            errors.append(f"{path}:{number}: not valid JSON (nested too deeply)")
            continue
        except ValueError as exc:  # a number of more than 4,300 digits (sys.get_int_max_str_digits)
            errors.append(f"{path}:{number}: not valid JSON ({str(exc).split(':')[0]})")
            continue
        try:
            case = parse_case(data, path.parent, number)
        except ValueError as exc:
            errors.append(f"{path}:{number}: {exc}")
            continue
        if case.id in seen:
            errors.append(f"{path}:{number}: id {case.id!r} is already used")
            continue
        seen.add(case.id)
        cases.append(case)
    return cases, errors


def _decode_cases(path: Path, data: bytes) -> str:
    """The cases file as text (UTF-8, a BOM dropped); LoomError naming the line if it is not."""
    data = data.removeprefix(codecs.BOM_UTF8)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        column = exc.start - (data.rfind(b"\n", 0, exc.start) + 1) + 1
        raise LoomError(
            f"{path}:{line}: not UTF-8 (byte 0x{data[exc.start]:02x} at byte {column} of the line); "
            "save the cases file as UTF-8"
        ) from None


# -- what a strategy loaded, and grading it ------------------------------------------------


@dataclass(frozen=True)
class Loaded:
    """One item a strategy put in the context."""

    path: str | None
    """Workspace-relative file, or None for content that is not a file (chat text)."""
    start: int | None
    end: int | None
    """1-based inclusive line range; None when no lines of the file are in it (a summary)."""
    tokens: int
    score: float
    node_id: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"path": self.path, "start": self.start, "end": self.end, "tokens": self.tokens,
                "score": round(float(self.score), 6), "node": self.node_id}


@dataclass(frozen=True)
class Gold:
    """A case's answer in the terms grading needs."""

    files: frozenset[str] = frozenset()
    nodes: frozenset[str] = frozenset()
    ranges: dict[str, tuple[tuple[int, int], ...]] = field(default_factory=dict)
    node_spans: dict[str, tuple[str, int, int]] = field(default_factory=dict)
    """File and line range of each gold node that is a file reference."""


@dataclass
class Metrics:
    """One strategy on one case. ``None`` means the metric does not apply to the case."""

    precision: float
    recall: float
    file_precision: float | None
    file_recall: float | None
    line_recall: float | None
    tokens: int
    budget: int
    budget_use: float
    token_efficiency: float | None
    seconds: float
    items: int
    relevant_share: float | None = None
    """The engine only: the share of the graph's content nodes that counted as relevant."""
    relevant_precision: float | None = None
    """The engine only: the share of relevant nodes that are gold (in a gold range, or a
    gold file when the case has no ranges)."""
    unused_with_room: float | None = None
    """The engine only: 1 when over 10 % of the budget went unused while a relevant node that
    would fit was left out (a mode's cap or item limit), else 0; its mean is a share of cases."""


def _overlaps(a: tuple[int, int], b: tuple[int, int]) -> bool:
    return a[0] <= b[1] and b[0] <= a[1]


def _covered(ranges: Iterable[tuple[int, int]]) -> set[int]:
    lines: set[int] = set()
    for start, end in ranges:
        lines.update(range(start, end + 1))
    return lines


def grade(
    items: Sequence[Loaded],
    gold: Gold,
    *,
    budget: int,
    tokens: int | None = None,
    workspace_tokens: int | None = None,
    seconds: float = 0.0,
) -> Metrics:
    """Grade what a strategy loaded against a case's gold answer (seed 000 §8.8).

    * **precision** — the share of loaded items that are correct: with ``gold.nodes``, the
      item is a gold node or overlaps a gold node's lines; otherwise its file is a gold
      file. Loading nothing scores 0.
    * **recall** — the share of gold items loaded: gold nodes loaded (by id, or by an item
      overlapping the node's lines), else gold files with any line loaded.
    * **file_precision / file_recall** — over distinct files: loaded files that are gold,
      and gold files of which any line (or a summary) is loaded. Gold files are
      ``gold.files``, else the files of the gold nodes; None when there are none.
    * **line_recall** — the share of ``gold.ranges`` lines inside loaded line ranges (None
      without ranges).
    * **budget_use** — tokens / budget; **token_efficiency** — tokens / all tokens of the
      workspace (what share of the workspace was sent).

    ``tokens`` defaults to the sum of the items' tokens.

    Examples
    --------
    Two windows of ``a.py`` and one of ``b.py``; the answer is ``a.py`` lines 5–14:

    >>> items = [Loaded("a.py", 1, 10, 100, 2.0), Loaded("a.py", 31, 40, 90, 1.5), Loaded("b.py", 1, 10, 80, 1.0)]
    >>> m = grade(items, Gold(files=frozenset({"a.py"}), ranges={"a.py": ((5, 14),)}), budget=1000, workspace_tokens=2700)
    >>> round(m.precision, 4), m.recall, m.file_precision, m.line_recall, m.tokens, m.budget_use, m.token_efficiency
    (0.6667, 1.0, 0.5, 0.6, 270, 0.27, 0.1)
    """
    used = sum(i.tokens for i in items) if tokens is None else int(tokens)
    loaded_files = {i.path for i in items if i.path is not None}
    lines_by_file: dict[str, list[tuple[int, int]]] = {}
    for i in items:
        if i.path is not None and i.start is not None and i.end is not None:
            lines_by_file.setdefault(i.path, []).append((i.start, i.end))

    def item_is_gold(item: Loaded) -> bool:
        if gold.nodes:
            if item.node_id is not None and item.node_id in gold.nodes:
                return True
            if item.path is None or item.start is None:
                return False
            return any(p == item.path and _overlaps((s, e), (item.start, item.end)) for p, s, e in gold.node_spans.values())
        return item.path in gold.files

    def node_loaded(node_id: str) -> bool:
        if any(i.node_id == node_id for i in items):
            return True
        span = gold.node_spans.get(node_id)
        return span is not None and any(_overlaps((span[1], span[2]), r) for r in lines_by_file.get(span[0], ()))

    precision = sum(item_is_gold(i) for i in items) / len(items) if items else 0.0
    gold_files = set(gold.files) or {p for p, _, _ in gold.node_spans.values()}
    if gold.nodes:
        recall = sum(node_loaded(n) for n in gold.nodes) / len(gold.nodes)
    else:
        recall = len(gold_files & loaded_files) / len(gold_files) if gold_files else 0.0
    file_recall = len(gold_files & loaded_files) / len(gold_files) if gold_files else None
    if not gold_files:
        file_precision = None
    else:
        file_precision = len(gold_files & loaded_files) / len(loaded_files) if loaded_files else 0.0
    line_recall = None
    if gold.ranges:
        total = hit = 0
        for path, spans in gold.ranges.items():
            want = _covered(spans)
            total += len(want)
            hit += len(want & _covered(lines_by_file.get(path, ())))
        line_recall = hit / total if total else None
    return Metrics(
        precision=precision, recall=recall, file_precision=file_precision, file_recall=file_recall,
        line_recall=line_recall, tokens=used, budget=budget, budget_use=used / budget if budget else 0.0,
        token_efficiency=used / workspace_tokens if workspace_tokens else None, seconds=seconds, items=len(items),
    )


def char_span_lines(text: str, first_line: int, start: int, end: int) -> tuple[int, int]:
    """The 1-based inclusive lines that the characters ``text[start:end]`` lie on.

    ``text`` begins on line ``first_line`` of its file; a span ending just after a newline
    ends on that newline's line.

    >>> char_span_lines("a\\nbb\\nccc\\n", 10, 2, 9)
    (11, 12)
    """
    begin = first_line + text.count("\n", 0, start)
    last = first_line + text.count("\n", 0, max(start, end - 1))
    return begin, last


# -- a workspace, prepared once per run ------------------------------------------------------


@dataclass
class _Window:
    path: str
    start: int
    end: int
    text: str
    tokens: int


class _Workspace:
    """A workspace's files and windows, with BM25 indexes and (on demand) window vectors."""

    def __init__(self, root: Path):
        from .index.walk import read_text, walk_workspace

        self.root = root
        self.files: list[_Window] = []
        for entry in walk_workspace(root).files:
            try:
                text = read_text(root / entry.path)
            except OSError:
                continue
            n_lines = text.count("\n") + (0 if text.endswith("\n") or not text else 1)
            self.files.append(_Window(entry.path, 1, max(n_lines, 1), text, 0))
        for f, n in zip(self.files, count_tokens_many(f.text for f in self.files)):
            f.tokens = n
        self.windows: list[_Window] = []
        for f in self.files:
            lines = f.text.splitlines(keepends=True) or [""]
            for i in range(0, len(lines), WINDOW_LINES):
                part = lines[i : i + WINDOW_LINES]
                self.windows.append(_Window(f.path, i + 1, i + len(part), "".join(part), 0))
        for w, n in zip(self.windows, count_tokens_many(w.text for w in self.windows)):
            w.tokens = n
        self.total_tokens = sum(f.tokens for f in self.files)
        self.file_index = self._bm25(self.files)
        self.window_index = self._bm25(self.windows)
        self._vectors: np.ndarray | None = None

    @staticmethod
    def _bm25(pieces: list[_Window]) -> LexicalIndex:
        index = LexicalIndex()
        for row, piece in enumerate(pieces):
            index.add(row, {"content": f"{piece.path}\n{piece.text}"})
        index.compact()
        return index

    def window_vectors(self, embedder) -> np.ndarray:
        if self._vectors is None:
            texts = [f"{w.path}\n{w.text}" for w in self.windows]
            self._vectors = embedder.embed(texts) if texts else np.zeros((0, embedder.dim), np.float32)
        return self._vectors


def _greedy(pieces: list[_Window], scores: np.ndarray, budget: int, *, stop_at_first_misfit: bool,
            positive_only: bool) -> list[Loaded]:
    """Load pieces in descending score (ties by position) while they fit ``budget``."""
    order = sorted(range(len(pieces)), key=lambda i: (-float(scores[i]), i))
    out, left = [], budget
    for i in order:
        if positive_only and not scores[i] > 0:
            break
        piece = pieces[i]
        if piece.tokens > left:
            if stop_at_first_misfit:
                break
            continue
        out.append(Loaded(piece.path, piece.start, piece.end, piece.tokens, float(scores[i])))
        left -= piece.tokens
    return out


def run_baseline(strategy: str, ws: _Workspace, query: str, budget: int, embedder=None) -> list[Loaded]:
    """What one baseline strategy loads for ``query`` (see the module docstring)."""
    if strategy == "bm25":
        scores = ws.file_index.score(query, len(ws.files))
        return _greedy(ws.files, scores, budget, stop_at_first_misfit=True, positive_only=True)
    if strategy == "whole-file":
        scores = ws.file_index.score(query, len(ws.files))
        return _greedy(ws.files, scores, budget, stop_at_first_misfit=False, positive_only=False)
    if strategy == "bm25-chunks":
        scores = ws.window_index.score(query, len(ws.windows))
        return _greedy(ws.windows, scores, budget, stop_at_first_misfit=False, positive_only=True)
    if strategy == "dense":
        if embedder is None:
            raise LoomError("the dense baseline needs an embedder")
        vectors = ws.window_vectors(embedder)
        q = embedder.embed([query])[0]
        scores = vectors @ q if len(vectors) else np.zeros(0)
        return _greedy(ws.windows, scores, budget, stop_at_first_misfit=False, positive_only=True)
    raise LoomError(f"unknown strategy {strategy!r}; the strategies are {', '.join(STRATEGIES)}")


def loom_items(loom, result) -> list[Loaded]:
    """The items a :class:`~loom_nb.engine.QueryResult` loaded, as files and line ranges."""
    return packed_items(loom.graph, result.packed)


def packed_items(graph, packed) -> list[Loaded]:
    """The items a :class:`~loom_nb.pack.Packed` context holds, as files and line ranges."""
    from .tokens import count_tokens

    items = []
    for block in packed.blocks:
        node = graph.node(block.node_id)
        ref = getattr(node, "reference", None)
        if ref is None:
            items.append(Loaded(None, None, None, block.tokens, block.score, block.node_id))
            continue
        decision = packed.decision_of(block.node_id)
        if decision.decision == "chunk" and decision.chunks:
            text = graph.text(block.node_id)
            for start, end in decision.chunks:
                first, last = char_span_lines(text, ref.lines[0], start, end)
                items.append(Loaded(ref.file, first, last, count_tokens(text[start:end]), block.score, block.node_id))
        elif decision.decision == "summary":
            items.append(Loaded(ref.file, None, None, block.tokens, block.score, block.node_id))
        else:
            items.append(Loaded(ref.file, ref.lines[0], ref.lines[1], block.tokens, block.score, block.node_id))
    return items


# -- the run -----------------------------------------------------------------------------------


@dataclass
class CaseResult:
    """One strategy on one case: what it loaded and how that grades."""

    case_id: str
    strategy: str
    items: list[Loaded]
    metrics: Metrics | None
    error: str = ""


@dataclass
class EvalReport:
    """Every case × strategy result, and the overall table (means over cases)."""

    cases: list[Case]
    results: list[CaseResult]
    strategies: tuple[str, ...]
    budget: int
    errors: list[str] = field(default_factory=list)

    def result(self, case_id: str, strategy: str) -> CaseResult:
        for r in self.results:
            if r.case_id == case_id and r.strategy == strategy:
                return r
        raise KeyError((case_id, strategy))

    def table(self) -> list[dict[str, Any]]:
        """One row per strategy: each metric's mean over the cases that define it."""
        rows = []
        for strategy in self.strategies:
            graded = [r.metrics for r in self.results if r.strategy == strategy and r.metrics is not None]
            row: dict[str, Any] = {"strategy": strategy, "cases": len(graded),
                                   "failed": sum(1 for r in self.results if r.strategy == strategy and r.metrics is None)}
            for name in METRICS:
                values = [getattr(m, name) for m in graded if getattr(m, name) is not None]
                row[name] = float(np.mean(values)) if values else None
            rows.append(row)
        return rows

    def ablation_table(self, metrics: Sequence[str] = ("line_recall", "file_recall", "precision")) -> list[dict[str, Any]]:
        """One row per ablated signal: the engine's mean ``metrics`` with that signal's
        weight at 0, and the change from the full engine (``loom`` must be in the run).
        A negative change is what the signal earns; a change ≥ 0 means it earned nothing
        on these cases."""
        rows = {row["strategy"]: row for row in self.table()}
        full = rows.get("loom")
        if full is None:
            raise LoomError("the ablation table compares with the full engine: run the 'loom' strategy too")
        out = []
        for strategy in self.strategies:
            signal = _ablated_signal(strategy)
            if signal is None:
                continue
            row: dict[str, Any] = {"signal": signal}
            for name in metrics:
                value, base = rows[strategy][name], full[name]
                row[name] = value
                row[f"{name}_change"] = None if value is None or base is None else value - base
            out.append(row)
        return out

    def case_rows(self) -> list[dict[str, Any]]:
        """One row per case × strategy, with every metric."""
        rows = []
        for r in self.results:
            row: dict[str, Any] = {"case": r.case_id, "strategy": r.strategy, "error": r.error}
            if r.metrics is not None:
                row.update({k: v for k, v in vars(r.metrics).items()})
            rows.append(row)
        return rows

    def to_json(self) -> dict[str, Any]:
        """Plain data: the overall table, and every loaded item per case per strategy."""
        by_case = {c.id: {"id": c.id, "query": c.query, "budget": c.budget or self.budget,
                          "gold_files": list(c.gold_files), "gold_nodes": list(c.gold_nodes),
                          "gold_ranges": {p: [list(s) for s in spans] for p, spans in c.gold_ranges.items()},
                          "strategies": {}} for c in self.cases}
        for r in self.results:
            by_case[r.case_id]["strategies"][r.strategy] = {
                "metrics": vars(r.metrics) if r.metrics is not None else None,
                "error": r.error,
                "items": [i.to_dict() for i in r.items],
            }
        return {"budget": self.budget, "strategies": list(self.strategies), "window_lines": WINDOW_LINES,
                "errors": self.errors, "overall": self.table(), "cases": list(by_case.values())}

    def __str__(self) -> str:
        name_width = max([12] + [len(s) for s in self.strategies])
        columns = [("strategy", "strategy", name_width, "s"), ("cases", "cases", 5, "d"), ("precision", "prec", 6, ".3f"),
                   ("recall", "recall", 6, ".3f"), ("file_precision", "fileP", 6, ".3f"), ("file_recall", "fileR", 6, ".3f"),
                   ("line_recall", "lineR", 6, ".3f"), ("tokens", "tokens", 7, ".0f"), ("budget_use", "budget", 6, ".0%"),
                   ("token_efficiency", "of ws", 6, ".1%"), ("seconds", "ms", 7, ".1f"),
                   ("relevant_share", "rel%", 6, ".1%"), ("relevant_precision", "relP", 6, ".3f")]
        lines = [f"{len(self.cases)} cases, budget {self.budget} tokens"
                 + (f"; {len(self.errors)} case line(s) rejected" if self.errors else "")]
        lines.append(" ".join(f"{title:>{w}}" if key != "strategy" else f"{title:<{w}}" for key, title, w, _ in columns))
        for row in self.table():
            cells = []
            for key, _, width, fmt in columns:
                value = row[key]
                if value is None:
                    cells.append(f"{'-':>{width}}")
                elif key == "strategy":
                    cells.append(f"{value:<{width}}")
                elif key == "seconds":
                    cells.append(f"{value * 1000:>{width}{fmt}}")
                else:
                    cells.append(f"{value:>{width}{fmt}}")
            lines.append(" ".join(cells))
            if row["failed"]:
                lines[-1] += f"  ({row['failed']} failed)"
        lines.append("prec/recall: loaded items that are gold / gold items loaded; fileP/fileR: the same over files; "
                     "lineR: gold_ranges lines loaded; budget: tokens/budget; of ws: tokens/workspace tokens; "
                     "rel%: share of nodes counted relevant; relP: share of those that are gold")
        if "loom" in self.strategies and any(_ablated_signal(s) for s in self.strategies):
            lines.append("")
            lines.append(f"{'signal off':<14} {'lineR':>6} {'change':>7} {'fileR':>6} {'change':>7}")
            fmt = lambda v, spec: "-" if v is None else format(v, spec)  # noqa: E731
            for row in self.ablation_table():
                lines.append(f"{row['signal']:<14} {fmt(row['line_recall'], '.3f'):>6} {fmt(row['line_recall_change'], '+.3f'):>7} "
                             f"{fmt(row['file_recall'], '.3f'):>6} {fmt(row['file_recall_change'], '+.3f'):>7}")
            lines.append("signal off: the engine with that signal's weight at 0; change: against the full engine "
                         "(negative: what the signal earns)")
        return "\n".join(lines)

    def __repr__(self) -> str:
        return f"EvalReport({len(self.cases)} cases, strategies={list(self.strategies)}, budget={self.budget})"


def _cache_folder(cache_dir: Path, workspace: Path, model_id: str) -> Path:
    digest = hashlib.sha1(str(workspace).encode()).hexdigest()[:10]
    model = re.sub(r"[^A-Za-z0-9._-]+", "_", model_id)
    return cache_dir / f"{workspace.name}-{digest}-{model}"


def _shared_cache_file(cache_dir: Path, model_id: str) -> Path:
    return cache_dir / f"embeddings-{re.sub(r'[^A-Za-z0-9._-]+', '_', model_id)}.npz"


class Workbench:
    """The indexed Looms and baseline workspaces of a run, opened once and shared.

    Every workspace is indexed through one :class:`~loom_nb.embed.CachedEmbedder`, so the
    many near-identical trees of a mined history (one per commit) embed only the units that
    differ. With ``cache_dir`` that cache is also kept on disk
    (``embeddings-<model>.npz``) and each workspace's session is saved there, so the next
    run only refreshes. A Loom can be released once its last case has run
    (:meth:`release`), which keeps memory flat over hundreds of trees.
    """

    def __init__(self, embedder=None, cache_dir: str | Path | None = None, progress: bool | None = False):
        from .embed import CachedEmbedder, default_embedder

        inner = embedder if embedder is not None else default_embedder()
        self.embedder = inner if isinstance(inner, CachedEmbedder) else CachedEmbedder(inner)
        self.explicit_embedder = embedder is not None
        self.cache_dir = Path(cache_dir) if cache_dir is not None else None
        self.progress = progress
        self.looms: dict[Path, Any] = {}
        self.spaces: dict[Path, _Workspace] = {}
        self.failures: dict[Path, str] = {}
        self._siblings: dict[Path, Path] = {}
        """The last session indexed per parent folder: a mined history's trees are siblings
        (``cache/<sha>``), and a new tree starts from its sibling's session, so only the
        files that differ are parsed again (the others are read and hashed)."""
        self._loaded = len(self.embedder)
        if self.cache_dir is not None:
            path = _shared_cache_file(self.cache_dir, self.embedder.model_id)
            if path.exists():
                try:
                    with np.load(path) as data:
                        self.embedder.preload([str(k) for k in data["keys"].tolist()], data["vectors"])
                except (OSError, ValueError, KeyError) as exc:  # a broken cache only costs time
                    log.warning("%s: ignoring the embedding cache (%s)", path, exc)
            self._loaded = len(self.embedder)

    def loom(self, case: Case):
        """The Loom for a case: its session opened, or its workspace indexed (once)."""
        from .embed import CachedEmbedder
        from .engine import Loom

        key = case.workspace or case.session
        if key in self.failures:
            raise LoomError(self.failures[key])
        if key not in self.looms:
            try:
                if case.session is not None:
                    self.looms[key] = Loom.open(case.session, embedder=self.embedder if self.explicit_embedder else None, create=False)
                elif self.cache_dir is not None:
                    folder = _cache_folder(self.cache_dir, case.workspace, self.embedder.model_id)
                    seed = self._siblings.get(Path(case.workspace).parent)
                    if not (folder / "graph.json").exists() and seed is not None and (seed / "graph.json").exists():
                        shutil.copytree(seed, folder, dirs_exist_ok=True)  # a sibling tree's session: refresh it
                    # the cached session is an artefact of this harness: rank with today's
                    # defaults, not the config saved when it was first indexed
                    loom = Loom.open(folder, embedder=CachedEmbedder(self.embedder), config=LoomConfig())  # saves only its own vectors
                    state = loom.graph.metadata.get("workspace")
                    if state and state.get("root") != str(Path(case.workspace).resolve()):
                        state.update(root=str(Path(case.workspace).resolve()), commit=None)
                    loom.index(case.workspace, progress=self.progress)
                    loom.save()
                    self.looms[key] = loom
                    self._siblings[Path(case.workspace).parent] = folder
                else:
                    loom = Loom(embedder=self.embedder)
                    loom.index(case.workspace, progress=self.progress)
                    self.looms[key] = loom
            except LoomError as exc:
                self.failures[key] = str(exc)
                raise
        return self.looms[key]

    def workspace(self, case: Case, loom) -> _Workspace:
        """The files and windows the baselines load from."""
        root = case.workspace or loom.graph.workspace
        if root is None:
            raise LoomError("the session indexes no workspace, so the file baselines have nothing to load")
        root = Path(root)
        if root not in self.spaces:
            self.spaces[root] = _Workspace(root)
        return self.spaces[root]

    def release(self, case: Case) -> None:
        """Forget a case's Loom and workspace (its next use opens them again)."""
        key = case.workspace or case.session
        loom = self.looms.pop(key, None)
        if loom is not None:
            self.spaces.pop(Path(case.workspace or loom.graph.workspace or "."), None)

    def save(self) -> None:
        """Write the shared embedding cache to ``cache_dir`` when it grew."""
        if self.cache_dir is None or len(self.embedder) == self._loaded:
            return
        self.cache_dir.mkdir(parents=True, exist_ok=True)
        keys, vectors = zip(*self.embedder.items()) if len(self.embedder) else ((), ())
        path = _shared_cache_file(self.cache_dir, self.embedder.model_id)
        tmp = path.with_suffix(".tmp.npz")
        np.savez(tmp, keys=np.array(keys, dtype=str), vectors=np.stack(vectors).astype(np.float32) if vectors else np.zeros((0, self.embedder.dim), np.float32))
        tmp.replace(path)
        self._loaded = len(self.embedder)


def run_engine(loom, case: Case, strategy: str, budget: int):
    """The engine's :class:`~loom_nb.engine.QueryResult` for a case, through the call a user makes.

    ``loom`` and the ablations run the default path (``mode`` left to ``auto``);
    ``loom-<mode>`` forces that mode. A case with ``history`` is a follow-up chat turn: it
    is planned by :func:`loom_nb.chat.planner.plan_turn`, as a Session plans its turns (no
    model is called; the budget is the turn's context zone).
    """
    from .chat.planner import Message, plan_turn
    from .core.query import Query

    off = _ablated_signal(strategy)
    weights = loom.graph.config.weights.without(off) if off else None
    mode = _forced_mode(strategy)
    query = Query(case.query, [{"role": r, "content": c} for r, c in case.history])
    if hasattr(loom.embedder, "forget"):  # every strategy pays for its own query vector, or none
        loom.embedder.forget([query.retrieval_text()])
    if not case.history:
        return loom.query(query, budget=budget, mode=mode, weights=weights)
    if weights is not None:  # an ablation of a chat turn: the planner ranks with the config's weights
        saved = loom.graph.config
        loom.graph.config = saved.with_(weights=weights)
    try:
        history = [Message.of(role, content, turn=k // 2 + 1) for k, (role, content) in enumerate(case.history)]
        return plan_turn(loom, query, budget=budget, history=history, mode=mode).result
    finally:
        if weights is not None:
            loom.graph.config = saved


def relevance_quality(loom, ranking, gold: Gold) -> tuple[float | None, float | None]:
    """What "relevant" meant for one query: the share of content nodes that counted as
    relevant, and the share of those that are gold (by line range, else by file)."""
    n = len(ranking)
    if n == 0:
        return None, None
    rows = np.flatnonzero(ranking.relevant)
    share = rows.size / n
    if rows.size == 0 or not (gold.files or gold.nodes or gold.ranges):
        return share, None
    paths = loom.graph.arrays().paths
    wanted = set(gold.files) | set(gold.ranges)
    hits = sum(1 for i in rows.tolist() if ranking.node_ids[i] in gold.nodes)
    for i in rows.tolist():  # only the few rows in a gold file are looked at closely
        if paths[i] not in wanted or ranking.node_ids[i] in gold.nodes:
            continue
        ref = getattr(loom.graph.node(ranking.node_ids[i]), "reference", None)
        if ref is None:
            continue
        if gold.ranges:
            hits += any(_overlaps((ref.lines[0], ref.lines[1]), span) for span in gold.ranges.get(ref.file, ()))
        else:
            hits += ref.file in gold.files
    return share, hits / rows.size


def run_case(bench: Workbench, case: Case, strategies: Sequence[str], budget: int, config=None) -> list[CaseResult]:
    """One case under every strategy at one budget (``config``: the Loom's ranking and
    packing parameters for this run; the session's own when None)."""
    try:
        loom = bench.loom(case)
    except LoomError as exc:
        return [CaseResult(case.id, s, [], None, str(exc)) for s in strategies]
    case_budget = case.budget or budget
    spans = {}
    for node_id in case.gold_nodes:
        ref = getattr(loom.node(node_id), "reference", None) if node_id in loom.graph else None
        if ref is not None:
            spans[node_id] = (ref.file, ref.lines[0], ref.lines[1])
    gold = Gold(frozenset(case.gold_files), frozenset(case.gold_nodes), dict(case.gold_ranges), spans)
    results = []
    if sum(map(is_engine, strategies)) > 1:
        # one untimed run first: reading the case's files and the caches they fill would
        # otherwise be charged to whichever engine strategy happens to run first
        try:
            run_engine(loom, case, "loom-fused", case_budget)
        except LoomError:
            pass
    for strategy in strategies:
        try:
            engine = is_engine(strategy)
            ws = bench.workspace(case, loom) if (not engine or case.workspace is not None or loom.graph.workspace) else None
            total = ws.total_tokens if ws is not None else None
            if engine:
                saved = loom.graph.config
                if config is not None:
                    loom.graph.config = config
                try:
                    result = run_engine(loom, case, strategy, case_budget)
                finally:
                    loom.graph.config = saved
                items, seconds, used = loom_items(loom, result), result.seconds, result.packed.context_tokens
                metrics = grade(items, gold, budget=case_budget, tokens=used, workspace_tokens=total, seconds=seconds)
                metrics.relevant_share, metrics.relevant_precision = relevance_quality(loom, result.ranking, gold)
                metrics.unused_with_room = float(result.packed.unused_with_room())
                results.append(CaseResult(case.id, strategy, items, metrics))
                continue
            else:
                if strategy == "dense":
                    ws.window_vectors(loom.embedder)  # embedding the windows is indexing, not query time
                started = time.perf_counter()
                items = run_baseline(strategy, ws, case.query, case_budget, loom.embedder)
                seconds, used = time.perf_counter() - started, None
            metrics = grade(items, gold, budget=case_budget, tokens=used, workspace_tokens=total, seconds=seconds)
            results.append(CaseResult(case.id, strategy, items, metrics))
        except LoomError as exc:
            log.warning("case %s, %s: %s", case.id, strategy, exc)
            results.append(CaseResult(case.id, strategy, [], None, str(exc)))
    return results


def _check(strategies: Sequence[str], budgets: Sequence[int]) -> None:
    unknown = [s for s in strategies if s not in STRATEGIES and _ablated_signal(s) is None]
    if unknown:
        raise LoomError(f"unknown strategy {', '.join(map(repr, unknown))}; the strategies are {', '.join(STRATEGIES)}, "
                        f"and loom-no-<signal> for each signal")
    for budget in budgets:
        if budget <= 0:
            raise LoomError(f"the budget must be a positive number of tokens, got {budget}")


def evaluate_budgets(
    cases: Sequence[Case],
    budgets: Sequence[int],
    strategies: Sequence[str] = STRATEGIES,
    embedder=None,
    cache_dir: str | Path | None = None,
    progress: bool | None = False,
    config=None,
    bench: Workbench | None = None,
) -> dict[int, EvalReport]:
    """:func:`evaluate` at several budgets, indexing each workspace once: ``{budget: report}``.

    Cases run grouped by workspace, and a workspace's Loom is released after its last
    case, so memory stays flat however many trees a mined history has. ``config``
    replaces the Loom's ranking and packing parameters (weights, floors, chunking) for
    the run; ``bench`` reuses Looms already open (then nothing is released).
    """
    _check(strategies, budgets)
    own = bench is None
    bench = bench or Workbench(embedder, cache_dir, progress)
    last_use = {}
    for k, case in enumerate(cases):
        last_use[case.workspace or case.session] = k
    results: dict[int, list[CaseResult]] = {b: [] for b in budgets}
    try:
        for k, case in enumerate(cases):
            for budget in budgets:
                results[budget].extend(run_case(bench, case, strategies, budget, config))
            if own and last_use[case.workspace or case.session] == k:
                bench.release(case)
    finally:
        if own:
            bench.save()
    return {b: EvalReport(list(cases), results[b], tuple(strategies), b) for b in budgets}


def evaluate(
    cases: Sequence[Case],
    budget: int = DEFAULT_BUDGET,
    strategies: Sequence[str] = STRATEGIES,
    embedder=None,
    cache_dir: str | Path | None = None,
    progress: bool | None = False,
    config=None,
) -> EvalReport:
    """Run every case under every strategy and grade what each loaded.

    Parameters
    ----------
    cases : sequence of Case
        From :func:`load_cases` or built in code.
    budget : int
        Context tokens per query; a case's own ``budget`` wins.
    strategies : sequence of str
        Some of :data:`STRATEGIES`.
    embedder : Embedder, optional
        For the Loom and the ``dense`` baseline; default MiniLM. A ``session`` case uses
        the session's own embedder when none is given.
    cache_dir : path, optional
        Keep each workspace's indexed session here, and the embeddings of every
        workspace, so the next run only refreshes.
    progress : bool, optional
        Indexing progress bars (default off).
    config : LoomConfig, optional
        Ranking and packing parameters for the engine (default: the Loom's own).

    Returns
    -------
    EvalReport
        Each workspace is indexed once per run; latency counts the query only.
    """
    return evaluate_budgets(cases, [budget], strategies, embedder, cache_dir, progress, config)[budget]
