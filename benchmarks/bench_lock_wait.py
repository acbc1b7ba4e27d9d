"""The longest a query waits for the graph's lock while a refresh re-indexes one changed file.

A script that prints figures, not a test. A chat's background indexer refreshes the workspace
while the user asks, and a query holds the graph's lock while it ranks: whatever a refresh does
under that lock, a query waits for. The session and its workspace are copied to a temporary
folder first (neither is changed), the copy is refreshed once so that it is current, and then,
in one open session as a chat would hold it, one line is appended to FILE and the refresh that
follows runs beside a thread that takes the lock every 2 ms and records how long each take
waited, ``--runs`` times. The first refresh after an open also builds the networkx graph from
the session's columns, under the lock; the later ones show what every refresh costs::

    .venv/bin/python benchmarks/bench_lock_wait.py SESSION WORKSPACE sympy/core/basic.py --runs 3

SESSION is an indexed session folder of WORKSPACE (for instance one of ``loom-nb eval
--cache``'s), FILE a path inside WORKSPACE. Figures: the README ('Queries beside a refresh').
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from loom_nb import Loom  # noqa: E402


def one_run(loom, workspace: Path, file: str, k: int) -> dict:
    """Refresh after appending to ``file``; the waits of a thread that takes the lock meanwhile."""
    target = workspace / file
    target.write_text(target.read_text() + f"\n\ndef _lock_wait_probe_{k}():\n    return None\n")
    waits: list[float] = []
    stop = threading.Event()

    def take_the_lock() -> None:
        while not stop.is_set():
            started = time.perf_counter()
            with loom.graph.lock:
                pass
            waits.append(time.perf_counter() - started)
            time.sleep(0.002)

    watcher = threading.Thread(target=take_the_lock)
    watcher.start()
    started = time.perf_counter()
    report = loom.index(workspace, progress=False, wait=True)
    seconds = time.perf_counter() - started
    stop.set()
    watcher.join()
    return {"refresh_s": round(seconds, 2), "files": report.files_indexed, "units": len(loom.graph.content_vectors),
            "edges": report.structure_edges, "longest_wait_s": round(max(waits), 3), "waits_over_100ms": sum(w > 0.1 for w in waits)}


def main(argv: list[str] | None = None) -> list[dict]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("session", type=Path)
    parser.add_argument("workspace", type=Path)
    parser.add_argument("file", help="a file of the workspace, relative to it")
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args(argv)
    rows = []
    with tempfile.TemporaryDirectory(prefix="loom-lock-wait-") as tmp:
        session, workspace = Path(tmp) / "session", Path(tmp) / "workspace"
        shutil.copytree(args.session, session)
        shutil.copytree(args.workspace, workspace, ignore=shutil.ignore_patterns(".git"))
        loom = Loom.open(session)
        loom.graph.metadata["workspace"].update(root=str(workspace.resolve()), commit=None)  # the copy's root
        loom.index(workspace, progress=False, wait=True)  # current (and re-cut, if the units version moved)
        loom.save()
        loom = Loom.open(session)
        for k in range(args.runs):
            row = one_run(loom, workspace, args.file, k)
            rows.append(row)
            print(f"run {k + 1}: refresh {row['refresh_s']} s ({row['files']} file, {row['units']:,} units, "
                  f"{row['edges']:,} structure edges); longest wait for the lock {row['longest_wait_s']} s; "
                  f"waits over 100 ms: {row['waits_over_100ms']}", flush=True)
    return rows


if __name__ == "__main__":
    main()
