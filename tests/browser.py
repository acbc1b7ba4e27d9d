"""Headless Chromium for the tests that check a page really draws (Debian package ``chromium``)."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
SKIP_REASON = "no headless Chromium here (Debian package 'chromium'; .ci/run installs it)"


def dump_dom(path: Path, *, budget_ms: int = 5000, timeout: int = 180) -> str:
    """The DOM of the local page ``path`` after scripts ran for ``budget_ms`` of virtual time.

    Every host name resolves to nothing (``--host-resolver-rules``), so the page is drawn as it
    would be with no network at all, and a request to a CDN fails at once instead of waiting.
    """
    profile = tempfile.mkdtemp()
    try:
        done = subprocess.run(
            [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
             "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-quic",
             "--host-resolver-rules=MAP * ~NOTFOUND", f"--user-data-dir={profile}",
             f"--virtual-time-budget={budget_ms}", "--dump-dom", Path(path).as_uri()],
            capture_output=True, text=True, timeout=timeout, env={**os.environ, "HOME": profile},
        )
    finally:
        shutil.rmtree(profile, ignore_errors=True)
    assert done.returncode == 0 and done.stdout, done.stderr[-2000:]
    return done.stdout
