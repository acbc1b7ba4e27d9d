"""The committed labelled sets are well-formed: every case loads, its workspace exists and is
walked, its gold files are among the files indexing takes, and its gold ranges lie inside them."""

from __future__ import annotations

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
