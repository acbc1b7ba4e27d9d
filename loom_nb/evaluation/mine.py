"""Labelled cases from a git repository's history: each commit is a query with a known answer.

A commit says what it did (its message) and where (its diff). Read backwards, that is an
evaluation case: given the message, which lines of the tree *before* the commit should a
context engine have loaded? :func:`mine_commits` walks a repository's history and turns each
suitable commit into a :class:`~loom_nb.evaluation.run.Case`-shaped record:

* ``query`` — the commit message (subject and body; trailers such as ``Signed-off-by`` and a
  trailing pull-request number ``(#1234)`` are removed: they name no code);
* ``workspace`` — the tree of the *parent* commit, materialised once per commit with
  ``git read-tree`` and ``checkout-index`` under a cache folder (that is the code the question is asked about);
* ``gold_files`` / ``gold_ranges`` — the non-test source files the commit modified, and in
  each the lines of the parent version that it changed or deleted (``git diff -U0 -w``: a
  whitespace-only change is no answer), blank lines left out. A hunk that only inserts
  lines marks the two parent lines with text around the insertion: where the new code
  belongs is the answer to "where do I change this" (:func:`gold_spans`). A file the
  commit adds has no lines in the parent, so it cannot be gold.

Filters (each rejection is counted in :class:`MineReport`): merges; bots; version bumps and
releases, and reverts of them; tooling (CI, linter, type-checker and dependency updates: their message names a tool,
not the code); formatting-only commits (the message says so, or the diff is empty once
whitespace is ignored); commits that touch no non-test source file (docs, tests, CI only);
commits with too many source files or changed lines; and those whose message is too short
to be a question.

Run it as ``loom-nb mine REPO --out cases.jsonl --max 40``.

Size: the git plumbing, the filters and the case writer of one command.
"""

from __future__ import annotations

import json
import logging
import os
import re
import shutil
import subprocess
import tempfile
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator, Sequence

from ..core.errors import LoomError
from ..core.paths import CODE_EXTENSIONS, file_role

log = logging.getLogger(__name__)

SOURCE_EXTENSIONS = CODE_EXTENSIONS
"""Extensions of the files that can be gold: program source, not docs, data or config."""

_TRAILER = re.compile(r"^(signed-off-by|co-authored-by|reviewed-by|acked-by|tested-by|reported-by|suggested-by|"
                      r"cc|change-id|fixes|closes|refs?|see-also)\s*:", re.IGNORECASE)
_PR_SUFFIX = re.compile(r"\s*\((?:#|gh-)\d+\)\s*$")
_VERSION = re.compile(r"\bv?\d+\.\d+(?:\.\d+)?(?:[-.]?\w+)?\b")
_RELEASE = re.compile(r"^\s*(?:release|releasing|prepare(?:d)?\s+(?:for\s+)?(?:release|version)|bump(?:ed)?\s+(?:the\s+)?version|"
                      r"version\s+bump|start\s+version|set\s+version|back\s+to\s+dev|update\s+version|"
                      r"chore\(release\)|chore:\s*release|🔖)", re.IGNORECASE)
_REVERT = re.compile(r"""^\s*revert(?:ing|ed|s)?\b\s*:?\s*["'“]?""", re.IGNORECASE)
_FORMATTING = re.compile(r"\b(?:reformat\w*|format(?:ting)?\s+(?:code|files|with)|run\s+(?:black|ruff|gofmt|prettier|isort)|"
                         r"apply\s+(?:black|ruff|gofmt|prettier|isort)|(?:black|isort|gofmt|prettier|ruff)\s+format|"
                         r"pre-commit\s+autoupdate|whitespace|trailing\s+spaces?|code\s+style|lint(?:ing)?\s+fix|fix\s+lint\w*|"
                         r"typos?\b|spelling)", re.IGNORECASE)
_TOOLING = re.compile(r"^\s*(?:ci|build)(?:\(|:)|\b(?:(?:update|bump|upgrade)\s+(?:dev\s+|the\s+)?(?:dependencies|deps|requirements|"
                      r"pre-commit|hooks?|project\s+files)|pre-commit|mypy|pyright|flake8|pylint|golangci|noqa|ruff)\b", re.IGNORECASE)
_BOT_AUTHORS = re.compile(r"\[bot\]|dependabot|renovate|github-actions|pre-commit-ci", re.IGNORECASE)
_HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")


@dataclass(frozen=True)
class MineLimits:
    """What makes a commit too large or too small to be a good case."""

    max_files: int = 6
    """At most this many non-test source files modified: a sweeping refactor has no focus."""
    max_changed_lines: int = 300
    """At most this many gold lines (parent lines changed, deleted, or insertion anchors)."""
    min_query_chars: int = 12
    """A message shorter than this ("fix", "wip") asks nothing."""
    max_query_chars: int = 2000
    """Longer messages are cut here (some paste whole logs)."""


@dataclass
class MineReport:
    """How many commits were looked at, kept, and rejected for which reason."""

    repo: str
    examined: int = 0
    kept: int = 0
    rejected: Counter = field(default_factory=Counter)

    def __str__(self) -> str:
        reasons = ", ".join(f"{n} {why}" for why, n in self.rejected.most_common())
        return f"{self.repo}: {self.examined} commits examined, {self.kept} kept" + (f"; rejected: {reasons}" if reasons else "")


def _git(repo: Path, *args: str, binary: bool = False, env: dict[str, str] | None = None) -> str | bytes:
    # core.quotePath=false: git otherwise prints a non-ASCII path as "caf\303\251.py", which
    # named no file, so every commit to one was rejected as changing no source file
    done = subprocess.run(["git", "--git-dir" if _is_bare(repo) else "-C", str(repo), "-c", "core.quotePath=false", *args],
                          capture_output=True, check=False,
                          env={**os.environ, "LC_ALL": "C", "GIT_OPTIONAL_LOCKS": "0", **(env or {})})
    if done.returncode != 0:
        raise LoomError(f"git {' '.join(args[:3])} failed in {repo}: {done.stderr.decode(errors='replace').strip()}")
    return done.stdout if binary else done.stdout.decode("utf-8", errors="replace")


def _is_bare(repo: Path) -> bool:
    return (repo / "HEAD").is_file() and (repo / "objects").is_dir() and not (repo / ".git").exists()


def is_source(path: str) -> bool:
    """A non-test program source file (what can be gold): :func:`~loom_nb.core.lexical.file_role` is "code".

    >>> [is_source(p) for p in ("src/flask/app.py", "tests/test_app.py", "context_test.go", "docs/conf.py", "README.md", "pkg/conftest.py")]
    [True, False, False, False, False, False]
    """
    return file_role(path) == "code"


def clean_message(message: str, max_chars: int = 2000) -> str:
    """The commit message as a query: trailers, a trailing ``(#123)`` and blank runs removed.

    >>> clean_message("Fix session cookie domain (#5012)\\n\\nUse the host.\\n\\nSigned-off-by: A <a@b.c>\\n")
    'Fix session cookie domain\\n\\nUse the host.'
    """
    lines = message.replace("\r\n", "\n").strip().split("\n")
    kept = [line.rstrip() for line in lines if not _TRAILER.match(line.strip())]
    if kept:
        kept[0] = _PR_SUFFIX.sub("", kept[0])
    text = re.sub(r"\n{3,}", "\n\n", "\n".join(kept)).strip()
    return text[:max_chars].rstrip()


def _file_header(line: str, path: str | None) -> tuple[bool, str | None]:
    """Whether ``line`` is a diff's file header, and the parent-side path from then on: None
    for an added file (``--- /dev/null``) or a deleted one (``+++ /dev/null``: no case asks
    for code that is about to vanish whole)."""
    if line.startswith("diff --git "):
        return True, None
    if line.startswith("--- "):
        name = line[4:].strip()
        return True, None if name == "/dev/null" else name[2:] if name.startswith("a/") else name
    if line.startswith("+++ "):
        return True, None if line[4:].strip() == "/dev/null" else path
    return False, path


def parse_hunks(diff: str, *, kinds: bool = False) -> dict[str, list]:
    r"""Parent-side line ranges per modified file from ``git diff -U0`` output.

    A hunk ``@@ -a,b +c,d @@`` with ``b > 0`` changed or deleted parent lines ``a .. a+b-1``;
    with ``b == 0`` it inserted lines after parent line ``a``, and marks lines ``a`` and
    ``a+1`` (where the new lines go; only ``1`` when inserting at the top). Added and deleted
    files are left out. Paths are the parent's (``--no-renames``). With ``kinds``, each
    range is ``(start, end, "changed" | "inserted")`` and ranges are not merged.

    >>> diff = ("diff --git a/m.py b/m.py\n--- a/m.py\n+++ b/m.py\n@@ -3,2 +3 @@\n-x\n-y\n+z\n"
    ...         "@@ -10,0 +10,2 @@\n+p\n+q\n"
    ...         "diff --git a/n.py b/n.py\nnew file mode 100644\n--- /dev/null\n+++ b/n.py\n@@ -0,0 +1 @@\n+k\n")
    >>> parse_hunks(diff)
    {'m.py': [(3, 4), (10, 11)]}
    """
    out: dict[str, list] = {}
    path: str | None = None
    for line in diff.split("\n"):
        header, path = _file_header(line, path)
        if not header and line.startswith("@@") and path is not None:
            match = _HUNK.match(line)
            if not match:
                continue
            start, count = int(match.group(1)), int(match.group(2) if match.group(2) is not None else 1)
            if count > 0:
                out.setdefault(path, []).append((start, start + count - 1, "changed"))
            else:
                out.setdefault(path, []).append((max(start, 1), start + 1, "inserted"))
    if kinds:
        return out
    return {p: _merge([(a, b) for a, b, _ in spans]) for p, spans in out.items()}



def patch_spans(patch: str) -> dict[str, list[tuple[int, int, str]]]:
    r"""Parent-side ``(start, end, kind)`` ranges per modified file from a unified diff *with*
    context lines (a pull request's patch, a SWE-bench gold patch), with the meaning
    :func:`parse_hunks` gives ``git diff -U0``: a removed line is "changed"; an added line
    that replaces none marks the parent lines around it as "inserted". Added and deleted
    files are left out. The hunk headers' line counts say where a hunk ends, so a removed
    ``-- comment`` (``--- comment`` in the diff) is a line, not a file header.

    >>> patch = ("diff --git a/m.py b/m.py\n--- a/m.py\n+++ b/m.py\n@@ -1,5 +1,4 @@\n a\n b\n-x\n-y\n+z\n c\n"
    ...          "@@ -20,2 +19,4 @@\n p\n+q\n+r\n s\n")
    >>> patch_spans(patch)
    {'m.py': [(3, 3, 'changed'), (4, 4, 'changed'), (20, 21, 'inserted')]}
    >>> diff = "diff --git a/m.py b/m.py\n--- a/m.py\n+++ b/m.py\n@@ -3,2 +3 @@\n-x\n-y\n+z\n@@ -10,0 +11,2 @@\n+p\n+q\n"
    >>> {f: [(a, b) for a, b, _ in s] for f, s in patch_spans(diff).items()} == {'m.py': [(3, 3), (4, 4), (10, 11)]}
    True
    """
    out: dict[str, list[tuple[int, int, str]]] = {}
    for path, first, count, body in _hunks(patch):
        # -U0 names the line an insertion follows (its count 0); with context, the first line shown
        old, replacing = first + (count == 0), False
        for line in body:
            if line.startswith("-"):
                if path is not None:
                    out.setdefault(path, []).append((old, old, "changed"))
                old, replacing = old + 1, True
            elif line.startswith("+"):
                anchor = (max(old - 1, 1), old, "inserted")
                if path is not None and not replacing and out.setdefault(path, [])[-1:] != [anchor]:
                    out[path].append(anchor)  # a run of added lines marks its place once
            elif not line.startswith("\\"):  # a context line ("\\ No newline at end of file" is neither)
                old, replacing = old + 1, False
    return out


def parent_blocks(patch: str) -> dict[str, list[tuple[int, list[str]]]]:
    r"""Each hunk's first parent line and its parent-side lines (context and removed), per
    modified file: what the parent file holds there, to find the hunk in another version of it.

    >>> parent_blocks("--- a/m.py\n+++ b/m.py\n@@ -3,3 +3,3 @@\n a\n-b\n+c\n d\n\\ No newline at end of file\n")
    {'m.py': [(3, ['a', 'b', 'd'])]}
    """
    out: dict[str, list[tuple[int, list[str]]]] = {}
    for path, first, _, body in _hunks(patch):
        if path is not None:
            out.setdefault(path, []).append((first, [line[1:] for line in body if not line.startswith(("+", "\\"))]))
    return out


def _hunks(patch: str):
    """``(parent path, first parent line, parent line count, body lines)`` for each hunk of a
    unified diff; the path is None in an added or deleted file. The hunk headers' line counts
    say where a hunk ends, so a removed ``-- comment`` (``--- comment`` in the diff) is a line,
    not a file header."""
    path: str | None = None
    hunk = None
    left_old = left_new = 0  # the hunk's lines still to come
    for line in patch.split("\n"):
        if left_old <= 0 and left_new <= 0:  # between hunks: a removed "-- x" is not a header
            if hunk is not None:
                yield hunk
                hunk = None
            header, path = _file_header(line, path)
            match = None if header else _HUNK.match(line)
            if match:
                left_old, left_new = int(match.group(2) or 1), int(match.group(4) or 1)
                hunk = (path, int(match.group(1)), left_old, [])
            continue
        hunk[3].append(line)
        if line.startswith("-"):
            left_old -= 1
        elif line.startswith("+"):
            left_new -= 1
        elif not line.startswith("\\"):
            left_old, left_new = left_old - 1, left_new - 1
    if hunk is not None:
        yield hunk


ANCHOR_REACH = 3
"""How many blank lines an insertion anchor may step over to reach a line with text."""


def gold_spans(spans: list[tuple[int, int, str]], lines: list[str]) -> list[tuple[int, int]]:
    """The gold lines of one file: changed lines that hold text, and insertion anchors
    moved off blank lines.

    Blank lines carry no content to retrieve (and lie between the units an index makes),
    so they are dropped. An insertion between lines ``a`` and ``a+1`` is anchored on the
    nearest non-blank line at or above ``a`` and at or below ``a+1`` (at most
    :data:`ANCHOR_REACH` lines away): the end of what precedes the new code and the start
    of what follows it.

    >>> text = ["def f():", "    return 1", "", "", "def g():", "    pass"]
    >>> gold_spans([(2, 3, "changed"), (3, 4, "inserted")], text)
    [(2, 2), (5, 5)]
    """
    n = len(lines)

    def blank(k: int) -> bool:
        return not lines[k - 1].strip()

    keep: list[tuple[int, int]] = []
    for start, end, kind in spans:
        if kind == "changed":
            keep.extend((k, k) for k in range(start, min(end, n) + 1) if not blank(k))
            continue
        for first, step in ((start, -1), (end, 1)):
            k = first
            while 1 <= k <= n and blank(k) and abs(k - first) < ANCHOR_REACH:
                k += step
            if 1 <= k <= n and not blank(k):
                keep.append((k, k))
    return _merge(keep)


def _merge(spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    merged: list[list[int]] = []
    for start, end in sorted(spans):
        if merged and start <= merged[-1][1] + 1:
            merged[-1][1] = max(merged[-1][1], end)
        else:
            merged.append([start, end])
    return [(a, b) for a, b in merged]


def materialise(repo: str | Path, commit: str, cache: str | Path) -> Path:
    """The tree of ``commit`` extracted under ``cache/<commit>`` (once; reused after).

    The folder holds the committed files only, without ``.git``: the tree is read into an
    index file of its own and checked out from there. Not ``git archive``: it leaves out what
    ``.gitattributes`` marks ``export-ignore``, and packages do mark their sources so
    (flysystem's ``/src/AwsS3V3``), so five of six mined cases had no gold file to find.
    """
    repo, cache = Path(repo), Path(cache)
    if not re.fullmatch(r"[0-9a-fA-F]{4,64}", commit):  # a cases file's "parent" is passed to git and names a folder
        raise LoomError(f"{commit!r} is not a commit id")
    target = cache / commit
    done = cache / f".{commit}.done"  # beside the tree, not in it: the walk would index it
    if done.exists() and target.is_dir():
        return target
    cache.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{commit[:12]}-", dir=cache))
    try:
        tree, index = tmp / "tree", tmp / "index"
        tree.mkdir()
        env = {"GIT_INDEX_FILE": str(index.resolve())}  # not the repository's own index
        _git(repo, "read-tree", f"{commit}^{{tree}}", env=env)
        _git(repo, "-c", "core.autocrlf=false", "-c", "core.symlinks=true", "checkout-index", "--all",
             f"--prefix={tree.resolve()}/", env=env)
        if target.exists():
            shutil.rmtree(target)
        tree.rename(target)
        done.write_text(commit + "\n")
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
    return target


def _commits(repo: Path, rev: str, since: str | None, until: str | None) -> Iterator[tuple[str, list[str], str, str]]:
    """(sha, parents, author, message) from newest to oldest."""
    if rev.startswith("-"):  # git would take it as an option (--output=FILE writes a file)
        raise LoomError(f"--rev {rev!r}: a revision cannot start with '-'")
    args = ["log", "--format=%H%x00%P%x00%an <%ae>%x00%B%x1e"]
    if since:
        args.append(f"--since={since}")
    if until:
        args.append(f"--until={until}")
    args += ["--end-of-options", rev]
    for record in str(_git(repo, *args)).split("\x1e"):
        record = record.strip("\n")
        if not record:
            continue
        sha, parents, author, message = (record.split("\x00", 3) + ["", "", ""])[:4]
        yield sha, parents.split(), author, message


def is_release(subject: str) -> bool:
    """Whether a commit subject releases or bumps a version, or reverts such a commit.

    A release script may undo its own version bump after tagging (composer follows each
    release with "Reverting release version changes": 94 of its last 3,000 commits). Such a
    commit changes a version constant, and its message names no behaviour to look for.

    >>> [is_release(s) for s in ("Release version 1.2.0", "Reverting release version changes",
    ...                          'Revert "Bump version to 2.4.0"', 'Revert "Make `FailFast` hashable"')]
    [True, True, True, False]
    """
    text = _REVERT.sub("", subject, count=1)  # a leading "Revert" holds no version and no keyword
    if _RELEASE.search(text) or (re.match(r"^\s*(?:bump|release|version)\b", text, re.I) and _VERSION.search(text)):
        return True
    return bool(_VERSION.search(text) and re.search(r"release|changelog|version|bump", text, re.I))


def judge(repo: Path, sha: str, parents: list[str], author: str, message: str, limits: MineLimits) -> tuple[str, dict | None]:  # noqa: C901 - one filter per rejection reason, counted in the report
    """Why a commit is rejected (``"merge"``, ``"version bump"``, …), or ``("", case data)``."""
    if len(parents) != 1:
        return ("merge" if len(parents) > 1 else "root commit"), None
    if _BOT_AUTHORS.search(author):
        return "bot", None
    query = clean_message(message, limits.max_query_chars)
    subject = query.split("\n", 1)[0]
    if len(query) < limits.min_query_chars:
        return "message too short", None
    if is_release(subject):
        return "version bump", None
    if _FORMATTING.search(subject):
        return "formatting / typo", None
    if _TOOLING.search(subject):
        return "tooling (CI, linters, type checkers, dependencies)", None
    names = [p for p in str(_git(repo, "diff", "--no-renames", "--name-only", parents[0], sha)).split("\n") if p]
    source = [p for p in names if is_source(p)]
    if not source:
        return "no source file changed (docs / tests / config only)", None
    diff = str(_git(repo, "diff", "-U0", "-w", "--ignore-blank-lines", "--no-renames", "--no-color", "--no-ext-diff",
                    parents[0], sha, "--", *source))
    spans = parse_hunks(diff, kinds=True)
    if not diff.strip():
        return "formatting / typo", None
    if not spans:
        return "source files only added or deleted", None
    if len(spans) > limits.max_files:
        return "too large (files)", None
    clipped = {}
    for path, raw in spans.items():
        ranges = gold_spans(raw, str(_git(repo, "show", f"{parents[0]}:{path}")).split("\n"))
        if ranges:
            clipped[path] = ranges
    changed = sum(b - a + 1 for ranges in clipped.values() for a, b in ranges)
    if not clipped:
        return "source files only added or deleted", None
    if changed > limits.max_changed_lines:
        return "too large (lines)", None
    return "", {"query": query, "parent": parents[0], "gold_ranges": clipped}


def mine_commits(
    repo: str | Path,
    *,
    max_cases: int = 50,
    cache: str | Path | None = None,
    rev: str = "HEAD",
    since: str | None = None,
    until: str | None = None,
    limits: MineLimits | None = None,
    name: str | None = None,
    materialise_trees: bool = True,
) -> tuple[list[dict], MineReport]:
    """Cases from the newest commits of ``repo`` that pass the filters.

    Parameters
    ----------
    repo : path
        A repository: a working copy or a bare mirror.
    max_cases : int
        Stop after this many cases.
    cache : path, optional
        Where parent trees are materialised (``cache/<parent sha>``); default
        ``<temp dir>/loom-nb-mined/<name>``. Keep it outside any git working copy: the
        indexer asks git what changed, and would ask the enclosing repository.
    rev, since, until : str
        The history to walk (``git log REV --since --until``), newest first.
    limits : MineLimits, optional
    name : str, optional
        Prefix of case ids; default the repository folder's name.
    materialise_trees : bool
        Extract each parent tree (turn off to only list cases).

    Returns
    -------
    (list of dict, MineReport)
        Case records in the ``datasets/README.md`` format (``workspace`` an absolute path)
        plus ``repo``, ``commit`` and ``parent``; and the counts of what was rejected.
    """
    repo = Path(repo).expanduser().resolve()
    limits = limits or MineLimits()
    name = name or _repo_name(repo)
    cache = Path(cache) if cache is not None else Path(tempfile.gettempdir()) / "loom-nb-mined" / name
    report = MineReport(str(repo))
    cases: list[dict] = []
    for sha, parents, author, message in _commits(repo, rev, since, until):
        if len(cases) >= max_cases:
            break
        report.examined += 1
        why, data = judge(repo, sha, parents, author, message, limits)
        if data is None:
            report.rejected[why] += 1
            continue
        workspace = materialise(repo, data["parent"], cache) if materialise_trees else cache / data["parent"]
        ranges = data["gold_ranges"]
        cases.append({
            "id": f"{name}-{sha[:10]}",
            "query": data["query"],
            "workspace": str(workspace.resolve()),
            "gold_files": sorted(ranges),
            "gold_ranges": {p: [list(s) for s in spans] for p, spans in sorted(ranges.items())},
            "repo": name,
            "commit": sha,
            "parent": data["parent"],
        })
        report.kept += 1
    return cases, report


def _repo_name(repo: Path) -> str:
    name = repo.name
    if name in ("repo", ".git") or name.endswith(".git"):
        name = repo.parent.name if name in ("repo", ".git") else name[:-4]
    return re.sub(r"[^A-Za-z0-9._-]+", "-", name.split("+")[-1])


def write_cases(cases: Sequence[dict], out: str | Path, *, relative: bool = True) -> Path:
    """Write case records as JSON Lines; a workspace under the file's folder is written
    relative to it, any other as an absolute path."""
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    base = out.parent.resolve()
    lines = []
    for case in cases:
        record = dict(case)
        if relative and Path(record["workspace"]).resolve().is_relative_to(base):
            record["workspace"] = os.path.relpath(record["workspace"], base)
        lines.append(json.dumps(record, ensure_ascii=False))
    out.write_text("\n".join(lines) + ("\n" if lines else ""), encoding="utf-8")
    return out


def rematerialise(cases_file: str | Path, repo: str | Path) -> int:
    """Extract again the parent trees a cases file names (after ``build/`` was cleaned).

    Each record's ``parent`` is extracted to its ``workspace`` folder; returns how many
    trees were extracted.
    """
    cases_file = Path(cases_file)
    count = 0
    for raw in cases_file.read_text(encoding="utf-8").splitlines():
        if not raw.strip() or raw.lstrip().startswith("#"):
            continue
        record = json.loads(raw)
        target = (cases_file.parent / record["workspace"]).resolve()
        if not (target.parent / f".{record['parent']}.done").exists():
            materialise(repo, record["parent"], target.parent)
            count += 1
    return count
