"""Retrieval modes (seed 002): BARE, FAST and FUSED, and how ``auto`` picks one.

The seed's idea is that a simple query should cost less work. Here a mode may only cut
*work*, not the caller's budget: each mode ranks with a different set of signals, and the
budget the caller gave (or the window's context zone) is the budget every mode fills.

* **BARE** ranks without the query vector: the lexical, structural, size, provenance and
  recency signals. It skips embedding the query, the largest share of a query's time
  with an in-process model.
* **FAST** ranks on the query vector alone (the semantic signal; no lexical scoring).
* **FUSED** ranks on every signal.

Which mode ``auto`` picks for a query's complexity, and any item limit or token cap a
mode keeps, are :class:`~loom_nb.core.config.LoomConfig` fields that ``loom-nb tune`` searches
like the weights. Their defaults are what measurement chose (see ``LoomConfig.bare_below``):
on every labelled set the cheaper modes lose line recall that FUSED keeps, so ``auto``
runs FUSED unless a tuning run shows otherwise.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from .classify import asks_question, names_code
from .config import LoomConfig, Weights

MODE_NAMES: tuple[str, ...] = ("bare", "fast", "fused")

STRATEGIES = {"bare": "graph", "fast": "semantic", "fused": "fused"}
"""Each mode's ranking strategy: "graph" (no query vector), "semantic" (vector only), "fused"."""


@dataclass(frozen=True)
class Mode:
    """A retrieval preset: which signals rank, and optionally how many items or tokens at most.

    ``item_limit`` and ``token_cap`` are ``None`` unless a configuration sets them: a cap
    leaves budget unused while relevant nodes remain, so it has to earn its place in a
    measurement first.
    """

    name: str
    strategy: str
    """"graph" (structure, lexical, recency, size, provenance; no query vector),
    "semantic" (the query vector only) or "fused" (every signal)."""
    item_limit: int | None = None
    token_cap: int | None = None

    @property
    def embeds_query(self) -> bool:
        """Whether this mode needs the query's vector (BARE does not: it skips the embedder)."""
        return self.strategy != "graph"

    @property
    def lexical(self) -> bool:
        """Whether this mode scores the lexical signals (FAST does not)."""
        return self.strategy != "semantic"

    def weights(self, base: Weights) -> Weights:
        """``base`` restricted to the signals this mode ranks with."""
        if self.strategy == "graph":
            return base.without("semantic")
        if self.strategy == "semantic":
            return base.only("semantic")
        return base


def modes(config: LoomConfig | None = None) -> dict[str, Mode]:
    """The three modes with the limits ``config`` gives them.

    >>> sorted(modes())
    ['bare', 'fast', 'fused']
    >>> modes()["bare"].token_cap is None
    True
    """
    config = config or LoomConfig()
    return {
        "bare": Mode("bare", STRATEGIES["bare"], config.bare_item_limit, config.bare_token_cap),
        "fast": Mode("fast", STRATEGIES["fast"], config.fast_item_limit, config.fast_token_cap),
        "fused": Mode("fused", STRATEGIES["fused"]),
    }


MODES: dict[str, Mode] = modes()
"""The modes with the default configuration's limits."""


def choose_mode(complexity: float | None, config: LoomConfig | None = None) -> Mode:
    """The mode ``auto`` picks for a query of this complexity under ``config``.

    Complexity below ``config.bare_below`` runs BARE, below ``config.fast_below`` FAST,
    anything else (and an unknown complexity) FUSED.

    >>> choose_mode(0.1).name
    'fused'
    >>> c = LoomConfig(bare_below=0.3, fast_below=0.6)
    >>> choose_mode(0.1, c).name, choose_mode(0.45, c).name, choose_mode(0.9, c).name
    ('bare', 'fast', 'fused')
    """
    config = config or LoomConfig()
    table = modes(config)
    if complexity is None:
        return table["fused"]
    if complexity < config.bare_below:
        return table["bare"]
    if complexity < config.fast_below:
        return table["fast"]
    return table["fused"]


def get_mode(mode: str | Mode | None, complexity: float | None, config: LoomConfig | None = None) -> Mode:
    """A mode by name ("auto" or ``None``: :func:`choose_mode`), or the one given."""
    if isinstance(mode, Mode):
        return mode
    if mode is None or mode == "auto":
        return choose_mode(complexity, config)
    if not isinstance(mode, str) or mode.lower() not in MODE_NAMES:
        raise ValueError(f"unknown mode {mode!r}; choose one of {list(MODE_NAMES)} or 'auto'")
    return modes(config)[mode.lower()]


def message_weights(base: Weights, message: str, config: LoomConfig, *, follow_up: bool = False) -> Weights:
    """The configured weights as they apply to this message: the semantic weight times
    ``config.named_code_semantic`` when the message names code
    (:func:`~loom_nb.core.classify.names_code`), and the density weight raised to
    ``config.question_density`` when it asks a question
    (:func:`~loom_nb.core.classify.asks_question`) or is a ``follow_up``: both are answered by
    a neighbourhood of code, where a commit subject or an issue names one change. The
    message's own words decide, never the words of a chat's history.

    >>> c = LoomConfig(named_code_semantic=0.5)
    >>> message_weights(c.weights, "what calls save_graph?", c).semantic == c.weights.semantic / 2
    True
    >>> message_weights(c.weights, "How are concepts named?", c).density == c.question_density
    True
    >>> message_weights(c.weights, "and where is that called from", c, follow_up=True).density == c.question_density
    True
    >>> message_weights(c.weights, "Name concepts by their distinctive terms", c) == c.weights
    True
    """
    weights = base
    if config.named_code_semantic != 1.0 and names_code(message):
        weights = replace(weights, semantic=weights.semantic * config.named_code_semantic)
    if weights.density < config.question_density and (follow_up or asks_question(message)):
        weights = replace(weights, density=config.question_density)
    return weights
