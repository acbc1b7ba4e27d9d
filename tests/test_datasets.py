"""The committed labelled sets are well-formed: every case loads, its workspace exists and is
walked, its gold files are among the files indexing takes, and its gold ranges lie inside them."""

from __future__ import annotations

import importlib.util
import json
import subprocess
from pathlib import Path

import pytest

from loom_nb.evaluation.run import load_cases
from loom_nb.index.walk import walk_workspace

DATASETS = Path(__file__).resolve().parent.parent / "datasets"
SETS = ["notes.jsonl", "self.jsonl", "followups.jsonl"]


@pytest.mark.parametrize("name", SETS)
def test_a_labelled_set_is_well_formed(name):
    cases, errors = load_cases(DATASETS / name)
    assert errors == []
    assert cases, f"{name} holds no case"
    walked: dict[Path, set[str]] = {}
    for case in cases:
        assert case.workspace is not None and case.workspace.is_dir(), f"{case.id}: no workspace {case.workspace}"
        if case.workspace not in walked:
            walked[case.workspace] = {f.path for f in walk_workspace(case.workspace).files}
        assert case.gold_files, f"{case.id}: no gold files"
        for path in case.gold_files:
            assert path in walked[case.workspace], f"{case.id}: gold file {path} is not indexed"
        assert set(case.gold_ranges) <= set(case.gold_files), f"{case.id}: a range in a file that is not gold"
        for path, ranges in case.gold_ranges.items():
            lines = (case.workspace / path).read_text(encoding="utf-8").splitlines()
            for start, end in ranges:
                assert 1 <= start <= end <= len(lines), f"{case.id}: {path} [{start}, {end}] outside 1..{len(lines)}"
                assert any(line.strip() for line in lines[start - 1:end]), f"{case.id}: {path} [{start}, {end}] is blank"


def test_the_notes_set_has_its_counts():
    """The figures datasets/README.md gives: at least 30 cases, every one with line ranges
    (the sweep counts a case without them as 0), follow-up turns among them."""
    cases, _ = load_cases(DATASETS / "notes.jsonl")
    assert len(cases) >= 30
    assert all(case.gold_ranges for case in cases)
    assert sum(1 for case in cases if case.history) >= 10
    assert len({case.workspace for case in cases}) == 3
    assert len({c.query for c in cases}) == len(cases)


def _reanchor_tool():
    spec = importlib.util.spec_from_file_location("reanchor_cases", DATASETS.parent / "tools" / "reanchor_cases.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("name", ["self.jsonl", "followups.jsonl"])
def test_gold_ranges_still_start_where_they_were_written(name):
    """These two sets grade loom-nb's own package, which moves under them. Each range records
    its first line as it read when the range was written; a change that shifts the code fails
    here, not as quietly lower figures (one session measured fourteen cases on wrong lines)."""
    problems = _reanchor_tool().stale_anchors(DATASETS / name)
    assert problems == [], (
        "gold ranges no longer start on the lines they were written on; move them with "
        f"`.venv/bin/python tools/reanchor_cases.py datasets/{name} --since {_last_commit_of(DATASETS / name)} --write`:\n"
        + "\n".join(problems))


def _last_commit_of(path: Path) -> str:
    """The commit that last wrote ``path`` (its ranges match the code as of then), for the
    failure message; a placeholder outside a git checkout."""
    try:
        out = subprocess.run(["git", "log", "-1", "--format=%h", "--", path.name], cwd=path.parent,
                             capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return "<the commit they match>"
    return out.stdout.strip() or "<the commit they match>"


def test_a_moved_range_is_reported(tmp_path):
    """The check itself: a line inserted above a range moves its first line off the anchor, an
    edit inside the range does not, and a case without anchors is named."""
    tool = _reanchor_tool()
    (tmp_path / "code").mkdir()
    source = tmp_path / "code" / "m.py"
    source.write_text("import os\n\n\ndef answer():\n    return 42\n", encoding="utf-8")
    case = {"id": "c1", "query": "q", "workspace": "code", "gold_files": ["m.py"], "gold_ranges": {"m.py": [[4, 5]]}}
    cases = tmp_path / "cases.jsonl"
    cases.write_text(json.dumps(case) + "\n", encoding="utf-8")
    assert tool.stale_anchors(cases) == ["cases.jsonl:1 c1: no anchors"]
    case["anchors"] = tool.anchors_of(case, tmp_path / "code")
    assert case["anchors"] == {"m.py": ["def answer():"]}
    cases.write_text(json.dumps(case) + "\n", encoding="utf-8")
    assert tool.stale_anchors(cases) == []
    source.write_text("import os\n\n\ndef answer():\n    return 43\n", encoding="utf-8")
    assert tool.stale_anchors(cases) == []
    source.write_text("import os\nimport sys\n\n\ndef answer():\n    return 43\n", encoding="utf-8")
    assert tool.stale_anchors(cases) == ["cases.jsonl:1 c1: m.py:4 reads '', the range was written on 'def answer():'"]
