"""A cheaper first-pass embedder (issue 16): MiniLM against a static table distilled from it.

A script that prints figures, not a test. Build the table first (30 s), then run::

    PYTHONPATH=. .venv/bin/python tools/build_static_embedder.py --out /tmp/loom-static/minilm_static_256.npz
    PYTHONPATH=. .venv/bin/python benchmarks/bench_static_embedder.py \\
        --matrix /tmp/loom-static/minilm_static_256.npz --json benchmarks/last_static_embedder_run.json

In one run, for each embedder (``minilm``: the default; ``static``: ``minilm-static-256``):

1. Cold index: a fresh session folder, a new embedder (its model loaded inside the timing; the
   libraries imported before), ``loom.index(<tree>/loom_nb, wait=True)``. Every ``embed`` call
   the index makes is timed and its texts kept: texts per second is those texts (loom_nb's own
   units, the same list for both, checked) over the seconds spent in ``embed``.
2. Quality through the default path (strategy ``loom``), as ``bench_quality.py`` measures it:
   line and file recall on ``datasets/self.jsonl`` and ``datasets/followups.jsonl`` at 4k, 8k and
   16k, and on ``datasets/notes.jsonl`` at 500, 1,000 and 2,000 tokens. The vectors of step 1
   are reused (the same texts), so only what differs is embedded again; each embedder keeps its
   own ``--cache`` folder.
3. The rule of issue 16: the static model may become the default only if the default path's
   line recall stays within 0.01 of MiniLM's at 4k, 8k and 16k on self and followups.

The tree indexed and graded is ``--rev`` (the commit this branch left main at, by default)
exported to a temporary folder with ``git archive``, so the gold line ranges match the code
they were written against, whatever this checkout adds.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from _report import machine, peak_rss_mb, table  # noqa: E402

SETS = {"self": (4000, 8000, 16000), "followups": (4000, 8000, 16000), "notes": (500, 1000, 2000)}
RULE_SETS = ("self", "followups")
TOLERANCE = 0.01


class Timed:
    """An embedder that times its inner one's ``embed`` and keeps the texts it was given."""

    def __init__(self, inner):
        self.inner = inner
        self.texts: list[str] = []
        self.seconds = 0.0

    @property
    def model_id(self) -> str:
        return self.inner.model_id

    @property
    def dim(self) -> int:  # a static table's width is known once it is loaded
        return self.inner.dim

    def prepare(self) -> None:
        if hasattr(self.inner, "prepare"):
            self.inner.prepare()

    def embed(self, texts):
        texts = list(texts)
        started = time.perf_counter()
        out = self.inner.embed(texts)
        self.seconds += time.perf_counter() - started
        self.texts.extend(texts)
        return out


def make(name: str, matrix: str | None):
    from loom_nb.embed import MiniLMEmbedder

    if name == "minilm":
        return MiniLMEmbedder()
    sys.path.insert(0, str(ROOT / "tools"))
    from build_static_embedder import StaticEmbedder  # not in the package: it missed the rule (README)

    return StaticEmbedder(matrix)


def export_tree(rev: str, into: Path) -> Path:
    """``loom_nb/`` (its samples: some notes cases read their sources) and ``datasets/`` at ``rev``, under ``into``."""
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", rev, "loom_nb", "datasets"], check=True, capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive, check=True)
    return into


def cold_index(name: str, matrix: str | None, tree: Path):
    from loom_nb import Loom

    session = Path(tempfile.mkdtemp(prefix=f"loom-static-{name}-"))
    try:
        started = time.perf_counter()
        timed = Timed(make(name, matrix))
        t = time.perf_counter()
        timed.prepare()
        load = time.perf_counter() - t
        loom = Loom.open(session, embedder=timed)
        report = loom.index(tree / "loom_nb", progress=False, wait=True)
        seconds = time.perf_counter() - started
    finally:
        shutil.rmtree(session, ignore_errors=True)
    return loom, timed, {"cold_index_s": seconds, "model_load_s": load, "embed_s": timed.seconds,
                         "texts": len(timed.texts), "files": report.files_indexed, "nodes": report.nodes_added,
                         "texts_per_s": len(timed.texts) / timed.seconds if timed.seconds else None,
                         "text_chars_mean": float(np.mean([len(t) for t in timed.texts])) if timed.texts else 0.0}


def quality(loom, tree: Path, cache: Path) -> dict:
    from loom_nb.evaluation import evaluate_budgets, load_cases

    out = {}
    for name, budgets in SETS.items():
        cases, errors = load_cases(tree / "datasets" / f"{name}.jsonl")
        for e in errors:
            print(f"warning: {e}", file=sys.stderr)
        started = time.perf_counter()
        reports = evaluate_budgets(cases, list(budgets), ("loom",), embedder=loom.embedder, cache_dir=cache)
        rows = {}
        for budget, report in reports.items():
            row = report.table()[0]
            rows[budget] = {"cases": row["cases"], "failed": row["failed"], "line_recall": row["line_recall"],
                            "file_recall": row["file_recall"], "tokens": row["tokens"]}
        out[name] = {"seconds": time.perf_counter() - started, "budgets": rows}
        print(f"  {name}: {len(cases)} cases, {out[name]['seconds']:.0f} s", file=sys.stderr)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--matrix", default=None, help="the static table (default: tools/build_static_embedder.py's --out)")
    parser.add_argument("--embedders", default="minilm,static")
    parser.add_argument("--rev", default=None, help="the commit whose loom_nb/ and datasets/ are indexed and graded "
                        "(default: where this branch left main)")
    parser.add_argument("--cache", default="/tmp/loom-static-bench", help="one evaluation cache folder per embedder under this")
    parser.add_argument("--json", help="write every figure here")
    args = parser.parse_args(argv)
    rev = args.rev or subprocess.run(["git", "-C", str(ROOT), "merge-base", "HEAD", "main"], check=True,
                                     capture_output=True, text=True).stdout.strip()
    import onnxruntime  # noqa: F401 - library imports stay outside the cold timings; model loads do not
    import tokenizers  # noqa: F401

    names = [n for n in args.embedders.split(",") if n]
    result: dict = {"machine": machine(), "rev": rev, "matrix": args.matrix, "tolerance": TOLERANCE, "embedders": {}}
    texts_digest = {}
    with tempfile.TemporaryDirectory(prefix="loom-static-tree-") as tmp:
        tree = export_tree(rev, Path(tmp))
        for name in names:
            print(f"{name}: cold index of loom_nb/ at {rev[:8]}", file=sys.stderr)
            loom, timed, speed = cold_index(name, args.matrix, tree)
            texts_digest[name] = hashlib.sha256("\0".join(timed.texts).encode()).hexdigest()
            print(f"  {speed['texts']} texts, {speed['cold_index_s']:.1f} s cold, {speed['texts_per_s']:.0f} texts/s", file=sys.stderr)
            cache = Path(args.cache) / name
            result["embedders"][name] = {"model_id": loom.embedder.model_id, **speed, "quality": quality(loom, tree, cache)}
            del loom, timed
    result["same_texts"] = len(set(texts_digest.values())) == 1
    result["peak_rss_mb"] = peak_rss_mb()

    e = result["embedders"]
    table("Speed: loom_nb/ indexed cold (fresh session, wait=True)",
          ["embedder", "model", "texts", "texts/s", "embed s", "model load s", "cold index s"],
          [[n, d["model_id"], d["texts"], d["texts_per_s"], d["embed_s"], d["model_load_s"], d["cold_index_s"]] for n, d in e.items()],
          note="" if result["same_texts"] else "warning: the embedders were given different texts")
    rows = []
    for set_name, budgets in SETS.items():
        for budget in budgets:
            row = [set_name, f"{budget:,}"]
            for n in names:
                q = e[n]["quality"][set_name]["budgets"][budget]
                row += [f"{q['line_recall']:.3f}", f"{q['file_recall']:.3f}"]
            if len(names) == 2:
                a, b = (e[n]["quality"][set_name]["budgets"][budget]["line_recall"] for n in names)
                row.append(f"{b - a:+.3f}")
            rows.append(row)
    header = ["set", "budget"] + [f"{n} {m}" for n in names for m in ("lineR", "fileR")]
    if len(names) == 2:
        header.append(f"lineR {names[1]} - {names[0]}")
    table("Quality through the default path (strategy loom)", header, rows)
    if names[:2] == ["minilm", "static"]:
        gaps = {f"{s}@{b}": e["minilm"]["quality"][s]["budgets"][b]["line_recall"] - e["static"]["quality"][s]["budgets"][b]["line_recall"]
                for s in RULE_SETS for b in SETS[s]}
        result["rule"] = {"gaps": gaps, "pass": all(g <= TOLERANCE for g in gaps.values())}
        worst = max(gaps, key=gaps.get)
        print(f"\nThe rule (line recall within {TOLERANCE} of MiniLM at 4k/8k/16k on self and followups): "
              f"{'PASS' if result['rule']['pass'] else 'MISS'} (largest drop {gaps[worst]:+.3f} at {worst})")
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=1, default=float) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
