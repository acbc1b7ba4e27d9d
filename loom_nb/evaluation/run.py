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

Baselines count the tokens of the text they load with :func:`~loom_nb.core.tokens.count_tokens`;
no strategy ever goes over the budget.

Size: the strategies, the workbench that caches indexed workspaces, the per-case run and the
report.
"""

from __future__ import annotations

import hashlib
import logging
import re
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from ..core.config import SIGNALS, LoomConfig
from ..core.errors import LoomError
from ..core.modes import message_weights
from .baselines import WINDOW_LINES, _Workspace, run_baseline  # noqa: F401 - importable from here, as before
from .cases import Case, gold_problems, load_cases, parse_case  # noqa: F401
from .metrics import Comparison, Gold, Loaded, Metrics, _overlaps, char_span_lines, grade, paired_bootstrap  # noqa: F401

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
    when None), density too when questions weigh it (``question_density``):
    ``loom-no-semantic``, ``loom-no-terms``, …

    >>> ablations()[:2]
    ('loom-no-semantic', 'loom-no-staleness')
    """
    config = config or LoomConfig()
    weights = config.weights
    return tuple(ABLATION_PREFIX + name for name in SIGNALS
                 if getattr(weights, name) > 0 or (name == "density" and config.question_density > 0))


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


DEFAULT_BUDGET = 8000
"""Tokens of context per query unless a case gives its own ``budget``."""

METRICS: tuple[str, ...] = (
    "precision", "recall", "file_precision", "file_recall", "line_recall",
    "tokens", "budget_use", "token_efficiency", "seconds", "relevant_share", "relevant_precision", "unused_with_room",
)
"""The columns of :meth:`EvalReport.table`, each a mean over the cases that define it."""


def loom_items(loom, result) -> list[Loaded]:
    """The items a :class:`~loom_nb.core.engine.QueryResult` loaded, as files and line ranges."""
    return packed_items(loom.graph, result.packed)


def packed_items(graph, packed) -> list[Loaded]:
    """The items a :class:`~loom_nb.core.pack.Packed` context holds, as files and line ranges."""
    from ..core.tokens import count_tokens

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

    def compare(self, a: str, b: str, metric: str = "line_recall", level: float = 0.95) -> Comparison:
        """Strategy ``a`` against ``b`` case by case: the mean difference of ``metric`` and its
        paired bootstrap interval (:func:`~loom_nb.evaluation.metrics.paired_bootstrap`).

        A row ahead by 0.01 on 40 cases may be one case; ``could_be_chance`` says whether the
        interval holds 0. Cases where either strategy failed or the metric does not apply
        are left out.
        """
        for name in (a, b):
            if name not in self.strategies:
                raise LoomError(f"strategy {name!r} is not in this report (it has {', '.join(self.strategies)})")
        if metric not in METRICS:
            raise LoomError(f"unknown metric {metric!r}; known: {', '.join(METRICS)}")

        def values(strategy: str) -> dict[str, float | None]:
            return {r.case_id: getattr(r.metrics, metric) for r in self.results if r.strategy == strategy and r.metrics is not None}
        va, vb = values(a), values(b)
        shared = [c.id for c in self.cases if c.id in va and c.id in vb]
        try:
            return paired_bootstrap([va[c] for c in shared], [vb[c] for c in shared], names=(a, b), metric=metric, level=level)
        except ValueError as exc:
            raise LoomError(f"cannot compare {a} with {b} on {metric}: {exc}") from None

    def mode_comparisons(self, metric: str = "line_recall") -> list[Comparison]:
        """The default path (``loom``) against each forced-mode row in the report."""
        if "loom" not in self.strategies:
            return []
        out = []
        for mode in (s for s in self.strategies if s in MODE_STRATEGIES):
            try:
                out.append(self.compare("loom", mode, metric))
            except LoomError:  # no case defines the metric for both (e.g. no gold ranges)
                continue
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
        failures = list(dict.fromkeys((r.case_id, r.error) for r in self.results if r.metrics is None))
        if failures:
            lines.append("failed: " + "; ".join(f"{case_id}: {error or 'no reason recorded'}" for case_id, error in failures[:5])
                         + (f"; and {len(failures) - 5} more" if len(failures) > 5 else ""))
        lines.append("prec/recall: loaded items that are gold / gold items loaded; fileP/fileR: the same over files; "
                     "lineR: gold_ranges lines loaded; budget: tokens/budget; of ws: tokens/workspace tokens; "
                     "rel%: share of nodes counted relevant; relP: share of those that are gold")
        comparisons = self.mode_comparisons()
        if comparisons:
            lines.append("")
            lines += [str(c) for c in comparisons]
            lines.append("the default path against each forced mode, case by case: an interval that holds 0 "
                         "cannot tell the two apart on these cases")
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


def _source(case: Case) -> tuple[str, Path]:
    """What a case's Loom is made from: ``("workspace", folder)`` or ``("session", folder)``."""
    return ("workspace", case.workspace) if case.workspace is not None else ("session", case.session)


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
        from ..embed import CachedEmbedder, default_embedder

        inner = embedder if embedder is not None else default_embedder()
        self.embedder = inner if isinstance(inner, CachedEmbedder) else CachedEmbedder(inner)
        self.explicit_embedder = embedder is not None
        self.cache_dir = Path(cache_dir) if cache_dir is not None else None
        self.progress = progress
        self.looms: dict[tuple[str, Path], Any] = {}
        """Keyed by :func:`_source` (kind and folder): a folder given as one case's workspace
        and another's session is two things, an index made here and a session opened as it is."""
        self.spaces: dict[Path, _Workspace] = {}
        self.failures: dict[tuple[str, Path], str] = {}
        self._siblings: dict[Path, tuple[Path, Path]] = {}
        """The last session indexed per parent folder, and its workspace: a mined history's trees are siblings
        (``cache/<sha>``), and a new tree starts from its sibling's session, so only the
        files that differ are parsed again (the others are read and hashed)."""
        self.warnings: list[str] = []
        """What :meth:`check_gold` found wrong with the cases' gold labels, once per case."""
        self._checked: set[str] = set()
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
        from ..embed import CachedEmbedder
        from ..core.engine import Loom

        key = _source(case)
        if key in self.failures:
            raise LoomError(self.failures[key])
        if key not in self.looms:
            try:
                if case.session is not None:
                    self.looms[key] = Loom.open(case.session, embedder=self.embedder if self.explicit_embedder else None, create=False)
                elif self.cache_dir is not None:
                    folder = _cache_folder(self.cache_dir, case.workspace, self.embedder.model_id)
                    seed, seed_workspace = self._siblings.get(Path(case.workspace).parent, (None, None))
                    seeded = not (folder / "graph.json").exists() and seed is not None and (seed / "graph.json").exists()
                    if seeded:
                        shutil.copytree(seed, folder, dirs_exist_ok=True)  # a sibling tree's session: refresh it
                    # the cached session is an artefact of this harness: rank with today's
                    # defaults, not the config saved when it was first indexed; a copied
                    # sibling names the sibling's tree, which this harness indexed itself
                    loom = Loom.open(folder, embedder=CachedEmbedder(self.embedder), config=LoomConfig(),  # saves only its own vectors
                                     workspace=seed_workspace if seeded else None)
                    state = loom.graph.metadata.get("workspace")
                    if state and state.get("root") != str(Path(case.workspace).resolve()):
                        state.update(root=str(Path(case.workspace).resolve()), commit=None)
                    loom.index(case.workspace, progress=self.progress, wait=True)
                    loom.save()
                    self.looms[key] = loom
                    self._siblings[Path(case.workspace).parent] = (folder, Path(case.workspace).resolve())
                else:
                    loom = Loom(embedder=self.embedder)
                    loom.index(case.workspace, progress=self.progress, wait=True)
                    self.looms[key] = loom
            except LoomError as exc:
                self.failures[key] = str(exc)
                raise
        return self.looms[key]

    def check_gold(self, case: Case, loom) -> None:
        """Warn (once per case) about gold files not in the workspace and ranges past a
        file's end (:func:`~loom_nb.evaluation.cases.gold_problems`): they grade as misses."""
        root = case.workspace or loom.graph.workspace
        if case.id in self._checked or root is None:
            return
        self._checked.add(case.id)
        for problem in gold_problems(case, Path(root)):
            log.warning("%s", problem)
            self.warnings.append(problem)

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
        loom = self.looms.pop(_source(case), None)
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
    """The engine's :class:`~loom_nb.core.engine.QueryResult` for a case, through the call a user makes.

    ``loom`` and the ablations run the default path (``mode`` left to ``auto``);
    ``loom-<mode>`` forces that mode. A case with ``history`` is a follow-up chat turn: it
    is planned by :func:`loom_nb.chat.planner.plan_turn`, as a Session plans its turns (no
    model is called; the budget is the turn's context zone).
    """
    from ..chat.planner import Message, plan_turn
    from ..core.query import Query

    off = _ablated_signal(strategy)
    mode = _forced_mode(strategy)
    query = Query(case.query, [{"role": r, "content": c} for r, c in case.history])
    saved = loom.graph.config
    if hasattr(loom.embedder, "forget"):  # every strategy pays for its own query vector, or none
        loom.embedder.forget([query.vector_text()])
    if not case.history:  # an ablation removes one signal from the weights this message gets
        weights = message_weights(saved.weights, query.message, saved).without(off) if off else None
        return loom.query(query, budget=budget, mode=mode, weights=weights)
    if off:  # a chat turn's planner weighs its message from the config, as a Session does: ablate there
        loom.graph.config = saved.with_(weights=saved.weights.without(off),
                                        **({"question_density": 0.0} if off == "density" else {}))
    try:
        history = [Message.of(role, content, turn=k // 2 + 1) for k, (role, content) in enumerate(case.history)]
        return plan_turn(loom, query, budget=budget, history=history, mode=mode).result
    finally:
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
    bench.check_gold(case, loom)
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
    if not strategies:
        raise LoomError("give at least one strategy")
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
    strategies = tuple(dict.fromkeys(strategies))  # each once, or its row and its cases count twice
    _check(strategies, budgets)
    own = bench is None
    bench = bench or Workbench(embedder, cache_dir, progress)
    last_use = {}
    for k, case in enumerate(cases):
        last_use[_source(case)] = k
    results: dict[int, list[CaseResult]] = {b: [] for b in budgets}
    try:
        for k, case in enumerate(cases):
            for budget in budgets:
                results[budget].extend(run_case(bench, case, strategies, budget, config))
            if own and last_use[_source(case)] == k:
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
