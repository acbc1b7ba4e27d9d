"""The tuning notebook in a real JupyterLab, driven as a person would (issue 17).

JupyterLab starts headless on a free loopback port with a copy of
``notebooks/03_tuning_weights.ipynb``; the system's Chromium (Debian's package, no browser
download) runs every cell, drags a weight slider with the mouse and checks that the rows kept
in view under the sliders change. Every request that is not to that server is aborted and
recorded, every dialog dismissed and recorded. Screenshots before and after the drag go to
``build/live-tuner-before.png`` / ``-after.png``.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from browser import CHROMIUM, LABEL_BOXES_JS, SKIP_REASON, guarded_page, overlapping

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOK = "03_tuning_weights.ipynb"
VIEWPORT = {"width": 1400, "height": 1000}
NODE, TITLE, SCORE = 3, 4, 6
"""Columns of the tuner's top-rows table (1-based, as ``:nth-child`` counts)."""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _settings(folder: Path) -> None:
    """Every cell attached to the page (JupyterLab 4 detaches cells out of view by default),
    and no news or update checks: nothing to fetch from outside."""
    tracker = folder / "@jupyterlab" / "notebook-extension" / "tracker.jupyterlab-settings"
    tracker.parent.mkdir(parents=True)
    tracker.write_text(json.dumps({"windowingMode": "none"}))
    news = folder / "@jupyterlab" / "apputils-extension" / "notification.jupyterlab-settings"
    news.parent.mkdir(parents=True)
    news.write_text(json.dumps({"fetchNews": "false", "checkForUpdates": False}))


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    if CHROMIUM is None:
        pytest.skip(SKIP_REASON)
    pytest.importorskip("jupyterlab")
    pytest.importorskip("playwright.sync_api")
    work = tmp_path_factory.mktemp("lab")
    shutil.copy(ROOT / "notebooks" / NOTEBOOK, work / NOTEBOOK)
    _settings(work / ".settings")
    port, token = _free_port(), secrets.token_hex(16)
    env = {**os.environ, "JUPYTER_CONFIG_DIR": str(work / ".config"), "JUPYTER_RUNTIME_DIR": str(work / ".runtime"),
           "IPYTHONDIR": str(work / ".ipython"), "LOOM_CHAT_REPLAY": "1"}
    server = subprocess.Popen(
        [sys.executable, "-m", "jupyterlab", "--no-browser", "--ServerApp.ip=127.0.0.1", f"--ServerApp.port={port}",
         "--ServerApp.port_retries=0", "--allow-root", "--LabApp.extension_manager=readonly", f"--IdentityProvider.token={token}", f"--ServerApp.root_dir={work}",
         "--LabApp.expose_app_in_browser=True", "--LabApp.news_url=", f"--LabApp.user_settings_dir={work / '.settings'}",
         f"--LabApp.workspaces_dir={work / '.workspaces'}", "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate"],
        cwd=work, env=env, stdout=subprocess.DEVNULL, stderr=open(work / "server.log", "w"))
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 90
        while True:
            try:
                urllib.request.urlopen(f"{base}/api/status?token={token}", timeout=2)
                break
            except OSError:
                if time.monotonic() > deadline or server.poll() is not None:
                    pytest.fail("JupyterLab did not start:\n" + (work / "server.log").read_text()[-3000:])
                time.sleep(0.5)
        yield base, token
    finally:
        server.terminate()
        try:
            server.wait(timeout=20)
        except subprocess.TimeoutExpired:
            server.kill()


@pytest.fixture(scope="module")
def notebook(lab):
    """The notebook open in Chromium, every cell run."""
    from playwright.sync_api import sync_playwright

    base, token = lab
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=["--no-sandbox", "--disable-gpu"])
        try:
            page = guarded_page(browser, VIEWPORT, (base + "/", "about:", "data:", "blob:"))
            blocked, dialogs = page.blocked, page.dialogs
            page.goto(f"{base}/lab/tree/{NOTEBOOK}?token={token}")
            page.wait_for_function("() => { const w = window.jupyterapp && window.jupyterapp.shell.currentWidget;"
                                   " const k = w && w.sessionContext && w.sessionContext.session"
                                   " && w.sessionContext.session.kernel; return k && k.status === 'idle'; }",
                                   timeout=120_000)
            page.evaluate("window.jupyterapp.commands.execute('notebook:run-all-cells')")
            page.wait_for_function("() => { const p = [...document.querySelectorAll('.jp-CodeCell .jp-InputArea-prompt')];"
                                   " return p.length > 0 && p.every(e => /\\[\\d+\\]/.test(e.textContent)); }",
                                   timeout=180_000)
            page.wait_for_selector(".loom-tuner-top tbody tr", timeout=60_000)
            yield page, blocked, dialogs
        finally:
            browser.close()


def _column(page, n: int) -> list[str]:
    return page.eval_on_selector_all(f".loom-tuner-top tbody tr td:nth-child({n})", "cells => cells.map(c => c.textContent)")


def _in_view(page, locator) -> bool:
    box = locator.bounding_box()
    return box is not None and box["y"] >= 0 and box["y"] + box["height"] <= VIEWPORT["height"]


def test_dragging_a_weight_slider_reranks_the_rows_kept_in_view(notebook):
    page, blocked, dialogs = notebook
    slider = page.locator(".widget-hslider").filter(has=page.locator("label", has_text="semantic")).first
    slider.scroll_into_view_if_needed()
    first_row = page.locator(".loom-tuner-top tbody tr").first
    assert _in_view(page, slider) and _in_view(page, first_row)  # the table's rows sit in the slider's viewport
    build = ROOT / "build"
    build.mkdir(exist_ok=True)
    page.screenshot(path=str(build / "live-tuner-before.png"))
    before = _column(page, NODE)

    handle = slider.locator(".noUi-handle")
    track = slider.locator(".noUi-target").bounding_box()
    grip = handle.bounding_box()
    page.mouse.move(grip["x"] + grip["width"] / 2, grip["y"] + grip["height"] / 2)
    page.mouse.down()
    page.mouse.move(track["x"] + track["width"] + 20, grip["y"] + grip["height"] / 2, steps=12)
    page.mouse.up()
    page.wait_for_function(
        "before => { const c = [...document.querySelectorAll('.loom-tuner-top tbody tr td:nth-child(3)')]"
        ".map(e => e.textContent); return c.length > 0 && JSON.stringify(c) !== JSON.stringify(before); }",
        arg=before, timeout=60_000)
    page.screenshot(path=str(build / "live-tuner-after.png"))
    after = _column(page, NODE)
    assert after != before
    assert slider.locator(".widget-readout").text_content().strip() == "1.00"  # dragged to the end of its track
    assert page.locator(".loom-tuner-top tbody tr.changed").count() > 0  # the moved rows are highlighted
    assert blocked == [] and dialogs == []


def test_text_reads_left_and_numbers_right_in_jupyterlab(notebook):
    page, _, _ = notebook
    title = page.locator(f".loom-tuner-top tbody tr td:nth-child({TITLE})").first
    score = page.locator(f".loom-tuner-top tbody tr td:nth-child({SCORE})").first
    assert title.evaluate("e => getComputedStyle(e).textAlign") == "left"
    assert score.evaluate("e => getComputedStyle(e).textAlign") == "right"
    decision_table = page.locator(".loom-result table.loom-t tbody td:nth-child(3)").first  # the result's title column
    assert decision_table.evaluate("e => getComputedStyle(e).textAlign") == "left"


def test_the_graph_labels_in_the_notebook_do_not_overlap(notebook):
    page, blocked, _ = notebook
    frame = next(f for f in page.frames if f != page.main_frame and f.evaluate("typeof network !== 'undefined'"))
    # labels are measured when drawn: ask for a draw on each poll rather than wait for the page's own frames
    frame.wait_for_function("network.redraw() || Object.values(network.body.nodes).every(n => !n.options.label || n.labelModule.size.width > 0)",
                            polling=200)
    boxes = frame.evaluate(LABEL_BOXES_JS)
    assert len(boxes) >= 10
    assert overlapping(boxes) == []
    assert blocked == []
