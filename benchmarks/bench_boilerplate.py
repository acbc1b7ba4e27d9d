"""How long ``strip_boilerplate`` takes on 1 MB of whatever a user might paste.

A script that prints figures, not a test. Every message a user sends goes through
:func:`loom_nb.core.boilerplate.strip_boilerplate` before it ranks, so its patterns must stay
linear in the text's length on any shape of input, not only on issue texts. The inputs are a
plain log and the shapes that make a careless pattern quadratic: long runs of the characters its
parts share (``#``, ``[``, ``*``, ``<!--``, a link's opening with no close), as one line and as
1,990-character lines::

    .venv/bin/python benchmarks/bench_boilerplate.py
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from loom_nb.core.boilerplate import strip_boilerplate  # noqa: E402

SIZE = 1_000_000


def _lines(unit: str, width: int = 1990) -> str:
    line = (unit * (width // len(unit) + 1))[:width]
    return "\n".join([line] * (SIZE // width))


INPUTS = {
    "a log with links": "ERROR something failed at https://example.com/x/y\n" * (SIZE // 50),
    "one line of #": "#" * SIZE,
    "one line of [": "[" * SIZE,
    "lines of [": _lines("["),
    "lines of unclosed links": _lines("[a](https://x.io/"),
    "lines of <details": _lines("<details"),
    "one line of <!--": "<!--" * (SIZE // 4),
    "closed comments": "<!-- a -->" * (SIZE // 10),
    "lines of *": _lines("*"),
    "lines of ### **": _lines("### **"),
    "lines of https://a.": _lines("https://a."),
    "headings of (": "\n".join(["### " + "(" * 1990] * (SIZE // 1995)),
    "a template issue, repeated": ("### Describe the bug\n\nIt fails.\n\n### OS\n\nLinux\n\n" * (SIZE // 48)),
}


def main() -> int:
    print(f"{'input':28s} {'MB':>5s} {'ms (best of 3)':>15s}")
    worst = 0.0
    for name, text in INPUTS.items():
        best = min(_timed(text) for _ in range(3))
        worst = max(worst, best)
        print(f"{name:28s} {len(text) / 1e6:5.2f} {best * 1000:15.1f}")
    print(f"worst: {worst * 1000:.1f} ms per MB")
    return 0


def _timed(text: str) -> float:
    started = time.perf_counter()
    strip_boilerplate(text)
    return time.perf_counter() - started


if __name__ == "__main__":
    raise SystemExit(main())
