"""What the benchmark scripts share: fixed-width tables and peak memory."""

from __future__ import annotations

import resource
import sys


def kib_to_mb(kib: int) -> float:
    """ru_maxrss is KiB on Linux, bytes on macOS."""
    return kib / 1024 if sys.platform != "darwin" else kib / 1024 / 1024


def peak_rss_mb() -> float:
    """Peak resident set size of this process so far."""
    return kib_to_mb(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)


def table(title: str, header: list[str], rows: list[list], note: str = "") -> None:
    """Print a fixed-width table; numbers right-aligned."""
    cells = [[_cell(c) for c in row] for row in rows]
    widths = [max(len(h), *(len(r[i]) for r in cells)) if cells else len(h) for i, h in enumerate(header)]
    print(f"\n## {title}")
    print("  ".join(h.ljust(w) if i == 0 else h.rjust(w) for i, (h, w) in enumerate(zip(header, widths))))
    print("  ".join("-" * w for w in widths))
    for row in cells:
        print("  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(row, widths))))
    if note:
        print(note)
    sys.stdout.flush()


def _cell(value) -> str:
    if isinstance(value, float):
        if value >= 100:
            return f"{value:,.0f}"
        if value >= 10:
            return f"{value:.1f}"
        return f"{value:.2f}"
    if isinstance(value, int):
        return f"{value:,}"
    return str(value)


def machine() -> dict:
    """The facts a figure depends on: date, cores, versions, load average."""
    import os
    import platform
    from datetime import datetime, timezone

    import numpy as np

    return {
        "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "cpu_count": os.cpu_count(),
        "python": platform.python_version(),
        "numpy": np.__version__,
        "platform": platform.platform(),
        "loadavg": list(os.getloadavg()) if hasattr(os, "getloadavg") else None,
        "loom_nb_threads": os.environ.get("LOOM_NB_THREADS", "2 (default)"),
    }
