"""The committed sample sessions open at once, are what their build makes, and stay untouched."""

import hashlib
import os
import subprocess
import sys
from dataclasses import asdict
from pathlib import Path

import pytest

from loom_nb import Loom
from loom_nb.demo import SAMPLES, build_session, open_sample, sample_names, sample_spec
from loom_nb.core.errors import LoomError

NAMES = sample_names()


def fingerprint(folder: Path) -> dict[str, str]:
    """Every file under ``folder`` with the sha256 of its bytes."""
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.rglob("*")) if p.is_file()}


def shape(loom: Loom) -> dict:
    g = loom.graph
    return {
        "counts": g.counts(),
        "content": [(n.id, n.type, n.tokens, n.title) for n in g.content_nodes()],
        "concepts": [c.id for c in g.concept_nodes()],
        "links": sorted((n.id, c) for n in g.content_nodes() for c, _ in g.concepts_of(n.id)),
        "config": asdict(g.config),  # a sample saved with an older default ranks unlike a fresh build
    }


def test_there_are_three_kinds_of_sample():
    assert {"auth-debugging", "loom-nb-code", "sourdough-notes"} <= set(NAMES)
    notes = sample_spec("sourdough-notes")["sources"]
    assert 15 <= len(notes) <= 25


@pytest.mark.parametrize("name", NAMES)
def test_a_sample_is_a_ready_minilm_session(name):
    folder = SAMPLES / name
    for entry in ("graph.json", "embeddings"):  # content/ is empty, so not in git, when every node is a reference
        assert (folder / entry).exists(), f"{name} lacks {entry}: run tools/build_sample_sessions.py"
    loom = open_sample(name, copy=False)
    assert loom.embedder.model_id == "all-MiniLM-L6-v2"
    assert loom.folder is None  # read in place: save() cannot write back into the sample
    counts = loom.graph.counts()
    assert counts["content"] >= 10 and 2 <= counts["concepts"] <= counts["content"] / 3  # topics, not one per node
    for node in loom.graph.content_nodes():  # every text is there and, for references, fresh
        assert loom.text(node.id)


def test_the_samples_are_light():
    total = sum(p.stat().st_size for p in SAMPLES.rglob("*") if p.is_file())
    assert total < 3_000_000, f"the samples are {total / 1e6:.1f} MB"


@pytest.mark.slow
@pytest.mark.parametrize("name", NAMES)
def test_a_sample_is_what_its_build_makes(name, tmp_path, minilm):
    built = build_session(SAMPLES / name, tmp_path / name, embedder=minilm, verbose=False)
    committed = open_sample(name, copy=False)
    assert shape(built) == shape(committed)


@pytest.mark.parametrize("name", ["auth-debugging", "loom-nb-code"])
def test_opening_querying_and_saving_leaves_the_sample_untouched(name):
    before = fingerprint(SAMPLES / name)
    loom = open_sample(name)  # a copy
    assert loom.folder is not None and SAMPLES not in loom.folder.parents
    question = sample_spec(name)["queries"][0]
    result = loom.query(question, budget=1500, record=True)
    assert result.loaded
    loom.add("A note added in a notebook.")
    loom.save()
    in_place = open_sample(name, copy=False)
    in_place.query(question, budget=1500, record=True)
    with pytest.raises(LoomError):
        in_place.save()
    assert fingerprint(SAMPLES / name) == before


def test_the_code_sample_points_into_its_own_snapshot():
    loom = open_sample("loom-nb-code")
    assert loom.graph.workspace == loom.folder / "workspace"
    result = loom.query("How does the ranking engine score content?", budget=3000, mode="fused")
    assert not [row for row in result.table if row.reason.startswith("stale")]
    assert any(row.title.startswith("rank.py") for row in result.rows(3))


def test_an_unknown_sample_names_the_known_ones():
    with pytest.raises(LoomError, match="auth-debugging"):
        open_sample("no-such-sample")


def test_the_code_snapshot_is_data_not_a_second_package():
    # zipped, so grep, linters and duplicate finders do not take it for loom_nb's modules
    folder = SAMPLES / "loom-nb-code"
    assert not list(folder.rglob("*.py")) and (folder / "workspace.zip").is_file()
    in_place = open_sample("loom-nb-code", copy=False)  # unpacked aside, the sample untouched
    assert SAMPLES not in in_place.graph.workspace.parents
    assert (in_place.graph.workspace / "rank.py").is_file()


def test_the_copies_a_process_opens_are_removed_when_it_exits(tmp_path):
    # a notebook that opens a sample on every run must not fill the temp folder with copies
    script = ("from loom_nb.demo import open_sample\n"
              "print(open_sample('sourdough-notes').folder)\n"
              "print(open_sample('loom-nb-code', copy=False).graph.workspace)\n")
    env = {**os.environ, "TMPDIR": str(tmp_path)}
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, check=True).stdout
    copy, unpacked = (Path(line) for line in out.split())
    assert tmp_path in copy.parents and tmp_path in unpacked.parents
    assert not copy.exists() and not unpacked.exists()
    assert not list(tmp_path.glob("loom-*"))
