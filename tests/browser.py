"""Headless Chromium for the tests that check a page really draws (Debian package ``chromium``)."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from contextlib import contextmanager
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


def guarded_page(browser, viewport: dict, allowed: tuple[str, ...]):
    """A new page whose requests to anything but the ``allowed`` URL prefixes are aborted
    (and recorded in ``page.blocked``) and whose dialogs are dismissed (and recorded in
    ``page.dialogs``)."""
    context = browser.new_context(viewport=viewport)
    blocked: list[str] = []
    dialogs: list[str] = []

    def route(r):
        if r.request.url.startswith(allowed):
            r.continue_()
        else:
            blocked.append(r.request.url)
            r.abort()

    context.route("**/*", route)
    page = context.new_page()
    page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    page.blocked, page.dialogs = blocked, dialogs
    return page


@contextmanager
def browser_page(width: int = 1400, height: int = 1000):
    """A playwright page in the system's headless Chromium with every request that is not
    a local file aborted and every dialog dismissed (:func:`guarded_page`). Skips the test
    where Chromium or playwright is missing."""
    import pytest

    if CHROMIUM is None:
        pytest.skip(SKIP_REASON)
    sync_api = pytest.importorskip("playwright.sync_api")
    with sync_api.sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=["--no-sandbox", "--disable-gpu"])
        try:
            yield guarded_page(browser, {"width": width, "height": height}, ("file:", "about:", "data:"))
        finally:
            browser.close()


LABEL_BOXES_JS = """() => Object.values(network.body.nodes)
    .filter(n => n.options.label && n.labelModule && n.labelModule.size.width > 0)
    .map(n => [n.id, n.labelModule.size.left, n.labelModule.size.top, n.labelModule.size.width, n.labelModule.size.height])"""
"""Every drawn label's box in canvas coordinates, as vis-network measured it while drawing."""


def overlapping(boxes) -> list[tuple[str, str]]:
    """The pairs of (id, left, top, width, height) boxes that overlap."""
    pairs = []
    for i, (a, ax, ay, aw, ah) in enumerate(boxes):
        for b, bx, by, bw, bh in boxes[i + 1:]:
            if ax < bx + bw and bx < ax + aw and ay < by + bh and by < ay + ah:
                pairs.append((a, b))
    return pairs
