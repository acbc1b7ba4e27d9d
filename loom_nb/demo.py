"""``make demo``: the engine on two kinds of knowledge, with the embedded default.

1. A debugging conversation (``sample_sessions/auth-debugging``): three queries of
   different complexity, each with its manifest, budget split and score table.
2. loom-nb's own source, indexed with tree-sitter (the self-referential dataset of seed 000
   §8.2), answering the seed's three example queries.

Runs on MiniLM in-process; no server is needed. Both sessions are saved.
"""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path

from .embed import Embedder
from .engine import Loom

SAMPLE = Path(__file__).resolve().parent.parent / "sample_sessions" / "auth-debugging"
PACKAGE = Path(__file__).resolve().parent
SELF_QUERIES = (
    ("How does the ranking engine score content?", "rank.py"),
    ("What format is graph.json?", "store.py"),
    ("Explain input classification", "classify.py"),
)


def build_session(sample: Path, out: Path, embedder: Embedder | None = None) -> Loom:
    """A fresh session in ``out`` with every source listed in ``sample/session.json``."""
    spec = json.loads((sample / "session.json").read_text(encoding="utf-8"))
    if out.exists():
        shutil.rmtree(out)
    loom = Loom(out, embedder=embedder)
    ids_by_file: dict[str, str] = {}
    for item in spec["sources"]:
        if "summary_of" in item:
            target = ids_by_file[item["summary_of"]]
            node = loom.add(item["text"], source=item.get("source", "user"), summary_of=target).nodes[0]
            print(f"  summary {node.id} of {target}")
            continue
        text = (sample / item["file"]).read_text(encoding="utf-8")
        result = loom.add(text, type=item.get("type", "input"), source=item.get("source", "user"), reason=item.get("reason", ""))
        ids_by_file[item["file"]] = result.nodes[-1].id
        for node, link in zip(result.nodes, result.links):
            print(f"  {node.id:<4} {node.type:<9} {node.tokens:>5} tok  {item['file']}: {link}")
    return loom


def run_demo(out: Path, sample: Path = SAMPLE, embedder: Embedder | None = None, window: int = 4096) -> Loom:
    started = time.perf_counter()
    print(f"Building a session from {sample.name} into {out} …")
    loom = build_session(sample, out, embedder)
    print(f"\n{loom}\n")
    queries = json.loads((sample / "session.json").read_text(encoding="utf-8"))["queries"]
    for n, query in enumerate(queries, 1):
        result = loom.query(query, window=window)
        print("=" * 100)
        print(f"Query {n} of {len(queries)} (window {window:,} tokens)")
        print(result)
        print()
    path = loom.save()
    print("=" * 100)
    print(f"Saved the session to {path.parent} ({time.perf_counter() - started:.1f} s).")
    print(f"Try: loom-nb show {path.parent}   or   loom-nb query {path.parent} \"your question\"")
    return loom


def run_self_demo(out: Path, embedder: Embedder | None = None, budget: int = 3000) -> Loom:
    """Index loom-nb's own package and answer seed 000's example queries."""
    started = time.perf_counter()
    print("=" * 100)
    print(f"Indexing loom-nb's own source ({PACKAGE}) into {out} …")
    loom = Loom.open(out, embedder=embedder)
    print(loom.index(PACKAGE))
    for query, expected in SELF_QUERIES:
        result = loom.query(query, budget=budget, mode="fused")
        top = result.rows(5)
        print("-" * 100)
        print(f"{query}  (expected on top: {expected})")
        for row in top:
            print(f"  {row.score:.3f}  {row.decision:<13} {row.title[:72]}")
        print(f"  manifest: {result.packed.relevant_count} relevant, {len(result.loaded)} loaded, "
              f"{result.packed.context_tokens:,} of {budget:,} tokens; {result.seconds * 1000:.0f} ms")
    path = loom.save()
    print(f"Saved the code session to {path.parent} ({time.perf_counter() - started:.1f} s; a second run re-indexes only what changed).")
    return loom
