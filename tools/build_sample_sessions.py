"""Build the ready sample sessions in loom_nb/_data/samples/ (graph.json, content/, embeddings/).

    .venv/bin/python tools/build_sample_sessions.py [NAME ...] [--refresh-code]

Each folder under loom_nb/_data/samples/ holds a ``session.json`` and what it is built from (its
``sources/``, or for loom-nb-code a ``workspace.zip`` snapshot of part of the package). Each is
built into a temporary folder with the default MiniLM embedder (outside any git repository,
so git state plays no part), then its session files replace the ones in the sample folder.
``--refresh-code`` first snapshots the listed modules of loom_nb/ into loom-nb-code/workspace.zip
again (the snapshot is otherwise left as committed, so the session never goes stale).

tests/test_sample_sessions.py rebuilds every sample the same way and checks that the
committed session has the same nodes. (Not named make_*.py: ``make notebooks`` runs those.)
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import loom_nb.core.store as store  # noqa: E402
from loom_nb.demo import SAMPLES, SESSION_ENTRIES, build_session, sample_names, sample_spec  # noqa: E402

# A seal is the HMAC of graph.json under the key of the user who saved it (core/userdir.py):
# it would never match on anyone else's machine, so the committed samples are saved without one.
store.seal_key = lambda: None


def refresh_code(name: str = "loom-nb-code") -> None:
    """Snapshot the listed modules of loom_nb/ into the sample's ``workspace.zip``: zipped,
    so that tools do not take the snapshot for a second copy of the package. Entries are
    sorted and dated 1980-01-01, so the same files always make the same archive."""
    spec = sample_spec(name)
    archive = SAMPLES / name / f"{spec['workspace']}.zip"
    folder = SAMPLES / name / spec["workspace"]
    if folder.exists():
        shutil.rmtree(folder)  # the snapshot's older, unzipped form
    with zipfile.ZipFile(archive, "w", zipfile.ZIP_DEFLATED) as out:
        for module in sorted(spec["modules"]):
            info = zipfile.ZipInfo(module, date_time=(1980, 1, 1, 0, 0, 0))
            info.compress_type = zipfile.ZIP_DEFLATED
            out.writestr(info, (ROOT / "loom_nb" / module).read_bytes())
    print(f"snapshot {len(spec['modules'])} modules of loom_nb/ into {archive.relative_to(ROOT)}")


def size_of(folder: Path, entries=SESSION_ENTRIES) -> int:
    total = 0
    for entry in entries:
        path = folder / entry
        files = [path] if path.is_file() else [p for p in path.rglob("*") if p.is_file()]
        total += sum(p.stat().st_size for p in files)
    return total


def make(name: str) -> None:
    sample = SAMPLES / name
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / name
        loom = build_session(sample, out, verbose=False)
        loom.save()
        for entry in SESSION_ENTRIES:
            old = sample / entry
            if old.is_dir():
                shutil.rmtree(old)
            elif old.exists():
                old.unlink()
            if (out / entry).is_dir():
                shutil.copytree(out / entry, old)
            else:
                shutil.copy2(out / entry, old)
        counts = loom.graph.counts()
    whole = size_of(sample, [p.name for p in sample.iterdir()])
    print(f"{name}: {counts['concepts']} concepts, {counts['content']} content nodes, {counts['edges']} edges; "
          f"session files {size_of(sample) / 1e6:.2f} MB, folder {whole / 1e6:.2f} MB; {time.perf_counter() - started:.1f} s")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("names", nargs="*", help="samples to build (default: all)")
    parser.add_argument("--refresh-code", action="store_true", help="snapshot loom_nb/ modules into loom-nb-code/workspace.zip first")
    args = parser.parse_args(argv)
    names = args.names or sample_names()
    if args.refresh_code or not (SAMPLES / "loom-nb-code" / "workspace.zip").exists():
        refresh_code()
    for name in names:
        make(name)


if __name__ == "__main__":
    main()
