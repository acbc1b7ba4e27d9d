"""The counts the README gives for the ready sample sessions come from the sessions themselves
(issue 17: a count in prose drifts; this test makes it fail instead)."""

import re
from pathlib import Path

import pytest

from loom_nb.demo import open_sample

ROOT = Path(__file__).resolve().parents[1]
README = " ".join(ROOT.joinpath("README.md").read_text(encoding="utf-8").split())  # one line: claims wrap
WORDS = {"eleven": 11, "twenty": 20}


def claim(pattern: str) -> str:
    found = re.search(pattern, README)
    assert found, f"the README no longer says {pattern!r}: update this test with it"
    return found.group(1)


def test_the_code_sample_has_the_reference_nodes_the_readme_counts():
    assert int(claim(r"indexed into ([\d,]+) reference nodes").replace(",", "")) == \
        open_sample("loom-nb-code", copy=False).graph.counts()["content"]


@pytest.mark.parametrize("name, pattern", [("sourdough-notes", r"`sourdough-notes` \((\w+) short notes"),
                                           ("auth-debugging", r"`auth-debugging` \((\w+) nodes")])
def test_the_note_samples_have_the_nodes_the_readme_counts(name, pattern):
    said = claim(pattern)
    assert WORDS.get(said, said) == open_sample(name, copy=False).graph.counts()["content"]


def test_the_samples_weigh_what_the_readme_says():
    said = float(claim(r"three sessions made with MiniLM, ([\d.]+) MB in all"))
    size = sum(p.stat().st_size for p in (ROOT / "sample_sessions").rglob("*") if p.is_file()) / 1e6
    assert round(size, 1) == said
