"""``make demo``: build a session from ``sample_sessions/auth-debugging``, ask three queries.

Runs on the embedded default (MiniLM in-process); no server is needed. Prints, for each
query, the classification, the chosen mode, the manifest, the budget split and the top of
the score table, then saves the session folder.
"""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path

from .embed import Embedder
from .engine import Loom

SAMPLE = Path(__file__).resolve().parent.parent / "sample_sessions" / "auth-debugging"


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
    print(f"Saved the session to {path.parent} ({time.perf_counter() - started:.1f} s in all).")
    print(f"Try: loom-nb show {path.parent}   or   loom-nb query {path.parent} \"your question\"")
    return loom
