"""Move a cases file's gold line ranges to where that code is now.

    .venv/bin/python tools/reanchor_cases.py datasets/self.jsonl --since COMMIT [--write]

A labelled case whose workspace is live code (``datasets/self.jsonl`` grades loom-nb's own
package) drifts as the code changes: line 189 stops being ``composite``. Given the commit the
ranges were written against, this maps each range's lines through a line diff (difflib) of
each file from that commit to the working tree and prints what moved; ``--write`` rewrites
the file. A range whose lines mostly vanished is reported, not guessed.
"""

from __future__ import annotations

import argparse
import difflib
import json
import subprocess
import sys
from pathlib import Path


def line_map(old: list[str], new: list[str]) -> dict[int, int]:
    """1-based old line → new line, for the lines the diff keeps."""
    mapping = {}
    for tag, i1, i2, j1, _ in difflib.SequenceMatcher(None, old, new, autojunk=False).get_opcodes():
        if tag == "equal":
            for k in range(i2 - i1):
                mapping[i1 + k + 1] = j1 + k + 1
    return mapping


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("cases")
    parser.add_argument("--since", required=True, help="the commit the ranges were written against")
    parser.add_argument("--write", action="store_true")
    args = parser.parse_args()
    cases_path = Path(args.cases)
    repo = Path(subprocess.run(["git", "rev-parse", "--show-toplevel"], capture_output=True, text=True, check=True).stdout.strip())
    lines_out, problems = [], 0
    for raw in cases_path.read_text(encoding="utf-8").splitlines():
        if not raw.strip() or raw.lstrip().startswith("#"):
            lines_out.append(raw)
            continue
        case = json.loads(raw)
        workspace = (cases_path.parent / case.get("workspace", ".")).resolve()
        for path, ranges in (case.get("gold_ranges") or {}).items():
            file = workspace / path
            rel = file.relative_to(repo).as_posix()
            old = subprocess.run(["git", "show", f"{args.since}:{rel}"], capture_output=True, text=True, cwd=repo)
            if old.returncode != 0:
                print(f"{case['id']}: {rel} not in {args.since}; left as it is", file=sys.stderr)
                continue
            mapping = line_map(old.stdout.splitlines(), file.read_text(encoding="utf-8").splitlines())
            moved = []
            for start, end in ranges:
                kept = [mapping[k] for k in range(start, end + 1) if k in mapping]
                if len(kept) < 0.5 * (end - start + 1):
                    print(f"{case['id']}: {path} [{start}, {end}] mostly gone ({len(kept)} lines kept); left as it is", file=sys.stderr)
                    problems += 1
                    moved.append([start, end])
                    continue
                # ends that changed (a new signature line) move with their nearest kept neighbour
                first = next(k for k in range(start, end + 1) if k in mapping)
                last = next(k for k in range(end, start - 1, -1) if k in mapping)
                moved.append([mapping[first] - (first - start), mapping[last] + (end - last)])
            if moved != ranges:
                print(f"{case['id']}: {path} {ranges} -> {moved}")
            case["gold_ranges"][path] = moved
        lines_out.append(json.dumps(case, ensure_ascii=False))
    if args.write:
        cases_path.write_text("\n".join(lines_out) + "\n", encoding="utf-8")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
