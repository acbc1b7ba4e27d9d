"""Warm queries that load chunks of large nodes (issue 16): the chunk path of ``pack``.

A script that prints figures, not a test. Code is cut into units of at most 800 tokens, so a
session of code alone rarely has a node over ``large_node_tokens``: this one copies a saved
session, pastes real long documents into it as single notes (``loom.add(text, split=False)``,
as a notebook user pastes a log or a paper), then asks questions taken from those documents::

    .venv/bin/python benchmarks/bench_chunk_path.py --session /tmp/sphinx-minilm --workspace /tmp/repos/sphinx \\
        --docs /tmp/repos/sphinx/doc --count 120 --json benchmarks/last_chunk_path_run.json

Reported per budget: the median and largest warm query (``loom.query(q, budget=…)``, the
default path) and how many chunk blocks the questions loaded; and the same questions with the
chunk facts forgotten before each query (what every query paid before they were kept: the
tokens and terms of every chunk of every large candidate worked out again).
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

SUFFIXES = (".rst", ".md", ".txt", ".log")


def long_documents(folder: Path, count: int, min_tokens: int) -> list[tuple[Path, str]]:
    """The ``count`` first documents under ``folder`` (sorted by path) over ``min_tokens``."""
    from loom_nb.core.tokens import count_tokens

    found = []
    for path in sorted(p for p in folder.rglob("*") if p.suffix in SUFFIXES and p.is_file()):
        text = path.read_text(encoding="utf-8", errors="replace")
        if count_tokens(text) > min_tokens:
            found.append((path, text))
        if len(found) == count:
            break
    return found


def questions_from(docs: list[tuple[Path, str]], n: int, seed: int = 7) -> list[str]:
    """A sentence-long line from the middle of ``n`` of the documents: what a user asks after pasting one."""
    rng = random.Random(seed)
    out = []
    for _, text in rng.sample(docs, min(n, len(docs))):
        lines = [line.strip() for line in text.splitlines() if len(line.split()) >= 8]
        if lines:
            out.append(lines[len(lines) // 2][:200])
    return out


def timed(loom, questions: list[str], budget: int, forget: bool) -> dict:
    from loom_nb.core import chunks

    times, blocks = [], 0
    for q in questions:
        if forget:
            chunks._FACTS.clear()
        start = time.perf_counter()
        result = loom.query(q, budget=budget)
        times.append(time.perf_counter() - start)
        blocks += sum(1 for row in result.rows(len(result.loaded) + 50) if row.decision == "chunk")
    return {"median_ms": round(1000 * statistics.median(times), 1), "max_ms": round(1000 * max(times), 1),
            "chunk_blocks": blocks}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--session", type=Path, required=True, help="a saved session (copied; the original is not changed)")
    parser.add_argument("--docs", type=Path, required=True, help="a folder of long documents to paste in")
    parser.add_argument("--workspace", type=Path, help="the folder the session indexed (confirms its file references)")
    parser.add_argument("--count", type=int, default=120)
    parser.add_argument("--questions", type=int, default=30)
    parser.add_argument("--min-tokens", type=int, default=5000,
                        help="documents over this many tokens (over half an 8k budget, so they load as chunks)")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    from loom_nb import Loom

    work = Path(tempfile.mkdtemp(prefix="loom-chunk-path-"))
    try:
        shutil.copytree(args.session, work / "session")
        loom = Loom.open(work / "session", create=False, workspace=args.workspace)
        units = len(loom.graph.content_vectors)
        docs = long_documents(args.docs, args.count, max(args.min_tokens, loom.graph.config.large_node_tokens))
        start = time.perf_counter()
        for path, text in docs:
            loom.add(text, split=False, title=path.name, source="bench")
        added = time.perf_counter() - start
        chunked = sum(1 for n in loom.graph.content_nodes() if n.chunks)
        questions = questions_from(docs, args.questions)
        loom.query(questions[0], budget=8000)  # warm-up: the model, the BPE table, the arrays
        row = {"session": args.session.name, "units": units, "large_nodes_added": len(docs),
               "chunked_nodes": chunked, "add_s": round(added, 1), "questions": len(questions)}
        for budget in (8000, 16000):
            timed(loom, questions, budget, forget=False)  # the first pass works the facts out
            row[f"{budget // 1000}k"] = timed(loom, questions, budget, forget=False)
            row[f"{budget // 1000}k_facts_forgotten"] = timed(loom, questions, budget, forget=True)
        print(json.dumps(row, indent=1))
        if args.json:
            args.json.write_text(json.dumps(row, indent=1) + "\n")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
