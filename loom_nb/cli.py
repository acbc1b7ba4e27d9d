"""``loom-nb``: the command line over the same API a notebook uses.

    loom-nb add SESSION [TEXT] [--file PATH] [--type input]   add text (or stdin) to a session
    loom-nb query SESSION TEXT [--budget N | --model M | --window N] [--mode auto] [--json] [--pack]
    loom-nb index SESSION PATH [--vectors URL] [--report-secrets]   index or refresh a workspace folder
    loom-nb show SESSION [NODE_ID] [--events [N]]             the session, one node, or its telemetry events
    loom-nb demo [--out FOLDER]                               the sample session, three queries
    loom-nb eval CASES.jsonl [--budget N] [--ablations]       grade labelled queries against baselines
    loom-nb mine REPO --out CASES.jsonl [--max N] [--since D] cases from a repository's commits
    loom-nb tune CASES.jsonl [--budgets ...] [--folds 5]      tune weights with held-out folds
    loom-nb chat SESSION [--model M] [--host URL]             chat with a local model via Ollama

Size: one argparse parser and one short handler per subcommand, read together.
"""

from __future__ import annotations

import argparse
import gc
import json
import logging
import os
import re
import sys
import warnings
from contextlib import nullcontext
from pathlib import Path

from .core.config import CONTENT_TYPES
from .core.errors import LoomError

MAX_INPUT_BYTES = 10 * 1024 * 1024


def _embedder(name: str | None):
    from .embed import embedder_named

    return None if name is None else embedder_named(name)  # None: the session's own, or MiniLM


def input_text(data: bytes, where: str) -> str:
    """Bytes given to ``add`` as text: binary and huge input refused, encodings as indexing reads them."""
    from .core.files import decode_bytes, is_binary, normalise_newlines

    if len(data) > MAX_INPUT_BYTES:
        raise LoomError(f"{where}: {len(data):,} bytes is over the {MAX_INPUT_BYTES:,}-byte limit for one input")
    if is_binary(data):
        raise LoomError(f"{where}: looks binary; loom-nb adds text only")
    return normalise_newlines(decode_bytes(data, truncated=False))


def read_text_file(path: Path) -> str:
    """A text file's contents, refusing binary and huge files, and credentials files unread
    (as :meth:`~loom_nb.core.engine.Loom.add_file` does), with a clear message."""
    from .core.secrets import is_secret_file

    if path.is_dir():
        raise LoomError(f"{path}: is a folder; give a file (or `loom-nb index` a folder)")
    if not path.exists():
        raise LoomError(f"{path}: no such file")
    if not path.is_file():  # a pipe, a device: read to its end it could hang or never stop
        raise LoomError(f"{path}: is not a regular file; to add what a command prints, pipe it to `loom-nb add SESSION` "
                        "without --file")
    if is_secret_file(path.name):  # its values would reach the prompt unmasked where add_file refuses it
        raise LoomError(f"{path}: is a credentials file: loom-nb never reads one (index lists such files by name only); "
                        "add the lines you need as text instead, and their credentials are masked")
    size = path.stat().st_size
    if size > MAX_INPUT_BYTES:
        raise LoomError(f"{path}: {size:,} bytes is over the {MAX_INPUT_BYTES:,}-byte limit for one input")
    return input_text(path.read_bytes(), str(path))


def _open(args, create: bool = False):
    from .core.engine import Loom

    return Loom.open(args.session, embedder=_embedder(args.embedder), create=create, workspace=getattr(args, "workspace", None),
                     vectors=args.vectors)


def _editing(args, create: bool = False):
    """Open, change and save under the session's write lock: two commands that write one
    session at once take turns instead of one dropping the other's change."""
    from .core.engine import Loom

    return Loom.editing(args.session, embedder=_embedder(args.embedder), create=create, workspace=getattr(args, "workspace", None),
                        vectors=args.vectors)


def _one_shot() -> None:
    """Turn the cyclic garbage collector off for a command that opens a session, answers and
    exits: its first full pass over the objects a large session loads came inside the query
    (0.5 s of a 1.6 s ``loom-nb query`` on 44,000 units), and the process ends before the
    little cyclic garbage a query leaves would matter; :func:`main` turns it back on when the
    command returns. Long commands (index, eval, tune, chat) keep it on."""
    gc.disable()


def cmd_add(args) -> int:
    _one_shot()
    if args.file and args.text is not None:  # one of them would be dropped without a word
        raise LoomError("give the text or --file, not both")
    if args.file:
        text = read_text_file(Path(args.file))
    elif args.text is not None:
        text = args.text
    else:
        text = input_text(sys.stdin.buffer.read(MAX_INPUT_BYTES + 1), "stdin")
    with _editing(args, create=True) as loom:
        result = loom.add(text, type=args.type, source=args.source, reason=args.reason or "", split=not args.no_split)
    print(result)
    return 0


def cmd_query(args) -> int:
    _one_shot()
    if args.pack and args.prompt:  # the pack is the structured view of the context; the prompt is its text
        raise LoomError("--pack prints the context pack, --prompt the prompt: give one of them")
    with _editing(args) if args.save else nullcontext(_open(args)) as loom:
        result = loom.query(args.text, budget=args.budget, model=args.model, window=args.window, mode=args.mode, ask_ollama=args.ask_ollama)
    if args.pack:
        pack = result.pack()
        print(pack.to_json(indent=2) if args.json else pack)
    elif args.json:
        print(json.dumps(result.to_dict(), indent=2, ensure_ascii=False))
    else:
        print(result)
        if args.prompt:
            print("\n" + result.prompt)
    return 0


def cmd_index(args) -> int:
    from dataclasses import replace

    from .index.indexer import recorded_walk

    given = {name: value for name, value in (("max_file_bytes", args.max_file_bytes), ("max_files", args.max_files),
                                             ("include_translations", args.translations)) if value is not None}
    with _editing(args, create=True) as loom:
        # an option not given keeps what the last index used (recorded_walk), not the default
        limits, ignores = recorded_walk(loom.graph)
        limits = replace(limits, **given)
        ignores = tuple(p for p in args.ignore if p) if args.ignore is not None else ignores
        report = loom.index(args.path, limits=limits, extra_ignores=ignores, wait=True)  # the process saves, then exits
    print(report)
    if args.report_secrets:
        from .index.indexer import scan_secrets

        walk_log = logging.getLogger("loom_nb.index.walk")
        level = walk_log.level
        walk_log.setLevel(logging.ERROR)  # the index has just warned of the same .gitignore lines
        try:
            found = scan_secrets(args.path, limits, ignores)
        finally:
            walk_log.setLevel(level)
        print(f"\n{len(found)} secret(s) found; masked wherever their text is read (values never shown):")
        for path, line, kind in found:
            print(f"  {path}:{line}  {kind}" if line else f"  {path}  {kind}")
    return 0


def cmd_show(args) -> int:
    from .views.text import node_text

    _one_shot()
    if args.events is not None and args.events < 1:
        raise LoomError(f"--events {args.events}: give a number of events of at least 1 (or --events alone for the last 50)")
    loom = _open(args)
    if args.events:
        events = loom.events()
        if not events:
            print("no events: telemetry is off (loom.telemetry(True), or LoomConfig(telemetry=True)) or nothing ran yet")
        for event in events[-args.events:]:
            rest = ", ".join(f"{k}={v}" for k, v in event.items() if k not in ("time", "kind", "seconds"))
            print(f"{event['time']}  {event['kind']:<13} {1000 * float(event['seconds']):9.1f} ms  {rest}")
        return 0
    print(node_text(loom, args.node) if args.node else loom)
    return 0


def cmd_demo(args) -> int:
    from .demo import run_demo, run_self_demo

    embedder = _embedder(args.embedder)
    run_demo(Path(args.out), embedder=embedder)
    run_self_demo(Path(args.out).with_name(Path(args.out).name + "-code"), embedder=embedder)
    return 0


def cmd_eval(args) -> int:
    from .evaluation.run import STRATEGIES, ablations, evaluate, load_cases

    _check_output(args.json)
    cases, errors = load_cases(Path(args.cases))
    for message in errors:
        print(f"loom-nb: warning: {message}", file=sys.stderr)
    if not cases:
        raise LoomError(f"{args.cases}: no valid cases")
    strategies = STRATEGIES
    if args.strategy is not None:  # each once: loom,loom printed the row twice
        strategies = tuple(dict.fromkeys(s.strip() for s in args.strategy.split(",") if s.strip()))
        if not strategies:
            raise LoomError(f"--strategy {args.strategy!r}: give one or more strategies, such as loom,bm25-chunks")
    if args.ablations:
        strategies = tuple(dict.fromkeys(strategies + ("loom",) + ablations()))
    report = evaluate(cases, budget=args.budget, strategies=strategies, embedder=_embedder(args.embedder), cache_dir=args.cache)
    report.errors = errors
    print(report)
    if args.json:
        Path(args.json).write_text(json.dumps(report.to_json(), indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    if not any(r.metrics is not None for r in report.results):
        print("loom-nb: error: no case could be run (the reasons are above)", file=sys.stderr)
        return 2
    return 0


def _check_output(path, flag: str = "--json", example: str = "report.json", makes_folder: bool = False) -> None:
    """Refuse an output file that cannot be written before a long run, not after it
    (``makes_folder``: the writer creates a missing folder, as ``mine --out`` does)."""
    if path is None:
        return
    path = Path(path)
    if path.is_dir():
        raise LoomError(f"{flag} {path} is a folder; give a file name, such as {path / example}")
    parent = next((p for p in path.parents if p.exists()), path.parent) if makes_folder else path.parent
    if not parent.exists():
        raise LoomError(f"{flag} {path}: the folder {parent} does not exist")
    if not parent.is_dir():
        raise LoomError(f"{flag} {path}: {parent} is a file, not a folder")


def cmd_mine(args) -> int:
    from .evaluation.mine import MineLimits, mine_commits, write_cases

    _check_output(args.out, "--out", "cases.jsonl", makes_folder=True)  # before the trees are extracted
    limits = MineLimits(max_files=args.max_files, max_changed_lines=args.max_lines)
    cases, report = mine_commits(args.repo, max_cases=args.max, cache=args.cache, rev=args.rev, since=args.since,
                                 until=args.until, limits=limits, name=args.name)
    out = write_cases(cases, args.out)
    print(report)
    print(f"{len(cases)} cases written to {out}; parent trees under {args.cache or 'the temp folder (loom-nb-mined)'}")
    return 0


def _search_space(names: str | None):
    """The tuning space restricted to ``names`` (comma-separated), or all of it."""
    from .evaluation.tuning import DEFAULT_SPACE

    if not names:
        return None
    wanted = [n.strip() for n in names.split(",") if n.strip()]
    unknown = [n for n in wanted if n not in DEFAULT_SPACE]
    if unknown:
        raise LoomError(f"unknown parameter {', '.join(map(repr, unknown))}; the search space holds {', '.join(DEFAULT_SPACE)}")
    return {n: DEFAULT_SPACE[n] for n in wanted}


def _budgets(text: str) -> list[int]:
    """``--budgets 4000,8000``: positive whole numbers of tokens, as ``eval --budget`` takes."""
    budgets = []
    for part in (p.strip() for p in text.split(",")):
        if not part:
            continue
        try:
            budget = int(part)
        except ValueError:
            raise LoomError(f"--budgets: {part!r} is not a whole number of tokens") from None
        if budget <= 0:
            raise LoomError(f"--budgets: the budget must be a positive number of tokens, got {budget}")
        budgets.append(budget)
    if not budgets:
        raise LoomError("--budgets: give one or more token budgets, such as 4000,8000")
    return budgets


def cmd_tune(args) -> int:
    from .evaluation.run import Workbench, load_cases
    from .evaluation.tuning import check_tuning, cross_validate, prepare, tuning_figure

    budgets = _budgets(args.budgets)
    check_tuning(args.folds, args.metric, budgets)  # before the cases are indexed, not after
    space = _search_space(args.params)
    _check_output(args.json)
    _check_output(args.figure, "--figure", "tuning.html")
    cases, origin = [], {}
    for path in args.cases:
        found, errors = load_cases(Path(path))
        for message in errors:
            print(f"loom-nb: warning: {message}", file=sys.stderr)
        repeated = [c for c in found if c.id in origin]
        if repeated:  # a held-out case whose twin trains would leak into the search
            first = repeated[0]
            raise LoomError(f"{path}:{first.line}: id {first.id!r} is already used in {origin[first.id][1]}"
                            + (f" (and {len(repeated) - 1} more)" if len(repeated) > 1 else "")
                            + "; ids must be unique across the cases files (is a file given twice?)")
        cases.extend(found)
        origin.update({c.id: (Path(path).stem, path) for c in found})
    if not cases:
        raise LoomError("no valid cases")
    if args.folds > len(cases):
        raise LoomError(f"--folds {args.folds} is more than the {len(cases)} case(s): each fold must hold a case to grade")
    bench = Workbench(_embedder(args.embedder), args.cache)
    prepared = prepare(cases, bench)
    bench.save()
    from .core.config import LoomConfig, seed_config

    base = seed_config() if args.base == "seed" else LoomConfig()
    report = cross_validate(prepared, budgets, base=base, k=args.folds, metric=args.metric, rounds=args.rounds, seed=args.seed,
                            group=lambda case: origin[case.id][0], space=space)
    print(report)
    if args.json:
        Path(args.json).write_text(json.dumps(report.to_json(), indent=2, default=float) + "\n", encoding="utf-8")
    if args.figure:
        tuning_figure(report).write_html(args.figure, include_plotlyjs=True)
    return 0


CHAT_HELP = """Type a message and press Enter; paste several lines between two lines of \"\"\".
  /manifest     what the engine loaded and left out for the last turn
  /accounting   estimated against reported tokens, per turn
  /decide TYPE TITLE        record a decision node (goal, decision, option, action, outcome, observation, revisit)
  /link FROM EDGE TO [WHY]  record a typed edge (leads_to, chosen, rejected, requires, blocks, enables, supersedes)
  /decisions    the decision graph
  /quit         save and leave (so does end of input)
A line is a command only when it starts with one of these names; a line starting with a path
(/etc/hosts …) is sent as a message, and so is everything pasted between two \"\"\" lines."""

CHAT_COMMANDS = ("/manifest", "/accounting", "/decide", "/link", "/decisions", "/help", "/quit", "/exit")


def _chat_messages(stream):
    """``(text, is_command)`` from a line stream: a message per line, or per block between two
    \"\"\" lines; a line is a /command when its first word looks like one (a block never is:
    a pasted traceback may start with ``/usr/lib/…``). An empty block is skipped.

    Lines of bytes (piped input) are decoded as ``add`` decodes stdin: UTF-8, else cp1252, so
    a Latin-1 pipe gives ``café``, not a character no request can carry."""
    from .core.files import decode_bytes

    block: list[str] | None = None
    for raw in stream:
        if isinstance(raw, bytes):
            raw = decode_bytes(raw, truncated=False)
        line = raw.rstrip("\r\n")
        if line.strip() == '"""':
            if block is None:
                block = []
                continue
            if "".join(block).strip():
                yield "\n".join(block), False
            block = None
            continue
        if block is not None:
            block.append(line)
        elif line.strip():
            first = line.split()[0]
            # a known name, or one word like /quitt (a mistyped command is said so), not /etc/hosts
            yield line.strip(), first in CHAT_COMMANDS or re.fullmatch(r"/[A-Za-z]+", first) is not None
    if block and "".join(block).strip():
        yield "\n".join(block), False


def _prompted_lines():
    """Lines typed at a terminal, with line editing (``input``); Ctrl-D or Ctrl-C ends."""
    while True:
        try:
            yield input("> ") + "\n"
        except (EOFError, KeyboardInterrupt):
            print(file=sys.stderr)
            return


def _chat_command(session, line: str) -> bool:
    """Run a /command; False means leave."""
    parts = line.split(maxsplit=1)
    name, rest = parts[0], (parts[1] if len(parts) > 1 else "")
    last = session.turns[-1] if session.turns else None
    if name in ("/quit", "/exit"):
        return False
    if name == "/manifest":
        print(last.result.manifest if last is not None and last.result is not None else "no turn yet in this run")
    elif name == "/accounting":
        for row in session.accounting():
            print("  ".join(f"{k} {v}" for k, v in row.items()))
    elif name == "/decide":
        kind, _, title = rest.partition(" ")
        print(f"recorded {session.decisions.add(kind, title)}")
        session.decisions.save(session.folder)
    elif name == "/link":
        bits = rest.split(maxsplit=3)
        if len(bits) < 3:
            raise LoomError("usage: /link FROM EDGE TO [WHY]")
        session.decisions.link(bits[0], bits[2], bits[1], rationale=bits[3] if len(bits) > 3 else "")
        session.decisions.save(session.folder)
        print("linked")
    elif name == "/decisions":
        print(session.decisions)
    elif name == "/help":
        print(CHAT_HELP)
    else:
        raise LoomError(f"unknown command; these exist:\n{CHAT_HELP}")
    return True


def _at_least(minimum: int):
    """An argparse type: an int of at least ``minimum`` (--window 0 was ignored, -5 accepted)."""
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"{value} is below {minimum}")
        return value
    return parse


def _seconds(text: str) -> float:
    """An argparse type: a number of seconds above 0."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if not value > 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"{text} is not a number of seconds above 0")
    return value


def cmd_chat(args) -> int:
    from dataclasses import replace

    from .chat.session import Session

    session = Session.open(args.session, model=args.model, embedder=_embedder(args.embedder), host=args.host, workspace=args.workspace,
                           vectors=args.vectors,
                           window=args.window, max_callbacks=args.max_callbacks,
                           tools=False if args.no_tools else "auto")
    limits = {which: getattr(args, f"{which}_timeout") for which in ("connect", "first_token", "idle")}
    if any(limits.values()):  # the session's own limits (its LoomConfig), but those given here
        session.timeouts = replace(session.timeouts, **{k: v for k, v in limits.items() if v})
    streamed = False

    def echo(piece: str) -> None:
        nonlocal streamed
        streamed = True
        print(piece, end="", flush=True)

    try:
        window = session.connect()  # a missing server or model fails here, before any input
        interactive = sys.stdin.isatty()
        print(f"loom-nb chat: {window}; {len(session.turns)} earlier turns. /help for commands.", file=sys.stderr)
        piped = getattr(sys.stdin, "buffer", sys.stdin)  # bytes, decoded line by line
        for message, command in _chat_messages(_prompted_lines() if interactive else piped):
            if command:
                try:
                    if not _chat_command(session, message):
                        break
                except LoomError as exc:  # a mistyped command never ends the chat
                    print(f"loom-nb: {message.split()[0]}: {exc}", file=sys.stderr)
                continue
            streamed = False
            try:
                turn = session.send(message, on_token=echo)
            except (LoomError, KeyboardInterrupt) as exc:
                if streamed:  # end the half-streamed answer's line before the one-line error
                    print(flush=True)
                if not interactive:
                    raise  # piped input stops at the first failed turn (main prints it)
                what = "interrupted: that turn was dropped" if isinstance(exc, KeyboardInterrupt) else f"error: {exc}"
                print(f"loom-nb: {what}", file=sys.stderr)
                continue
            print(flush=True)
            actual = "?" if turn.actual_prompt is None else f"{turn.actual_prompt:,}"
            print(f"[turn {turn.number}: loaded {', '.join(turn.loaded) or 'nothing'}; "
                  f"{turn.history_messages} history messages; prompt ~{turn.estimated_prompt:,} estimated, "
                  f"{actual} reported; {turn.output_tokens:,} output tokens; "
                  f"{len(turn.callbacks)} callbacks]", file=sys.stderr)
    except KeyboardInterrupt:  # Ctrl-C while waiting on the server: one line, not a traceback
        print("loom-nb: interrupted: the turn in progress was dropped", file=sys.stderr)
        return 130
    finally:
        session.close()  # saves what changed; a chat that never got going leaves the folder as it was
    return 0


def build_parser() -> argparse.ArgumentParser:
    """Length: the whole command-line surface, one add_argument per option, read as a table."""
    parser = argparse.ArgumentParser(prog="loom-nb", description="Dynamic context orchestration for local LLMs.")
    parser.add_argument("-v", "--verbose", action="store_true", help="log what the engine does")
    sub = parser.add_subparsers(dest="command", required=True)

    def session_parser(name: str, summary: str, creates: bool = False):
        p = sub.add_parser(name, help=summary)
        p.add_argument("session", help="session folder (created if missing)" if creates else "session folder")
        p.add_argument("--embedder", help="minilm, hashing or ollama:MODEL (default: the session's own; minilm for a new one)")
        p.add_argument("--workspace", help="confirm the workspace root the session names, if it was indexed on another "
                                           "machine or account (its files are not read until confirmed)")
        p.add_argument("--vectors", help="where the session keeps its vectors: numpy (files in the folder, the default for a "
                                         "new session), a Qdrant server http://HOST:6333/COLLECTION, or qdrant+local:///FOLDER/"
                                         "COLLECTION; default: where the session keeps them")
        return p

    p = session_parser("add", "add text to a session", creates=True)
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
    p.add_argument("--pack", action="store_true",
                   help="print the context pack: loaded items, why, matched terms, snippets, open questions (with --json as JSON)")
    p.add_argument("--save", action="store_true", help="save the session (records the scores)")
    p.set_defaults(func=cmd_query)

    p = session_parser("index", "index (or refresh) a workspace folder into the session", creates=True)
    p.add_argument("path", help="the workspace folder")
    p.epilog = ("Walk options not given keep what the session's last index used (the report's 'walk:' line "
                "names any that differ from the defaults).")
    p.add_argument("--max-file-bytes", type=int, default=None,
                   help="skip (and report) files bigger than this, usually generated or data (default: the last index's, else 1,000,000)")
    p.add_argument("--max-files", type=int, default=None,
                   help="index at most this many files; the rest are counted as skipped (default: the last index's, else 20,000)")
    p.add_argument("--ignore", action="append", default=None,
                   help="a gitignore-style pattern (repeatable; replaces the patterns of the last index; --ignore '' clears them)")
    p.add_argument("--translations", action=argparse.BooleanOptionalAction, default=None,
                   help="index gettext catalogues (*.po, *.pot) too; left out by default, as the code holds their strings")
    p.add_argument("--report-secrets", action="store_true",
                   help="list the credentials found in the workspace (path and line, never the value)")
    p.set_defaults(func=cmd_index)

    p = session_parser("show", "describe a session or one node")
    p.add_argument("node", nargs="?")
    p.add_argument("--events", type=int, nargs="?", const=50, default=None, metavar="N",
                   help="print the last N telemetry events (default 50) from events.jsonl")
    p.set_defaults(func=cmd_show)

    p = sub.add_parser("demo", help="build the sample session and run three queries")
    p.add_argument("--out", default="build/demo-session")
    p.add_argument("--embedder", default="minilm", help="minilm (default) or hashing")
    p.set_defaults(func=cmd_demo)

    p = sub.add_parser("eval", help="grade labelled queries: the engine against baselines")
    p.add_argument("cases", help="a JSON Lines file of labelled queries (see datasets/README.md)")
    p.add_argument("--budget", type=int, default=8000, help="context tokens per query (default 8000)")
    p.add_argument("--strategy", help="comma-separated: loom (the default path), loom-bare, loom-fast, loom-fused (one mode "
                                      "forced), bm25, bm25-chunks, dense, whole-file, loom-no-<signal> (default: all but the "
                                      "loom-no-<signal> ablations)")
    p.add_argument("--ablations", action="store_true", help="also run the engine with each weighted signal switched off, and print what each earns")
    p.add_argument("--json", help="write every loaded item and metric to this file")
    p.add_argument("--embedder", default="minilm", help="minilm (default) or hashing")
    p.add_argument("--cache", help="keep indexed workspaces in this folder between runs")
    p.set_defaults(func=cmd_eval)

    p = sub.add_parser("mine", help="labelled cases from a git repository's commits (query: message; gold: lines changed)")
    p.add_argument("repo", help="a git repository (working copy or bare mirror)")
    p.add_argument("--out", required=True, help="the JSON Lines cases file to write")
    p.add_argument("--max", type=int, default=50, help="stop after this many cases (default 50)")
    p.add_argument("--cache", help="folder for the parent trees (default: <temp>/loom-nb-mined/NAME); keep it outside git")
    p.add_argument("--rev", default="HEAD", help="history to walk (default HEAD)")
    p.add_argument("--since", help="only commits after this date (git log --since)")
    p.add_argument("--until", help="only commits before this date")
    p.add_argument("--name", help="case id prefix (default: the repository's name)")
    p.add_argument("--max-files", type=int, default=6, help="skip commits touching more source files (default 6)")
    p.add_argument("--max-lines", type=int, default=300, help="skip commits changing more source lines (default 300)")
    p.set_defaults(func=cmd_mine)

    p = sub.add_parser("tune", help="search weights and thresholds on labelled cases, with held-out folds")
    p.add_argument("cases", nargs="+", help="JSON Lines cases files (folds are balanced across files)")
    p.add_argument("--budgets", default="4000,8000,16000", help="the metric is averaged over these budgets")
    p.add_argument("--metric", default="line_recall", choices=["line_recall", "file_recall", "recall", "precision"],
                   help="what the search maximises (default line_recall)")
    p.add_argument("--folds", type=int, default=5, help="held-out folds, 2 to the number of cases (default 5)")
    p.add_argument("--rounds", type=int, default=2, help="coordinate-ascent rounds per search")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--params", help="search only these parameters (comma-separated names of loom_nb.evaluation.tuning.DEFAULT_SPACE)")
    p.add_argument("--base", default="defaults", choices=["defaults", "seed"],
                   help="start from the library defaults, or from the pre-tuning seed values (to measure the gain of tuning)")
    p.add_argument("--embedder", default="minilm", help="minilm (default) or hashing")
    p.add_argument("--cache", help="indexed workspaces and embeddings kept between runs")
    p.add_argument("--json", help="write the folds and the chosen parameters here")
    p.add_argument("--figure", help="write the held-out figure here (HTML, plotly.js inlined)")
    p.set_defaults(func=cmd_tune)

    p = session_parser("chat", "chat with a local model through Ollama; the engine picks each turn's context", creates=True)
    p.add_argument("--model", help="an Ollama chat model (default: the one the stored chat used)")
    p.add_argument("--host", help="the Ollama server (default: OLLAMA_HOST, then http://127.0.0.1:11434)")
    p.add_argument("--window", type=_at_least(1), help="override the window (default: the num_ctx Ollama reports)")
    p.add_argument("--max-callbacks", type=_at_least(0), default=2, help="callback retrievals per turn (default 2; 0: off)")
    p.add_argument("--no-tools", action="store_true", help="ask for callbacks with the [[load: ID]] marker, not a tool")
    p.add_argument("--connect-timeout", type=_seconds, help="seconds to wait for Ollama to accept a connection (default: "
                                                            "the session's ollama_connect_timeout, 10)")
    p.add_argument("--first-token-timeout", type=_seconds, help="seconds to wait for an answer's first token: a cold model "
                                                                "load, a long prompt on a CPU (default: the session's "
                                                                "ollama_first_token_timeout, 300)")
    p.add_argument("--idle-timeout", type=_seconds, help="seconds to wait between two chunks of an answer (default: the "
                                                         "session's ollama_idle_timeout, 120)")
    p.set_defaults(func=cmd_chat)
    return parser


_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
"""Control characters but tab and newline: a file name, a heading or a model's answer that
holds an escape sequence would otherwise set the terminal's title or clear its screen."""


def _caret(char: str) -> str:
    code = ord(char)
    return "^?" if code == 0x7F else f"^{chr(code + 64)}" if code < 0x20 else f"M-^{chr(code - 128 + 64)}"


def printable(text: str) -> str:
    r"""``text`` with its control characters shown as ``cat -v`` shows them (``^[``), not
    obeyed; no backslash is added, so printed JSON stays JSON.

    >>> printable("a\x1b[31mred.md\n\tend\x07")
    'a^[[31mred.md\n\tend^G'
    """
    return _CONTROL.sub(lambda m: _caret(m.group()), text)


class _Printable:
    """A text stream that writes :func:`printable` text to the stream it wraps."""

    def __init__(self, stream) -> None:
        self._stream = stream

    def write(self, text: str) -> int:
        self._stream.write(printable(text))
        return len(text)

    def __getattr__(self, name: str):
        return getattr(self._stream, name)


def _quiet_stdout() -> None:
    """Point stdout at /dev/null after a broken pipe, so the interpreter's last flush at exit
    does not fail again (the pattern the Python docs give for SIGPIPE)."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.__stdout__.fileno())
    except (OSError, AttributeError, ValueError):  # no real stdout (a test's capture): nothing to quiet
        pass


class _CommandLineWords(logging.Filter):
    """The library's hints name its Python arguments; on the command line, name the option."""

    def filter(self, record: logging.LogRecord) -> bool:
        if isinstance(record.msg, str) and "until you pass workspace=%r" in record.msg:
            record.msg = record.msg.replace("until you pass workspace=%r", "until you pass --workspace %s")
        return True


_OPTION_WORDS = (("pass window=N", "pass --window N"), ("(ask_ollama=True)", "(--ask-ollama)"))
"""A warning's advice in Python words, and the same advice in the command line's."""


def _show_warning(message, category, filename, lineno, file=None, line=None) -> None:
    """A warning as one line in the command line's words, not a library file and line of
    code: ``loom-nb: warning: no window known for model …; pass --window N``."""
    text = str(message)
    for python, option in _OPTION_WORDS:
        text = text.replace(python, option)
    print(printable(f"loom-nb: warning: {text}"), file=file or sys.stderr)


class _CommandLineFormatter(logging.Formatter):
    """A library warning as the command line says its own (``loom-nb: warning: …``); what
    ``-v`` adds (progress, at INFO) keeps its logger's name."""

    def format(self, record: logging.LogRecord) -> str:
        if record.levelno >= logging.WARNING:
            return printable(f"loom-nb: {record.levelname.lower()}: {record.getMessage()}")
        return super().format(record)


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    handler = logging.StreamHandler()
    handler.setFormatter(_CommandLineFormatter("%(levelname)s %(name)s: %(message)s"))
    logging.basicConfig(level=logging.INFO if args.verbose else logging.WARNING, handlers=[handler])
    engine_log, words = logging.getLogger("loom_nb.core.engine"), _CommandLineWords()
    engine_log.addFilter(words)  # for this command only: a notebook that calls main() keeps the Python wording
    collecting = gc.isenabled()
    stdout, sys.stdout = sys.stdout, _Printable(sys.stdout)  # what a workspace holds is shown, never run by the terminal
    shown, warnings.showwarning = warnings.showwarning, _show_warning
    try:
        code = args.func(args)
        stdout.flush()  # a reader that left (| head) shows here, not as a traceback at exit
        return code
    except LoomError as exc:
        print(f"loom-nb: error: {printable(str(exc))}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # the reader left (| head): stop quietly, with the status cat gets from SIGPIPE
        _quiet_stdout()
        return 141
    except OSError as exc:  # a path the user gave: a folder where a file belongs, a missing parent, no permission
        where = f": {exc.filename}" if exc.filename else ""
        print(printable(f"loom-nb: error: {exc.strerror or exc}{where}"), file=sys.stderr)
        return 2
    finally:
        engine_log.removeFilter(words)
        warnings.showwarning = shown
        sys.stdout = stdout
        if collecting:  # main() called in a process that goes on (a test, a notebook)
            gc.enable()


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
