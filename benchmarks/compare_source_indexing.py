"""The default path with issue 18's indexing and without it, on one tree and one set of labels.

A script that prints figures, not a test. Issue 18's bar asks that line recall of the default
path on the mined sets does not drop with what it added to indexing: tree-sitter outlines for ten
more languages, data files (JSON, YAML, TOML, INI) cut by top-level key, credentials masked before
a file is cut (and credentials files indexed by name only), notebooks cell by cell. Measured
against the code before the issue (a9f490b), one cell was lower; but the ranking and packing
changed in between for other issues, so this script takes those additions out of today's code
instead: it patches the indexer so that the ten languages and the data formats are windowed as
they were, nothing is masked, a notebook is windows of its JSON and a percent-format script is
plain code, indexes every case afresh
in its own cache folder, and ranks both through the tuner's harness
(:func:`loom_nb.evaluation.tuning.prepare`, ``Prepared.run``: the default path's call)::

    .venv/bin/python benchmarks/compare_source_indexing.py build/mined/pydantic.jsonl \\
        --cache build/eval-cache-pydantic --without-cache build/eval-cache-pydantic-no18

``--without-cache`` must be a folder only this script writes: a cache is keyed by tree and
config, not by the indexing code, so a folder the default indexing filled would be read back as
it is. Copy the embeddings file of ``--cache`` into it to skip embedding again.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import loom_nb.evaluation.run as run  # noqa: E402
import loom_nb.index.indexer as indexer  # noqa: E402
import loom_nb.index.symbols as symbols  # noqa: E402
from loom_nb.core.config import LoomConfig  # noqa: E402
from loom_nb.core.notebooks import NotebookError  # noqa: E402
from loom_nb.evaluation.tuning import prepare  # noqa: E402
from loom_nb.index import datafiles, languages  # noqa: E402
from sweep_config import mean_recalls  # noqa: E402  (benchmarks/, this script's folder)

BUDGETS = [4000, 8000, 16000]
ADDED = frozenset({spec.language for spec in languages.SPECS} | set(datafiles.FORMATS))
"""The formats issue 18 outlined: before it, each was cut into windows."""


def _recall(prepared) -> list[float]:
    return [mean_recalls(prepared, LoomConfig(), budget)[0] for budget in BUDGETS]


def without_issue_18() -> None:
    """Patch the indexer back to windows for the added formats, no masking, notebooks as text."""
    outline = symbols.outline

    def windows_for_added(path: str, text: str, language: str):
        lang = symbols.header_language(path, str(text), symbols._canonical(language))
        if lang in ADDED:
            return symbols._window_outline(path, str(text), lang, parsed=False, error=None)
        return outline(path, text, language)

    def no_cells(text: str, path: str):
        raise NotebookError(f"{path}: read as text, as before issue 18")

    indexer.outline = windows_for_added
    indexer.mask_file = lambda path, language, text: (text, [])
    indexer.mask_secrets = lambda text, remember=False: (text, [])
    indexer.is_secret_file = lambda path: False
    indexer.notebook_cells = no_cells
    indexer.is_percent_script = lambda language, text: False


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("cases", nargs="+", type=Path)
    parser.add_argument("--cache", type=Path, required=True, help="today's indexed workspaces")
    parser.add_argument("--without-cache", type=Path, required=True, help="indexed without issue 18 (built here)")
    parser.add_argument("--budgets", default=",".join(map(str, BUDGETS)), help="comma-separated token budgets")
    args = parser.parse_args(argv)
    BUDGETS[:] = [int(b) for b in args.budgets.split(",")]
    out: dict = {}
    today = run.Workbench(cache_dir=args.cache)
    for path in args.cases:
        cases, _ = run.load_cases(path)
        out[path.stem] = {"default": _recall(prepare(cases, today))}
    without_issue_18()
    before = run.Workbench(cache_dir=args.without_cache)
    for path in args.cases:
        cases, _ = run.load_cases(path)
        out[path.stem]["without issue 18's indexing"] = _recall(prepare(cases, before))
    print(f"line recall at {' / '.join(f'{b // 1000}k' for b in BUDGETS)}")
    for name, rows in out.items():
        for label, values in rows.items():
            print(f"{name:12s} {label:30s} " + " / ".join(f"{v:.3f}" for v in values))
        change = np.subtract(rows["default"], rows["without issue 18's indexing"])
        print(f"{name:12s} {'default - without':30s} " + " / ".join(f"{v:+.3f}" for v in change))
    return out


if __name__ == "__main__":
    main()
