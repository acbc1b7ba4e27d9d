"""One temporary folder per test run, removed when the run ends.

The tests, the doctests and the tutorial notebooks make temporary folders the way a user
would (``tempfile.mkdtemp()``, ``open_sample``'s copy of a sample session); pointed here,
through ``tempfile.tempdir`` and ``TMPDIR`` (which CLI subprocesses, Jupyter kernels and the
browser inherit), they go when the run does instead of piling up in /tmp. The per-user
folder (``LOOM_NB_CONFIG_DIR``) is one of them, so a run never writes to the user's own.
"""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile

_RUN_TMP = tempfile.mkdtemp(prefix="loom-nb-test-run-")
tempfile.tempdir = os.environ["TMPDIR"] = _RUN_TMP
# the per-user folder (confirmed workspaces, the seal key) too: the tutorials' kernels confirmed
# their temporary sessions in the real ~/.config/loom-nb, a thousand entries after a few weeks
os.environ.setdefault("LOOM_NB_CONFIG_DIR", os.path.join(_RUN_TMP, "config"))
atexit.register(shutil.rmtree, _RUN_TMP, ignore_errors=True)
