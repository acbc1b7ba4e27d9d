"""BM25F's own parameters swept through the default path: field weights, k1 and b.

A script that prints figures, not a test. :data:`loom_nb.core.lexical.DEFAULT_FIELD_WEIGHTS`,
``DEFAULT_K1`` and ``DEFAULT_B`` are ranking configuration, not stored with an index
(:meth:`~loom_nb.core.lexical.LexicalIndex.from_arrays` takes them), so each case is indexed (or
opened from ``--cache``) once and its lexical index rebuilt from its arrays under every variant;
the case is then ranked and packed as ``loom-nb tune`` evaluates a candidate
(:class:`loom_nb.evaluation.tuning.Prepared`). The ``today`` variant reproduces the ``loom`` rows of
``bench_quality.py`` for single-turn cases (a follow-up ranks its message and the exchange before
it here, not through the chat's turn planner, so its figures can differ)::

    .venv/bin/python benchmarks/sweep_bm25.py datasets/self.jsonl datasets/followups.jsonl --cache build/eval-cache-self
    .venv/bin/python benchmarks/sweep_bm25.py build/mined/gin.jsonl --cache build/eval-cache --variants today,b=0.5,content=0.5
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from loom_nb.core.config import LoomConfig  # noqa: E402
from loom_nb.core.lexical import DEFAULT_B, DEFAULT_K1, FIELDS, LexicalIndex  # noqa: E402
from loom_nb.evaluation.run import Workbench  # noqa: E402
from sweep_config import prepared_sets, recall_row  # noqa: E402 - beside this script

DEFAULT_VARIANTS = "today,b=0.5,b=0.3,k1=0.8,k1=2.0,symbol=5,path=5,content=0.5,import=0.5"


def parse_variant(text: str) -> tuple[dict[str, float], float, float]:
    """``"today"`` or ``name=value[+name=value…]`` (a field of :data:`FIELDS`, ``k1`` or ``b``)
    → (field weights to change, k1, b).

    >>> parse_variant("b=0.5+content=0.5")
    ({'content': 0.5}, 1.2, 0.5)
    """
    weights, k1, b = {}, DEFAULT_K1, DEFAULT_B
    if text == "today":
        return weights, k1, b
    for part in text.split("+"):
        name, _, value = part.partition("=")
        if name == "k1":
            k1 = float(value)
        elif name == "b":
            b = float(value)
        elif name in FIELDS:
            weights[name] = float(value)
        else:
            raise SystemExit(f"unknown BM25F parameter {name!r}: give k1, b or one of {', '.join(FIELDS)}")
    return weights, k1, b


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("cases", nargs="+", type=Path)
    parser.add_argument("--variants", default=DEFAULT_VARIANTS, help="comma-separated; see parse_variant")
    parser.add_argument("--budgets", default="4000,8000,16000")
    parser.add_argument("--cache", type=Path, default=None, help="indexed workspaces kept between runs")
    args = parser.parse_args(argv)
    variants = {name: parse_variant(name) for name in args.variants.split(",")}
    budgets = [int(b) for b in args.budgets.split(",")]
    bench = Workbench(cache_dir=args.cache)
    print(f"line recall / gold-file recall of the default path at {budgets} tokens")
    out: dict = {}
    for path, prepared in prepared_sets(args.cases, bench):
        arrays = [p.loom.graph.lexical.to_arrays() for p in prepared]
        for name, (weights, k1, b) in variants.items():
            for p, stored in zip(prepared, arrays):
                p.loom.graph.lexical = LexicalIndex.from_arrays(stored, field_weights=weights, k1=k1, b=b)
                p._rankings.clear()  # the lexical signal changed: rank again (the harness keeps rankings per config)
            row = recall_row(prepared, LoomConfig(), budgets)
            out.setdefault(path.stem, {})[name] = row
            print(f"{path.stem:12} {name:>16}  " + "   ".join(f"{row[b][0]:.3f} / {row[b][1]:.3f}" for b in budgets), flush=True)
    return out


if __name__ == "__main__":
    main()
