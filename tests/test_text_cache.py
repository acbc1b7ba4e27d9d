"""Reference lines are read once per file version (issue 16), and a change is always seen."""

from __future__ import annotations

import os

import loom_nb.core.files as files
from loom_nb import Loom
from loom_nb.core.lru import BoundedLRU
from loom_nb.embed import HashingEmbedder


def counting_reads(monkeypatch) -> list:
    reads, read = [], files.read_text

    def counted(path, max_bytes=None):
        reads.append(str(path))
        return read(path, max_bytes)

    monkeypatch.setattr(files, "read_text", counted)
    monkeypatch.setattr(files, "_LINES", BoundedLRU(8))
    return reads


def test_a_file_is_read_again_only_when_its_stat_changes(tmp_path, monkeypatch):
    reads = counting_reads(monkeypatch)
    path = tmp_path / "a.py"
    path.write_text("one\ntwo\n")
    assert files.read_lines_cached(path) == ["one", "two", ""]
    assert files.read_lines_cached(path) == ["one", "two", ""] and len(reads) == 1
    path.write_text("ONE\ntwo\n")  # same size: the mtime tells
    os.utime(path, ns=(1, 2))
    assert files.read_lines_cached(path) == ["ONE", "two", ""] and len(reads) == 2


def test_units_of_one_file_are_read_from_it_once_per_query_and_edits_still_go_stale(tmp_path, monkeypatch):
    ws = tmp_path / "ws"
    ws.mkdir()
    body = "\n\n".join(f"def step_{k}(token):\n    return rotate(token, {k})\n" for k in range(6))
    (ws / "steps.py").write_text(body)
    loom = Loom(embedder=HashingEmbedder())
    loom.index(ws, progress=False)
    reads = counting_reads(monkeypatch)
    first = loom.query("how is a token rotated in each step", budget=2000)
    assert len([b for b in first.packed.blocks if b.label.startswith("steps.py")]) >= 3
    assert reads == [str((ws / "steps.py").resolve())]
    loom.query("how is a token rotated in each step", budget=2000)
    assert len(reads) == 1  # unchanged: served from memory
    (ws / "steps.py").write_text(body.replace("rotate(token, 2)", "rotate(token, 9)"))
    edited = loom.query("how is a token rotated in each step", budget=2000)
    assert len(reads) == 2
    assert "rotate(token, 9)" not in edited.context  # the edited unit is stale, not served old or new
    assert any(r.reason.startswith("stale") for r in edited.table)
