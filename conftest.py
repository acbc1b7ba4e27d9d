"""One temporary folder per test run, removed when the run ends.

The tests, the doctests and the tutorial notebooks make temporary folders the way a user
would (``tempfile.mkdtemp()``, ``open_sample``'s copy of a sample session); pointed here,
through ``tempfile.tempdir`` and ``TMPDIR`` (which CLI subprocesses, Jupyter kernels and the
browser inherit), they go when the run does instead of piling up in /tmp.
"""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile

_RUN_TMP = tempfile.mkdtemp(prefix="loom-nb-test-run-")
tempfile.tempdir = os.environ["TMPDIR"] = _RUN_TMP
atexit.register(shutil.rmtree, _RUN_TMP, ignore_errors=True)
