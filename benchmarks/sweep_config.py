"""One configuration field swept through the default path: line and gold-file recall per value.

A script that prints figures, not a test. Each case is indexed (or opened from ``--cache``)
and ranked once, then packed under every value, as ``loom-nb tune`` evaluates a candidate
(:class:`loom_nb.evaluation.tuning.Prepared`): the call is ``Loom.query``'s, with the mode
``auto`` picks. On one index, the value of the default config loads what the ``loom`` rows of
``bench_quality.py`` load, case by case, single-turn cases and follow-ups alike (a follow-up's
message ranks with the exchange before it, as the chat's turn planner ranks it). An index
carried through many commits can differ from a fresh one by a budget-edge case: its node ids are
longer, and each costs a token more in the manifest. Used for the options that were measured and not made defaults
(``file_spread``, ``named_code_semantic``; benchmarks/README.md)::

    .venv/bin/python benchmarks/sweep_config.py file_spread 1,0.995,0.99,0.98 \\
        build/mined/gin.jsonl build/mined/caddy.jsonl --cache build/eval-cache
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from loom_nb.core.config import LoomConfig  # noqa: E402
from loom_nb.evaluation.run import Workbench, load_cases  # noqa: E402
from loom_nb.evaluation.tuning import get_param, prepare, set_params  # noqa: E402


def parse_value(text: str):
    """``"none"`` → None, else an int or a float."""
    if text.lower() == "none":
        return None
    return int(text) if text.lstrip("-").isdigit() else float(text)


def mean_recalls(prepared, config: LoomConfig, budget: int) -> tuple[float, float]:
    """Mean line and gold-file recall of ``prepared`` cases under ``config`` at one budget,
    each case packed once. A case without gold line ranges has no line recall and is left out
    of that mean, as bench_quality.py does (counted as 0 it scaled the self set's figures by
    27/36). The comparison scripts (``compare_*.py``) grade with it too."""
    graded = [p.run(config, budget) for p in prepared]
    line, file = (float(np.mean([v for g in graded if (v := getattr(g, m)) is not None] or [0.0]))
                  for m in ("line_recall", "file_recall"))
    return line, file


def recall_row(prepared, config: LoomConfig, budgets: list[int]) -> dict[int, list[float]]:
    """:func:`mean_recalls` per budget, rounded to three places."""
    return {budget: [round(v, 3) for v in mean_recalls(prepared, config, budget)] for budget in budgets}


def prepared_sets(paths: list[Path], bench: Workbench):
    """Each case set indexed (or opened from the cache) and ranked once, as ``(path, prepared)``;
    its sessions are released and its time printed when the caller moves on to the next."""
    for path in paths:
        cases, _ = load_cases(path)
        started = time.perf_counter()
        prepared = prepare(cases, bench)
        yield path, prepared
        for p in prepared:
            bench.release(p.case)
        print(f"{path.stem}: {len(cases)} cases, {time.perf_counter() - started:.0f} s", flush=True)


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("param", help="a LoomConfig field, or weights.<signal>")
    parser.add_argument("values", help="comma-separated values")
    parser.add_argument("cases", nargs="+", type=Path)
    parser.add_argument("--budgets", default="4000,8000,16000")
    parser.add_argument("--cache", type=Path, default=None, help="indexed workspaces kept between runs")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args(argv)
    values = [parse_value(v) for v in args.values.split(",")]
    budgets = [int(b) for b in args.budgets.split(",")]
    bench = Workbench(cache_dir=args.cache)
    print(f"{args.param}: default {get_param(LoomConfig(), args.param)!r}; line recall / gold-file recall at {budgets}")
    out: dict = {}
    for path, prepared in prepared_sets(args.cases, bench):
        for value in values:
            config = set_params(LoomConfig(), {args.param: value})
            row = recall_row(prepared, config, budgets)
            out.setdefault(path.stem, {})[str(value)] = row
            print(f"{path.stem:10} {value!s:>8}  " + "   ".join(f"{row[b][0]:.3f} / {row[b][1]:.3f}" for b in budgets), flush=True)
    if args.json:
        args.json.write_text(json.dumps(out, indent=1) + "\n")
    return out


if __name__ == "__main__":
    main()
