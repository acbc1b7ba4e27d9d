"""Mining cases from git history: a tiny repository with known commits, mined and checked."""

from __future__ import annotations

import json
import shutil
import subprocess

import pytest

from loom_nb.cli import main
from loom_nb.core.errors import LoomError
from loom_nb.evaluation.run import load_cases
from loom_nb.evaluation.mine import MineLimits, clean_message, gold_spans, is_release, is_source, mine_commits, parent_blocks, parse_hunks, patch_spans, write_cases

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")

APP_V1 = """import os


def load(path):
    with open(path) as f:
        return f.read()


def save(path, text):
    with open(path, "w") as f:
        f.write(text)
"""

# commit 2 changes load (lines 5-6 of v1) and inserts a function between load and save
APP_V2 = """import os


def load(path, encoding="utf-8"):
    with open(path, encoding=encoding) as f:
        return f.read()


def exists(path):
    return os.path.exists(path)


def save(path, text):
    with open(path, "w") as f:
        f.write(text)
"""


def git(repo, *args):
    subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True,
                   env={"GIT_AUTHOR_NAME": "A", "GIT_AUTHOR_EMAIL": "a@x", "GIT_COMMITTER_NAME": "A",
                        "GIT_COMMITTER_EMAIL": "a@x", "PATH": "/usr/bin:/bin:/usr/local/bin", "HOME": str(repo)})


@pytest.fixture
def repo(tmp_path):
    repo = tmp_path / "proj"
    (repo / "pkg").mkdir(parents=True)
    (repo / "tests").mkdir()
    git(repo, "init", "-q", "-b", "main")
    (repo / "pkg" / "io.py").write_text(APP_V1)
    (repo / "README.md").write_text("# proj\n")
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "initial import")
    # 2: the case: a source change plus a test change (the test is not gold)
    (repo / "pkg" / "io.py").write_text(APP_V2)
    (repo / "tests" / "test_io.py").write_text("def test_load():\n    pass\n")
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "Read files with an explicit encoding (#12)\n\nSigned-off-by: A <a@x>")
    # 3: docs only
    (repo / "README.md").write_text("# proj\n\nUsage.\n")
    git(repo, "commit", "-q", "-am", "document usage in the readme")
    # 4: a version bump touching source
    (repo / "pkg" / "io.py").write_text(APP_V2.replace("import os", "import os\n__version__ = '1.2.0'"))
    git(repo, "commit", "-q", "-am", "Release version 1.2.0")
    # 5: whitespace only
    (repo / "pkg" / "io.py").write_text(APP_V2.replace("import os", "import os\n__version__ = '1.2.0'").replace("f.read()", "f.read()  "))
    git(repo, "commit", "-q", "-am", "tidy up the loader code")
    # 6: a new file only (no parent lines to be gold)
    (repo / "pkg" / "extra.py").write_text("X = 1\n")
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "add the extra settings module")
    return repo


def test_mine_keeps_the_source_change_with_exact_parent_lines(repo, tmp_path):
    cases, report = mine_commits(repo, max_cases=10, cache=tmp_path / "trees")
    assert report.examined == 6 and report.kept == 1
    assert report.rejected == {"root commit": 1, "no source file changed (docs / tests / config only)": 1,
                               "version bump": 1, "formatting / typo": 1, "source files only added or deleted": 1}
    (case,) = cases
    assert case["query"] == "Read files with an explicit encoding"
    assert case["gold_files"] == ["pkg/io.py"]
    # v1 lines 4-5 changed (def load, with open); the insertion after line 7 (blank) is
    # anchored on the lines with text around it: 6 (return f.read()) and 9 (def save)
    assert case["gold_ranges"] == {"pkg/io.py": [[4, 6], [9, 9]]}
    parent = (tmp_path / "trees" / case["parent"])
    assert (parent / "pkg" / "io.py").read_text() == APP_V1  # the tree before the commit
    assert not (parent / "tests" / "test_io.py").exists()


def test_written_cases_load_and_materialise_once(repo, tmp_path):
    cases, _ = mine_commits(repo, max_cases=10, cache=tmp_path / "out" / "trees")
    path = write_cases(cases, tmp_path / "out" / "cases.jsonl")
    record = json.loads(path.read_text())
    assert record["workspace"] == f"trees/{record['parent']}"  # relative: under the file's folder
    loaded, errors = load_cases(path)
    assert errors == [] and loaded[0].gold_ranges == {"pkg/io.py": ((4, 6), (9, 9))}
    marker = tmp_path / "out" / "trees" / f".{record['parent']}.done"
    before = marker.stat().st_mtime_ns
    mine_commits(repo, max_cases=10, cache=tmp_path / "out" / "trees")
    assert marker.stat().st_mtime_ns == before  # the tree is not extracted again


def test_a_tree_is_extracted_whole_even_what_gitattributes_keeps_out_of_archives(repo, tmp_path):
    """Packages mark sources ``export-ignore`` (flysystem's ``/src/AwsS3V3``); extracted with
    ``git archive``, five of six mined cases had no gold file in their workspace."""
    from loom_nb.evaluation.mine import materialise

    (repo / ".gitattributes").write_text("/pkg export-ignore\n")
    git(repo, "add", ".gitattributes")
    git(repo, "commit", "-q", "-m", "keep pkg out of archives")
    head = subprocess.run(["git", "-C", str(repo), "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()
    status = subprocess.run(["git", "-C", str(repo), "status", "--porcelain"], capture_output=True, text=True).stdout
    tree = materialise(repo, head, tmp_path / "trees")
    assert (tree / "pkg" / "io.py").read_text() == (repo / "pkg" / "io.py").read_text()
    assert (tree / ".gitattributes").exists() and not (tree / ".git").exists()
    assert sorted(p.name for p in tmp_path.joinpath("trees").iterdir()) == [f".{head}.done", head]  # no index file left
    assert subprocess.run(["git", "-C", str(repo), "status", "--porcelain"], capture_output=True, text=True).stdout == status


def test_limits_reject_large_commits(repo, tmp_path):
    cases, report = mine_commits(repo, cache=tmp_path / "t", limits=MineLimits(max_changed_lines=2), materialise_trees=False)
    assert cases == [] and report.rejected["too large (lines)"] == 1


def test_cli_mine(repo, tmp_path, capsys):
    out = tmp_path / "cases.jsonl"
    assert main(["mine", str(repo), "--out", str(out), "--max", "5", "--cache", str(tmp_path / "trees")]) == 0
    assert "1 kept" in capsys.readouterr().out
    assert len(out.read_text().splitlines()) == 1


def test_helpers():
    assert [is_source(p) for p in ("a/b.go", "a/b_test.go", "tests/x.py", "src/test_x.py", "docs/x.py", "x.md")] == [
        True, False, False, False, False, False]
    assert clean_message("fix: x (#3)\n\nCo-authored-by: B <b@x>\n") == "fix: x"
    diff = "diff --git a/m.go b/m.go\n--- a/m.go\n+++ b/m.go\n@@ -5 +5 @@\n-a\n+b\n@@ -1,0 +2 @@\n+c\n"
    assert parse_hunks(diff) == {"m.go": [(1, 2), (5, 5)]}
    assert parse_hunks(diff, kinds=True) == {"m.go": [(5, 5, "changed"), (1, 2, "inserted")]}
    assert gold_spans([(1, 3, "changed")], ["x", "", "y"]) == [(1, 1), (3, 3)]


def test_a_release_and_the_revert_of_one_are_version_bumps_other_reverts_are_cases():
    assert is_release("Reverting release version changes")  # composer's release script
    assert is_release('Revert "maint(release): bump version to 1.15.0.dev"')
    assert is_release("chore(release): 2.3.0")
    assert not is_release('Revert "Make `FailFast` hashable"')
    assert not is_release("Revert back to v4 behavior for group registering implicit 404 handlers")
    assert not is_release("Fix the revert of a version check")  # 'revert' not leading: judged as written


def test_a_patch_with_context_gives_the_gold_a_zero_context_diff_gives(repo):
    """A SWE-bench gold patch or a pull request's diff has context lines; read with
    ``patch_spans``, it marks the same parent lines as the miner's ``git diff -U0``."""
    show = lambda *args: subprocess.run(["git", "-C", str(repo), "diff", *args, "HEAD~5", "HEAD~4", "--", "pkg/io.py"],
                                        check=True, capture_output=True, text=True).stdout
    lines = APP_V1.split("\n")
    with_context = {f: gold_spans(spans, lines) for f, spans in patch_spans(show("-U3")).items()}
    zero_context = {f: gold_spans(spans, lines) for f, spans in parse_hunks(show("-U0"), kinds=True).items()}
    assert with_context == zero_context == {"pkg/io.py": [(4, 6), (9, 9)]}


def test_a_removed_line_that_starts_with_two_dashes_is_not_a_file_header():
    """``-- a comment`` removed from SQL or Lua reads ``--- a comment``: inside a hunk it is a line."""
    patch = ("diff --git a/q.sql b/q.sql\n--- a/q.sql\n+++ b/q.sql\n@@ -1,3 +1,2 @@\n select 1;\n--- old note\n select 2;\n"
             "@@ -9,2 +8,3 @@\n x\n+++ added note\n y\n")
    assert patch_spans(patch) == {"q.sql": [(2, 2, "changed"), (9, 10, "inserted")]}
    # and the parent's text of each hunk, read by the same walk, keeps that line
    assert parent_blocks(patch) == {"q.sql": [(1, ["select 1;", "-- old note", "select 2;"]), (9, ["x", "y"])]}


def test_the_parent_text_of_a_hunk_leaves_out_the_no_newline_marker():
    """``\\ No newline at end of file`` is neither a parent nor a child line: read as one, the hunk's
    text was never found in a release tree, and the instance was dropped."""
    patch = "--- a/m.py\n+++ b/m.py\n@@ -1,2 +1,2 @@\n a\n-b\n\\ No newline at end of file\n+c\n\\ No newline at end of file\n"
    assert parent_blocks(patch) == {"m.py": [(1, ["a", "b"])]}
    assert patch_spans(patch) == {"m.py": [(2, 2, "changed")]}


def test_a_source_file_with_a_non_ascii_name_is_gold(tmp_path):
    """git quotes such paths ("caf\\303\\251.py") unless told not to: the commit was rejected."""
    repo = tmp_path / "r"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    (repo / "café.py").write_text("def f():\n    return 1\n")
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "initial commit of the project")
    (repo / "café.py").write_text("def f():\n    return 11\n")
    git(repo, "commit", "-q", "-am", "Change f to return eleven instead of one")
    cases, report = mine_commits(repo, cache=tmp_path / "trees")
    assert report.kept == 1 and cases[0]["gold_ranges"] == {"café.py": [[2, 2]]}


def test_cli_mine_checks_out_before_extracting_trees(repo, tmp_path, capsys):
    (tmp_path / "out").mkdir()
    (tmp_path / "file").write_text("")
    for out, message in ((tmp_path / "out", "is a folder"), (tmp_path / "file" / "cases.jsonl", "is a file, not a folder")):
        assert main(["mine", str(repo), "--out", str(out), "--cache", str(tmp_path / "trees")]) == 2
        assert message in capsys.readouterr().err and not (tmp_path / "trees").exists()
    assert main(["mine", str(repo), "--out", str(tmp_path / "new" / "cases.jsonl"), "--cache", str(tmp_path / "trees")]) == 0


def test_rev_is_never_a_git_option(repo, tmp_path):
    written = tmp_path / "WRITTEN_BY_GIT"
    with pytest.raises(LoomError, match="cannot start with '-'"):
        mine_commits(repo, cache=tmp_path / "t", rev=f"--output={written}", materialise_trees=False)
    assert not written.exists()
    cases, _ = mine_commits(repo, cache=tmp_path / "t", rev="main", since="2000-01-01", materialise_trees=False)
    assert len(cases) == 1
