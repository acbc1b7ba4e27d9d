"""Indexing benchmark: cold index, save, load, unchanged re-index and one-file refresh of a codebase.

A script that prints figures, not a test. Run from the repository root::

    .venv/bin/python benchmarks/bench_index.py                                # this checkout, MiniLM
    .venv/bin/python benchmarks/bench_index.py --repo /tmp/bench-repos/pydantic --repo /tmp/bench-repos/caddy
    .venv/bin/python benchmarks/bench_index.py --embedder hashing --json out.json --profile

Each workspace is first copied to a temporary folder (``.git``, ``.venv``,
``node_modules`` and ``__pycache__`` left out), and everything runs on the copy: the
original is never touched. Because ``.git`` is not copied, change detection is by
size/mtime/hash, not git. All steps of one workspace run in a child process, so the peak
RSS (``ru_maxrss``) is that workspace's alone.

Steps per workspace
-------------------
1. Cold index: a fresh ``Loom(session, embedder=...)`` then ``loom.index(copy, progress=False, wait=True)``.
   Wall seconds include loading the model (timed apart too). Time is split into steps by
   timing shims put around the functions ``index_workspace`` calls (walk, read, outline,
   units, token counting, truncation, the model's ``embed``, ``add_content`` with its
   ``_link`` / ``add_concept``, ``link_structure``, lexical compaction); the shims are
   installed in this process only and no library code is changed.
2. Save: ``loom.save()`` seconds; sizes of graph.json and ``embeddings/``.
3. Load: ``Loom.open(session, embedder=<same kind>)`` and ``load_graph`` alone, median of 3.
4. Unchanged re-index: ``loom.index(copy)`` again on the live session, and on a session
   re-opened from disk: files_indexed and texts_embedded must both be 0.
5. One-file refresh: a small function is appended to one source file of the copy (the
   file of the workspace's main language nearest the median size) and the copy re-indexed:
   seconds (target <= 2 s) and files_indexed (must be 1); then the save that follows.
6. Targets, PASS or MISS: one-file refresh <= 2 s; cold index of a 1M-token repository
   <= 2 min with peak RSS <= 1.5 GB. For a workspace under 1M tokens the time to 1M tokens
   is extrapolated linearly (labelled as such); the memory target is judged on the
   measured peak.

``--profile`` adds a cProfile listing of one more cold index (fresh session, same
embedder) per workspace.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import json
import os
import pstats
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter, defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _report import kib_to_mb, machine, peak_rss_mb, table  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

REPO_ROOT = Path(__file__).resolve().parents[1]
TARGET_REFRESH_S = 2.0
TARGET_COLD_S = 120.0
TARGET_COLD_TOKENS = 1_000_000
TARGET_RSS_MB = 1536.0
COPY_IGNORE = (".git", ".venv", "node_modules", "__pycache__")
CODE_LANGUAGES = ("python", "go", "rust", "typescript", "tsx", "javascript", "java", "php", "c", "cpp", "ruby", "csharp", "kotlin", "swift")
APPENDED = {
    "python": '\n\ndef loom_bench_added_function(value):\n    """Added by bench_index.py to time a one-file refresh."""\n    return value + 1\n',
    "go": "\n// loomBenchAdded was added by bench_index.py to time a one-file refresh.\nfunc loomBenchAdded(value int) int {\n\treturn value + 1\n}\n",
    "rust": "\n/// Added by bench_index.py to time a one-file refresh.\npub fn loom_bench_added(value: i64) -> i64 {\n    value + 1\n}\n",
    "javascript": "\n// Added by bench_index.py to time a one-file refresh.\nfunction loomBenchAdded(value) {\n  return value + 1;\n}\n",
    "typescript": "\n// Added by bench_index.py to time a one-file refresh.\nexport function loomBenchAdded(value: number): number {\n  return value + 1;\n}\n",
}
APPENDED["tsx"] = APPENDED["typescript"]
APPENDED_OTHER = "\n\nloom bench: a paragraph added by bench_index.py to time a one-file refresh.\n"


# -- helpers (same style as bench_engine.py) ------------------------------------------------




def folder_mb(path: Path) -> float:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file()) / 1e6 if path.exists() else 0.0




def git_commit(path: Path) -> str | None:
    try:
        out = subprocess.run(["git", "-C", str(path), "rev-parse", "HEAD"], capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return out.stdout.strip() if out.returncode == 0 else None


# -- the timing shims ---------------------------------------------------------------------------


class Stages:
    """Seconds and calls per named step; ``wrap`` returns a timed version of a function."""

    def __init__(self):
        self.seconds: dict[str, float] = defaultdict(float)
        self.calls: Counter[str] = Counter()

    def wrap(self, name: str, fn):
        seconds, calls, clock = self.seconds, self.calls, time.perf_counter

        def timed(*args, **kwargs):
            t = clock()
            try:
                return fn(*args, **kwargs)
            finally:
                seconds[name] += clock() - t
                calls[name] += 1

        timed.__wrapped__ = fn
        return timed

    def reset(self) -> None:
        self.seconds.clear()
        self.calls.clear()

    def snapshot(self, wall: float) -> dict:
        top = {k: v for k, v in self.seconds.items() if not k.startswith("  ")}
        other = wall - sum(top.values())
        out = {k: {"s": round(v, 4), "calls": self.calls[k], "share": round(v / wall, 4) if wall else 0.0} for k, v in self.seconds.items()}
        out["(rest of index_workspace)"] = {"s": round(other, 4), "calls": 1, "share": round(other / wall, 4) if wall else 0.0}
        return out


# Nested steps are named with two leading spaces and are already counted in their parent.
MODULE_SHIMS = {
    "walk_workspace": "walk (walk_workspace)",
    "head_commit": "git (head/changed/dirty)",
    "changed_since": "git (head/changed/dirty)",
    "dirty_files": "git (head/changed/dirty)",
    "read_text": "read files (read_text)",
    "sha256_text": "sha256 in indexer",
    "outline": "parse (symbols.outline)",
    "file_units": "cut units (units.file_units)",
    "count_tokens_many": "count tokens (count_tokens_many)",
    "truncate_to_tokens": "truncate for embedding",
    "chunk_spans": "chunk_spans",
    "link_structure": "structure edges (link_structure)",
}


def install_module_shims(stages: Stages) -> None:
    from loom_nb.index import indexer, units

    for attr, name in MODULE_SHIMS.items():
        setattr(indexer, attr, stages.wrap(name, getattr(indexer, attr)))
    # Unit.embed_text truncates through units.truncate_to_tokens
    units.truncate_to_tokens = stages.wrap("truncate for embedding", units.truncate_to_tokens)


def install_loom_shims(loom, stages: Stages) -> None:
    """Instance-level shims: the embedder (cache and model), add_content and its linking."""
    inner = loom.embedder.inner
    inner.embed = stages.wrap("  of which: model embed (inner.embed)", inner.embed)
    loom.embedder.embed = stages.wrap("embed (CachedEmbedder.embed)", loom.embedder.embed)
    graph = loom.graph
    graph.add_content = stages.wrap("add nodes (graph.add_content)", graph.add_content)
    graph._link = stages.wrap("  of which: concept linking (_link)", graph._link)
    graph.add_concept = stages.wrap("  of which: new concepts (add_concept)", graph.add_concept)
    graph.remove = stages.wrap("remove stale nodes (graph.remove)", graph.remove)
    graph.lexical.compact = stages.wrap("lexical.compact", graph.lexical.compact)


# -- the child: every step for one workspace -----------------------------------------------------


def make_embedder(kind: str):
    from loom_nb.embed import HashingEmbedder, MiniLMEmbedder

    return MiniLMEmbedder() if kind == "minilm" else HashingEmbedder(384)


def report_dict(report) -> dict:
    keys = ("files_seen", "files_indexed", "files_unchanged", "files_removed", "files_skipped", "nodes_added",
            "nodes_removed", "nodes_kept", "texts_embedded", "parse_errors", "concepts", "structure_edges", "seconds", "git")
    out = {k: getattr(report, k) for k in keys}
    out["skipped_reasons"] = dict(report.skipped_reasons)
    return out


def pick_refresh_file(state_files: dict, root: Path) -> tuple[str, str]:
    """A file of the workspace's main code language, nearest the median size.

    Files reached under two paths (through a symlink, which the walk indexes under both)
    are left out, so exactly one indexed file changes.
    """
    from loom_nb.index.walk import detect_language

    real = Counter(os.path.realpath(root / path) for path in state_files)
    by_lang: dict[str, list[tuple[int, str]]] = defaultdict(list)
    for path, info in state_files.items():
        if real[os.path.realpath(root / path)] > 1 or os.path.realpath(root / path) != str(root.resolve() / path):
            continue
        lang = detect_language(path.rsplit("/", 1)[-1]) or "text"
        by_lang[lang].append((info["size"], path))
    code = [lang for lang in CODE_LANGUAGES if by_lang.get(lang)]
    lang = max(code, key=lambda l: len(by_lang[l])) if code else max(by_lang, key=lambda l: len(by_lang[l]))
    files = sorted(by_lang[lang])
    median = files[len(files) // 2][0]
    size, path = min(files, key=lambda f: (abs(f[0] - median), f[1]))
    return path, lang


def run_child(spec: dict) -> dict:
    import numpy as np  # noqa: F401  (import cost outside the timings)

    from loom_nb import Loom
    from loom_nb.core.store import GRAPH_FILE, load_graph

    out: dict = {"name": spec["name"], "embedder": spec["embedder"]}
    copy, session = Path(spec["copy"]), Path(spec["session"])
    stages = Stages()
    install_module_shims(stages)
    rss = {"after imports": peak_rss_mb()}

    # 1. cold index
    t0 = time.perf_counter()
    loom = Loom(session, embedder=make_embedder(spec["embedder"]))
    install_loom_shims(loom, stages)
    t_load = time.perf_counter()
    if hasattr(loom.embedder.inner, "_load"):
        loom.embedder.inner._load()  # the model: sha256 check, tokenizer, ONNX session
    model_load_s = time.perf_counter() - t_load
    rss["after model load"] = peak_rss_mb()
    report = loom.index(copy, progress=False, wait=True)
    cold_s = time.perf_counter() - t0
    rss["after cold index"] = peak_rss_mb()
    nodes = [n for n in loom.graph.content_nodes() if n.type == "file_reference"]
    tokens = sum(n.tokens for n in nodes)
    embed_s = stages.seconds.get("  of which: model embed (inner.embed)", 0.0)
    out["cold"] = {
        "wall_s": cold_s, "index_s": report.seconds, "model_load_s": model_load_s, "report": report_dict(report),
        "nodes": len(nodes), "tokens": tokens, "embed_s": embed_s,
        "embeddings_per_s": report.texts_embedded / embed_s if embed_s else None,
        "embeddings_per_s_overall": report.texts_embedded / cold_s if cold_s else None,
        "chunked_nodes": sum(1 for n in nodes if n.chunks),
        "stages": stages.snapshot(report.seconds),
        "languages": dict(Counter(n.meta.get("language", "?") for n in nodes)),
        "kinds": dict(Counter(n.meta.get("kind", "?") for n in nodes)),
    }
    per_file: Counter[str] = Counter()
    for n in nodes:
        per_file[n.meta.get("path", "?")] += n.tokens
    out["cold"]["top_files_by_tokens"] = per_file.most_common(5)
    print(f"  [{spec['name']}] cold index {cold_s:.1f} s, {len(nodes):,} nodes, {tokens:,} tokens", file=sys.stderr, flush=True)

    # 2. save
    t = time.perf_counter()
    loom.save()
    save_s = time.perf_counter() - t
    rss["after save"] = peak_rss_mb()
    out["save"] = {
        "save_s": save_s, "graph_json_mb": (session / GRAPH_FILE).stat().st_size / 1e6,
        "embeddings_mb": folder_mb(session / "embeddings"), "content_mb": folder_mb(session / "content"),
        "session_mb": folder_mb(session),
    }

    # 3. load
    opens, loads = [], []
    for _ in range(3):
        t = time.perf_counter()
        Loom.open(session, embedder=make_embedder(spec["embedder"]))
        opens.append(time.perf_counter() - t)
        t = time.perf_counter()
        load_graph(session)
        loads.append(time.perf_counter() - t)
    out["load"] = {"open_s": opens, "open_median_s": statistics.median(opens), "load_graph_s": loads, "load_graph_median_s": statistics.median(loads)}
    rss["after loads"] = peak_rss_mb()

    # 4. unchanged re-index: the live session, then a session re-opened from disk
    stages.reset()
    report = loom.index(copy, progress=False, wait=True)
    again = {"seconds": report.seconds, "report": report_dict(report), "stages": stages.snapshot(report.seconds)}
    again["ok"] = report.files_indexed == 0 and report.texts_embedded == 0
    reopened = Loom.open(session, embedder=make_embedder(spec["embedder"]))
    t = time.perf_counter()
    report = reopened.index(copy, progress=False, wait=True)
    again["reopened_s"] = time.perf_counter() - t
    again["reopened_report"] = report_dict(report)
    again["reopened_ok"] = report.files_indexed == 0 and report.texts_embedded == 0
    out["unchanged"] = again
    del reopened

    # 5. one-file refresh (on the copy)
    path, lang = pick_refresh_file(loom.graph.metadata["workspace"]["files"], copy)
    target = copy / path
    size_before = target.stat().st_size
    with open(target, "a", encoding="utf-8") as fh:
        fh.write(APPENDED.get(lang, APPENDED_OTHER))
    stages.reset()
    report = loom.index(copy, progress=False, wait=True)
    refresh = {
        "file": path, "language": lang, "file_bytes": size_before, "seconds": report.seconds, "report": report_dict(report),
        "stages": stages.snapshot(report.seconds), "ok": report.files_indexed == 1,
    }
    t = time.perf_counter()
    loom.save()
    refresh["save_s"] = time.perf_counter() - t
    out["refresh"] = refresh
    rss["after refresh"] = peak_rss_mb()
    out["rss_mb"] = rss

    # optional: cProfile of one more cold index (fresh session and embedder)
    if spec.get("profile"):
        loom = Loom(Path(spec["session"] + "-profile"), embedder=make_embedder(spec["embedder"]))
        prof = cProfile.Profile()
        prof.enable()
        loom.index(copy, progress=False, wait=True)
        prof.disable()
        listings = {}
        for key in ("tottime", "cumulative"):
            buf = io.StringIO()
            pstats.Stats(prof, stream=buf).sort_stats(key).print_stats(22)
            text = buf.getvalue()
            start = text.find("   ncalls")
            listings[key] = text[start:] if start >= 0 else text
        out["profile"] = listings
    out["child_peak_rss_mb"] = peak_rss_mb()
    return out


# -- the parent: copies, child processes, tables ---------------------------------------------------


def bench_workspace(repo: Path, name: str, embedder: str, workdir: Path, profile: bool) -> dict:
    copy = workdir / f"{name}-copy"
    session = workdir / f"{name}-session"
    for p in (copy, session, Path(str(session) + "-profile")):
        if p.exists():
            shutil.rmtree(p)
    t = time.perf_counter()
    shutil.copytree(repo, copy, symlinks=True, ignore=shutil.ignore_patterns(*COPY_IGNORE))
    copy_s = time.perf_counter() - t
    spec = {"name": name, "copy": str(copy), "session": str(session), "embedder": embedder, "profile": profile}
    spec_file = workdir / f"{name}-spec.json"
    result_file = workdir / f"{name}-result.json"
    spec_file.write_text(json.dumps(spec))
    print(f"  [{name}] copied {repo} -> {copy} in {copy_s:.1f} s; indexing in a child process ...", flush=True)
    t = time.perf_counter()
    proc = subprocess.run([sys.executable, str(Path(__file__).resolve()), "--child", str(spec_file), "--child-out", str(result_file)])
    child_s = time.perf_counter() - t
    if proc.returncode != 0:
        raise SystemExit(f"the child for {name} failed with exit code {proc.returncode}")
    result = json.loads(result_file.read_text())
    result.update({
        "repo": str(repo), "commit": git_commit(repo), "copy_s": copy_s, "child_wall_s": child_s,
        "rusage_children_max_mb": kib_to_mb(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss),
    })
    return result


def print_workspace(r: dict) -> list[list]:
    c, s, l, u, f = r["cold"], r["save"], r["load"], r["unchanged"], r["refresh"]
    rep = c["report"]
    name = f"{r['name']} ({r['embedder']})"
    table(
        f"{name}: cold index",
        ["figure", "value"],
        [
            ["files seen / indexed / skipped", f"{rep['files_seen']:,} / {rep['files_indexed']:,} / {rep['files_skipped']:,}"],
            ["nodes (file_reference)", c["nodes"]],
            ["  of which chunked (> large_node_tokens)", c["chunked_nodes"]],
            ["concepts", rep["concepts"]],
            ["structure edges", rep["structure_edges"]],
            ["texts embedded", rep["texts_embedded"]],
            ["tokens of the indexed units (cl100k)", c["tokens"]],
            ["parse errors (files)", rep["parse_errors"]],
            ["biggest files (tokens)", ", ".join(f"{p} {n:,}" for p, n in c["top_files_by_tokens"][:3])],
            ["nodes per language", ", ".join(f"{k} {v:,}" for k, v in sorted(c["languages"].items(), key=lambda x: -x[1])[:6])],
            ["cold index wall s (incl. model load)", c["wall_s"]],
            ["  model load s", c["model_load_s"]],
            ["  IndexReport.seconds", c["index_s"]],
            ["seconds in the model's embed", c["embed_s"]],
            ["embeddings/s (model time only)", c["embeddings_per_s"] or 0.0],
            ["embeddings/s (over the whole cold index)", c["embeddings_per_s_overall"] or 0.0],
            ["tokens/s (over the whole cold index)", c["tokens"] / c["wall_s"] if c["wall_s"] else 0.0],
            ["peak RSS after cold index, MB", r["rss_mb"]["after cold index"]],
        ],
        note="skipped: " + ", ".join(f"{n} {k}" for k, n in sorted(rep["skipped_reasons"].items(), key=lambda x: -x[1])) if rep["skipped_reasons"] else "",
    )
    stage_rows = [[k, v["s"], v["calls"], f"{100 * v['share']:.1f} %"] for k, v in c["stages"].items()]
    table(f"{name}: where the cold index's time goes (IndexReport.seconds = {c['index_s']:.1f} s)", ["step", "s", "calls", "share"], stage_rows,
          note="steps indented 'of which' are included in the line above them.")
    table(
        f"{name}: save, load, re-index, refresh",
        ["step", "seconds", "check"],
        [
            ["save (first)", s["save_s"], f"graph.json {s['graph_json_mb']:.2f} MB, embeddings/ {s['embeddings_mb']:.2f} MB, session {s['session_mb']:.2f} MB"],
            ["Loom.open (median of 3)", l["open_median_s"], "min %.2f max %.2f" % (min(l["open_s"]), max(l["open_s"]))],
            ["load_graph (median of 3)", l["load_graph_median_s"], "min %.2f max %.2f" % (min(l["load_graph_s"]), max(l["load_graph_s"]))],
            ["unchanged re-index (live session)", u["seconds"],
             f"files_indexed={u['report']['files_indexed']} texts_embedded={u['report']['texts_embedded']} {'ok' if u['ok'] else 'UNEXPECTED'}"],
            ["unchanged re-index (re-opened session)", u["reopened_s"],
             f"files_indexed={u['reopened_report']['files_indexed']} texts_embedded={u['reopened_report']['texts_embedded']} {'ok' if u['reopened_ok'] else 'UNEXPECTED'}"],
            ["one-file refresh", f["seconds"],
             f"{f['file']} ({f['language']}, {f['file_bytes']:,} B): files_indexed={f['report']['files_indexed']} "
             f"nodes +{f['report']['nodes_added']}/-{f['report']['nodes_removed']} (kept {f['report'].get('nodes_kept', 0)}) texts_embedded={f['report']['texts_embedded']} {'ok' if f['ok'] else 'UNEXPECTED'}"],
            ["save after the refresh", f["save_s"], ""],
        ],
    )
    table(f"{name}: where the one-file refresh's time goes", ["step", "s", "calls", "share"],
          [[k, v["s"], v["calls"], f"{100 * v['share']:.1f} %"] for k, v in f["stages"].items()])
    table(f"{name}: peak RSS (ru_maxrss of the child), MB", ["after", "MB"], [[k, v] for k, v in r["rss_mb"].items()],
          note=f"child peak {r['child_peak_rss_mb']:.0f} MB; RUSAGE_CHILDREN in the parent so far {r['rusage_children_max_mb']:.0f} MB")
    if "profile" in r:
        for key, text in r["profile"].items():
            print(f"\n## cProfile of a second cold index of {name}, by {key}\n{text.rstrip()}")

    # targets
    peak = r["rss_mb"]["after cold index"]
    tokens = c["tokens"]
    rows = [["one-file refresh", f"<= {TARGET_REFRESH_S:.0f} s", f"{f['seconds']:.2f} s", "PASS" if f["seconds"] <= TARGET_REFRESH_S and f["ok"] else "MISS"]]
    if tokens >= TARGET_COLD_TOKENS:
        rows.append(["cold index, 1M tokens", f"<= {TARGET_COLD_S:.0f} s", f"{c['wall_s']:.0f} s for {tokens:,} tokens", "PASS" if c["wall_s"] <= TARGET_COLD_S else "MISS"])
    else:
        extrapolated = c["wall_s"] * TARGET_COLD_TOKENS / tokens if tokens else float("inf")
        rows.append([f"cold index, 1M tokens (EXTRAPOLATED from {tokens:,})", f"<= {TARGET_COLD_S:.0f} s",
                     f"{extrapolated:.0f} s (measured {c['wall_s']:.1f} s)", "PASS" if extrapolated <= TARGET_COLD_S else "MISS"])
    rows.append(["peak RSS during cold index", f"<= {TARGET_RSS_MB:.0f} MB", f"{peak:.0f} MB at {tokens:,} tokens", "PASS" if peak <= TARGET_RSS_MB else "MISS"])
    table(f"{name}: targets", ["target", "goal", "measured", "result"], rows,
          note=("the 1M-token time is a linear extrapolation (seconds x 1e6 / tokens), not a measurement; "
                "memory is judged on the measured peak at this size." if tokens < TARGET_COLD_TOKENS else ""))
    return [[name, *row] for row in rows]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repo", action="append", metavar="PATH", help="workspace to index (repeatable; default: this checkout)")
    parser.add_argument("--embedder", choices=("minilm", "hashing"), default="minilm")
    parser.add_argument("--json", metavar="OUT", help="write every figure as JSON")
    parser.add_argument("--workdir", metavar="DIR", help="where copies and session folders go (default: a temp folder, removed after)")
    parser.add_argument("--profile", action="store_true", help="cProfile one more cold index per workspace")
    parser.add_argument("--child", metavar="SPEC", help=argparse.SUPPRESS)
    parser.add_argument("--child-out", metavar="OUT", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)

    if args.child:
        result = run_child(json.loads(Path(args.child).read_text()))
        Path(args.child_out).write_text(json.dumps(result, indent=2, default=str))
        return 0

    repos = [Path(p).expanduser().resolve() for p in (args.repo or [str(REPO_ROOT)])]
    started = time.perf_counter()
    facts = machine()
    print("# loom-nb indexing benchmark")
    print(
        f"date {facts['date']} | cpus {facts['cpu_count']} | python {facts['python']} | numpy {facts['numpy']} | "
        f"{facts['platform']} | load avg {', '.join(f'{x:.2f}' for x in facts['loadavg'] or [])} | embedder {args.embedder}"
    )
    print(f"targets: one-file refresh <= {TARGET_REFRESH_S:.0f} s; cold index of {TARGET_COLD_TOKENS:,} tokens <= {TARGET_COLD_S:.0f} s "
          f"with peak RSS <= {TARGET_RSS_MB:.0f} MB")
    results: dict = {"machine": facts, "embedder": args.embedder, "workspaces": []}
    own = args.workdir is None
    workdir = Path(tempfile.mkdtemp(prefix="bench-index-")) if own else Path(args.workdir).resolve()
    workdir.mkdir(parents=True, exist_ok=True)
    summary = []
    names: Counter[str] = Counter()
    try:
        for repo in repos:
            name = repo.name
            names[name] += 1
            if names[name] > 1:
                name = f"{name}-{names[name]}"
            r = bench_workspace(repo, name, args.embedder, workdir, args.profile)
            r["loadavg_after"] = list(os.getloadavg())
            results["workspaces"].append(r)
            summary += print_workspace(r)
    finally:
        if own:
            shutil.rmtree(workdir, ignore_errors=True)
    table("Targets, all workspaces", ["workspace", "target", "goal", "measured", "result"], summary)
    results["targets"] = [dict(zip(["workspace", "target", "goal", "measured", "result"], row)) for row in summary]
    results["wall_s"] = time.perf_counter() - started
    results["loadavg_end"] = list(os.getloadavg())
    print(f"\nwall time {results['wall_s']:.0f} s; load avg at the end {', '.join(f'{x:.2f}' for x in results['loadavg_end'])}")
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(json.dumps(results, indent=2, default=str))
        print(f"figures written to {args.json}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
