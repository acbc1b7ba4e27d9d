"""Vector stores side by side (issue 20): numpy files against Qdrant local mode.

A script that prints figures, not a test::

    .venv/bin/python benchmarks/bench_vectors.py [--sizes 10000,50000] [--dim 384] [--json benchmarks/last_vectors_run.json]

Synthetic unit vectors (dimension 384, MiniLM's), one content row each, go through the same
:class:`~loom_nb.core.vector_store.VectorStore` calls a session save and load make, for each
store in one run:

* **write**: ``describe`` + ``write`` of all n rows (an index run's first save), rows/s;
* **re-save**: the same after one row changed (a one-file refresh): numpy rewrites the file,
  Qdrant sends the one new point; ``collect`` (deleting the dropped point) included;
* **load**: ``read`` of all n rows (what ``Loom.open`` does);
* **all-n scores**: what ranking needs per query, the similarity of every row: numpy's
  ``content_vectors @ q`` (:func:`loom_nb.core.rank.semantic_signal`), and Qdrant's
  ``query_points(limit=n)`` for comparison (ranking does not call it: it multiplies the table
  it loaded);
* **top-10**: ``np.argpartition`` on those scores, and ``query_points(limit=10)``.

Query figures are the median of ``--queries`` random unit queries after one warm-up.
Local mode is qdrant-client's embedded, pure-Python store: it searches by brute force, keeps
each point as a pickled row in SQLite and commits each point on its own, so its write speed
is the disk's sync rate. A Qdrant server (Rust, HNSW index, batched writes) is far faster at
both; it could not be run here (no container runtime), so its figures are estimated below.

Paper estimates (one machine, 384 dimensions, float32)
------------------------------------------------------
Memory per 100k units:

* the vectors each loom-nb process holds for ranking: 100,000 x 384 x 4 B = **153.6 MB**
  (content rows); concepts add about 1/12 of that (one per ~12 members: 12.8 MB) and chunk
  rows of large nodes a few % (1,816 texts for 1,752 nodes on loom-nb's own repository: +4 %,
  6 MB) -- about **175 MB**, the same with either store;
* graph.json: 13.4 MB per 50k nodes on disk (bench_engine), so about 27 MB per 100k, plus
  16 digest characters a row with Qdrant (+1.8 MB for ~110k rows);
* a Qdrant server: the vectors again (153.6 MB + concepts and chunks, ~175 MB, in RAM or
  memory-mapped from disk), the HNSW graph (m = 16: about 2 x 16 links x 4 B = 128 B a point
  on level 0, ~14 MB for 110k points) and payloads (~120 B a point, ~13 MB): **~200 MB**;
* Qdrant local mode on disk: measured ``disk B/row`` below (about 4.2 KB a point at 384
  dimensions: the pickled point, its float list and payload), so **~420 MB per 100k**, and
  all of it in memory while a load or save holds the storage open.

Query time at 1M units:

* ranking's semantic signal reads all n rows per query: 1,000,000 x 384 x 4 B = 1.54 GB,
  far past any cache, so it runs at memory bandwidth: ``matrix @ q`` measured 24.7 ms on
  500,000 rows here (768 MB at 31 GB/s, numpy with 2 threads), so **about 50 ms** at 1M. The
  whole rank + pack measured 26.4 ms at 50k (bench_engine); if every signal scales linearly,
  **about 0.5 s** at 1M, with 1.54 GB of vectors in each process (and graph.json: ~270 MB
  on disk, several times that parsed);
* loading them at ``Loom.open``: REST (what loom-nb uses) returns floats as JSON text, ~10 B a
  float, so 1M x 384 floats is ~4 GB of JSON: at ~50 MB/s of parsing, over a minute per open;
  gRPC would send 4 B a float (1.5 GB: ~15 s at 100 MB/s). So at
  1M units a process should not load every vector: ranking would have to ask Qdrant for the
  nearest few thousand (HNSW, ef = 128: a few thousand distance computations of 384 floats,
  ~1-3 ms on a server plus the round trip) and score the rest 0 on the semantic signal --
  an approximation that changes answers, not built here.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks._report import table  # noqa: E402


def unit_rows(rng, n: int, dim: int) -> np.ndarray:
    rows = rng.standard_normal((n, dim)).astype(np.float32)
    return rows / np.linalg.norm(rows, axis=1, keepdims=True)


def stored(matrix: np.ndarray):
    from loom_nb.core.vector_store import StoredVectors, row_keys

    empty = np.zeros((0, matrix.shape[1]), np.float32)
    ids = [f"n{i + 1}" for i in range(matrix.shape[0])]
    return StoredVectors(matrix, empty, empty, row_keys(ids, [], []), model="synthetic-384")


def document(entries: dict, vectors) -> dict:
    """Just enough of a graph.json for collect() to know which rows a state names."""
    return {"vectors": {**entries, "chunk_rows": []}, "content": {"id": [k for k, _ in vectors.keys["content"]]},
            "concepts": {"id": []}}


def timed(fn) -> tuple[float, object]:
    started = time.perf_counter()
    out = fn()
    return time.perf_counter() - started, out


def median_ms(fn, runs: int) -> float:
    fn()
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        fn()
        times.append(time.perf_counter() - started)
    return 1000 * statistics.median(times)


def disk_bytes(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())


def bench_store(name: str, location, folder: Path, matrix: np.ndarray, queries: np.ndarray) -> dict:
    """Length: one measurement per row of the table, in the order a session meets them."""
    from loom_nb.core.store import open_store

    n, dim = matrix.shape
    store = open_store(location, folder)
    vectors = stored(matrix)
    entries = store.describe(vectors, 1, None, "bench")
    write_s, _ = timed(lambda: store.write(vectors, entries))
    disk = disk_bytes(folder) / n  # one state's files (a save then removes the older ones)
    first = document(entries, vectors)

    changed = matrix.copy()
    changed[n // 2] = unit_rows(np.random.default_rng(1), 1, dim)[0]
    again = stored(changed)
    entries2 = store.describe(again, 2, first, "bench")

    def resave():
        store.write(again, entries2)
        store.collect(first, document(entries2, again))

    resave_s, _ = timed(resave)
    keys = again.keys
    load_s, loaded = timed(lambda: store.read(entries2, keys, dim, "synthetic-384"))
    assert loaded[0].tobytes() == changed.tobytes(), "a load must return the saved bits"
    table_ = loaded[0]

    from loom_nb.core.rank import semantic_signal

    picks = iter(np.resize(np.arange(len(queries)), 10_000))
    numpy_all = median_ms(lambda: semantic_signal(table_, queries[next(picks)]), len(queries))
    numpy_top = median_ms(lambda: np.argpartition(-(table_ @ queries[next(picks)]), 10)[:10], len(queries))
    row = {"store": name, "n": n, "write_s": write_s, "rows_per_s": n / write_s, "resave_s": resave_s, "load_s": load_s,
           "all_scores_ms": numpy_all, "top10_ms": numpy_top, "disk_bytes_per_row": disk}
    if location is not None:
        from loom_nb.core.qdrant_store import connect

        with connect(store.location, folder) as client:
            collection = store.location.collection
            row["qdrant_all_scores_ms"] = median_ms(
                lambda: client.query_points(collection, query=queries[next(picks)], limit=n), max(3, len(queries) // 4))
            row["qdrant_top10_ms"] = median_ms(lambda: client.query_points(collection, query=queries[next(picks)], limit=10), len(queries))
    return row


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="10000,50000")
    parser.add_argument("--dim", type=int, default=384)
    parser.add_argument("--queries", type=int, default=40)
    parser.add_argument("--json", help="write the figures here")
    args = parser.parse_args(argv)
    import warnings

    warnings.filterwarnings("ignore", message="Local mode is not recommended")  # said in the docstring
    rng = np.random.default_rng(0)
    results = []
    for n in (int(s) for s in args.sizes.split(",")):
        matrix = unit_rows(rng, n, args.dim)
        queries = unit_rows(rng, args.queries, args.dim)
        for name, location in (("numpy", None), ("qdrant local", "qdrant+local:qdrant/bench")):
            folder = Path(tempfile.mkdtemp(prefix="loom-bench-vectors-"))
            try:
                results.append(bench_store(name, location, folder, matrix, queries))
            finally:
                shutil.rmtree(folder, ignore_errors=True)
            r = results[-1]
            print(f"{name} n={n:,}: write {r['write_s']:.2f} s, load {r['load_s']:.2f} s", flush=True)
    rows = []
    for r in results:
        qdrant = "qdrant_all_scores_ms" in r
        rows.append([r["store"], f"{r['n']:,}", r["write_s"], f"{r['rows_per_s']:,.0f}", r["resave_s"], r["load_s"],
                     r["all_scores_ms"], r["top10_ms"],
                     r["qdrant_all_scores_ms"] if qdrant else "-", r["qdrant_top10_ms"] if qdrant else "-",
                     f"{r['disk_bytes_per_row']:,.0f}"])
    table(f"Vector stores, dimension {args.dim} (seconds unless ms)",
          ["store", "rows", "write s", "rows/s", "re-save 1 changed s", "load s", "ranking all-n ms", "top-10 ms",
           "store's all-n ms", "store's top-10 ms", "disk B/row"], rows,
          note="ranking all-n and top-10: numpy on the loaded table (what a query runs with either store); "
               "store's: Qdrant's own query_points, which ranking does not call")
    if args.json:
        Path(args.json).write_text(json.dumps({"dim": args.dim, "queries": args.queries, "results": results}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
