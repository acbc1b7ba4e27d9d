"""Selection quality on commit-derived cases: strategy × budget × repository.

A script that prints figures, not a test. The cases come from ``loom-nb mine`` (query: a
commit message; gold: the non-test source lines the commit changed, in the parent tree):

    .venv/bin/python -m loom_nb.cli mine /work/.mirror/pallets+flask/repo --out build/mined/flask.jsonl --max 50 --cache /tmp/loom-mined/flask
    .venv/bin/python -m loom_nb.cli mine /work/.mirror/gin-gonic+gin/repo --out build/mined/gin.jsonl --max 50 --cache /tmp/loom-mined/gin
    .venv/bin/python benchmarks/bench_quality.py build/mined/flask.jsonl build/mined/gin.jsonl \\
        --budgets 4000,8000,16000 --cache build/eval-cache --json benchmarks/last_quality_run.json

Each cases file is one repository (its name is the file's stem). Every workspace is indexed
once (the embedding cache is shared across the near-identical parent trees, and kept in
``--cache``); all budgets and strategies run on the same index. The table gives, per
repository, budget and strategy: line recall, gold-file recall, reference precision and
tokens used; then the bar of issue 12 (the default path, ``loom``, within 0.01 line recall of
the best forced mode and ahead of ``bm25-chunks`` on lines and files), PASS or MISS, with the
interval of a mode's lead over the default (a paired bootstrap over the cases,
``EvalReport.compare``: one case moves a mean of 40 by 0.025); what each
mode costs and earns (milliseconds saved, budget used, what share of nodes counted relevant and
how many of those were gold); and the room ``bm25-chunks`` leaves a margin.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from loom_nb.evaluation import evaluate_budgets, load_cases  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _report import machine, table  # noqa: E402

STRATEGIES = ("loom", "loom-bare", "loom-fast", "loom-fused", "bm25-chunks", "bm25", "whole-file")
MODE_ROWS = ("loom-bare", "loom-fast", "loom-fused")
BAR_MODE_TOLERANCE = 0.01
"""Issue 12: the default path (``loom``) within this much line recall of the best forced mode."""
UNUSED_LIMIT = 0.10


def _embedder(name: str):
    from loom_nb.embed import HashingEmbedder, MiniLMEmbedder

    return HashingEmbedder() if name == "hashing" else MiniLMEmbedder()


def headroom(out: dict, budget: int = 8000) -> list[list]:
    """How much room ``bm25-chunks`` leaves the engine, per repository, at ``budget``.

    A margin bar can only be met where the baseline misses lines: the most the engine can
    lead by is 1 − the baseline's line recall. Also counted: cases where both load every
    gold line, cases where the two tie, and the per-case best of the two (what choosing
    the better one case by case would reach).
    """
    rows = []
    for repo, data in out["repos"].items():
        per_case = data["per_case"].get(budget) or data["per_case"].get(str(budget)) or []
        by = {}
        for row in per_case:
            by.setdefault(row["case"], {})[row["strategy"]] = row["line_recall"]
        pairs = [(v["loom"], v["bm25-chunks"]) for v in by.values()
                 if v.get("loom") is not None and v.get("bm25-chunks") is not None]
        if not pairs:
            continue
        loom = [a for a, _ in pairs]
        base = [b for _, b in pairs]
        rows.append([repo, len(pairs), f"{sum(loom) / len(pairs):.3f}", f"{sum(base) / len(pairs):.3f}",
                     f"{1 - sum(base) / len(pairs):+.3f}",
                     sum(1 for a, b in pairs if a == b == 1.0), sum(1 for a, b in pairs if a == b),
                     f"{sum(max(a, b) for a, b in pairs) / len(pairs):.3f}"])
    return rows


def measure(paths: list[str], budgets: list[int], strategies: tuple[str, ...], embedder, cache: str | None) -> tuple[dict, list]:
    """Every strategy on every cases file at every budget: the JSON record and the printed rows."""
    out: dict = {"machine": machine(), "embedder": embedder.model_id, "budgets": budgets, "repos": {}}
    rows = []
    for path in paths:
        repo = Path(path).stem
        cases, errors = load_cases(path)
        for e in errors:
            print(f"warning: {e}", file=sys.stderr)
        started = time.perf_counter()
        reports = evaluate_budgets(cases, budgets, strategies, embedder=embedder, cache_dir=cache)
        seconds = time.perf_counter() - started
        out["repos"][repo] = {"cases": len(cases), "seconds": seconds, "tables": {}, "per_case": {}, "versus_modes": {}}
        for budget, report in reports.items():
            out["repos"][repo]["tables"][budget] = report.table()
            out["repos"][repo]["versus_modes"][budget] = {
                c.b: {"difference": c.difference, "low": c.low, "high": c.high, "better": c.better, "worse": c.worse}
                for c in report.mode_comparisons()}
            out["repos"][repo]["per_case"][budget] = [
                {k: v for k, v in r.items() if k in ("case", "strategy", "line_recall", "file_recall", "precision", "tokens")}
                for r in report.case_rows()]
            for row in report.table():
                rows.append([repo, f"{budget:,}", row["strategy"], row["cases"],
                             f"{row['line_recall']:.3f}" if row["line_recall"] is not None else "-",
                             f"{row['file_recall']:.3f}" if row["file_recall"] is not None else "-",
                             f"{row['precision']:.3f}", f"{row['tokens']:.0f}", f"{row['seconds'] * 1000:.1f}"])
        print(f"{repo}: {len(cases)} cases, {seconds:.0f} s", file=sys.stderr)
    return out, rows


def bar_rows(out: dict, budgets: list[int]) -> list:
    """Issue 12's bar per repository and budget: the default within BAR_MODE_TOLERANCE of the
    best forced mode, and ahead of bm25-chunks on lines and files when that row was run."""
    bar = []
    for repo, data in out["repos"].items():
        for budget in budgets:
            t = {r["strategy"]: r for r in data["tables"][budget]}
            loom = t["loom"]
            checks, text = [], [f"loom lineR {loom['line_recall']:.3f} fileR {loom['file_recall']:.3f}"]
            modes = [(m, t[m]) for m in MODE_ROWS if m in t and t[m]["line_recall"] is not None]
            if modes:
                best_name, best = max(modes, key=lambda kv: kv[1]["line_recall"])
                gap = best["line_recall"] - loom["line_recall"]
                checks.append(gap <= BAR_MODE_TOLERANCE)
                text.append(f"best mode {best_name} {best['line_recall']:.3f} ({gap:+.3f}, need <= {BAR_MODE_TOLERANCE})")
                versus = data["versus_modes"][budget].get(best_name)
                if versus is not None and gap > 0:  # loom − mode, so the mode's lead is its negation
                    text.append(f"its lead case by case: 95% interval [{-versus['high']:+.3f}, {-versus['low']:+.3f}], "
                                f"{versus['worse']} cases better, {versus['better']} worse")
            if "bm25-chunks" in t:
                chunks = t["bm25-chunks"]
                checks += [loom["line_recall"] > chunks["line_recall"], loom["file_recall"] >= chunks["file_recall"]]
                text.append(f"bm25-chunks {chunks['line_recall']:.3f} / {chunks['file_recall']:.3f}")
            bar.append([repo, f"{budget:,}", "; ".join(text), "PASS" if all(checks) else "MISS"])
    return bar


def cost_rows(out: dict, budgets: list[int]) -> list:
    """What the default and each forced mode cost and earn, per repository and budget."""
    costs = []
    for repo, data in out["repos"].items():
        for budget in budgets:
            t = {r["strategy"]: r for r in data["tables"][budget]}
            for name in ("loom",) + MODE_ROWS:
                if name not in t:
                    continue
                r = t[name]
                saved = (t["loom"]["seconds"] - r["seconds"]) * 1000
                costs.append([repo, f"{budget:,}", name, f"{r['line_recall']:.3f}", f"{r['file_recall']:.3f}",
                              f"{r['tokens']:.0f}", f"{r['budget_use']:.0%}", f"{r['seconds'] * 1000:.1f}",
                              f"{saved:+.1f}" if name != "loom" else "",
                              "-" if r.get("relevant_share") is None else f"{r['relevant_share']:.1%}",
                              "-" if r.get("relevant_precision") is None else f"{r['relevant_precision']:.3f}",
                              "-" if r.get("unused_with_room") is None else f"{r['unused_with_room']:.0%}"])
    return costs


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("cases", nargs="+", help="one JSON Lines cases file per repository")
    parser.add_argument("--budgets", default="4000,8000,16000")
    parser.add_argument("--strategy", default=",".join(STRATEGIES))
    parser.add_argument("--embedder", default="minilm", help="minilm (default) or hashing (quick iteration only)")
    parser.add_argument("--cache", help="keep indexed workspaces and embeddings here between runs")
    parser.add_argument("--json", help="write every figure (and per-case rows) here")
    args = parser.parse_args(argv)
    budgets = [int(b) for b in args.budgets.split(",")]
    strategies = tuple(s for s in args.strategy.split(",") if s)
    out, rows = measure(args.cases, budgets, strategies, _embedder(args.embedder), args.cache)
    table(f"Selection quality ({out['embedder']})", ["repo", "budget", "strategy", "cases", "line recall", "file recall", "precision", "tokens", "query ms"], rows)
    if "loom" in strategies:
        out["bar"] = bar_rows(out, budgets)
        table("The bar (issue 12): the default within 0.01 of the best mode, ahead of bm25-chunks on lines and files",
              ["repo", "budget", "measured", "bar"], out["bar"])
        out["modes"] = cost_rows(out, budgets)
        table("What each mode costs and earns", ["repo", "budget", "strategy", "lineR", "fileR", "tokens", "budget used",
              "ms", "ms saved vs loom", "relevant", "relevant gold", ">10% idle, room left"], out["modes"])
    if "loom" in strategies and "bm25-chunks" in strategies and 8000 in budgets:
        room = headroom(out)
        table("Room for a margin at 8k: line recall per case, engine and bm25-chunks",
              ["repo", "cases", "loom", "bm25-chunks", "largest margin possible", "both 1.0", "tied",
               "better of the two per case"], room)
        out["headroom_8k"] = room
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=1, default=float) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
