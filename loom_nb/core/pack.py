"""Budget, loading decisions, the context manifest and the prompt (seed 000 §6, seed 002).

:func:`compute_budget` splits the model's window into zones; :func:`pack` walks a
:class:`~loom_nb.core.rank.Ranking` down the loading decision tree and renders the manifest
header and the evidence blocks. The context it returns never exceeds the budget: the
rendered text is counted again at the end and trimmed if BPE merges disagree with the sum.

Size: the budget arithmetic, the packer, and the Packed result table it fills.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field, replace
from functools import cached_property, lru_cache
from typing import NamedTuple, Sequence

import numpy as np

from .config import SIGNALS, LoomConfig
from .budget import BudgetOverWindowWarning, output_reservation, plan_window, window_history
from .modes import MODES, Mode, choose_mode, get_mode  # noqa: F401  (modes live in core.modes; re-exported)
from .prompt import (  # noqa: F401 - importable from here as before
    Block,
    EVIDENCE_PREAMBLE,
    _manifest_line,
    _render_block,
    assemble_prompt,
    one_line,
    render_context,
    render_manifest,
)
from .errors import LoomError, StaleReferenceError, warn_caller
from .graph import LoomGraph
from .chunks import best_chunks, chunk_facts, query_terms
from .query import Turn
from .rank import Ranking, semantic_floor
from .tokens import count_tokens

log = logging.getLogger(__name__)

MESSAGE_OVERHEAD = 4
"""Tokens a chat message costs beyond its text (role and delimiters; seed 001)."""

DECISIONS = ("loaded", "summary", "chunk", "manifest_only", "excluded")
SAME_TEXT = "same text as"
"""How the reason of a node starts when a node with its very text is loaded whole: it is loaded as
a one-line reference to that block (or left out, when even that does not fit)."""

CAPTURED_ROWS = 50
"""Rows of the table whose node facts (title, type, tokens) a :class:`Packed` keeps from
packing time, with every node the walk decided: the rows the views show first
(:data:`loom_nb.views.html.SHOWN_ROWS`). A node removed after the query still shows in them as
it was; a row further down whose node is gone reads :data:`REMOVED`."""
REMOVED = "(removed)"
"""Title and type of a table row whose node left the graph after the query and was not kept."""


# -- budget (seed 000 §6.1) ------------------------------------------------------------------

def manifest_fixed_tokens() -> int:
    """Tokens of the manifest's fixed lines and the evidence preamble, counted once."""
    global _FIXED
    if _FIXED is None:
        sample = render_manifest([], 99999, 99999, True) + f"\n\n{EVIDENCE_PREAMBLE}\n\n"
        _FIXED = count_tokens(sample) + 4
    return _FIXED


_FIXED: int | None = None


@dataclass(frozen=True)
class Budget:
    """How the window is split. ``context`` is what the manifest and evidence may use."""

    window: int | None
    system_prompt: int
    query: int
    output_reserved: int
    manifest_reserved: int
    context: int
    mode_cap: int | None = None
    source: str = "window"
    """"window": derived from a model window; "explicit": a context budget was given (with
    ``window`` set when it was given with a window, which bounds it)."""
    window_zones: dict[str, int] | None = None
    """Every zone of the window (:func:`loom_nb.core.budget.plan_window`), when derived from one."""

    @property
    def evidence(self) -> int:
        """Tokens for the loaded nodes and their manifest lines."""
        return max(self.context - self.manifest_reserved, 0)

    @property
    def history(self) -> int:
        """Tokens of the history the window holds (a follow-up's earlier turns; 0 without a
        window: a budget alone is the context's, and the history is sent beside it whole)."""
        return (self.window_zones or {}).get("history", 0)

    def zones(self) -> dict[str, int]:
        """Tokens per zone of the window; a budget given with no window has only its context
        (the system prompt and the query are sent beside it, not taken out of it)."""
        zones = {} if self.window is None else {
            "system prompt": self.system_prompt, "query": self.query, "output reserved": self.output_reserved}
        if self.history:
            zones["history"] = self.history
        zones["context (manifest + evidence)"] = self.context
        return zones

    def __str__(self) -> str:
        head = f"window {self.window:,}" if self.window else "explicit context budget"
        parts = [f"{k} {v:,}" for k, v in self.zones().items()]
        cap = f" (capped by mode at {self.mode_cap:,})" if self.mode_cap else ""
        return f"{head}: " + ", ".join(parts) + cap


def compute_budget(
    window: int,
    *,
    system_prompt: str,
    query: str,
    complexity: float | None = None,
    config: LoomConfig | None = None,
    mode: Mode | None = None,
    history: Sequence[Turn] = (),
) -> Budget:
    """budget = window − system prompt − query − history − output reservation (§6.1).

    The split is :func:`loom_nb.core.budget.plan_window`'s, the one chat turns use too.
    ``history`` (a follow-up's earlier turns, oldest first) gets the history zone: the newest
    turns that fit it are kept (:func:`fit_window` says which), and what they cost is
    :attr:`Budget.history`.

    >>> b = compute_budget(8192, system_prompt="", query="", complexity=None)
    >>> b.output_reserved, b.context
    (2457, 5723)
    >>> b = compute_budget(8192, system_prompt="", query="", history=[Turn("user", "Why?"), Turn("assistant", "Because.")])
    >>> b.history, b.context
    (12, 5711)
    """
    return _window_budget(window, system_prompt, query, complexity, config or LoomConfig(), mode, history)[0]


def history_cost(turn: Turn) -> int:
    """Tokens one turn of the history costs in the prompt: its text and :data:`MESSAGE_OVERHEAD`."""
    return count_tokens(turn.content) + MESSAGE_OVERHEAD


def _window_budget(window: int, system_prompt: str, query: str, complexity: float | None, config: LoomConfig,
                   mode: Mode | None, history: Sequence[Turn]) -> tuple[Budget, list[Turn]]:
    """:func:`compute_budget`, and the turns of ``history`` it kept."""
    system = count_tokens(system_prompt) + MESSAGE_OVERHEAD
    query_tokens = count_tokens(f"\n\nQuestion: {query}") + MESSAGE_OVERHEAD
    kept: list[Turn] = []
    try:
        plan = plan_window(int(window), config=config, complexity=complexity, system_tokens=system, query_tokens=query_tokens,
                           history=bool(history))
        if history:  # the newest turns that fit, as a chat turn keeps them
            kept = window_history(history, plan.history_cap, cost=history_cost)
            plan = plan.with_history(sum(history_cost(turn) for turn in kept))
        context, zones = plan.context, plan.zones
    except ValueError:  # the window is too small even for the question: no context at all
        context, zones = 0, None
    cap = mode.token_cap if mode else None
    if cap is not None:
        context = min(context, cap)
    output = zones["reserved output"] if zones else int(window * output_reservation(complexity, config))
    budget = Budget(window, system, query_tokens, output, min(manifest_fixed_tokens(), context), context, cap, "window", zones)
    return budget, kept


class FittedWindow(NamedTuple):
    """A window's budget for one query, and what of the query the prompt carries."""

    budget: Budget
    question: str
    """The question as sent: clipped to its start and end when it alone overflows the window."""
    history: list[Turn]
    """The newest turns of the history that fit the window's history zone, oldest first."""


def fit_window(window: int, *, system_prompt: str, question: str, complexity: float | None = None,
               config: LoomConfig | None = None, mode: Mode | None = None, history: Sequence[Turn] = ()) -> FittedWindow:
    """:func:`compute_budget`, and the question and the history as the prompt can carry them.

    A question that alone overflows the window is clipped to its start and its end (half
    the room the fixed zones leave, :data:`~loom_nb.core.prompt_safety.CLIPPED_MESSAGE_SHARE`)
    with a warning, rather than sent whole for Ollama to cut from the front; a window the
    fixed zones fill alone raises :class:`~loom_nb.core.errors.LoomError`. Of ``history``
    the newest turns that fit the history zone are kept; the context gets what they leave.
    """
    from .prompt_safety import CLIPPED_MESSAGE_SHARE, clip_message

    config = config or LoomConfig()
    plan, kept = _window_budget(window, system_prompt, question, complexity, config, mode, history)
    if plan.window_zones is not None:
        return FittedWindow(plan, question, kept)
    room = window - plan.system_prompt - plan.output_reserved
    limit = int(room * CLIPPED_MESSAGE_SHARE) - count_tokens("\n\nQuestion: ") - MESSAGE_OVERHEAD
    if limit <= 0:  # sent anyway, the prompt would overflow the window and the model cut it from the front
        raise LoomError(f"a {window:,}-token window holds nothing beyond the system prompt ({plan.system_prompt:,} "
                        f"tokens) and the answer's reservation ({plan.output_reserved:,}), so the question cannot be "
                        "sent: use a model with a larger window (num_ctx), or give budget= without a window")
    clipped = clip_message(question, limit)
    log.warning("the question is %s tokens, more than a %s-token window holds beside the system prompt "
                "and the answer's reservation: sent clipped to %s tokens (its start and its end)",
                f"{count_tokens(question):,}", f"{window:,}", f"{count_tokens(clipped):,}")
    plan, kept = _window_budget(window, system_prompt, clipped, complexity, config, mode, history)
    return FittedWindow(plan, clipped, kept)


def budget_within(plan: Budget, tokens: int) -> Budget:
    """A context budget of ``tokens`` within a window's ``plan``: the window's zones, and
    ``tokens`` of context, or what the window leaves for it when that is less (with a
    :class:`~loom_nb.core.budget.BudgetOverWindowWarning`: a prompt over the window would
    be cut by the server, from the front).

    >>> import warnings
    >>> plan = compute_budget(8192, system_prompt="", query="")
    >>> budget_within(plan, 3000).context, budget_within(plan, 3000).window
    (3000, 8192)
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     budget_within(plan, 9000).context, len(caught)
    (5723, 1)
    """
    if tokens < 0:
        raise ValueError(f"budget must be >= 0 tokens, got {tokens}")
    context = tokens
    if tokens > plan.context:
        warn_caller(
            f"a budget of {tokens:,} tokens is more than a {plan.window:,}-token window leaves for context "
            f"({plan.context:,}, after the system prompt, the question{', the history' * bool(plan.history)} and the answer's "
            f"reservation): the context is cut to {plan.context:,}", BudgetOverWindowWarning)
        context = plan.context
    return replace(plan, context=context, manifest_reserved=min(manifest_fixed_tokens(), context), source="explicit")


def explicit_budget(tokens: int, mode: Mode | None = None) -> Budget:
    """A context budget given directly (as evaluation does): manifest + evidence ≤ tokens."""
    if tokens < 0:
        raise ValueError(f"budget must be >= 0 tokens, got {tokens}")
    cap = mode.token_cap if mode else None
    context = min(tokens, cap) if cap is not None else tokens
    return Budget(None, 0, 0, 0, min(manifest_fixed_tokens(), context), context, cap, "explicit")


# -- loading decisions (seed 000 §6.2) --------------------------------------------------------


@dataclass
class NodeDecision:
    """One row of the result table: a node, its signals, its score and what was done."""

    node_id: str
    title: str
    type: str
    tokens: int
    score: float
    signals: dict[str, float]
    contributions: dict[str, float]
    relevant: bool
    decision: str
    """One of :data:`DECISIONS`."""
    reason: str
    loaded_tokens: int = 0
    """Tokens this node put in the context (block and manifest line)."""
    hops: int = -1
    chunks: list[tuple[int, int]] = field(default_factory=list)
    """For "chunk": the character spans loaded."""
    rank: int = 0


class Packed:
    """The output of :func:`pack`: the rendered context and a decision for every node.

    The per-node table is built on demand (:attr:`decisions`, :meth:`rows`): packing
    itself touches only the nodes it considers, so it stays fast at 50k nodes.
    """

    def __init__(self, *, blocks, manifest, context, context_tokens, budget, relevant_count, all_fit,
                 graph, ranking, visited, skipped_left, lower_bounds, limit_reason, config, filled=0, relevant=None):
        self.blocks: list[Block] = blocks
        self.manifest: str = manifest
        self.context: str = context
        self.context_tokens: int = context_tokens
        self.budget: Budget = budget
        self.relevant_count: int = relevant_count
        """Relevant nodes, as the manifest counts them."""
        self.filled: int = filled
        """Nodes below the relevance floor loaded to fill the leftover budget (``LoomConfig.fill_leftover``)."""
        self.all_fit: bool = all_fit
        self._graph = graph
        self._ranking = ranking
        self._visited = visited
        self._skipped_left = skipped_left
        self._lower_bounds = lower_bounds
        self._limit_reason = limit_reason
        self._config = config
        self._relevant = ranking.relevant if relevant is None else relevant
        """Relevant rows as the walk counted them (a file's raised head is one)."""
        self._decisions: list[NodeDecision] | None = None
        self._semantic_floor = semantic_floor(ranking.signals, config) if len(ranking) else config.relevance_floor
        # what the table shows first, as it was now: a node removed later still reads as it was
        # (the whole table is built lazily, and reading 50k nodes here would slow every query)
        kept = dict.fromkeys(ranking.order[:CAPTURED_ROWS].tolist()) | dict.fromkeys(visited)
        self._facts: dict[int, tuple[str, str, int]] = {i: self._node_facts(i) for i in kept}

    def _node_facts(self, i: int) -> tuple[str, str, int]:
        """(title, type, tokens) of ranking row ``i``'s node now, or :data:`REMOVED` when it is gone."""
        node_id = self._ranking.node_ids[i]
        if node_id not in self._graph.content_vectors.index:
            return REMOVED, REMOVED, 0
        node = self._graph.node(node_id)
        return node.title, node.type, int(node.tokens)

    def row(self, i: int, rank_no: int) -> NodeDecision:
        """The table row of ranking row ``i`` (its position in score order is ``rank_no``)."""
        r = self._ranking
        title, type_, tokens = self._facts.get(i) or self._node_facts(i)
        decision, reason, loaded, chunks = self._visited.get(i, (None, "", 0, []))
        if decision is None:
            if not self._relevant[i]:
                decision = "excluded"
                reason = (f"semantic {r.signals[i, 0]:.2f} below the relevance floor {self._semantic_floor:.2f}, "
                          f"terms {r.signals[i, 6]:.2f} below {self._config.lexical_relevance}, file not named or tagged")
            elif self._skipped_left[i] == -2:
                decision, reason = "manifest_only", self._limit_reason
            else:
                decision = "manifest_only"
                reason = f"needs at least {int(self._lower_bounds[i])} tokens, {int(self._skipped_left[i])} left"
        return NodeDecision(
            node_id=r.node_ids[i],
            title=title,
            type=type_,
            tokens=tokens,
            score=float(r.scores[i]),
            signals={n: float(r.signals[i, k]) for k, n in enumerate(SIGNALS)},
            contributions={n: float(r.contributions[i, k]) for k, n in enumerate(SIGNALS)},
            relevant=bool(self._relevant[i]),
            decision=decision,
            reason=reason,
            loaded_tokens=loaded,
            hops=int(r.hops[i]),
            chunks=list(chunks),
            rank=rank_no,
        )

    @property
    def graph(self):
        """The graph this packing read (its nodes' text and lexical index back the table)."""
        return self._graph

    def rows(self, limit: int | None = None) -> list[NodeDecision]:
        """The first ``limit`` rows of the table in score order (all when ``None``)."""
        if self._decisions is not None:
            return self._decisions[:limit] if limit is not None else self._decisions
        order = self._ranking.order if limit is None else self._ranking.order[:limit]
        rows = [self.row(int(i), k + 1) for k, i in enumerate(order)]
        if limit is None:
            self._decisions = rows
        return rows

    @property
    def decisions(self) -> list[NodeDecision]:
        """Every content node, in score order, with its decision and the reason."""
        return self.rows()

    def unused_with_room(self, share: float = 0.1) -> bool:
        """Whether more than ``share`` of the budget went unused while a relevant node whose
        cheapest form would fit it was left out (an item limit or a token cap does that; the
        decision tree alone should not)."""
        left = self.budget.context - self.context_tokens
        if left <= share * self.budget.context:
            return False
        waiting = self._ranking.relevant.copy()
        # loaded, kept out by the caller, or stale (its file changed: it cannot be served)
        placed = [i for i, seen in self._visited.items() if seen[0] != "manifest_only" or seen[1].startswith(("stale", SAME_TEXT))]
        waiting[placed] = False
        for i in np.flatnonzero(waiting & (self._lower_bounds <= left)):  # the bound says maybe: a node
            node = self._graph.node(self._ranking.node_ids[i])  # that is not large has one form, whole
            if node.tokens > self._config.large_node_tokens or _whole_cost(self._graph, node, float(self._ranking.scores[i])) <= left:
                return True
        return False

    @property
    def stale(self) -> list[str]:
        """Ids of the nodes left out because their file changed after it was indexed, best
        score first: the packer cannot serve their text until the workspace is re-indexed."""
        rows = [i for i, seen in self._visited.items() if seen[0] == "manifest_only" and seen[1].startswith("stale")]
        return [self._ranking.node_ids[i] for i in sorted(rows, key=lambda i: -float(self._ranking.scores[i]))]

    def stale_files(self) -> list[str]:
        """The files of :attr:`stale`'s nodes, each once, in the same order."""
        refs = (self._graph.node(n).reference for n in self.stale if n in self._graph)
        return list(dict.fromkeys(ref.file for ref in refs if ref is not None))

    def decision_of(self, node_id: str) -> NodeDecision:
        i = self._ranking.row(node_id)
        rank_no = int(np.flatnonzero(self._ranking.order == i)[0]) + 1
        return self.row(i, rank_no)


def spread_across_files(rows: np.ndarray, ranking: Ranking, spread: float) -> np.ndarray:
    """``rows`` (in score order) re-ordered by ``score * spread ** k``, where k counts the
    better-scored rows of the same file before each one; rows with no file keep k = 0.

    >>> from types import SimpleNamespace
    >>> r = SimpleNamespace(scores=np.array([0.9, 0.8, 0.7, 0.6]), file_index=np.array([0, 0, 0, 1]))
    >>> spread_across_files(np.array([0, 1, 2, 3]), r, 0.5).tolist()   # 0.9, 0.4, 0.175, 0.6
    [0, 3, 1, 2]
    """
    if spread >= 1.0 or ranking.file_index is None or rows.size < 2:
        return rows
    files = ranking.file_index[rows]
    by_file = np.argsort(files, kind="stable")  # score order kept within each file
    sorted_files = files[by_file]
    starts = np.flatnonzero(np.r_[True, sorted_files[1:] != sorted_files[:-1]])
    counts = np.diff(np.r_[starts, sorted_files.size])
    k = np.empty(rows.size, dtype=float)
    k[by_file] = np.arange(rows.size) - np.repeat(starts, counts)
    k[files < 0] = 0.0
    keys = ranking.scores[rows] * spread ** k
    return rows[np.argsort(-keys, kind="stable")]


def file_head(graph: LoomGraph, ranking: Ranking, file_number: int) -> int | None:
    """The ranking row of the head of a file (its unit at line 1 before any definition:
    imports, module docstring), or None when it has none."""
    for row in np.flatnonzero(ranking.file_index == file_number):
        node = graph.node(ranking.node_ids[row])
        reference = getattr(node, "reference", None)
        if node.meta.get("kind") == "preamble" and reference is not None and reference.lines and reference.lines[0] == 1:
            return int(row)
    return None


def raise_file_heads(rows: np.ndarray, ranking: Ranking, graph: LoomGraph, files: int, share: float) -> tuple[np.ndarray, dict[int, int]]:
    """``rows`` (the relevant walk) with the head of each of its first ``files`` files walked
    at ``share`` times the score of the file's first row (at least at its own score), and
    which row each raised head follows. A head below the relevance floor joins the walk too:
    an imports block shares few words and little meaning with a question about the code
    below it, and it is chosen for that code.

    A commit touches a file's imports as often as not, and a unit is read with the names its
    file imports; measured through the default path on the mined sets (benchmarks/README.md,
    'A file's head walks with its best unit').
    """
    if files <= 0 or ranking.file_index is None or rows.size == 0:
        return rows, {}
    raised: dict[int, int] = {}
    seen: set[int] = set()
    for row in rows:
        number = int(ranking.file_index[row])
        if number < 0 or number in seen:
            continue
        seen.add(number)
        head = file_head(graph, ranking, number)
        if head is not None and head != row and share * ranking.scores[row] > ranking.scores[head]:
            raised[head] = int(row)
        if len(seen) >= files:
            break
    if not raised:
        return rows, {}
    heads = np.fromiter(raised, np.int64, count=len(raised))
    walk = np.concatenate([rows[~np.isin(rows, heads)], heads])
    walk_keys = ranking.scores[walk].astype(float)
    walk_keys[-heads.size:] = share * ranking.scores[list(raised.values())]
    return walk[np.argsort(-walk_keys, kind="stable")], raised


class Visit(NamedTuple):
    """What the packer did with one node: the decision, why, the tokens it cost, and the
    chunk spans it loaded (for a *chunk* decision)."""

    decision: str
    reason: str
    tokens: int = 0
    spans: tuple = ()


class _Packer:
    """One walk down the loading decision tree (:func:`pack`), its state in named fields.

    The walk goes over relevant nodes by score, then (when filling) the others; each node
    gets a :class:`Visit`. Only nodes whose cheapest form could still fit are looked at one
    by one; the rest are skipped with numpy, so the cost grows with what is loaded.
    """

    def __init__(self, graph: LoomGraph, ranking: Ranking, budget: Budget, mode: Mode, query_vector, config: LoomConfig,
                 excluded: dict[int, str] | None):
        self.graph, self.ranking, self.budget, self.mode = graph, ranking, budget, mode
        self.query_vector, self.config = query_vector, config
        self.ids, self.tokens, order = ranking.node_ids, ranking.tokens, ranking.order
        spread = spread_across_files(order[ranking.relevant[order]], ranking, config.file_spread)
        self.relevant_order, self.raised_heads = raise_file_heads(spread, ranking, graph, config.head_files, config.head_share)
        self.relevant = ranking.relevant.copy()
        """Relevant rows as this walk counts them: a raised head is, whatever its own score."""
        self.relevant[list(self.raised_heads)] = True
        self.relevant_count = int(self.relevant_order.size)
        # the walk: relevant nodes first; then, to fill what is left, the others in score order
        fill = config.fill_leftover and mode.item_limit is None and mode.token_cap is None
        self.walk = np.concatenate([self.relevant_order, order[~self.relevant[order]]]) if fill else self.relevant_order
        self.allowance = budget.evidence
        self.limit = mode.item_limit
        self.limit_reason = f"{mode.name.upper()} mode item limit ({self.limit}) reached"
        self.lower = self._lower_bounds()
        self.skipped_left = np.full(len(self.ids), -1, dtype=np.int64)
        # rows the caller keeps out (a chat's own messages): excluded, with the caller's reason
        self.visited: dict[int, Visit] = {i: Visit("excluded", why) for i, why in (excluded or {}).items()}
        self.blocks: list[Block] = []
        self.covered: set[str] = set()
        self.used = 0
        self.filled = 0
        self.block_rows: dict[str, int] = {}
        """Ranking row of each block's node (``Ranking.row`` builds a map of every node: 15 ms at 50k)."""
        self.held_back: list[int] = []
        """Relevant rows the ``max_whole_share`` cap kept out, for the :meth:`second_pass`."""
        self.in_place: dict[int, int] = {}
        """Ranking row of a source whose summary was loaded in its place → the summary's row."""
        self.loaded_texts: dict[str, str] = {}
        """Hash of each node loaded whole → its node id. A file reached through a symlink, a
        copied file, a method pasted into two classes or a note added twice is two nodes with one
        text: the second is shown as a reference to the first, so the model learns where else
        the text lives without paying for it twice."""
        self.all_fit = self._all_fit()

    def _lower_bounds(self) -> np.ndarray:
        """What each node could cost at least, in its cheapest form (for skipping)."""
        min_frame = _min_frame_tokens()
        lower = self.tokens.astype(np.int64) + min_frame
        large = self.tokens > self.config.large_node_tokens
        for i in self.relevant_order[large[self.relevant_order]]:  # only the few large relevant nodes
            node_id = self.ids[i]
            alternatives = []
            summary_id = self.graph.summary_of(node_id)
            if summary_id is not None:
                alternatives.append(self.graph.node(summary_id).tokens + min_frame)
            if node_id in self.graph.chunk_vectors:
                alternatives.append(min_frame + 1)
            lower[i] = min([int(lower[i])] + alternatives)
        return lower

    def _all_fit(self) -> bool:
        """Whether every relevant node fits whole (and the item limit allows them all)."""
        fits = (self.limit is None or self.relevant_count <= self.limit) and int(self.lower[self.relevant_order].sum()) <= self.allowance
        # the bound says maybe: check exactly (few nodes, since they all fit)
        return fits and sum(self.cost_whole(int(i)) for i in self.relevant_order) <= self.allowance

    def cost_whole(self, i: int) -> int:
        return _whole_cost(self.graph, self.graph.node(self.ids[i]), float(self.ranking.scores[i]))

    def add_block(self, i: int, label: str, text: str, decision: str, reason: str, cost: int, spans=()) -> None:
        node = self.graph.node(self.ids[i])
        score = float(self.ranking.scores[i])
        line = _manifest_line(node.id, label, score, node.type)
        whole = decision == "loaded" and not reason.startswith(SAME_TEXT)  # not a reference to a twin
        masked = self.graph.masked(node.id) if whole else 0
        # a whole node's text is the one its count was made from (the reference's sha256 was
        # checked as it was read) unless a secret in it was masked: count only then
        tokens = node.tokens if whole and not masked else count_tokens(text)
        if masked:  # said on the manifest line when it still fits what the node was given
            said = _manifest_line(node.id, label, score, _said_source(node.type, masked))
            if _block_frame_tokens(node.id) + tokens + count_tokens(said) + 3 <= cost:
                line = said
        self.blocks.append(Block(node.id, label, node.type, score, text, tokens, line))
        digest = _text_digest(node)
        if whole and digest:
            self.loaded_texts.setdefault(digest, node.id)
        self.block_rows[node.id] = i
        self.used += cost
        self.visited[i] = Visit(decision, reason, cost, tuple(spans))
        self.covered.add(node.id)

    def fresh_text(self, i: int, node_id: str) -> str | None:
        """The node's text, or None (recorded as the decision) when its file went stale."""
        try:
            return self.graph.text(node_id)
        except StaleReferenceError as exc:
            self.visited[i] = Visit("manifest_only", f"stale: {exc}")
            return None

    def load_as_twin(self, i: int, node, twin: str, score: float) -> None:
        """Load ``node``, whose text is ``twin``'s (loaded above), as a one-line reference to it."""
        text = _twin_text(twin)
        cost = _frame_cost(node.id, node.title, node.type, score) + count_tokens(text)
        left = self.allowance - self.used
        if cost > left or (self.limit is not None and len(self.blocks) >= self.limit):
            self.visited[i] = Visit("manifest_only", f"{SAME_TEXT} {twin}, loaded; a reference to it needs {cost} tokens, {left} left")
            return
        self.add_block(i, node.title, text, "loaded", f"{SAME_TEXT} {twin}, loaded above: shown as a reference to it", cost)

    def next_candidate(self, position: int, end: int) -> int | None:
        """The walk position (before ``end``) of the next node whose cheapest form could fit
        (the ones passed over are marked with the tokens that were left), or None when there
        is none."""
        left = self.allowance - self.used
        if self.limit is not None and len(self.blocks) >= self.limit:
            self.skipped_left[self.walk[position:end]] = -2
            return None
        candidates = self.walk[position:end]
        fits = np.flatnonzero(self.lower[candidates] <= left)
        if fits.size == 0:
            self.skipped_left[candidates] = left
            return None
        self.skipped_left[candidates[: fits[0]]] = left
        return position + int(fits[0])

    def visit(self, i: int, filling: bool) -> None:
        """Decide one node: whole, else its summary, else its best chunks, else the manifest."""
        node = self.graph.node(self.ids[i])
        if node.id in self.covered or i in self.visited:  # a summary loaded in its source's place, or excluded by the caller
            return
        twin = self.loaded_texts.get(_text_digest(node) or "")
        if twin is not None and node.tokens > count_tokens(_twin_text(twin)):  # "ok" twice is cheaper than a reference
            self.load_as_twin(i, node, twin, float(self.ranking.scores[i]))
            return
        score, left, cost = float(self.ranking.scores[i]), self.allowance - self.used, self.cost_whole(i)
        too_big = node.tokens > self.config.large_node_tokens and cost > self.config.max_whole_share * self.allowance
        if filling and not self.filled:  # the first filler brings the manifest's line on filler
            cost += _filler_line_tokens()
        if (self.all_fit and not filling) or (not too_big and cost <= left):
            text = self.fresh_text(i, node.id)
            if text is not None:
                if filling:
                    reason = f"below the relevance floor; fills the leftover budget (score {score:.2f}, {cost} of {left} tokens left)"
                    self.filled += 1
                else:
                    reason = "all relevant content fits the budget" if self.all_fit else f"score {score:.2f}, fits ({cost} of {left} tokens left)"
                    if i in self.raised_heads and not self.all_fit:
                        unit = self.ids[self.raised_heads[i]]
                        unit += "" if unit in self.covered else ", which did not fit"
                        reason = f"the head of its file (imports), walked with {unit}; score {score:.2f}, fits ({cost} of {left} tokens left)"
                self.add_block(i, node.title, text, "loaded", reason, cost)
            return
        if filling:  # a node that is not relevant is loaded whole or not at all
            return
        why: list[str] = []  # what kept its summary and its chunks out, in words
        large = node.tokens > self.config.large_node_tokens
        if large and (self.load_summary(i, node, score, why) or self.load_chunks(i, node, score, why)):
            return
        share = int(self.config.max_whole_share * self.allowance)
        whole = f"needs {cost} tokens, {left} left" if cost > left else f"needs {cost} tokens, more than {self.share_words} ({share})"
        self.visited[i] = Visit("manifest_only", "; ".join([whole, *why]))
        if large and (cost <= left or share < left):  # the share held it back: the second pass may load it
            self.held_back.append(i)

    @cached_property
    def query_terms(self) -> frozenset[str]:
        """The query's terms, analysed once for every large node's chunks."""
        return query_terms(self.ranking.query)

    @property
    def share_words(self) -> str:
        return f"{self.config.max_whole_share:.0%} of the budget"

    def load_summary(self, i: int, node, score: float, why: list[str]) -> bool:
        """Load a large node's summary node in its place, if it has one that fits (else say
        why not in ``why``)."""
        summary_id = self.graph.summary_of(node.id)
        if summary_id is None or summary_id in self.covered:
            why.append("no summary" if summary_id is None else f"its summary {summary_id} is loaded already")
            return False
        summary = self.graph.node(summary_id)
        label = f"{node.title} (summary)"
        cost = summary.tokens + _frame_cost(node.id, label, node.type, score)
        text = self.fresh_text(i, summary_id) if cost <= self.allowance - self.used else None
        if text is None:
            why.append(f"its summary {summary_id} needs {cost} tokens" if cost > self.allowance - self.used
                       else f"its summary {summary_id} changed since indexing")
            return False
        self.add_block(i, label, text, "summary", f"{node.tokens} tokens is large; loaded its summary {summary_id}", cost)
        self.covered.add(summary_id)
        if summary_id in self.graph.content_vectors.index:
            self.in_place[i] = self.ranking.row(summary_id)
            self.visited[self.in_place[i]] = Visit("summary", f"loaded in place of {node.id}")
        return True

    def load_chunks(self, i: int, node, score: float, why: list[str], second_pass: bool = False) -> bool:
        """Load a large node's most relevant chunks that fit its share of the budget (else say
        why not in ``why``); in the :meth:`second_pass`, that fit what is left."""
        vectors = self.graph.chunk_vectors.get(node.id)
        if vectors is None or not len(node.chunks):
            why.append("no chunks")
            return False
        longest = f"{node.title} ({len(node.chunks)} of {len(node.chunks)} chunks)"
        frame = _frame_cost(node.id, longest, node.type, score)
        left, share = self.allowance - self.used, int(self.config.max_whole_share * self.allowance)
        share = left if second_pass else share
        text = self.fresh_text(i, node.id)
        if text is None:
            return True  # stale: the decision is recorded
        facts = chunk_facts(text, node.chunks, key=node.sha256)
        spans, used = best_chunks(node.chunks, vectors, self.query_vector, text, min(left, share) - frame, facts=facts,
                                  wanted=self.query_terms)
        if not spans:
            cheapest = int(facts.costs.min()) + frame
            which = "its one chunk" if len(node.chunks) == 1 else "its cheapest chunk"
            limit = f"{share} it may take ({self.share_words})" if share < left else f"{left} left"
            why.append(f"{which} needs {cheapest} tokens, more than the {limit}")
            return False
        label = f"{node.title} ({len(spans)} of {len(node.chunks)} chunks)"
        body = "\n…\n".join(text[s:e] for s, e in spans)
        if not second_pass and share < left and len(spans) < len(node.chunks):  # the share held chunks back
            self.held_back.append(i)
        reason = f"{node.tokens} tokens is large; loaded its {len(spans)} most relevant chunks"
        reason += f" ({used + frame} tokens) in a second pass, with budget nothing else wanted" if second_pass else ""
        self.add_block(i, label, body, "chunk", reason, used + frame, spans)
        return True

    def second_pass(self) -> None:
        """After the relevant nodes: those that only the ``max_whole_share`` cap kept out, or
        kept to fewer chunks, take the budget nothing else wanted, in walk order (best score
        first): each whole if it fits what is left (with what its chunks took), else as its
        most relevant chunks that do, in its place among the blocks. The cap is there so one
        large node does not crowd out the others; once they are placed it has nothing left
        to protect."""
        for i in self.held_back:
            if self.limit is not None and len(self.blocks) >= self.limit and self.visited[i].decision != "chunk":
                continue
            node, score = self.graph.node(self.ids[i]), float(self.ranking.scores[i])
            earlier = self.visited[i]
            place = next((k for k, b in enumerate(self.blocks) if b.node_id == node.id), len(self.blocks))
            if earlier.decision == "chunk":  # its chunks go back, for the whole node or more chunks
                block = self.blocks.pop(place)
                self.used -= earlier.tokens
            left, cost = self.allowance - self.used, self.cost_whole(i)
            text = self.fresh_text(i, node.id) if cost <= left else None
            if text is not None:
                self.add_block(i, node.title, text, "loaded", f"score {score:.2f}; over {self.share_words}, loaded whole "
                               f"in a second pass, with budget nothing else wanted ({cost} of {left} tokens left)", cost)
            elif not self.load_chunks(i, node, score, [], second_pass=True) and earlier.decision == "chunk":
                self.blocks.append(block)  # cannot happen (its chunks still fit), but never lose them
                self.used += earlier.tokens
                self.visited[i] = earlier
            if len(self.blocks) > place and self.blocks[-1].node_id == node.id:
                self.blocks.insert(place, self.blocks.pop())
            if self.visited[i].spans == earlier.spans and earlier.decision == "chunk":  # the same chunks: as it was
                self.visited[i] = earlier

    def run(self, callback_available: bool) -> Packed:
        """The relevant nodes, the :meth:`second_pass`, then (when filling) the others."""
        self.walk_over(0, self.relevant_count)
        self.second_pass()
        self.walk_over(self.relevant_count, self.walk.size)
        return self.render(callback_available)

    def walk_over(self, start: int, end: int) -> None:
        """Visit the walk's nodes from ``start`` to ``end`` whose cheapest form could fit."""
        position = self.next_candidate(start, end) if start < end else None
        while position is not None:
            self.visit(int(self.walk[position]), filling=position >= self.relevant_count)
            position = self.next_candidate(position + 1, end) if position + 1 < end else None

    def header(self, blocks: list[Block]) -> tuple[int, int, int]:
        """The manifest's counts: relevant nodes, how many of them are not loaded, and the
        nodes below the floor loaded to fill the leftover budget (counted apart: they are
        not relevant). A relevant summary loaded in its source's place is in the context as
        its source's block, so it is neither counted nor missing."""
        relevant = self.relevant
        in_place = sum(1 for s in self.in_place.values() if relevant[s])
        filler = sum(1 for b in blocks if not relevant[self.block_rows[b.node_id]])
        total = self.relevant_count - in_place
        return total, total - (len(blocks) - filler), filler

    def drop(self, block: Block) -> None:
        """Take a block out again (the rendered context was over budget), with its summary row."""
        row = self.block_rows[block.node_id]
        self.visited[row] = Visit("manifest_only", "dropped: rendered context over budget")
        summary = self.in_place.pop(row, None)
        if summary is not None:
            self.visited[summary] = Visit("manifest_only", f"dropped with {block.node_id}: rendered context over budget")

    def render(self, callback_available: bool) -> Packed:
        """The context from the blocks, dropping the lowest-scored until the real count fits:
        BPE merges across block boundaries can differ from the sum of parts."""
        blocks = self.blocks

        def context_of(blocks: list[Block]) -> str:
            relevant, not_loaded, filler = self.header(blocks)
            return render_context(blocks, relevant, not_loaded, callback_available, filler)

        context = context_of(blocks)
        context_tokens = count_tokens(context)
        while context_tokens > self.budget.context and blocks:
            self.drop(blocks.pop())
            context = context_of(blocks)
            context_tokens = count_tokens(context)
        relevant_count, not_loaded, filler = self.header(blocks)
        manifest = render_manifest([b.line for b in blocks], relevant_count, not_loaded, callback_available, filler)
        if context_tokens > self.budget.context:  # not even the header fits: send no context at all
            context, context_tokens = "", 0
        return Packed(
            blocks=blocks, manifest=manifest, context=context, context_tokens=context_tokens, budget=self.budget,
            relevant_count=relevant_count, all_fit=self.all_fit, graph=self.graph, ranking=self.ranking,
            visited=self.visited, skipped_left=self.skipped_left, lower_bounds=self.lower, limit_reason=self.limit_reason,
            config=self.config, filled=filler, relevant=self.relevant,
        )


def pack(
    graph: LoomGraph,
    ranking: Ranking,
    budget: Budget,
    *,
    mode: Mode | None = None,
    query_vector: np.ndarray | None = None,
    callback_available: bool = False,
    config: LoomConfig | None = None,
    excluded: dict[int, str] | None = None,
) -> Packed:
    """Walk the ranking down the loading decision tree of seed 000 §6.2.

    1. Nodes below the relevance floor are *excluded*.
    2. If every relevant node fits (and the mode's item limit allows), all are *loaded*.
    3. Otherwise nodes go in by descending score until the budget is spent; one that no
       longer fits stays in the manifest (*manifest_only*) and smaller ones may still fit.
    4. A node over ``large_node_tokens`` that would take more than ``max_whole_share`` of
       the budget goes in as its *summary* node if one exists, else as its most relevant
       *chunks*, else only in the manifest. After the relevant nodes, a second pass gives
       what is left to those the share held back (whole, else more chunks), best first.
    5. With ``config.fill_leftover`` (FUSED mode only: BARE and FAST are capped on
       purpose), budget still left after the relevant nodes is filled with the nodes below
       the floor, in score order, each whole if it fits; the others stay *excluded*. The
       manifest counts them on a line of their own, not as relevant nodes.

    Only nodes whose cheapest form could still fit are looked at one by one; the rest are
    skipped with numpy, so the cost grows with what is loaded, not with the graph.
    """
    packer = _Packer(graph, ranking, budget, mode or MODES["fused"], query_vector, config or graph.config, excluded)
    return packer.run(callback_available)


_MIN_FRAME: int | None = None


def _frame_cost(node_id: str, label: str, source: str, score: float) -> int:
    """Tokens a block costs beyond its body: delimiters, manifest line, separators."""
    return _block_frame_tokens(node_id) + count_tokens(_manifest_line(node_id, label, score, source)) + 3


def _whole_cost(graph: LoomGraph, node, score: float) -> int:
    """Tokens a node costs loaded whole: its text and its frame, with room for "N secrets
    masked" on its manifest line when it has any."""
    source = _said_source(node.type, graph.masked(node.id))
    return node.tokens + _frame_cost(node.id, node.title, source, score)


@lru_cache(maxsize=65536)
def _block_frame_tokens(node_id: str) -> int:
    """Tokens of an evidence block's delimiters around an empty body (they hold only the id)."""
    return count_tokens(_render_block(node_id, ""))


@lru_cache(maxsize=1)
def _filler_line_tokens() -> int:
    """Tokens of the manifest's line on nodes loaded to fill the leftover budget."""
    return count_tokens(render_manifest([], 0, 0, False, 99).split("\n")[1]) + 1


def _min_frame_tokens() -> int:
    """A lower bound on a block's frame: delimiters and manifest line with the shortest id and label."""
    global _MIN_FRAME
    if _MIN_FRAME is None:
        _MIN_FRAME = count_tokens(_render_block("n", "")) + count_tokens(_manifest_line("n", "", 0.0, "input"))
    return _MIN_FRAME


def _twin_text(twin: str) -> str:
    """What a node whose text is ``twin``'s (loaded above) is loaded as."""
    return f"(same text as [{twin}] above)"


def _text_digest(node) -> str:
    """The hash of a node's text as it was added (a file unit's as indexed, a note's or an
    answer's as pasted, after masking): equal hashes, equal texts."""
    return node.sha256


def _said_source(node_type: str, masked: int) -> str:
    """A manifest line's source: the node's type, and how many secrets were masked in it."""
    return f"{node_type} | {masked} secret{'s' if masked > 1 else ''} masked" if masked else node_type
