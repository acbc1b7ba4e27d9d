"""The exported report: self-contained, offline, escaped — checked in a real browser."""

import pytest

from browser import CHROMIUM, SKIP_REASON, dump_dom
from loom_nb import HashingEmbedder, Loom

HOSTILE = (
    "<script>document.title='PWNED'</script> refresh tokens rotate "
    "<img src=x onerror=\"document.body.setAttribute('data-pwned','1')\">"
)


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    loom = Loom(embedder=HashingEmbedder())
    loom.add(HOSTILE)
    loom.add("The refresh endpoint returns a new refresh token each time.", type="analysis")
    loom.add("Dark theme colours live in theme.css.")
    result = loom.query("refresh tokens rotate", budget=600, mode="fused")
    path = loom.export_report(result, tmp_path_factory.mktemp("r") / "report.html")
    return path, path.read_text(encoding="utf-8")


def test_report_is_self_contained_and_escaped(report):
    path, html = report
    assert path.is_file()
    assert html.count("plotly.js v") == 1  # plotly.js included once for three charts
    assert html.count("Plotly.newPlot") == 3
    for tag in ('<script src="http', "<script src='http", '<link rel="stylesheet" href="http'):
        assert tag not in html
    assert "<script>document.title='PWNED'</script>" not in html
    assert "&lt;script&gt;document.title=" in html


@pytest.mark.skipif(CHROMIUM is None, reason=SKIP_REASON)
def test_report_renders_in_a_browser_and_runs_nothing_it_shows(report):
    path, _ = report
    dom = dump_dom(path)
    assert "PWNED" not in dom.split("</title>")[0]  # the injected script did not run
    assert 'data-pwned="1"' not in dom  # nor the onerror handler
    assert 'class="main-svg"' in dom  # plotly drew its charts: the page is not blank
    assert "loom-nb report" in dom


def test_the_report_graph_fits_its_sandboxed_frame(report):
    from browser import browser_page

    path, page_html = report
    assert 'sandbox="allow-scripts"' in page_html
    with browser_page() as page:
        page.goto(path.as_uri())
        frame = next(f for f in page.frames if f != page.main_frame)
        frame.wait_for_function("typeof network !== 'undefined'")
        scroll, view = frame.evaluate("[document.documentElement.scrollHeight, window.innerHeight]")
        assert scroll <= view, (scroll, view)  # no scroll bar inside the frame
        reach = "(() => { try { return String(window.parent.document.title); } catch (e) { return 'blocked'; } })()"
        assert frame.evaluate(reach) == "blocked"  # sandboxed: the drawing cannot touch the report
        assert page.blocked == [] and page.dialogs == []
