"""Tuning the weights, thresholds and packing parameters on labelled cases, with held-out folds.

The reference design calls the weights and thresholds *hypotheses to be measured*. This
module measures them: :func:`cross_validate` splits the cases into folds, searches the
parameters on all folds but one by coordinate ascent (:func:`coordinate_ascent`), and
grades the winner on the fold left out, so the reported gain is on cases the search never
saw. :func:`tuning_figure` draws default against tuned, per fold.

Speed: each case is ranked once (:func:`prepare`); a candidate configuration only
re-weights the stored signals (:meth:`~loom_nb.core.rank.Ranking.reweighted`) and packs again,
so one evaluation of a configuration costs one :func:`~loom_nb.core.pack.pack` per case and
budget. Parameters that change the signals themselves (``hop_decay``,
``size_reference_tokens``, ``relevance_floor`` through link density) rank again, once per
distinct value.

Run it as ``loom-nb tune CASES.jsonl [CASES2.jsonl ...] --budgets 4000,8000,16000``.
"""

from __future__ import annotations

import logging
import random
import time
from dataclasses import dataclass, field, replace
from typing import Any, Sequence

import numpy as np

from ..core.config import LoomConfig
from ..core.errors import LoomError
from ..core.modes import Mode, choose_mode, message_weights
from ..core.query import Query
from .run import Case, Gold, Workbench, grade, packed_items
from ..core.pack import explicit_budget, pack

log = logging.getLogger(__name__)

DEFAULT_SPACE: dict[str, tuple] = {
    "weights.semantic": (0.1, 0.2, 0.35, 0.6),
    "weights.hop": (0.0, 0.1, 0.2, 0.4),
    "weights.size": (0.0, 0.05, 0.1, 0.2),
    "weights.provenance": (0.0, 0.15, 0.3, 0.6),
    "weights.density": (0.0, 0.1, 0.2),
    "question_density": (0.0, 0.1, 0.2, 0.3),
    "weights.terms": (0.25, 0.5, 1.0, 2.0),
    "weights.path_mention": (0.0, 0.15, 0.3, 0.6),
    "weights.file": (0.0, 0.15, 0.3, 0.6),
    "relevance_floor": (0.2, 0.3, 0.4),
    "lexical_anchor": (0.6, 0.8, 1.0, 1.01),
    "lexical_relevance": (0.29, 0.5, 0.7),
    "lead_line_weight": (0.0, 1.0, 2.0),
    "previous_mention_share": (0.5, 1.0),
    "max_whole_share": (0.25, 0.5),
    "large_node_tokens": (600, 1200, 2400),
    "relevance_margin": (None, 0.1, 0.2, 0.3),
    "named_code_semantic": (0.25, 0.5, 0.75, 1.0),
    "file_spread": (0.99, 0.995, 1.0),
    "head_files": (0, 1, 2, 3),
    "head_share": (0.85, 0.88, 0.9),
    "bare_below": (0.0, 0.2, 0.3),
    "fast_below": (0.0, 0.3, 0.45, 0.6),
    "bare_item_limit": (None, 3, 8),
    "bare_token_cap": (None, 1500, 4000),
    "fast_item_limit": (None, 8, 16),
    "fast_token_cap": (None, 4000),
}
"""What :func:`coordinate_ascent` searches by default: the ranking weights that vary between
file units (staleness is equal for all of them in a fresh session, and a tag or a dirty file
never occurs in mined cases), the two relevance thresholds, and the packing split of large
nodes, and the modes: which complexity ``auto`` sends to BARE and FAST (seed 002: 0.3 and 0.6),
and their item limits and token caps (seed 002's, scaled: 3 / 1,500 and 8 / 4,000). Each list
holds the seed value (:data:`~loom_nb.core.config.SEED_VALUES`). The semantic weight
never goes to 0: mined cases are code with identifiers to match, but notes and chat turns
have none, and there the vectors are the only signal. ``named_code_semantic`` lowers it only
for messages that name code (seed value 1: no difference); ``question_density`` raises the
density weight for a question on its own or a follow-up (seed value 0: no difference);
``head_files`` 0 walks the files' heads at their own scores (no difference)."""

METRICS: tuple[str, ...] = ("line_recall", "file_recall", "recall", "precision")
"""What a search can maximise: the recall and precision columns of
:class:`~loom_nb.evaluation.metrics.Metrics` (tokens and seconds are costs, not goals)."""

_RERANK = ("relevance_floor", "hop_decay", "size_reference_tokens", "concept_relevance", "lexical_anchor",
           "lead_line_weight", "previous_mention_share")
"""Config fields that change signal values, so a new value needs a fresh :func:`rank`."""


def get_param(config: LoomConfig, name: str) -> Any:
    """``config``'s value of ``"weights.semantic"`` or ``"relevance_floor"``."""
    if name.startswith("weights."):
        return getattr(config.weights, name.split(".", 1)[1])
    return getattr(config, name)


def set_params(config: LoomConfig, values: dict[str, Any]) -> LoomConfig:
    """A copy of ``config`` with some parameters (``"weights.x"`` or field names) changed.

    >>> set_params(LoomConfig(), {"weights.terms": 1.0, "relevance_floor": 0.3}).weights.terms
    1.0
    """
    weights = {k.split(".", 1)[1]: v for k, v in values.items() if k.startswith("weights.")}
    other = {k: v for k, v in values.items() if not k.startswith("weights.")}
    if weights:
        other["weights"] = replace(config.weights, **weights)
    return replace(config, **other)


@dataclass
class Prepared:
    """One case, ranked once per mode strategy, ready to be packed under many configurations.

    Every configuration runs the default path: the mode is the one ``auto`` picks for the
    message's complexity under that configuration, so the mode mapping is tuned with the
    weights.
    """

    case: Case
    loom: Any
    query_vector: np.ndarray
    gold: Gold
    complexity: float = 0.0
    retrieval: str = ""
    """What ranks: the message and, for a follow-up, the previous exchange."""
    follows_up: bool = False
    _rankings: dict = field(default_factory=dict)

    def ranking(self, config: LoomConfig, mode: Mode | None = None):
        from ..core.rank import rank

        strategy = mode.strategy if mode is not None else "fused"
        key = (strategy, *(getattr(config, name) for name in _RERANK))
        base = self._rankings.get(key)
        if base is None:
            vector = self.query_vector if mode is None or mode.embeds_query else None
            base = rank(self.loom.graph, vector, query=self.retrieval or self.case.query, config=config,
                        lexical=mode is None or mode.lexical)
            self._rankings[key] = base
        weights = message_weights(config.weights, self.case.query, config,  # as Loom.query weighs this message
                                  follow_up=self.follows_up)
        return base.reweighted(config, mode.weights(weights) if mode is not None else weights)

    def run(self, config: LoomConfig, budget: int):
        """The metrics of this case through the default path under ``config`` at ``budget`` tokens."""
        mode = choose_mode(self.complexity, config)
        ranking = self.ranking(config, mode)
        packed = pack(self.loom.graph, ranking, explicit_budget(int(budget), mode), mode=mode,
                      query_vector=self.query_vector if mode.embeds_query else None, config=config)
        return grade(packed_items(self.loom.graph, packed), self.gold, budget=budget, tokens=packed.context_tokens)


def prepare(cases: Sequence[Case], bench: Workbench) -> list[Prepared]:
    """Open (index) every case's workspace once, classify its message and embed what ranks."""
    out = []
    for case in cases:
        loom = bench.loom(case)
        bench.check_gold(case, loom)
        query = Query(case.query, [{"role": r, "content": c} for r, c in case.history])
        retrieval = query.retrieval_text()
        out.append(Prepared(case, loom, loom.embedder.embed([query.vector_text()])[0],
                            Gold(frozenset(case.gold_files), frozenset(), dict(case.gold_ranges), {}),
                            complexity=loom.classify(case.query).complexity, retrieval=retrieval,
                            follows_up=query.follows_up))
    return out


def evaluate_config(prepared: Sequence[Prepared], config: LoomConfig, budgets: Sequence[int],
                    metric: str = "line_recall") -> np.ndarray:
    """Per case, the mean of ``metric`` over ``budgets`` (a metric that is None counts 0)."""
    out = np.zeros(len(prepared))
    for k, p in enumerate(prepared):
        values = [getattr(p.run(config, b), metric) for b in budgets]
        out[k] = float(np.mean([v if v is not None else 0.0 for v in values]))
    return out


@dataclass
class SearchStep:
    param: str
    value: Any
    score: float
    accepted: bool


def coordinate_ascent(
    prepared: Sequence[Prepared],
    base: LoomConfig,
    budgets: Sequence[int],
    *,
    space: dict[str, Sequence] | None = None,
    metric: str = "line_recall",
    rounds: int = 2,
    seed: int = 0,
    min_gain: float = 1e-4,
) -> tuple[LoomConfig, float, list[SearchStep]]:
    """Maximise the mean ``metric`` over ``prepared`` cases one parameter at a time.

    Each round visits the parameters of ``space`` in a shuffled order and sets each to its
    best listed value with the others held (a value must beat the current score by
    ``min_gain``; ties keep the current value, so defaults survive unless beaten). Stops
    after ``rounds`` or when a round changes nothing. Returns the best config, its score,
    and every step tried.
    """
    space = dict(space or DEFAULT_SPACE)
    rng = random.Random(seed)
    config = base
    best = float(evaluate_config(prepared, config, budgets, metric).mean())
    steps: list[SearchStep] = []
    for _ in range(rounds):
        changed = False
        names = list(space)
        rng.shuffle(names)
        for name in names:
            current = get_param(config, name)
            for value in space[name]:
                if value == current:
                    continue
                try:
                    candidate = set_params(config, {name: value})
                except ValueError:
                    continue
                score = float(evaluate_config(prepared, candidate, budgets, metric).mean())
                accepted = score > best + min_gain
                steps.append(SearchStep(name, value, score, accepted))
                if accepted:
                    log.info("%s = %r: %.4f", name, value, score)
                    config, best, current, changed = candidate, score, value, True
        if not changed:
            break
    return config, best, steps


@dataclass
class Fold:
    """One held-out fold: the parameters chosen on the others, and both configs graded on it."""

    index: int
    test_ids: list[str]
    chosen: dict[str, Any]
    train_default: float
    train_tuned: float
    test_default: float
    test_tuned: float


@dataclass
class TuningReport:
    """What :func:`cross_validate` measured."""

    metric: str
    budgets: list[int]
    folds: list[Fold]
    final: dict[str, Any]
    """The parameters chosen on all cases (what a library default should be)."""
    final_score: float
    default_score: float
    seconds: float
    cases: int

    @property
    def held_out_gain(self) -> float:
        """Mean over folds of (tuned − default) on the held-out cases."""
        return float(np.mean([f.test_tuned - f.test_default for f in self.folds])) if self.folds else 0.0

    def __str__(self) -> str:
        lines = [f"{self.cases} cases, {len(self.folds)} folds, {self.metric} mean over budgets {self.budgets}; {self.seconds:.0f} s",
                 f"{'fold':>4} {'train default':>14} {'train tuned':>12} {'held-out default':>17} {'held-out tuned':>15} {'gain':>7}"]
        for f in self.folds:
            lines.append(f"{f.index:>4} {f.train_default:>14.3f} {f.train_tuned:>12.3f} {f.test_default:>17.3f} "
                         f"{f.test_tuned:>15.3f} {f.test_tuned - f.test_default:>+7.3f}")
        lines.append(f"held-out gain over the defaults: {self.held_out_gain:+.3f}")
        lines.append(f"on all cases: default {self.default_score:.3f}, tuned {self.final_score:.3f}; chosen {self.final}")
        return "\n".join(lines)

    def to_json(self) -> dict[str, Any]:
        return {"metric": self.metric, "budgets": self.budgets, "cases": self.cases, "seconds": self.seconds,
                "held_out_gain": self.held_out_gain, "default_score": self.default_score, "final_score": self.final_score,
                "final": self.final, "folds": [vars(f) for f in self.folds]}


def _changed(config: LoomConfig, base: LoomConfig, names: Sequence[str]) -> dict[str, Any]:
    return {n: get_param(config, n) for n in names if get_param(config, n) != get_param(base, n)}


def folds_of(cases: Sequence[Case], k: int, seed: int = 0, group=None) -> list[list[int]]:
    """``k`` folds of case indices; with ``group`` (case → key), each group is spread
    evenly over the folds (every fold holds cases of every repository).

    >>> [sorted(f) for f in folds_of([Case(str(i), "q") for i in range(5)], 2)]
    [[0, 2, 3], [1, 4]]
    """
    rng = random.Random(seed)
    keys: dict[Any, list[int]] = {}
    for i, case in enumerate(cases):
        keys.setdefault(group(case) if group else None, []).append(i)
    folds: list[list[int]] = [[] for _ in range(k)]
    offset = 0
    for key in sorted(keys, key=str):
        members = keys[key][:]
        rng.shuffle(members)
        for j, i in enumerate(members):
            folds[(j + offset) % k].append(i)
        offset += len(members)
    return folds


def cross_validate(
    prepared: Sequence[Prepared],
    budgets: Sequence[int],
    *,
    base: LoomConfig | None = None,
    k: int = 5,
    space: dict[str, Sequence] | None = None,
    metric: str = "line_recall",
    rounds: int = 2,
    seed: int = 0,
    group=None,
    final: bool = True,
) -> TuningReport:
    """``k``-fold cross-validation of :func:`coordinate_ascent` from ``base``.

    For each fold the search runs on the other folds; default and tuned are graded on the
    fold. With ``final``, a last search on every case gives the parameters to adopt.
    """
    started = time.perf_counter()
    check_tuning(k, metric, budgets)
    base = base or LoomConfig()
    space = dict(space or DEFAULT_SPACE)
    prepared = _graded_by(prepared, metric, base, budgets)
    if len(prepared) < 2:
        raise LoomError(f"cross-validation needs at least 2 cases that {metric} grades, got {len(prepared)}")
    if len(prepared) < k:  # some folds stay empty: they are left out, not averaged in as 0
        log.warning("%d folds for %d case(s) %s grades: %d fold(s) are empty and left out", k, len(prepared), metric,
                    k - len(prepared))
    per_case_default = evaluate_config(prepared, base, budgets, metric)
    folds = []
    for index, test in enumerate(folds_of([p.case for p in prepared], k, seed, group)):
        if not test:
            continue
        test_set = set(test)
        train = [p for i, p in enumerate(prepared) if i not in test_set]
        held = [prepared[i] for i in test]
        tuned, train_score, _ = coordinate_ascent(train, base, budgets, space=space, metric=metric, rounds=rounds, seed=seed + index)
        test_tuned = float(evaluate_config(held, tuned, budgets, metric).mean())
        folds.append(Fold(index, [p.case.id for p in held], _changed(tuned, base, list(space)),
                          float(per_case_default[[i for i in range(len(prepared)) if i not in test_set]].mean()),
                          train_score, float(per_case_default[test].mean()), test_tuned))
        log.info("fold %d: held-out %.3f -> %.3f", index, folds[-1].test_default, test_tuned)
    chosen, final_score = {}, float(per_case_default.mean())
    if final:
        best, final_score, _ = coordinate_ascent(prepared, base, budgets, space=space, metric=metric, rounds=rounds, seed=seed)
        chosen = _changed(best, base, list(space))
    return TuningReport(metric, list(budgets), folds, chosen, final_score, float(per_case_default.mean()),
                        time.perf_counter() - started, len(prepared))


def check_tuning(k: int, metric: str, budgets: Sequence[int]) -> None:
    """Refuse what :func:`cross_validate` cannot run: fewer than two folds (one fold leaves
    nothing to search on), a metric it cannot maximise, no budget or one that is not a positive
    number of tokens."""
    if k < 2:
        raise LoomError(f"cross-validation needs at least 2 folds, got {k}")
    if metric not in METRICS:
        raise LoomError(f"unknown metric {metric!r}; tuning maximises one of {', '.join(METRICS)}")
    if not budgets:
        raise LoomError("give at least one token budget")
    for budget in budgets:
        if isinstance(budget, bool) or not isinstance(budget, (int, np.integer)) or budget <= 0:
            raise LoomError(f"the budget must be a positive number of tokens, got {budget!r}")


def _graded_by(prepared: Sequence[Prepared], metric: str, base: LoomConfig, budgets: Sequence[int]) -> list[Prepared]:
    """The cases ``metric`` grades at all (line recall needs ``gold_ranges``): the others are
    left out with a warning, as ``loom-nb eval`` leaves them out of its mean, instead of
    counting 0 and pulling every figure down."""
    graded = [getattr(p.run(base, budgets[0]), metric) is not None for p in prepared]
    kept = [p for p, ok in zip(prepared, graded) if ok]
    if len(kept) < len(prepared):
        skipped = [p.case.id for p, ok in zip(prepared, graded) if not ok]
        log.warning("%d case(s) have nothing %s grades and are left out: %s", len(skipped), metric,
                    ", ".join(skipped[:5]) + (", …" if len(skipped) > 5 else ""))
    if not kept:
        raise LoomError(f"no case can be graded by {metric} (line_recall needs gold_ranges)")
    return kept


def tuning_figure(report: TuningReport):
    """Held-out ``metric`` per fold, defaults against tuned (plotly bar chart)."""
    import plotly.graph_objects as go

    labels = [f"fold {f.index + 1}" for f in report.folds] + ["mean"]
    default = [f.test_default for f in report.folds]
    tuned = [f.test_tuned for f in report.folds]
    default.append(float(np.mean(default)) if default else 0.0)
    tuned.append(float(np.mean(tuned)) if tuned else 0.0)
    fig = go.Figure([
        go.Bar(name="defaults", x=labels, y=default, marker_color="#9aa5b1", text=[f"{v:.3f}" for v in default], textposition="outside"),
        go.Bar(name="tuned on the other folds", x=labels, y=tuned, marker_color="#2f6fb0", text=[f"{v:.3f}" for v in tuned], textposition="outside"),
    ])
    fig.update_layout(
        barmode="group", template="plotly_white", height=380,
        title=f"Held-out {report.metric.replace('_', ' ')} (mean over budgets {', '.join(map(str, report.budgets))}): "
              f"gain {report.held_out_gain:+.3f}",
        yaxis=dict(title=report.metric.replace("_", " "), range=[0, 1.05]), legend=dict(orientation="h", y=-0.15),
    )
    return fig


__all__ = ["DEFAULT_SPACE", "METRICS", "Fold", "Prepared", "SearchStep", "TuningReport", "coordinate_ascent", "cross_validate",
           "check_tuning", "evaluate_config", "folds_of", "get_param", "prepare", "set_params", "tuning_figure"]
