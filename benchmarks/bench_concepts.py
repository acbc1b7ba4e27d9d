"""Whether the concept layer is topics (issue 15): per graph, threshold linking against the
community rebuild, with the figures the issue asks for.

A script that prints figures, not a test::

    .venv/bin/python benchmarks/bench_concepts.py --repo /work/.mirror/pallets+flask/repo \\
        --json benchmarks/last_concepts_run.json

Graphs: loom-nb's own package (``loom_nb/``, indexed with MiniLM into ``--work``, so a
second run embeds nothing), the three sample sessions as shipped, and each ``--repo``
(indexed the same way; none of its code is kept here). For each graph three layers are
measured on the same content vectors:

* ``seed 0.8``: threshold linking (seed 000 §4.3) at the seed's 0.8, node by node in order;
* ``calibrated``: threshold linking at the embedder's calibrated threshold;
* ``rebuild``: :func:`loom_nb.core.concepts.rebuild_concepts` (communities), as indexing
  now leaves it.

Columns: concepts per 1,000 content nodes, median and largest concept size, mean cosine
within and between concepts, their difference, and seconds. The calibration line gives,
after the rebuild, the cosine that 80 % of content nodes reach to their concept's vector:
what :data:`loom_nb.core.config.CONCEPT_THRESHOLDS` records. The bar (MiniLM on loom-nb's
code): at most 125 concepts per 1,000, median size at least 4, separation at least 0.15.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from loom_nb import Loom, LoomConfig, LoomGraph, MiniLMEmbedder  # noqa: E402
from loom_nb.core.concepts import concept_quality, rebuild_concepts  # noqa: E402
from loom_nb.core.config import calibrated_concept_threshold  # noqa: E402
from loom_nb.demo import open_sample  # noqa: E402
from _report import machine, table  # noqa: E402

SAMPLES = ("auth-debugging", "sourdough-notes", "loom-nb-code")
CALIBRATION_SHARE = 0.2
"""The calibrated threshold is this percentile of member-to-concept cosines, after a rebuild."""


def relinked(graph: LoomGraph, threshold: float) -> LoomGraph:
    """The same content vectors linked node by node at ``threshold`` (no text, no tokens)."""
    fresh = LoomGraph(LoomConfig(concept_threshold=threshold), embedding_model=graph.embedding_model, namer=lambda t: ("", ""))
    for node_id in graph.content_vectors.ids:
        fresh.add_content(node_id, graph.content_vectors.get(node_id), tokens=1)
    return fresh


def measure(name: str, loom: Loom) -> dict:
    graph = loom.graph
    calibrated = calibrated_concept_threshold(graph.embedding_model)
    rows = {}
    for label, threshold in (("seed 0.8", 0.8), (f"calibrated {calibrated:g}", calibrated)):
        started = time.perf_counter()
        linked = relinked(graph, threshold)
        rows[label] = dict(concept_quality(linked).as_dict(), seconds=round(time.perf_counter() - started, 2))
    started = time.perf_counter()
    quality = rebuild_concepts(graph)
    rows["rebuild"] = dict(quality.as_dict(), seconds=round(time.perf_counter() - started, 2))
    measured = float(np.percentile(graph.link_weights, 100 * CALIBRATION_SHARE)) if len(graph.link_weights) else float("nan")
    return {"graph": name, "embedder": graph.embedding_model, "layers": rows, "calibration": round(measured, 3),
            "names": [graph.node(c).name for c in graph.concept_vectors.ids[:8]]}


def _cell(value: float | None, spec: str) -> str:
    """A figure for the table; ``as_dict`` gives None where there is no pair to measure
    (a layer of one-member concepts has no within-concept cosine)."""
    return "–" if value is None else format(value, spec)


def indexed(path: Path, work: Path) -> Loom:
    folder = work / path.name
    loom = Loom.open(folder, embedder=MiniLMEmbedder(), workspace=path)
    loom.index(path, progress=False, wait=True)
    loom.save()
    return loom


def main(argv: list[str] | None = None) -> list[dict]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repo", type=Path, action="append", default=[], help="a repository to index and measure")
    parser.add_argument("--work", type=Path, default=ROOT / "build" / "concepts-bench", help="sessions kept between runs")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args(argv)
    print(machine())
    results = [measure("loom_nb (self-index)", indexed(ROOT / "loom_nb", args.work))]
    results += [measure(f"sample {name}", open_sample(name)) for name in SAMPLES]
    results += [measure(repo.name if repo.name != "repo" else repo.parent.name, indexed(repo, args.work)) for repo in args.repo]
    head = ["graph", "layer", "content", "concepts", "per 1,000", "median", "largest", "within", "between", "separation", "s"]
    body = []
    for r in results:
        for layer, q in r["layers"].items():
            body.append([r["graph"], layer, q["content"], q["concepts"], f"{q['per_thousand']:.0f}", f"{q['median_size']:g}",
                         q["largest"], _cell(q["within"], ".3f"), _cell(q["between"], ".3f"), _cell(q["separation"], "+.3f"),
                         q["seconds"]])
    table("Concept layers: threshold linking against the rebuild", head, body)
    for r in results:
        print(f"{r['graph']} ({r['embedder']}): after the rebuild, 80 % of nodes reach {r['calibration']:.3f} to their concept; "
              f"first names: {', '.join(r['names'])}")
    self_rebuild = results[0]["layers"]["rebuild"]
    ok = self_rebuild["per_thousand"] <= 125 and self_rebuild["median_size"] >= 4 and self_rebuild["separation"] >= 0.15
    print(f"bar on loom-nb's code (<= 125 per 1,000, median >= 4, separation >= 0.15): {'PASS' if ok else 'MISS'}")
    if args.json:
        args.json.write_text(json.dumps({"machine": machine(), "results": results}, indent=1) + "\n")
    return results


if __name__ == "__main__":
    main()
