"""A tutorial exported to plain HTML (nbconvert's default exporter) shows what JupyterLab
shows, with no network: the decision table, the views, plotly's charts and the sliders' state."""

import re
from pathlib import Path

import nbformat
import pytest

from loom_nb import Weights

from browser import CHROMIUM, SKIP_REASON, dump_dom

TUTORIAL = Path(__file__).resolve().parent.parent / "notebooks" / "03_tuning_weights.ipynb"
CDN = re.compile(r"""<(script|link)\b[^>]*\b(src|href)\s*=\s*["']?(https?:)?//""", re.I)


@pytest.fixture(scope="module")
def notebook():
    return nbformat.read(TUTORIAL, as_version=4)


def html_outputs(nb):
    for cell in nb.cells:
        for out in cell.get("outputs", []):
            html = out.get("data", {}).get("text/html")
            if html:
                yield cell, html if isinstance(html, str) else "".join(html)


def test_the_tutorial_is_saved_executed_with_widget_state(notebook):
    state = notebook.metadata.get("widgets", {}).get("application/vnd.jupyter.widget-state+json", {})
    sliders = [m for m in state.get("state", {}).values() if m.get("model_name") == "FloatSliderModel"]
    assert len(sliders) >= 10  # one per signal weight, the floor and the threshold
    # the state the cells left: the weights reset to the defaults, the threshold moved to 0.5
    assert any(s["state"].get("description") == "provenance" and s["state"]["value"] == Weights().provenance for s in sliders)
    assert any(s["state"].get("description") == "concept threshold" and s["state"]["value"] == 0.5 for s in sliders)


def test_our_outputs_need_no_cdn(notebook):
    outputs = list(html_outputs(notebook))
    assert outputs
    for cell, html in outputs:
        assert not CDN.search(html), cell.source[:80]
    plotly_js = [html for _, html in outputs if "plotly.js v" in html]
    assert len(plotly_js) == 1  # plotly.js once, from use_offline_plotly()
    figures = [html for _, html in outputs if "Plotly.newPlot" in html]
    assert len(figures) >= 2 and all("plotly.js v" not in f for f in figures)


@pytest.fixture(scope="module")
def exported(notebook, tmp_path_factory):
    nbconvert = pytest.importorskip("nbconvert", reason="nbconvert is not installed (pip install nbconvert)")
    body, _ = nbconvert.HTMLExporter().from_notebook_node(notebook)
    path = tmp_path_factory.mktemp("export") / "03_tuning_weights.html"
    path.write_text(body, encoding="utf-8")
    return path, body


def test_the_export_carries_tables_views_and_charts(exported):
    _, body = exported
    for name in ("loom-result", "loom-concept", "loom-tuner-snapshot"):  # table, concept view, sliders frozen
        assert re.search(rf"""class=["']{name}["']""", body), name
    assert body.count("* plotly.js v") == 1  # the library itself, once
    assert "application/vnd.jupyter.widget-state+json" in body


@pytest.mark.skipif(CHROMIUM is None, reason=SKIP_REASON)
def test_the_export_draws_offline_in_a_browser(exported):
    path, _ = exported
    dom = dump_dom(path, budget_ms=8000)
    assert 'class="main-svg"' in dom  # plotly.js ran from the notebook itself and drew SVG
    assert dom.count('class="main-svg"') >= 2
    table = dom[dom.index("class=\"loom-result\""):] if 'class="loom-result"' in dom else ""
    assert "<table" in table and "decision" in table  # the result table is in the page
    assert "Weight tuner" in dom and "provenance 1.00" in dom  # the snapshot of the moved sliders
