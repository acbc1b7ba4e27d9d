"""``loom-nb``: the command line over the same API a notebook uses.

    loom-nb add SESSION [TEXT] [--file PATH] [--type input]   add text (or stdin) to a session
    loom-nb query SESSION TEXT [--budget N | --model M | --window N] [--mode auto] [--json]
    loom-nb index SESSION PATH                                index or refresh a workspace folder
    loom-nb show SESSION [NODE_ID]                            the session, or one node
    loom-nb demo [--out FOLDER]                               the sample session, three queries
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
from pathlib import Path

from .config import CONTENT_TYPES
from .errors import LoomError

MAX_INPUT_BYTES = 10 * 1024 * 1024


def _embedder(name: str | None):
    from .embed import HashingEmbedder, MiniLMEmbedder, OllamaEmbedder

    if name is None:
        return None  # the session's own embedder, or MiniLM for a new one
    if name == "minilm":
        return MiniLMEmbedder()
    if name == "hashing":
        return HashingEmbedder()
    if name.startswith("ollama:"):
        return OllamaEmbedder(name.split(":", 1)[1])
    raise LoomError(f"unknown embedder {name!r}: use minilm, hashing or ollama:MODEL")


def read_text_file(path: Path) -> str:
    """A text file's contents, refusing binary and huge files with a clear message."""
    if not path.is_file():
        raise LoomError(f"{path}: no such file")
    size = path.stat().st_size
    if size > MAX_INPUT_BYTES:
        raise LoomError(f"{path}: {size:,} bytes is over the {MAX_INPUT_BYTES:,}-byte limit for one input")
    data = path.read_bytes()
    if b"\x00" in data[:8192]:
        raise LoomError(f"{path}: looks binary (NUL bytes); loom-nb adds text only")
    return data.decode("utf-8", errors="replace")


def _open(args, create: bool = False):
    from .engine import Loom

    return Loom.open(args.session, embedder=_embedder(args.embedder), create=create)


def cmd_add(args) -> int:
    if args.file:
        text = read_text_file(Path(args.file))
    elif args.text is not None:
        text = args.text
    else:
        text = sys.stdin.read()
    loom = _open(args, create=True)
    result = loom.add(text, type=args.type, source=args.source, reason=args.reason or "", split=not args.no_split)
    loom.save()
    print(result)
    return 0


def cmd_query(args) -> int:
    loom = _open(args)
    result = loom.query(args.text, budget=args.budget, model=args.model, window=args.window, mode=args.mode, ask_ollama=args.ask_ollama)
    if args.save:
        loom.save()
    if args.json:
        print(json.dumps(result.to_dict(), indent=2, ensure_ascii=False))
    else:
        print(result)
        if args.prompt:
            print("\n" + result.prompt)
    return 0


def cmd_index(args) -> int:
    from .index import WalkLimits

    loom = _open(args, create=True)
    limits = WalkLimits(max_file_bytes=args.max_file_bytes, max_files=args.max_files)
    report = loom.index(args.path, limits=limits, extra_ignores=args.ignore or ())
    loom.save()
    print(report)
    return 0


def cmd_show(args) -> int:
    from .views.text import node_text

    loom = _open(args)
    print(node_text(loom, args.node) if args.node else loom)
    return 0


def cmd_demo(args) -> int:
    from .demo import run_demo, run_self_demo

    embedder = _embedder(args.embedder)
    run_demo(Path(args.out), embedder=embedder)
    run_self_demo(Path(args.out).with_name(Path(args.out).name + "-code"), embedder=embedder)
    return 0


def cmd_eval(args) -> int:
    from .evaluate import STRATEGIES, evaluate, load_cases

    cases, errors = load_cases(Path(args.cases))
    for message in errors:
        print(f"loom-nb: warning: {message}", file=sys.stderr)
    if not cases:
        raise LoomError(f"{args.cases}: no valid cases")
    strategies = tuple(s.strip() for s in args.strategy.split(",") if s.strip()) if args.strategy else STRATEGIES
    report = evaluate(cases, budget=args.budget, strategies=strategies, embedder=_embedder(args.embedder), cache_dir=args.cache)
    report.errors = errors
    print(report)
    if args.json:
        Path(args.json).write_text(json.dumps(report.to_json(), indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="loom-nb", description="Dynamic context orchestration for local LLMs.")
    parser.add_argument("-v", "--verbose", action="store_true", help="log what the engine does")
    sub = parser.add_subparsers(dest="command", required=True)

    def session_parser(name: str, help: str):
        p = sub.add_parser(name, help=help)
        p.add_argument("session", help="session folder (created if missing)")
        p.add_argument("--embedder", help="minilm, hashing or ollama:MODEL (default: the session's own; minilm for a new one)")
        return p

    p = session_parser("add", "add text to a session")
    p.add_argument("text", nargs="?", help="the text (default: --file, else stdin)")
    p.add_argument("--file", help="read the text from this file")
    p.add_argument("--type", default="input", choices=CONTENT_TYPES)
    p.add_argument("--source", default="user")
    p.add_argument("--reason")
    p.add_argument("--no-split", action="store_true", help="never split the input into parts")
    p.set_defaults(func=cmd_add)

    p = session_parser("query", "rank the session against a query and print the manifest")
    p.add_argument("text")
    p.add_argument("--budget", type=int, help="context tokens (manifest + evidence)")
    p.add_argument("--model", help="model name, to look up its window")
    p.add_argument("--ask-ollama", action="store_true", help="ask Ollama (OLLAMA_HOST) for the model's num_ctx")
    p.add_argument("--window", type=int, help="model window in tokens")
    p.add_argument("--mode", default="auto", choices=["auto", "bare", "fast", "fused"])
    p.add_argument("--json", action="store_true", help="print the result as JSON")
    p.add_argument("--prompt", action="store_true", help="also print the assembled prompt")
    p.add_argument("--save", action="store_true", help="save the session (records the scores)")
    p.set_defaults(func=cmd_query)

    p = session_parser("index", "index (or refresh) a workspace folder into the session")
    p.add_argument("path", help="the workspace folder")
    p.add_argument("--max-file-bytes", type=int, default=1_000_000)
    p.add_argument("--max-files", type=int, default=20_000)
    p.add_argument("--ignore", action="append", help="a gitignore-style pattern (repeatable)")
    p.set_defaults(func=cmd_index)

    p = session_parser("show", "describe a session or one node")
    p.add_argument("node", nargs="?")
    p.set_defaults(func=cmd_show)

    p = sub.add_parser("demo", help="build the sample session and run three queries")
    p.add_argument("--out", default="build/demo-session")
    p.add_argument("--embedder", default="minilm", help="minilm (default) or hashing")
    p.set_defaults(func=cmd_demo)

    p = sub.add_parser("eval", help="grade labelled queries: the engine against baselines")
    p.add_argument("cases", help="a JSON Lines file of labelled queries (see datasets/README.md)")
    p.add_argument("--budget", type=int, default=8000, help="context tokens per query (default 8000)")
    p.add_argument("--strategy", help="comma-separated: loom,bm25,bm25-chunks,dense,whole-file (default: all)")
    p.add_argument("--json", help="write every loaded item and metric to this file")
    p.add_argument("--embedder", default="minilm", help="minilm (default) or hashing")
    p.add_argument("--cache", help="keep indexed workspaces in this folder between runs")
    p.set_defaults(func=cmd_eval)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    logging.basicConfig(level=logging.INFO if args.verbose else logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    try:
        return args.func(args)
    except LoomError as exc:
        print(f"loom-nb: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
