"""What a strategy loaded, what the case says it should have, and the grades between them:
reference precision and recall (seed 000 §8.8), file recall, line recall, budget use."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any, Iterable, Sequence

import numpy as np

log = logging.getLogger(__name__)


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


def grade(  # noqa: C901 - one metric per branch, over the same loaded items
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


@dataclass(frozen=True)
class Comparison:
    """Strategy ``a`` against ``b`` on the same cases: the mean paired difference of one
    metric, a percentile bootstrap interval for it, and how many cases went each way.

    On 40–50 cases one case moves a mean by 0.02–0.025, so a difference of 0.01 between two
    rows says little by itself; the interval says whether it could be chance.
    """

    a: str
    b: str
    metric: str
    cases: int
    difference: float
    """Mean of ``a − b`` over the cases where both define the metric."""
    low: float
    high: float
    """The ``level`` percentile bootstrap interval of :attr:`difference`."""
    level: float
    better: int
    worse: int
    """Cases where ``a`` scored above / below ``b`` (the others tie)."""

    @property
    def could_be_chance(self) -> bool:
        """Whether the interval holds 0 (the two cannot be told apart on these cases)."""
        return self.low <= 0.0 <= self.high

    def __str__(self) -> str:
        return (f"{self.a} − {self.b}: {self.difference:+.3f} {self.metric} "
                f"[{self.low:+.3f}, {self.high:+.3f}] ({self.level:.0%} paired bootstrap over {self.cases} case{'s' if self.cases != 1 else ''}; "
                f"{self.better} better, {self.worse} worse)")


def paired_bootstrap(a: Sequence[float | None], b: Sequence[float | None], *, names: tuple[str, str] = ("a", "b"),
                     metric: str = "metric", level: float = 0.95, resamples: int = 10_000, seed: int = 0) -> Comparison:
    """Compare two strategies case by case: resample the cases with replacement and take
    the ``level`` percentile interval of the mean difference (``a − b``).

    Pairs where either value is None (the metric does not apply) are left out. The seed is
    fixed, so the same figures give the same interval.

    Six of ten cases better by 1, four tied: the mean is +0.6 and the interval stays above 0.
    With one case better and one worse, it cannot be told from chance:

    >>> c = paired_bootstrap([1.0] * 6 + [0.5] * 4, [0.0] * 6 + [0.5] * 4, names=("loom", "bm25"))
    >>> round(c.difference, 3), c.better, c.worse, c.cases, c.low > 0, c.could_be_chance
    (0.6, 6, 0, 10, True, False)
    >>> paired_bootstrap([1.0, 0.0, 0.5], [0.0, 1.0, 0.5]).could_be_chance
    True
    >>> paired_bootstrap([0.5, None], [0.5, 0.2]).cases
    1
    """
    if not 0.0 < level < 1.0:
        raise ValueError(f"level must be between 0 and 1, got {level!r}")
    if len(a) != len(b):
        raise ValueError(f"a pairs each case with b: {len(a)} values against {len(b)}")
    pairs = np.array([(x, y) for x, y in zip(a, b) if x is not None and y is not None], dtype=float).reshape(-1, 2)
    if not len(pairs):
        raise ValueError("no case defines the metric for both strategies")
    diff = pairs[:, 0] - pairs[:, 1]
    rng = np.random.default_rng(seed)
    means = diff[rng.integers(0, len(diff), size=(resamples, len(diff)))].mean(axis=1)
    tail = (1.0 - level) / 2 * 100
    low, high = np.percentile(means, [tail, 100 - tail])
    return Comparison(names[0], names[1], metric, len(diff), float(diff.mean()), float(low), float(high), level,
                      int((diff > 0).sum()), int((diff < 0).sum()))
