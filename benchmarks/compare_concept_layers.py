"""The concept layer before issue 15 against today's, on one tree and one set of labels.

A script that prints figures, not a test. Issue 15's bar asks for no drop in the default path's
line recall against the layer it replaced: threshold linking at 0.8 with no rebuild (nearly a
concept per unit) and a density weight of 0.1. That layer no longer exists as an option, so this
script rebuilds it by patching the indexer (``needs_concept_rebuild`` answers False, the graph's
threshold is 0.8), in its own cache folder, and ranks every case through the tuner's harness
(:func:`loom_nb.evaluation.tuning.prepare`, ``Prepared.run``: the default path's call); the old
layer's density counts concepts at the cosine it did then (``concept_relevance`` 0.3). Beside it,
on today's layer: the default (density 0, and ``question_density`` for a question on its own or a
follow-up, counting relevant structural neighbours only), the default with the layer's topics
counted too (``concept_relevance`` 0.3), and density 0.1 for every message::

    .venv/bin/python benchmarks/compare_concept_layers.py datasets/self.jsonl datasets/followups.jsonl \\
        --cache build/eval-cache-self --old-cache build/eval-cache-oldlayer

``--old-cache`` is indexed afresh the first time (copy the embeddings file of ``--cache`` into it
to skip embedding again).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import loom_nb.evaluation.run as run  # noqa: E402
import loom_nb.index.indexer as indexer  # noqa: E402
from loom_nb.core.config import LoomConfig  # noqa: E402
from loom_nb.evaluation.tuning import prepare  # noqa: E402
from sweep_config import mean_recalls  # noqa: E402  (benchmarks/, this script's folder)

BUDGETS = [4000, 8000, 16000]
OLD_THRESHOLD = 0.8
OLD_CONCEPT_RELEVANCE = 0.3


def _recall(prepared, config: LoomConfig) -> list[float]:
    return [mean_recalls(prepared, config, budget)[0] for budget in BUDGETS]


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("cases", nargs="+", type=Path)
    parser.add_argument("--cache", type=Path, required=True, help="today's indexed workspaces")
    parser.add_argument("--old-cache", type=Path, required=True, help="the old layer's (built here)")
    parser.add_argument("--budgets", default=",".join(map(str, BUDGETS)), help="comma-separated token budgets")
    args = parser.parse_args(argv)
    BUDGETS[:] = [int(b) for b in args.budgets.split(",")]
    # density 0.1 for every message, as before a question had its own weight (question_density)
    density = LoomConfig(question_density=0.0).with_(weights={"density": 0.1})
    topics = LoomConfig(concept_relevance=OLD_CONCEPT_RELEVANCE)
    out: dict = {}
    today = run.Workbench(cache_dir=args.cache)
    for path in args.cases:
        cases, _ = run.load_cases(path)
        rows = out.setdefault(path.stem, {})
        prepared = prepare(cases, today)
        rows[f"default (a question or follow-up {LoomConfig().question_density})"] = _recall(prepared, LoomConfig())
        rows["default, topics counted too"] = _recall(prepared, topics)
        rows["density 0.1 for every message"] = _recall(prepared, density)
    # the old layer: units linked one by one at 0.8, never rebuilt into topics
    indexer.needs_concept_rebuild = lambda *a, **k: False
    run.LoomConfig = lambda: LoomConfig(concept_threshold=OLD_THRESHOLD)
    old = run.Workbench(cache_dir=args.old_cache)
    old_config = LoomConfig(concept_threshold=OLD_THRESHOLD, question_density=0.0,
                            concept_relevance=OLD_CONCEPT_RELEVANCE).with_(weights={"density": 0.1})
    for path in args.cases:
        cases, _ = run.load_cases(path)
        prepared = prepare(cases, old)
        graph = prepared[0].loom.graph
        print(f"{path.stem}: old layer {len(graph.concept_vectors)} concepts for {len(graph.content_vectors)} units")
        out[path.stem] = {"old layer, density 0.1": _recall(prepared, old_config), **out[path.stem]}
    for name, rows in out.items():
        print(f"\n{name}: line recall at {' / '.join(str(b) for b in BUDGETS)}")
        for label, values in rows.items():
            print(f"  {label:42} " + " / ".join(f"{v:.3f}" for v in values))
    return out


if __name__ == "__main__":
    main()
