"""Where users wait (issue 16): a cold `loom-nb query`, the first query of a process, the first
useful query after `loom.index()`, and warm queries on real sessions.

A script that prints figures, not a test::

    .venv/bin/python benchmarks/bench_first_query.py --session build/demo-session-code \\
        --session /tmp/sqla-session --index-repo /tmp/repos/caddy --json benchmarks/last_first_query_run.json

For each ``--session`` (a saved session folder; index a public repository into one first,
with ``loom-nb index``, committing none of it):

* **cold CLI**: wall seconds of ``loom-nb query SESSION QUESTION --budget 8000``, a new
  process each time, for ``--runs`` questions it has never embedded (median), beside
  ``python -c "import loom_nb"`` measured in the same run (the package byte-compiled first, as an
  installed one is);
* **first and second query in one process**: ``Loom.open`` then two new questions at once,
  and again with a one-second pause after the open (a notebook user opens, then types);
* **warm queries**: the median and largest of the labelled self-set questions at 8,000 and
  16,000 tokens after one warm-up, with how many loaded blocks were chunks of a large node.

With ``--index-repo`` (a checkout of about a million tokens): a fresh session indexes it
with the default embedder and ``index()``'s defaults; reported are the seconds until
``index()`` returns, until a first query is answered, and until ``loom.wait()`` returns
(every vector in place).
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

QUESTIONS = [
    "where does a failed write leave the old file in place",
    "which part decides how many results fit the budget",
    "how are duplicate entries detected when reading the input",
    "what happens when the configuration names an unknown option",
    "where is the cache invalidated after a change",
    "how is the connection retried after a timeout",
    "which function parses the command line arguments",
]
SELF_CASES = ROOT / "datasets" / "self.jsonl"


def _wall(command: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run(command, check=True, capture_output=True, timeout=600)
    return time.perf_counter() - start


def cold_cli(session: Path, runs: int) -> dict:
    # byte-compiled first, as pip leaves an installed package: where PYTHONDONTWRITEBYTECODE is
    # set (this machine), an editable checkout would otherwise recompile ~100 modules per process
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(ROOT / "loom_nb")], check=True)
    cli = [sys.executable, "-m", "loom_nb.cli", "query", str(session)]
    imports, queries = [], []
    for k in range(runs):
        imports.append(_wall([sys.executable, "-c", "import loom_nb"]))
        question = f"{QUESTIONS[k % len(QUESTIONS)]} ({time.time_ns()})"  # never embedded before
        queries.append(_wall(cli + [question, "--budget", "8000"]))
    return {"cold_cli_s": round(statistics.median(queries), 3), "import_s": round(statistics.median(imports), 3)}


_IN_PROCESS = """
import sys, time, json
from loom_nb import Loom
start = time.perf_counter()
loom = Loom.open(sys.argv[1], create=False)
opened = time.perf_counter() - start
time.sleep(float(sys.argv[2]))
out = []
for q in sys.argv[3:5]:
    t = time.perf_counter(); loom.query(q, budget=8000); out.append(time.perf_counter() - t)
print(json.dumps({"open": opened, "first": out[0], "second": out[1]}))
"""


def first_and_second(session: Path, pause: float) -> dict:
    stamp = time.time_ns()
    done = subprocess.run([sys.executable, "-c", _IN_PROCESS, str(session), str(pause),
                           f"{QUESTIONS[0]} {stamp}", f"{QUESTIONS[1]} {stamp}"],
                          check=True, capture_output=True, text=True, timeout=600)
    return json.loads(done.stdout.strip().splitlines()[-1])


def warm(session: Path) -> dict:
    from loom_nb import Loom

    questions = [json.loads(line)["query"] for line in SELF_CASES.read_text().splitlines() if line.strip() and not line.startswith("#")]
    loom = Loom.open(session, create=False)
    loom.query(questions[0], budget=8000)
    row = {}
    for budget in (8000, 16000):
        times, chunks = [], 0
        for q in questions:
            t = time.perf_counter()
            result = loom.query(q, budget=budget)
            times.append(time.perf_counter() - t)
            chunks += sum(1 for row_ in result.rows(len(result.loaded) + 50) if row_.decision == "chunk")
        row[f"warm_{budget // 1000}k_median_ms"] = round(1000 * statistics.median(times), 1)
        row[f"warm_{budget // 1000}k_max_ms"] = round(1000 * max(times), 1)
        row[f"chunk_blocks_{budget // 1000}k"] = chunks
    return row


def index_repo(repo: Path, keep: Path | None = None) -> dict:
    from loom_nb import Loom

    folder = Path(tempfile.mkdtemp(prefix="loom-first-query-"))
    try:
        loom = Loom(keep or folder / "session")
        start = time.perf_counter()
        report = loom.index(repo, progress=False)
        returned = time.perf_counter() - start
        result = loom.query(QUESTIONS[0], budget=8000)
        first = time.perf_counter() - start
        loom.wait()
        full = time.perf_counter() - start
        if keep:
            loom.save()
        return {"repo": repo.name, "units": len(loom.graph.content_vectors), "pending_at_return": report.vectors_pending,
                "tokens": sum(n.tokens for n in loom.graph.content_nodes()),
                "index_returned_s": round(returned, 1), "first_query_answered_s": round(first, 1),
                "first_query_embedded_share": round(result.embedded_share, 3), "all_vectors_s": round(full, 1)}
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--session", action="append", type=Path, default=[])
    parser.add_argument("--index-repo", type=Path)
    parser.add_argument("--keep", type=Path, help="save the --index-repo session here (to measure it with --session after)")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    rows = []
    for session in args.session:
        from loom_nb import Loom

        units = len(Loom.open(session, create=False).graph.content_vectors)
        row = {"session": session.name, "units": units, **cold_cli(session, args.runs)}
        for pause in (0.0, 1.0):
            runs = [first_and_second(session, pause) for _ in range(3)]
            key = "now" if pause == 0 else "after_1s"
            row[f"first_{key}_ms"] = round(1000 * statistics.median(r["first"] for r in runs), 1)
            row[f"second_{key}_ms"] = round(1000 * statistics.median(r["second"] for r in runs), 1)
        row.update(warm(session))
        rows.append(row)
        print(json.dumps(row))
    repo_row = index_repo(args.index_repo, args.keep) if args.index_repo else None
    if repo_row:
        print(json.dumps(repo_row))
    if args.json:
        args.json.write_text(json.dumps({"sessions": rows, "index": repo_row}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
