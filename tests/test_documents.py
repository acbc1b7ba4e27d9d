"""Documents a user pastes in (issue 18): ``loom.add_file`` cuts a PDF by its bookmarks or
pages and an HTML page by its headings, each section titled with where it came from."""

from __future__ import annotations

import io
import re

import pytest

from loom_nb import HashingEmbedder, Loom, LoomError
from loom_nb.index.documents import document_sections


def _escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")


def make_pdf(pages: list[list[str]], outline: list[tuple[str, int]] = ()) -> bytes:
    """A small real PDF: each page's lines in Helvetica, then pypdf adds the bookmarks."""
    objects = ["<< /Type /Catalog /Pages 2 0 R >>", None, "<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>"]
    kids = []
    for lines in pages:
        stream = "BT /F1 12 Tf 14 TL 72 720 Td " + " ".join(f"({_escape(line)}) Tj T*" for line in lines) + " ET"
        objects.append(f"<< /Length {len(stream)} >>\nstream\n{stream}\nendstream")
        objects.append(f"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents {len(objects)} 0 R "
                       "/Resources << /Font << /F1 3 0 R >> >> >>")
        kids.append(f"{len(objects)} 0 R")
    objects[1] = f"<< /Type /Pages /Kids [{' '.join(kids)}] /Count {len(kids)} >>"
    out = io.BytesIO()
    out.write(b"%PDF-1.4\n")
    offsets = []
    for number, body in enumerate(objects, 1):
        offsets.append(out.tell())
        out.write(f"{number} 0 obj\n{body}\nendobj\n".encode("latin-1"))
    xref = out.tell()
    out.write(f"xref\n0 {len(objects) + 1}\n0000000000 65535 f \n".encode())
    out.write("".join(f"{o:010d} 00000 n \n" for o in offsets).encode())
    out.write(f"trailer\n<< /Size {len(objects) + 1} /Root 1 0 R >>\nstartxref\n{xref}\n%%EOF\n".encode())
    if not outline:
        return out.getvalue()
    import pypdf

    writer = pypdf.PdfWriter(clone_from=pypdf.PdfReader(io.BytesIO(out.getvalue())))
    for title, page in outline:
        writer.add_outline_item(title=title, page_number=page)
    done = io.BytesIO()
    writer.write(done)
    return done.getvalue()


PAGES = [["Attention Is Not All You Need", "A study of context selection."],
         ["1 Introduction", "Local models have small windows.", "Selection decides what they see."],
         ["2 Method", "We rank units by eleven signals."],
         ["The budget is packed greedily."],
         ["3 Results", "Line recall rose to 0.84 at 8k tokens."]]


def test_a_pdf_is_cut_by_its_bookmarks_with_page_ranges(tmp_path):
    path = tmp_path / "paper.pdf"
    path.write_bytes(make_pdf(PAGES, [("Introduction", 1), ("Method", 2), ("Results", 4)]))
    sections = document_sections(path)
    assert [s.title for s in sections] == ["paper.pdf p. 1", "paper.pdf p. 2: Introduction",  # one page: "p. 1", not "p. 1-1"
                                           "paper.pdf p. 3-4: Method", "paper.pdf p. 5: Results"]
    method = sections[2]
    assert "eleven signals" in method.text and "packed greedily" in method.text  # both pages of the section
    assert method.where == {"pages": [3, 4], "heading": "Method"}


def test_a_pdf_without_bookmarks_is_cut_by_page(tmp_path):
    path = tmp_path / "notes.pdf"
    path.write_bytes(make_pdf(PAGES[:3]))
    assert [(s.title, s.where) for s in document_sections(path)] == [
        ("notes.pdf p. 1", {"pages": [1, 1]}), ("notes.pdf p. 2", {"pages": [2, 2]}), ("notes.pdf p. 3", {"pages": [3, 3]})]


def test_add_file_makes_one_node_per_section_and_a_query_finds_the_right_one(tmp_path):
    path = tmp_path / "paper.pdf"
    path.write_bytes(make_pdf(PAGES, [("Introduction", 1), ("Method", 2), ("Results", 4)]))
    loom = Loom(embedder=HashingEmbedder())
    added = loom.add_file(path)
    assert len(added.nodes) == 4 and all(n.meta["path"] == "paper.pdf" for n in added.nodes)
    result = loom.query("what line recall did the results report?", budget=400)
    assert result.rows(1)[0].title == "paper.pdf p. 5: Results"
    assert "0.84" in result.prompt


HTML = """<!doctype html><html><head><title>Guide</title><script>alert('x')</script>
<style>body{color:red}</style></head><body><nav>Home | Docs</nav>
<h1>Install</h1><p>Run <code>pip install loom-nb</code>.</p>
<h2>From source</h2><p>Clone the repository.</p><pre>make setup
make test</pre>
<h1>Usage</h1><ul><li>Open a session.</li><li>Ask a question.</li></ul>
<footer>© someone</footer></body></html>"""


def test_an_html_page_is_cut_by_heading_without_scripts_or_navigation(tmp_path):
    path = tmp_path / "guide.html"
    path.write_text(HTML, encoding="utf-8")
    sections = document_sections(path)
    assert [s.title for s in sections] == ["guide.html § Install", "guide.html § Install > From source", "guide.html § Usage"]
    assert sections[0].text == "Run pip install loom-nb."  # inline <code> adds no space
    assert sections[1].text == "Clone the repository.\n\nmake setup\nmake test"  # a pre keeps its lines
    assert "Open a session." in sections[2].text and "Ask a question." in sections[2].text
    joined = "\n".join(s.text for s in sections)
    assert "alert" not in joined and "color:red" not in joined and "Home | Docs" not in joined and "someone" not in joined


def test_every_text_of_a_page_is_kept_whatever_element_holds_it(tmp_path):
    """Pages put text in divs, spans, sections and code as often as in paragraphs, and use h4-h6:
    none of it is dropped, each heading level opens a section, comments are not text."""
    path = tmp_path / "api.html"
    path.write_text("<html><body><h1>API</h1><div class='c'>The refresh endpoint <b>rotates</b> tokens.</div>"
                    "<span>Loose span text about expiry.</span><!-- a comment --><h4>Errors</h4><p>invalid_grant means"
                    " reuse.</p><article><section>Retries are idempotent.</section></article><code>refresh(token)</code>"
                    "</body></html>", encoding="utf-8")
    sections = document_sections(path)
    assert [(s.title, s.text) for s in sections] == [
        ("api.html § API", "The refresh endpoint rotates tokens.\n\nLoose span text about expiry."),
        ("api.html § API > Errors", "invalid_grant means reuse.\n\nRetries are idempotent.\n\nrefresh(token)")]
    deep = tmp_path / "deep.html"
    deep.write_text("<div>" * 3000 + "deep text" + "</div>" * 3000, encoding="utf-8")
    assert [s.text for s in document_sections(deep)] == ["deep text"]


def test_an_article_keeps_its_own_header_and_footer_and_inline_tags_do_not_split_words(tmp_path):
    """Blog and docs generators put the title and date in the article's <header>: only the
    page's own header and footer (outside article, aside, main, nav and section, or marked
    banner/contentinfo) are site chrome. Inline elements are part of a word (H<sub>2</sub>O);
    block elements and <br> separate."""
    path = tmp_path / "post.html"
    path.write_text("""<!doctype html><html><head><title>My Blog</title></head><body>
<header class="site"><nav><a href="/">Home</a></nav><p>Site tagline</p></header>
<div class="wrap"><div role="banner">Banner text</div><header>Wrapped site header</header></div>
<main><article>
  <header><h1>Configuring the token refresh</h1><p class="meta">Posted 2024-01-02</p></header>
  <p>The refresh token is rotated on every use.</p>
  <h2>Install H<sub>2</sub>O</h2>
  <p>Mix H<sub>2</sub>O; call <code>loom</code>s twice.<br>Then wait.</p>
  <footer>Tags: auth</footer>
</article></main>
<footer role="contentinfo">© someone</footer><footer>Site footer</footer></body></html>""", encoding="utf-8")
    assert [(s.title, s.text) for s in document_sections(path)] == [
        ("post.html § Configuring the token refresh", "Posted 2024-01-02\n\nThe refresh token is rotated on every use."),
        ("post.html § Configuring the token refresh > Install H2O", "Mix H2O; call looms twice. Then wait.\n\nTags: auth")]


def test_a_long_section_is_cut_at_paragraphs(tmp_path):
    paragraphs = "".join(f"<p>{'word ' * 150}paragraph {k}.</p>" for k in range(20))
    path = tmp_path / "long.html"
    path.write_text(f"<html><body><h1>Long</h1>{paragraphs}</body></html>", encoding="utf-8")
    sections = document_sections(path)
    assert len(sections) > 1 and sections[0].title.startswith("long.html § Long (part 1 of ")
    assert "paragraph 19." in sections[-1].text


@pytest.mark.parametrize("name, content, message", [
    ("broken.pdf", b"%PDF-1.4\nthis is not a pdf", "not a PDF pypdf can read"),
    ("empty.pdf", None, "has no text to add"),
    ("image.png", b"\x89PNG\r\n\x1a\n\x00\x00\x00\x00", "is binary"),
])
def test_bad_documents_get_a_clear_error_and_add_nothing(tmp_path, name, content, message):
    path = tmp_path / name
    path.write_bytes(content if content is not None else make_pdf([[]]))
    loom = Loom(embedder=HashingEmbedder())
    with pytest.raises(LoomError, match=message):
        loom.add_file(path)
    assert loom.graph.counts()["content"] == 0


def test_a_missing_file_says_so(tmp_path):
    with pytest.raises(LoomError, match="no such file"):
        document_sections(tmp_path / "gone.pdf")


def test_a_text_file_is_added_as_its_text(tmp_path):
    path = tmp_path / "notes.md"
    path.write_text("# Deploy\n\nThe deploy runs on Fridays.\n", encoding="utf-8")
    loom = Loom(embedder=HashingEmbedder())
    added = loom.add_file(path)
    assert [n.title for n in added.nodes] == ["notes.md"] and "Fridays" in loom.graph.text(added.ids[0])



def test_a_huge_text_file_is_refused_before_it_is_read(tmp_path, monkeypatch):
    import loom_nb.core.engine as engine

    monkeypatch.setattr(engine, "MAX_ADD_CHARS", 100)
    path = tmp_path / "huge.log"
    path.write_text("x" * 1000)
    loom = Loom(embedder=HashingEmbedder())
    with pytest.raises(LoomError, match="more than one add takes"):
        loom.add_file(path)
    assert loom.graph.counts()["content"] == 0


@pytest.mark.parametrize("body, joiner", [
    ("word " * 3000, " "),  # no line or sentence ends: cut between words
    (" ".join(f"Sentence {k} says something." for k in range(600)), " "),
    ("\n".join(f"line {k} of a listing" for k in range(800)), "\n"),
    ("x" * 30_000, ""),  # one word longer than a part: cut between characters
])
def test_a_paragraph_too_long_for_one_section_is_cut_into_parts_that_fit(tmp_path, body, joiner):
    """_cut split only at blank lines: one 1.3M-character paragraph stayed one section, which
    add() then refused. Each part now fits, and together they hold the paragraph's text."""
    from loom_nb.core.tokens import count_tokens
    from loom_nb.index.documents import SECTION_TOKENS

    path = tmp_path / "long.html"
    path.write_text(f"<html><body><h1>Long</h1><pre>{body}</pre></body></html>", encoding="utf-8")
    sections = document_sections(path)
    assert len(sections) > 1 and all(count_tokens(s.text) <= SECTION_TOKENS for s in sections)
    assert sections[0].title == f"long.html § Long (part 1 of {len(sections)})"
    joined = joiner.join(s.text for s in sections)
    assert (joined.split() == body.split()) if joiner else joined == body


def test_add_file_adds_all_sections_or_none(tmp_path, monkeypatch):
    """A section that could not be added left the ones before it in the graph, and a retry
    added them again. Every section is checked and embedded before any is added."""
    path = tmp_path / "guide.html"
    path.write_text("<h1>Small</h1><p>small section</p><h1>Big</h1><p>" + "word " * 260_000 + "</p>", encoding="utf-8")
    loom = Loom(embedder=HashingEmbedder())
    added = loom.add_file(path)  # the big paragraph is cut into parts, each one add takes
    assert added.nodes[0].title == "guide.html § Small" and added.nodes[1].title.startswith("guide.html § Big (part 1 of ")
    assert sum(loom.graph.text(n.id).count("word") for n in added.nodes) == 260_000

    second = tmp_path / "notes.html"
    second.write_text("<h1>One</h1><p>first section</p><h1>Two</h1><p>second section</p>", encoding="utf-8")
    before = loom.graph.counts()["content"]
    embed = loom.embedder.embed

    def failing(texts):
        if any("second section" in t for t in texts):
            raise RuntimeError("embedder went away")
        return embed(texts)

    monkeypatch.setattr(loom.embedder, "embed", failing)
    for _ in range(2):
        with pytest.raises(RuntimeError, match="went away"):
            loom.add_file(second)
        assert loom.graph.counts()["content"] == before


@pytest.mark.parametrize("name", ["dir.html", "dir.ipynb", "dir.pdf"])
def test_a_document_that_is_a_folder_is_a_loom_error_that_says_so(tmp_path, name):
    """HTML and notebooks raised a bare NotRegularFileError (an OSError), and a PDF said the
    folder was "not a PDF pypdf can read"."""
    (tmp_path / name).mkdir()
    loom = Loom(embedder=HashingEmbedder())
    with pytest.raises(LoomError, match=rf"{name}: cannot be read \(not a regular file \(a folder\)\)"):
        loom.add_file(tmp_path / name)
    assert loom.graph.counts()["content"] == 0


@pytest.mark.parametrize("name", ["locked.html", "locked.ipynb", "locked.pdf"])
def test_a_document_without_read_permission_is_a_loom_error_that_says_so(tmp_path, monkeypatch, name):
    """A chmod-000 page raised PermissionError. The open is refused here by hand: the tests may
    run as root, whom chmod 000 does not stop."""
    import os

    path = tmp_path / name
    path.write_bytes(make_pdf(PAGES[:1]) if name.endswith(".pdf") else b'<h1>x</h1><p>y</p>')
    real_open = os.open

    def refuse(file, *args, **kwargs):
        if os.fspath(file) == os.fspath(path):
            raise PermissionError(13, "Permission denied", os.fspath(file))
        return real_open(file, *args, **kwargs)

    monkeypatch.setattr(os, "open", refuse)
    with pytest.raises(LoomError, match=rf"{name}: cannot be read \(Permission denied\)"):
        Loom(embedder=HashingEmbedder()).add_file(path)


def test_html_text_outside_body_is_kept_as_a_browser_shows_it(tmp_path):
    """Text before <body> or after </body> is shown by browsers (HTML5 moves it into the body),
    but only the body was read: the footnote after it was dropped without notice."""
    path = tmp_path / "page.html"
    path.write_text("<html><head><title>T</title><meta charset='utf-8'></head><p>before body: preface</p><body><h1>Install</h1>"
                    "<p>inside body</p></body><p>after body: the footnote on token refresh</p></html>", encoding="utf-8")
    assert [(s.title, s.text) for s in document_sections(path)] == [
        ("page.html § T", "before body: preface"),
        ("page.html § Install", "inside body\n\nafter body: the footnote on token refresh")]
    unclosed = tmp_path / "unclosed.html"  # html.parser nests the body in a head never closed
    unclosed.write_text("<html><head><title>T</title><meta charset=utf-8><body><h1>Use</h1><p>the body</p></body></html>")
    assert [(s.title, s.text) for s in document_sections(unclosed)] == [("unclosed.html § Use", "the body")]


def test_each_part_of_a_long_pdf_section_carries_the_pages_its_text_comes_from(tmp_path):
    """A six-page chapter cut into parts: every part was titled and tagged "p. 1-6" though its
    text came from one or two of those pages."""
    pages = [[f"PAGE{k} line {j} " + "tokens words " * 8 for j in range(30)] for k in range(1, 7)]
    path = tmp_path / "book.pdf"
    path.write_bytes(make_pdf(pages, [("Only chapter", 0)]))
    sections = document_sections(path)
    assert len(sections) > 2
    for k, section in enumerate(sections):
        first, last = section.where["pages"]
        found = sorted({int(n) for n in re.findall(r"PAGE(\d)", section.text)})
        assert (first, last) == (found[0], found[-1]) and section.where["heading"] == "Only chapter"
        label = f"p. {first}" if first == last else f"p. {first}-{last}"
        assert section.title == f"book.pdf {label}: Only chapter (part {k + 1} of {len(sections)})"
    untitled = tmp_path / "scan.pdf"  # without bookmarks: a page per section, and a long page's parts name it
    untitled.write_bytes(make_pdf([pages[0] * 3]))
    assert all(s.where == {"pages": [1, 1]} and s.title.startswith("scan.pdf p. 1 (part ") for s in document_sections(untitled))
