"""The walk and read_text never open what is not a regular file (issue #13 B).

A FIFO named ``.gitignore`` used to block ``loom-nb index`` forever. Every test runs the
code under test in a daemon thread with a time limit, so a regression fails here instead
of hanging the suite.
"""

from __future__ import annotations

import os
import socket
import stat
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from loom_nb import LoomConfig, LoomGraph
from loom_nb.core.errors import StaleReferenceError
from loom_nb.core.graph import Reference, sha256_text
from loom_nb.index import walk as walk_mod
from loom_nb.index.walk import Skipped, read_text, walk_workspace

pytestmark = pytest.mark.skipif(sys.platform == "win32" or not hasattr(os, "mkfifo"), reason="FIFOs are POSIX")

LIMIT = 10.0
"""Seconds any of these calls may take; each takes milliseconds when nothing blocks."""


def within(fn, *args, fifos=(), **kwargs):
    """``fn(*args, **kwargs)`` in a daemon thread; fails if it is still running after
    :data:`LIMIT` seconds, after letting a reader stuck on one of ``fifos`` go (a writer
    opens the FIFO and closes it, so the blocked open returns and the read ends)."""
    box: dict = {}

    def target():
        try:
            box["value"] = fn(*args, **kwargs)
        except BaseException as exc:  # re-raised in the test's thread
            box["error"] = exc

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(LIMIT)
    if thread.is_alive():
        for _ in range(20):
            for fifo in fifos:
                try:
                    os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
                except OSError:
                    pass
            thread.join(0.2)
            if not thread.is_alive():
                break
        pytest.fail(f"{getattr(fn, '__name__', fn)} was still running after {LIMIT} s: it blocked on a special file")
    if "error" in box:
        raise box["error"]
    return box["value"]


def test_a_fifo_named_gitignore_does_not_block_the_walk(tmp_path: Path):
    (tmp_path / "a.py").write_text("x = 1\n")
    os.mkfifo(tmp_path / ".gitignore")
    result = within(walk_workspace, tmp_path, fifos=[tmp_path / ".gitignore"])
    assert [f.path for f in result.files] == ["a.py"]
    assert Skipped(".gitignore", "not a regular file") in result.skipped


def test_a_nested_fifo_gitignore_is_skipped_and_its_folder_still_walked(tmp_path: Path):
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "b.py").write_text("y = 2\n")
    os.mkfifo(tmp_path / "src" / ".gitignore")
    result = within(walk_workspace, tmp_path, fifos=[tmp_path / "src" / ".gitignore"])
    assert [f.path for f in result.files] == ["src/b.py"]
    assert Skipped("src/.gitignore", "not a regular file") in result.skipped
    assert result.reason_counts == {"not a regular file": 1}


def test_a_fifo_as_git_info_exclude_is_reported(tmp_path: Path):
    (tmp_path / ".git" / "info").mkdir(parents=True)
    os.mkfifo(tmp_path / ".git" / "info" / "exclude")
    (tmp_path / "a.py").write_text("")
    result = within(walk_workspace, tmp_path, fifos=[tmp_path / ".git" / "info" / "exclude"])
    assert [f.path for f in result.files] == ["a.py"]
    assert Skipped(".git/info/exclude", "not a regular file") in result.skipped


def test_a_fifo_as_a_source_file_is_skipped(tmp_path: Path):
    (tmp_path / "src").mkdir()
    os.mkfifo(tmp_path / "src" / "a.py")
    (tmp_path / "src" / "b.py").write_text("")
    result = within(walk_workspace, tmp_path, fifos=[tmp_path / "src" / "a.py"])
    assert [f.path for f in result.files] == ["src/b.py"]
    assert result.skipped == [Skipped("src/a.py", "not a regular file")]


class _LyingEntry:
    """A directory entry whose stat says "regular file" for what is now a FIFO: the file
    was swapped between the walk's stat and its open."""

    def __init__(self, entry: os.DirEntry, regular: os.stat_result):
        self._entry, self._regular = entry, regular
        self.name, self.path = entry.name, entry.path

    def stat(self, **kwargs):
        return self._regular

    def is_dir(self, **kwargs):
        return False

    def is_symlink(self):
        return False


def test_a_file_swapped_for_a_fifo_after_its_stat_is_caught(tmp_path: Path, monkeypatch):
    (tmp_path / "b.py").write_text("")
    os.mkfifo(tmp_path / "a.py")
    regular = os.stat(tmp_path / "b.py")
    real_scandir = os.scandir

    class Listing:
        def __init__(self, path):
            self._it = real_scandir(path)

        def __enter__(self):
            return [(_LyingEntry(e, regular) if e.name == "a.py" else e) for e in self._it]

        def __exit__(self, *exc):
            self._it.close()

    monkeypatch.setattr(walk_mod.os, "scandir", Listing)
    result = within(walk_workspace, tmp_path, fifos=[tmp_path / "a.py"])
    assert [f.path for f in result.files] == ["b.py"]
    assert result.skipped == [Skipped("a.py", "not a regular file")]


def test_read_text_refuses_a_fifo_without_blocking(tmp_path: Path):
    fifo = tmp_path / "pipe.txt"
    os.mkfifo(fifo)
    with pytest.raises(OSError, match=r"not a regular file \(a FIFO\)"):
        within(read_text, fifo, fifos=[fifo])


def test_read_text_catches_a_fifo_swapped_in_after_its_stat(tmp_path: Path, monkeypatch):
    """The descriptor is opened with O_NONBLOCK and checked with fstat, so a stat that was
    true a moment ago does not make the read block."""
    fifo, regular = tmp_path / "a.py", tmp_path / "b.py"
    os.mkfifo(fifo)
    regular.write_text("")
    real_stat = os.stat

    def stale_stat(path, *args, **kwargs):
        return real_stat(regular) if os.fspath(path) == os.fspath(fifo) else real_stat(path, *args, **kwargs)

    with monkeypatch.context() as patch:
        patch.setattr(walk_mod.os, "stat", stale_stat)
        with pytest.raises(OSError, match="not a regular file"):
            within(read_text, fifo, fifos=[fifo])


def test_read_text_refuses_devices(tmp_path: Path):
    for device in ("/dev/zero", "/dev/null"):
        if not os.path.exists(device):
            continue
        # /dev/zero never ends: without max_bytes the read would fill the memory
        with pytest.raises(OSError, match=r"not a regular file \(a character device\)"):
            within(read_text, Path(device), max_bytes=10)


def test_a_device_node_in_the_workspace_is_skipped(tmp_path: Path):
    try:
        os.mknod(tmp_path / "zero", stat.S_IFCHR | 0o600, os.makedev(1, 5))
    except (PermissionError, AttributeError, OSError) as exc:
        pytest.skip(f"cannot make a device node here: {exc}")
    (tmp_path / "a.py").write_text("")
    result = within(walk_workspace, tmp_path)
    assert [f.path for f in result.files] == ["a.py"]
    assert result.skipped == [Skipped("zero", "not a regular file")]
    with pytest.raises(OSError, match="not a regular file"):
        within(read_text, tmp_path / "zero", max_bytes=10)


def test_a_socket_is_skipped_by_the_walk_and_refused_by_read_text(tmp_path: Path):
    path = tmp_path / "s.sock"
    if len(os.fsencode(path)) > 100:
        pytest.skip("the temporary path is too long for a unix socket")
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        server.bind(os.fspath(path))
        (tmp_path / "a.py").write_text("")
        result = within(walk_workspace, tmp_path)
        assert [f.path for f in result.files] == ["a.py"]
        assert result.skipped == [Skipped("s.sock", "not a regular file")]
        with pytest.raises(OSError, match=r"not a regular file \(a socket\)"):
            within(read_text, path)
    finally:
        server.close()


def test_a_reference_whose_file_became_a_fifo_is_stale_not_a_hang(tmp_path: Path):
    """Reading a reference at query time goes through read_text too."""
    text = "def f():\n    return 1"
    (tmp_path / "a.py").write_text(text + "\n")
    g = LoomGraph(LoomConfig(concept_threshold=0.99), embedding_model="toy")
    g.workspace = tmp_path
    node, _ = g.add_content(text, np.array([1.0, 0.0]), reference=Reference("a.py", (1, 2), sha256=sha256_text(text)))
    assert g.text(node.id) == text
    (tmp_path / "a.py").unlink()
    os.mkfifo(tmp_path / "a.py")
    started = time.perf_counter()
    with pytest.raises(StaleReferenceError, match="not a regular file"):
        within(g.text, node.id, fifos=[tmp_path / "a.py"])
    assert time.perf_counter() - started < LIMIT


def test_add_file_refuses_a_fifo_named_as_text_without_blocking(tmp_path: Path):
    """The text branch of add_file opened the path with plain open(): a FIFO named notes.txt
    blocked it until someone wrote to the pipe (the document branch already refused it)."""
    from loom_nb import HashingEmbedder, Loom, LoomError

    fifo = tmp_path / "notes.txt"
    os.mkfifo(fifo)
    loom = Loom(embedder=HashingEmbedder())
    with pytest.raises(LoomError, match=r"notes.txt: cannot be read \(not a regular file \(a FIFO\)\)"):
        within(loom.add_file, fifo, fifos=[fifo])
    assert loom.graph.counts()["content"] == 0


@pytest.mark.parametrize("name", ["pipe.html", "pipe.ipynb", "pipe.pdf"])
def test_add_file_refuses_a_fifo_named_as_a_document_without_blocking(tmp_path: Path, name):
    """HTML and notebooks raised a bare NotRegularFileError (an OSError, not a LoomError), and
    pypdf opened a FIFO named .pdf itself, with plain open(): it blocked."""
    from loom_nb import HashingEmbedder, Loom, LoomError

    fifo = tmp_path / name
    os.mkfifo(fifo)
    with pytest.raises(LoomError, match=rf"{name}: cannot be read \(not a regular file \(a FIFO\)\)"):
        within(Loom(embedder=HashingEmbedder()).add_file, fifo, fifos=[fifo])
