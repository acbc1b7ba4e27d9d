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
    size = sum(p.stat().st_size for p in (ROOT / "loom_nb" / "_data" / "samples").rglob("*") if p.is_file()) / 1e6
    assert round(size, 1) == said


def test_the_layout_names_every_module():
    """Issue 14: the README's layout matches the folders: each module of a subpackage is named,
    file name and all (``rank.py``), in that subpackage's part of the layout block."""
    text = ROOT.joinpath("README.md").read_text(encoding="utf-8")
    block = text.split("## Layout", 1)[1].split("```")[1]
    parts: dict[str, str] = {}
    current = None
    for line in block.splitlines():
        top = re.match(r"^  (\S+)", line)  # a top-level entry of loom_nb/: a subpackage or a module
        if top:
            current = top.group(1).rstrip("/")
        if current:
            parts[current] = parts.get(current, "") + line + "\n"
    missing = []
    for package in sorted(p for p in (ROOT / "loom_nb").iterdir() if (p / "__init__.py").is_file()):
        assert package.name in parts, f"the layout has no {package.name}/"
        for module in sorted(package.glob("[!_]*.py")):
            if not re.search(rf"(?<![\w/]){re.escape(module.name)}", parts[package.name]):
                missing.append(f"{package.name}/{module.name}")
    assert missing == [], f"modules the README's layout does not name: {missing}"
