"""Same answers with either vector store (issue 20): numpy files against Qdrant local mode.

A script that prints figures and exits 1 on any difference, not a test::

    .venv/bin/python benchmarks/check_qdrant_same_answers.py [--cases datasets/self.jsonl] \\
        [--budgets 4000,8000,16000] [--embedder minilm] [--json benchmarks/last_qdrant_same_answers_run.json]

The workspace of the cases (loom-nb's own package for ``self.jsonl``) is indexed twice with
the default embedder, once into a session that keeps its vectors in numpy files and once
into one that keeps them in a Qdrant collection (qdrant-client's embedded local mode, so no
server is needed); the second index reuses the first one's embeddings through a shared cache,
which changes no vector. Both sessions are saved, then opened again from disk, and every case
is asked of both at each budget on the default path (``Loom.query(question, budget=…)``).
Compared per case and budget: the loaded node ids, in order, and the ranking's scores.

A second part asks Qdrant itself: for each question, the collection's own exact search over
the content points (``query_points``, top 20) against numpy's ``content_vectors @ q`` on the
same vectors: are the ids and their order the same, and how far apart are the scores?
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks._report import table  # noqa: E402


def index_both(workspace: Path, scratch: Path, embedder_name: str):
    from loom_nb import Loom
    from loom_nb.core.embedding import CachedEmbedder
    from loom_nb.embed import embedder_named

    shared = CachedEmbedder(embedder_named(embedder_name))
    seconds = {}
    for name, vectors in (("numpy", None), ("qdrant", f"qdrant+local://{scratch / 'qdrant'}/loom-self")):
        started = time.perf_counter()
        loom = Loom.open(scratch / name, embedder=shared, vectors=vectors)
        loom.index(workspace, wait=True, progress=False)
        loom.save()
        seconds[name] = time.perf_counter() - started
    return Loom.open(scratch / "numpy"), Loom.open(scratch / "qdrant"), seconds


def compare_answers(by_numpy, by_qdrant, cases, budgets) -> tuple[list[list], list[dict]]:
    rows, differences = [], []
    for budget in budgets:
        same, loaded, worst = 0, 0, 0.0
        for case in cases:
            a, b = by_numpy.query(case.query, budget=budget), by_qdrant.query(case.query, budget=budget)
            worst = max(worst, float(np.max(np.abs(a.ranking.scores - b.ranking.scores))) if len(a.ranking.scores) else 0.0)
            loaded += len(a.loaded)
            if a.loaded == b.loaded:
                same += 1
            else:
                differences.append({"case": case.id, "budget": budget, "numpy": a.loaded, "qdrant": b.loaded})
        rows.append([f"{budget:,}", len(cases), same, loaded, f"{worst:.1e}"])
    return rows, differences


TIE = 1e-6
"""Scores closer than this are a tie to float32 arithmetic: the dot product of two 384-float
vectors summed in another order differs by a few units of the last place (about 3e-8 here)."""


def same_vectors(a, b) -> bool:
    """Same rows, ids and float32 bits in all three vector tables (creation times differ
    between two index runs, so ``LoomGraph.__eq__`` would not do)."""
    ga, gb = a.graph, b.graph
    tables = all(ta.ids == tb.ids and np.array_equal(ta.matrix, tb.matrix) and ta.matrix.tobytes() == tb.matrix.tobytes()
                 for ta, tb in ((ga.content_vectors, gb.content_vectors), (ga.concept_vectors, gb.concept_vectors)))
    chunks = ga.chunk_vectors.keys() == gb.chunk_vectors.keys() and all(
        ga.chunk_vectors[k].tobytes() == gb.chunk_vectors[k].tobytes() for k in ga.chunk_vectors)
    return tables and chunks and ga.edge_columns() == gb.edge_columns()


def compare_search(by_numpy, by_qdrant, cases, top: int = 20) -> dict:
    """Qdrant's own exact search against numpy's matrix product, on the same vectors."""
    from qdrant_client import models

    from loom_nb.core.qdrant_store import connect

    table_ = by_numpy.graph.content_vectors
    same_ids, same_order, worst, near_ties = 0, 0, 0.0, 0
    location = by_qdrant.vectors
    only_content = models.Filter(must=[models.FieldCondition(key="kind", match=models.MatchValue(value="content"))])
    with connect(location, by_qdrant.folder) as client:
        for case in cases:
            q = by_numpy.embedder.embed([case.query])[0]
            sims = table_.matrix @ q
            order = np.argsort(-sims, kind="stable")[:top]
            mine = [(table_.ids[i], float(sims[i])) for i in order]
            hits = client.query_points(location.collection, query=q.tolist(), limit=top, query_filter=only_content,
                                       with_payload=["node"]).points
            theirs = [(h.payload["node"], float(h.score)) for h in hits]
            same_ids += {n for n, _ in mine} == {n for n, _ in theirs}
            same_order += [n for n, _ in mine] == [n for n, _ in theirs]
            scores = dict(theirs)
            worst = max(worst, max(abs(s - scores[n]) for n, s in mine if n in scores))
            # where the two orders differ, were the two nodes' numpy scores (near) equal?
            swapped = [(a, b) for (a, _), (b, _) in zip(mine, theirs) if a != b]
            near_ties += bool(swapped) and all(abs(sims[table_.index[a]] - sims[table_.index[b]]) <= TIE for a, b in swapped)
    return {"cases": len(cases), "top": top, "same_ids": same_ids, "same_order": same_order, "max_abs_score_diff": worst,
            "differences_at_near_ties": near_ties}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cases", default=str(ROOT / "datasets" / "self.jsonl"))
    parser.add_argument("--budgets", default="4000,8000,16000")
    parser.add_argument("--embedder", default="minilm", help="minilm (the default path) or hashing (fast)")
    parser.add_argument("--json", help="write the figures here")
    args = parser.parse_args(argv)

    from loom_nb.evaluation import load_cases

    cases, errors = load_cases(args.cases)
    if errors:
        print("\n".join(errors), file=sys.stderr)
    cases = [c for c in cases if c.workspace is not None and not c.history]
    workspaces = {c.workspace for c in cases}
    if len(workspaces) != 1:
        raise SystemExit(f"expected the cases to share one workspace, found {sorted(map(str, workspaces))}")
    budgets = [int(b) for b in args.budgets.split(",")]
    with tempfile.TemporaryDirectory(prefix="loom-qdrant-check-") as scratch:
        by_numpy, by_qdrant, seconds = index_both(workspaces.pop(), Path(scratch), args.embedder)
        counts = by_numpy.graph.counts()
        rows, differences = compare_answers(by_numpy, by_qdrant, cases, budgets)
        search = compare_search(by_numpy, by_qdrant, cases)
        identical_graphs = same_vectors(by_numpy, by_qdrant)
    table(f"Loaded items, numpy vs Qdrant local mode ({len(cases)} cases of {Path(args.cases).name}; "
          f"{counts['content']:,} content nodes, embedder {by_numpy.embedder.model_id})",
          ["budget", "cases", "identical loaded ids", "items loaded", "max |score diff|"], rows,
          note=f"same ids, edges and vectors bit for bit after the round trip: {identical_graphs}; "
               f"index + save: numpy {seconds['numpy']:.1f} s, qdrant {seconds['qdrant']:.1f} s (embeddings shared)")
    table("Qdrant's own exact search (query_points, top 20 content points) vs numpy content_vectors @ q",
          ["cases", "same 20 ids", "same order", "max |score diff|", "order differs only at near-ties"],
          [[search["cases"], search["same_ids"], search["same_order"], f"{search['max_abs_score_diff']:.1e}",
            f"{search['differences_at_near_ties']} of {search['cases'] - search['same_order']}"]],
          note=f"near-tie: the swapped nodes' numpy scores differ by at most {TIE:g} (float32 sums in another order)")
    for d in differences:
        print(f"DIFFERENT {d['case']} at {d['budget']}: numpy {d['numpy']} qdrant {d['qdrant']}")
    if args.json:
        where = Path(args.cases).resolve()
        Path(args.json).write_text(json.dumps({"cases": str(where.relative_to(ROOT)) if where.is_relative_to(ROOT) else str(where), "embedder": by_numpy.embedder.model_id,
                                               "content_nodes": counts["content"], "same_vectors": identical_graphs,
                                               "budgets": [dict(zip(["budget", "cases", "identical", "loaded", "max_score_diff"],
                                                                    [budgets[i], *r[1:4], float(r[4])])) for i, r in enumerate(rows)],
                                               "differences": differences, "qdrant_search": search}, indent=1) + "\n")
    return 1 if differences or not identical_graphs else 0


if __name__ == "__main__":
    sys.exit(main())
