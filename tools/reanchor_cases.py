"""Move a cases file's gold line ranges to where that code is now.

    .venv/bin/python tools/reanchor_cases.py datasets/self.jsonl --since COMMIT [--write]
    .venv/bin/python tools/reanchor_cases.py datasets/self.jsonl --check

A labelled case whose workspace is live code (``datasets/self.jsonl`` grades loom-nb's own
package) drifts as the code changes: line 189 stops being ``composite``. Given the commit the
ranges were written against, this maps each range's lines through a line diff (difflib) of
each file from that commit to the working tree and prints what moved; ``--write`` rewrites
the file. A range whose lines mostly vanished is reported, not guessed.

Each case also records ``anchors``: per gold file, the first line of each range as it reads
(stripped, at most :data:`ANCHOR_CHARS` characters). ``--write`` refreshes them; ``--check``
(and ``tests/test_datasets.py``) lists every range whose first line no longer reads so, which
is how a code change that moved gold lines fails the tests instead of quietly lowering the
figures (one session measured three self cases and eleven follow-ups on the wrong lines).
"""

from __future__ import annotations

import argparse
import difflib
import json
import subprocess
import sys
from pathlib import Path


ANCHOR_CHARS = 80
"""Characters of a range's first line kept as its anchor: enough to tell ``def rank(`` from
``def rank_nodes(``, short enough to keep a case on one readable line."""


def anchor(line: str) -> str:
    """What a range's first line is recorded as: stripped, cut to :data:`ANCHOR_CHARS`."""
    return line.strip()[:ANCHOR_CHARS]


def anchors_of(case: dict, workspace: Path) -> dict[str, list[str]]:
    """The anchor of every gold range of ``case`` in the files as they are now."""
    out = {}
    for path, ranges in (case.get("gold_ranges") or {}).items():
        file = workspace / path
        lines = file.read_text(encoding="utf-8").splitlines() if file.is_file() else []  # a gone file reads as blank
        out[path] = [anchor(lines[start - 1]) if start <= len(lines) else "" for start, _ in ranges]
    return out


def stale_anchors(cases_path: Path) -> list[str]:
    """Every gold range of ``cases_path`` whose first line no longer reads as its anchor, and
    every case with ranges but no anchors, one message each (empty: the gold follows the code)."""
    problems = []
    for number, raw in enumerate(cases_path.read_text(encoding="utf-8").splitlines(), 1):
        if not raw.strip() or raw.lstrip().startswith("#"):
            continue
        case = json.loads(raw)
        if not case.get("gold_ranges"):
            continue
        recorded = case.get("anchors")
        if not isinstance(recorded, dict):
            problems.append(f"{cases_path.name}:{number} {case['id']}: no anchors")
            continue
        now = anchors_of(case, (cases_path.parent / case.get("workspace", ".")).resolve())
        for path, ranges in case["gold_ranges"].items():
            for (start, _), was, reads in zip(ranges, recorded.get(path) or [], now[path]):
                if was != reads:
                    problems.append(f"{cases_path.name}:{number} {case['id']}: {path}:{start} reads {reads!r}, "
                                    f"the range was written on {was!r}")
            if len(recorded.get(path) or []) != len(ranges):
                problems.append(f"{cases_path.name}:{number} {case['id']}: {path} has {len(ranges)} ranges and "
                                f"{len(recorded.get(path) or [])} anchors")
    return problems


def line_map(old: list[str], new: list[str]) -> dict[int, int]:
    """1-based old line → new line, for the lines the diff keeps."""
    mapping = {}
    for tag, i1, i2, j1, _ in difflib.SequenceMatcher(None, old, new, autojunk=False).get_opcodes():
        if tag == "equal":
            for k in range(i2 - i1):
                mapping[i1 + k + 1] = j1 + k + 1
    return mapping


def moved_elsewhere(block: list[str], workspace: Path, skip: Path) -> tuple[str, int, int] | None:
    """Where the lines of ``block`` live now when they left their file (a function moved to
    another module): the file of ``workspace`` holding most of them, and the span they cover
    there, if it holds at least half."""
    best = None
    for candidate in sorted(workspace.rglob("*.py")):
        if candidate == skip:
            continue
        lines = candidate.read_text(encoding="utf-8").splitlines()
        blocks = [b for b in difflib.SequenceMatcher(None, block, lines, autojunk=False).get_matching_blocks() if b.size]
        size = sum(b.size for b in blocks)
        if blocks and (best is None or size > best[0]):
            best = (size, candidate.relative_to(workspace).as_posix(), blocks[0].b + 1, blocks[-1].b + blocks[-1].size)
    if best is None or best[0] < 0.5 * len([line for line in block if line.strip()]):
        return None
    return best[1], best[2], best[3]


def renamed_from(repo: Path, since: str) -> dict[str, str]:
    """Files moved since ``since`` (staged or committed): new path → old path, as git's
    rename detection sees them, so a moved module keeps its ranges."""
    out = subprocess.run(["git", "diff", "-M", "--name-status", since], capture_output=True, text=True, cwd=repo, check=True).stdout
    moves = {}
    for line in out.splitlines():
        parts = line.split("\t")
        if parts[0].startswith("R") and len(parts) == 3:
            moves[parts[2]] = parts[1]
    return moves


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("cases")
    parser.add_argument("--since", help="the commit the ranges were written against (without it, "
                        "--write only records the anchors of the ranges as they are)")
    parser.add_argument("--write", action="store_true")
    parser.add_argument("--check", action="store_true", help="list the ranges whose first line moved away")
    args = parser.parse_args()
    cases_path = Path(args.cases)
    if args.check:
        problems = stale_anchors(cases_path)
        for problem in problems:
            print(problem)
        return 1 if problems else 0
    if args.since is None:
        if not args.write:
            parser.error("give --since COMMIT, --check, or --write alone to record the anchors")
        return _write_anchors(cases_path)
    return _reanchor(cases_path, args.since, args.write)


def _reanchor(cases_path: Path, since: str, write: bool) -> int:  # noqa: C901 - one pass: each range kept, moved or reported
    """Move every range of ``cases_path`` from ``since`` to the working tree; 1 when one was
    left as it is because its lines mostly vanished."""
    repo = Path(subprocess.run(["git", "rev-parse", "--show-toplevel"], capture_output=True, text=True, check=True).stdout.strip())
    lines_out, problems = [], 0
    moves = renamed_from(repo, since)
    for raw in cases_path.read_text(encoding="utf-8").splitlines():
        if not raw.strip() or raw.lstrip().startswith("#"):
            lines_out.append(raw)
            continue
        case = json.loads(raw)
        workspace = (cases_path.parent / case.get("workspace", ".")).resolve()
        elsewhere: dict[str, list[list[int]]] = {}
        unresolved = problems
        for path, ranges in (case.get("gold_ranges") or {}).items():
            file = workspace / path
            rel = file.relative_to(repo).as_posix()
            old = subprocess.run(["git", "show", f"{since}:{moves.get(rel, rel)}"], capture_output=True, text=True, cwd=repo)
            if old.returncode != 0:
                print(f"{case['id']}: {rel} not in {since}; left as it is", file=sys.stderr)
                continue
            old_lines = old.stdout.splitlines()
            mapping = line_map(old_lines, file.read_text(encoding="utf-8").splitlines())
            moved = []
            for start, end in ranges:
                kept = [mapping[k] for k in range(start, end + 1) if k in mapping]
                if len(kept) < 0.5 * (end - start + 1):
                    gone = [old_lines[k - 1] for k in range(start, end + 1) if k not in mapping]
                    target = moved_elsewhere(gone, workspace, file)
                    if target is None:
                        print(f"{case['id']}: {path} [{start}, {end}] mostly gone ({len(kept)} lines kept); left as it is", file=sys.stderr)
                        problems += 1
                        moved.append([start, end])
                        continue
                    other, first, last = target
                    print(f"{case['id']}: {path} [{start}, {end}] moved to {other} [{first}, {last}]")
                    elsewhere.setdefault(other, []).append([first, last])
                    if len(kept) >= 5:  # what stayed behind still answers too
                        moved.append([min(kept), max(kept)])
                    continue
                # ends that changed (a new signature line) move with their nearest kept neighbour
                first = next(k for k in range(start, end + 1) if k in mapping)
                last = next(k for k in range(end, start - 1, -1) if k in mapping)
                moved.append([mapping[first] - (first - start), mapping[last] + (end - last)])
            if moved != ranges:
                print(f"{case['id']}: {path} {ranges} -> {moved}")
            case["gold_ranges"][path] = moved
        for path in [p for p, r in case.get("gold_ranges", {}).items() if not r]:
            del case["gold_ranges"][path]
            case["gold_files"] = [f for f in case["gold_files"] if f != path]
        for other, spans in elsewhere.items():
            case["gold_ranges"].setdefault(other, []).extend(spans)
            if other not in case["gold_files"]:
                case["gold_files"].append(other)
        if problems == unresolved:  # a range left as it is keeps its old anchors, so --check still fails
            case["anchors"] = anchors_of(case, workspace)
        lines_out.append(json.dumps(case, ensure_ascii=False))
    if write:
        cases_path.write_text("\n".join(lines_out) + "\n", encoding="utf-8")
    return 1 if problems else 0


def _write_anchors(cases_path: Path) -> int:
    """Record every case's anchors from the files as they are, ranges untouched."""
    lines_out = []
    for raw in cases_path.read_text(encoding="utf-8").splitlines():
        if raw.strip() and not raw.lstrip().startswith("#"):
            case = json.loads(raw)
            if case.get("gold_ranges"):
                case["anchors"] = anchors_of(case, (cases_path.parent / case.get("workspace", ".")).resolve())
            raw = json.dumps(case, ensure_ascii=False)
        lines_out.append(raw)
    cases_path.write_text("\n".join(lines_out) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
