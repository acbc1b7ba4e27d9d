"""How long ``strip_boilerplate`` and ``line_mentions`` take on 1 MB of whatever a user might paste.

A script that prints figures, not a test. Every message a user sends goes through
:func:`loom_nb.core.boilerplate.strip_boilerplate` and, as it ranks, through
:func:`loom_nb.core.paths.line_mentions` (the places a traceback points at), so their patterns
must stay linear in the text's length on any shape of input, not only on issue texts. The inputs are a
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
from loom_nb.core.paths import line_mentions  # noqa: E402

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
    "one line of a": "a" * SIZE,
    "one line of a.py:1": "a.py:1" * (SIZE // 6),
    'one line of File "a': 'File "a' * (SIZE // 7),
    "a traceback, repeated": ('  File "/x/sympy/core/function.py", line 1307, in __new__\n    v = f(v)\n' * (SIZE // 72)),
    "distinct file:line places": "".join(f"m{i}.py:{i} " for i in range(SIZE // 12)),
}


def main() -> int:
    print(f"{'input':28s} {'MB':>5s} {'strip, ms':>10s} {'places, ms':>11s}  (best of 3)")
    worst = {strip_boilerplate: 0.0, line_mentions: 0.0}
    for name, text in INPUTS.items():
        best = {f: min(_timed(f, text) for _ in range(3)) for f in worst}
        worst = {f: max(worst[f], best[f]) for f in worst}
        print(f"{name:28s} {len(text) / 1e6:5.2f} {best[strip_boilerplate] * 1000:10.1f} {best[line_mentions] * 1000:11.1f}")
    print(f"worst: strip_boilerplate {worst[strip_boilerplate] * 1000:.1f} ms, line_mentions {worst[line_mentions] * 1000:.1f} ms per MB")
    return 0


def _timed(function, text: str) -> float:
    started = time.perf_counter()
    function(text)
    return time.perf_counter() - started


if __name__ == "__main__":
    raise SystemExit(main())
