"""Whether the clustered graph view stays responsive (issue 15): a session of N units drawn
as its concepts, opened and clicked in headless Chromium.

A script that prints figures, not a test::

    .venv/bin/python benchmarks/bench_graph_view.py [--sizes 1000,5000,16000] [--repeat 3]

Sessions are synthetic (vectors around N/12 random centres, 32 dimensions, concepts
rebuilt as communities), so no embedder runs. Per size: seconds to build the page in
Python (``graph_html``; it chooses clusters past ``CLUSTER_ABOVE`` units), its size, and in
Chromium (the system's, driven by playwright, every outside request aborted) the
milliseconds from navigation until vis-network has drawn, and from a real mouse click on
a concept until its members are drawn, and for a pan-and-zoom redraw with one concept
unfolded. Medians over ``--repeat`` runs.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from loom_nb import HashingEmbedder, Loom, LoomConfig, LoomGraph  # noqa: E402
from loom_nb.core.concepts import rebuild_concepts  # noqa: E402
from loom_nb.views.graph_view import graph_html  # noqa: E402


def synthetic(n: int, dim: int = 32, seed: int = 0) -> Loom:
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(max(n // 12, 1), dim))
    g = LoomGraph(LoomConfig(), embedding_model=HashingEmbedder(dim).model_id)
    for k in range(n):
        c = k % len(centres)
        g.add_content(f"topic{c} unit{k}", centres[c] + 0.3 * rng.normal(size=dim), title=f"unit {k} of topic {c}", link=False)
    rebuild_concepts(g)
    return Loom(embedder=HashingEmbedder(dim), graph=g)


def measure(page_path: Path, browser) -> dict[str, float]:
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    page.route("**/*", lambda r: r.continue_() if r.request.url.startswith("file:") else r.abort())
    start = time.perf_counter()
    page.goto(page_path.as_uri())
    page.wait_for_function("typeof network !== 'undefined' && window.loomClusters !== undefined")
    page.evaluate("new Promise(r => { network.once('afterDrawing', () => r()); network.redraw(); })")
    drawn = time.perf_counter() - start
    cid = page.evaluate("nodes.getIds()[Math.floor(nodes.length / 2)]")
    at = page.evaluate(f"network.canvasToDOM(network.getPositions(['{cid}'])['{cid}'])")
    box = page.locator("#mynetwork").bounding_box()
    start = time.perf_counter()
    page.mouse.click(box["x"] + at["x"], box["y"] + at["y"])
    page.wait_for_function(f"window.loomClusters.open['{cid}'] !== undefined")
    page.evaluate("new Promise(r => { network.once('afterDrawing', () => r()); network.redraw(); })")
    unfold = time.perf_counter() - start
    start = time.perf_counter()
    page.evaluate("new Promise(r => { network.once('afterDrawing', () => r()); network.moveTo({scale: 1.5, position: {x: 0, y: 0}}); })")
    redraw = time.perf_counter() - start
    page.close()
    return {"draw_ms": 1000 * drawn, "unfold_ms": 1000 * unfold, "redraw_ms": 1000 * redraw}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="1000,5000,16000")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    from playwright.sync_api import sync_playwright

    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        print("no chromium here (Debian package 'chromium')")
        return 1
    rows = []
    folder = Path(tempfile.mkdtemp())
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=chromium, headless=True, args=["--no-sandbox", "--disable-gpu"])
        for n in (int(s) for s in args.sizes.split(",")):
            loom = synthetic(n)
            start = time.perf_counter()
            page = graph_html(loom)
            build = time.perf_counter() - start
            path = folder / f"graph-{n}.html"
            path.write_text(page, encoding="utf-8")
            runs = [measure(path, browser) for _ in range(args.repeat)]
            row = {"units": n, "concepts": loom.graph.counts()["concepts"], "page_mb": round(len(page.encode()) / 1e6, 2),
                   "build_s": round(build, 2), **{k: round(statistics.median(r[k] for r in runs), 1) for k in runs[0]}}
            rows.append(row)
            print(f"{n:>6} units  {row['concepts']:>5} concepts  page {row['page_mb']:>5} MB  built in {row['build_s']:>5} s  "
                  f"drawn {row['draw_ms']:>7} ms  click→unfolded {row['unfold_ms']:>6} ms  zoom redraw {row['redraw_ms']:>6} ms")
        browser.close()
    shutil.rmtree(folder, ignore_errors=True)
    if args.json:
        args.json.write_text(json.dumps({"rows": rows}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
