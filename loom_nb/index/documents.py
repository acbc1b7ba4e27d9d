"""Documents a notebook user pastes in, cut into sections: PDF by its outline or by page,
HTML by heading, a notebook by cell (issue 18).

A paper or a saved web page is read once, cut into sections that each say where they came
from (``paper.pdf p. 3-5``, ``guide.html § Install``), and each section becomes a content
node holding its text (a PDF's text is not addressable by line, so these are stored, not
referenced). pypdf reads PDFs and BeautifulSoup (with Python's own ``html.parser``) reads
HTML: both are pure Python and need nothing at run time.

Every failure is a :class:`~loom_nb.core.errors.LoomError` that names the file: an
encrypted or damaged PDF, a PDF with no text layer (a scan), a file too large, one that cannot
be read (no permission, a folder, a FIFO).
"""

from __future__ import annotations

import io
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

from ..core.errors import LoomError
from ..core.files import decode_bytes, normalise_newlines, open_regular
from ..core.tokens import count_tokens

__all__ = ["DOCUMENT_SUFFIXES", "MAX_DOCUMENT_BYTES", "MAX_PDF_PAGES", "Section", "document_sections"]

MAX_DOCUMENT_BYTES = 50_000_000
"""Larger documents are refused: a 50 MB PDF is hundreds of pages of scans or images."""
MAX_PDF_PAGES = 2000
SECTION_TOKENS = 1200
"""A section longer than this is cut at paragraph breaks (a paragraph longer than this at its
lines, sentences or words), so no one node swallows a budget."""
DOCUMENT_SUFFIXES = {".pdf": "pdf", ".html": "html", ".htm": "html", ".ipynb": "notebook"}
_HEADINGS = ("h1", "h2", "h3", "h4", "h5", "h6")
_BLOCKS = frozenset("""address article aside blockquote body caption dd details div dl dt fieldset figcaption figure
    footer header hgroup hr legend li main menu ol p section summary table tbody td tfoot th thead tr ul""".split())
"""Elements whose text is a block of its own: a run of text ends where one starts or ends. Other
elements (``b``, ``code``, ``sub``, ``a``...) are inline: their text joins the words around it
as the browser shows it, so ``H<sub>2</sub>O`` reads "H2O"."""
_DROP = ("script", "style", "noscript", "nav", "svg", "form", "template")
_CHROME_ROLES = frozenset({"banner", "contentinfo", "navigation"})
_SECTIONING = ("article", "aside", "main", "nav", "section")
"""A ``<header>``/``<footer>`` inside one of these belongs to it (an article's title and date);
outside, it is the site's banner or footer (its implicit ARIA role), dropped as navigation is."""


@dataclass(frozen=True)
class Section:
    """One piece of a document: what it says and where it is."""

    title: str
    """``paper.pdf p. 3-5: Results`` or ``guide.html § Install > From source``."""
    text: str
    where: dict
    """``{"pages": [3, 5]}`` or ``{"heading": "Install > From source"}``, kept in the node's meta."""


def document_sections(path: str | Path) -> list[Section]:
    """The sections of a PDF or HTML file, in document order; never empty.

    Raises
    ------
    LoomError
        The file is missing, too large, of another type, cannot be read (no permission, a folder,
        a FIFO), or is not readable as its type.
    """
    path = Path(path)
    kind = DOCUMENT_SUFFIXES.get(path.suffix.lower())
    if kind is None:
        raise LoomError(f"{path.name}: not a document type add_file splits ({', '.join(DOCUMENT_SUFFIXES)})")
    data = _read(path)
    if kind == "pdf":  # cut into parts as it is read, each part with its own pages
        sections = _pdf_sections(path, data)
    else:
        sections = _html_sections(path, _text(data)) if kind == "html" else _notebook_sections(path, _text(data))
        sections = [part for section in sections for part in _cut(section)]
    if not sections:
        raise LoomError(f"{path.name} has no text to add" + (" (a scan without a text layer?)" if kind == "pdf" else ""))
    return sections


def _read(path: Path) -> bytes:
    """The file's bytes, if it is a regular file :data:`MAX_DOCUMENT_BYTES` at most; else a
    LoomError that says why it cannot be read. Every type is read here, through
    :func:`~loom_nb.core.files.open_regular`: a folder or a FIFO named ``.html`` raised a bare
    ``OSError``, and pypdf opened a FIFO named ``.pdf`` itself and blocked on it."""
    try:
        size = path.stat().st_size
        if size > MAX_DOCUMENT_BYTES:
            raise LoomError(f"{path.name} is {size / 1e6:,.0f} MB, over the {MAX_DOCUMENT_BYTES / 1e6:,.0f} MB add_file reads")
        with open_regular(path) as fh:
            data = fh.read(MAX_DOCUMENT_BYTES + 1)
    except FileNotFoundError:
        raise LoomError(f"{path}: no such file") from None
    except OSError as exc:  # no permission, a folder, a FIFO (NotRegularFileError)
        raise LoomError(f"{path}: cannot be read ({exc.strerror or exc})") from None
    if len(data) > MAX_DOCUMENT_BYTES:  # it grew since its stat
        raise LoomError(f"{path.name} is over the {MAX_DOCUMENT_BYTES / 1e6:,.0f} MB add_file reads")
    return data


def _text(data: bytes) -> str:
    """Bytes decoded as indexing decodes a file (:func:`~loom_nb.core.files.read_text`)."""
    return normalise_newlines(decode_bytes(data, truncated=False))


# -- PDF --------------------------------------------------------------------------------------


def _pdf_reader(path: Path, data: bytes):
    import pypdf

    try:
        reader = pypdf.PdfReader(io.BytesIO(data))
        if reader.is_encrypted and not reader.decrypt(""):
            raise LoomError(f"{path.name} is encrypted; decrypt it first")
        pages = len(reader.pages)
    except LoomError:
        raise
    except Exception as exc:  # pypdf raises many types for a damaged file
        raise LoomError(f"{path.name} is not a PDF pypdf can read ({type(exc).__name__}: {str(exc)[:200]})") from None
    if pages > MAX_PDF_PAGES:
        raise LoomError(f"{path.name} has {pages:,} pages, over the {MAX_PDF_PAGES:,} add_file reads")
    return reader


def _outline(reader) -> list[tuple[str, int]]:
    """The top-level bookmarks as (title, first page from 0) in page order, one per page
    (the first bookmark on it); [] when there are none or they cannot be read."""
    try:
        items = [(reader.get_destination_page_number(item), str(item.title))
                 for item in reader.outline if not isinstance(item, list)]
    except Exception:  # a broken outline: fall back to pages
        return []
    first: dict[int, str] = {}
    for page, title in items:
        if page is not None and page >= 0:
            first.setdefault(page, title)
    return [(title, page) for page, title in sorted(first.items())]


def _pdf_sections(path: Path, data: bytes) -> list[Section]:
    reader = _pdf_reader(path, data)
    texts = []
    for page in reader.pages:
        try:
            texts.append(_tidy(page.extract_text() or ""))
        except Exception:  # one damaged page should not lose the document: it reads as empty
            texts.append("")
    name = path.name
    marks = _outline(reader)
    if not marks:  # one section per page
        return [part for k in range(len(texts)) for part in _pdf_parts(name, texts, k, k, None, f"p. {k + 1}")]
    sections = []
    if marks[0][1] > 0:
        sections += _pdf_parts(name, texts, 0, marks[0][1] - 1, None, _pages(1, marks[0][1]))
    for k, (title, first) in enumerate(marks):
        last = (marks[k + 1][1] if k + 1 < len(marks) else len(texts)) - 1
        last = max(first, last)
        sections += _pdf_parts(name, texts, first, last, title, _pages(first + 1, last + 1))
    return sections


def _pdf_parts(name: str, texts: list[str], first: int, last: int, heading: str | None, label: str) -> list[Section]:
    """The section of pages ``first`` to ``last`` (from 0), titled ``{name} {label}: {heading}``;
    a long one in parts (:func:`_pack`), each titled and tagged with the pages its own text
    comes from: every part of a six-page chapter said "p. 1-6", though each held one page."""
    paragraphs: list[str] = []
    pages: list[int] = []  # each paragraph's page, from 1
    for page in range(first, last + 1):
        if texts[page].strip():
            for paragraph in texts[page].split("\n\n"):
                paragraphs.append(paragraph)
                pages.append(page + 1)
    text = "\n\n".join(paragraphs)
    if not text.strip():
        return []
    tail = f": {heading}" if heading else ""

    def where(a: int, b: int) -> dict:
        return {"pages": [a, b], **({"heading": heading} if heading else {})}

    parts = _pack(paragraphs) if count_tokens(text) > SECTION_TOKENS else []
    if len(parts) < 2:
        return [Section(f"{name} {label}{tail}", text, where(first + 1, last + 1))]
    return [Section(f"{name} {_pages(pages[held[0]], pages[held[-1]])}{tail} (part {k + 1} of {len(parts)})", part,
                    where(pages[held[0]], pages[held[-1]])) for k, (part, held) in enumerate(parts)]


def _pages(first: int, last: int) -> str:
    return f"p. {first}" if first == last else f"p. {first}-{last}"


# -- HTML -------------------------------------------------------------------------------------


def _html_sections(path: Path, text: str) -> list[Section]:
    """Every text of the page in document order (:func:`_html_runs`), cut at its headings."""
    from bs4 import BeautifulSoup

    soup = BeautifulSoup(text, "html.parser")
    for tag in soup(_DROP):
        tag.decompose()
    chrome = [tag for tag in soup.find_all(True)
              if str(tag.get("role") or "").lower() in _CHROME_ROLES
              or (tag.name in ("header", "footer") and tag.find_parent(_SECTIONING) is None)]
    for tag in chrome:
        if not tag.decomposed:  # one inside another was removed with it
            tag.decompose()
    for br in soup("br"):
        br.replace_with("\n")
    title = soup.title.get_text(" ", strip=True) if soup.title else ""
    if soup.title is not None:
        soup.title.decompose()
    sections: list[tuple[list[str], list[str]]] = [([title] if title else [], [])]
    trail: list[str] = []
    # the whole page, not soup.body: text before <body> or after </body> is shown by browsers
    # (HTML5 moves it into the body), and html.parser leaves it where it was written. The head
    # stays: its title is out, scripts and styles are dropped, meta and link hold no text, and
    # html.parser nests the whole body in a <head> left unclosed
    for level, text in _html_runs(soup):
        if level:
            trail = trail[: level - 1] + [text]
            sections.append((list(trail), []))
        else:
            sections[-1][1].append(text)
    out = []
    for heading, blocks in sections:
        if not blocks:
            continue
        label = " > ".join(h for h in heading if h)
        out.append(Section(f"{path.name} § {label}" if label else path.name, _tidy("\n\n".join(blocks)),
                           {"heading": label} if label else {}))
    return out


def _html_runs(body) -> Iterator[tuple[int, str]]:
    """``(level, text)`` in document order: a heading (h1-h6, level 1-6) or a run of text
    (level 0). A block element (a paragraph, a div, a list item, a cell...) ends a run; a ``pre``
    keeps its lines. The walk keeps its own stack: unclosed tags nest deeper than Python recurses."""
    from bs4 import CData, NavigableString

    words: list[str] = []

    def run() -> Iterator[tuple[int, str]]:
        text = " ".join("".join(words).split())  # the text's own spaces, none added between inline pieces
        words.clear()
        if text:
            yield 0, text

    stack = [(iter(body.children), True)]
    while stack:
        children, block = stack[-1]
        child = next(children, None)
        if child is None:
            stack.pop()
            yield from run() if block else ()
        elif isinstance(child, NavigableString):
            if type(child) is NavigableString or isinstance(child, CData):  # not a comment or a doctype
                words.append(str(child))
        elif child.name in _HEADINGS or child.name == "pre":
            yield from run()
            text = " ".join(child.get_text().split()) if child.name != "pre" else child.get_text().strip("\n")
            if text.strip():
                yield (int(child.name[1]) if child.name != "pre" else 0), text
        else:
            if child.name in _BLOCKS:
                yield from run()
            stack.append((iter(child.children), child.name in _BLOCKS))


# -- notebooks --------------------------------------------------------------------------------


def _notebook_sections(path: Path, text: str) -> list[Section]:
    """One section per cell that holds text: its source and its outputs' gist (images and widget
    state dropped), as indexing reads it (:mod:`loom_nb.core.notebooks`)."""
    from ..core.notebooks import notebook_cells

    cells = notebook_cells(text, path.name)  # a NotebookError (a LoomError) names the file
    return [Section(f"{path.name}[cell {cell.number}]", cell.text, {"cell": cell.number}) for cell in cells if cell.text.strip()]


# -- shared -----------------------------------------------------------------------------------


def _tidy(text: str) -> str:
    """Runs of blank lines and trailing spaces out; the text otherwise as extracted."""
    lines = [line.rstrip() for line in text.replace("\r\n", "\n").split("\n")]
    return re.sub(r"\n{3,}", "\n\n", "\n".join(lines)).strip()


def _cut(section: Section) -> list[Section]:
    """A section over :data:`SECTION_TOKENS` in parts at paragraph breaks (:func:`_pack`), each
    titled ``(part k of n)``."""
    if count_tokens(section.text) <= SECTION_TOKENS:
        return [section]
    parts = [text for text, _ in _pack(section.text.split("\n\n"))]
    if len(parts) == 1:
        return [section]
    return [Section(f"{section.title} (part {k + 1} of {len(parts)})", text, section.where) for k, text in enumerate(parts)]


def _pack(paragraphs: list[str]) -> list[tuple[str, list[int]]]:
    """Paragraphs packed in order into parts of about :data:`SECTION_TOKENS` tokens at most,
    joined by blank lines, each with the positions of the paragraphs it holds. A paragraph too
    long for one part is cut first (:func:`_fit`), its pieces each a part of their own, so that
    no section is one that :meth:`~loom_nb.core.engine.Loom.add` refuses (a 1.3M-character
    paragraph used to stay whole)."""
    parts: list[tuple[str, list[int]]] = []
    current: list[str] = []
    held: list[int] = []
    size = 0
    for k, paragraph in enumerate(paragraphs):
        pieces = _fit(paragraph)
        for piece, n in pieces:
            # two pieces of one paragraph never share a part: a blank line would come between them
            if current and (size + n > SECTION_TOKENS or len(pieces) > 1):
                parts.append(("\n\n".join(current), held))
                current, held, size = [], [], 0
            current.append(piece)
            held.append(k)
            size += n + 1  # the blank line after it
    if current:
        parts.append(("\n\n".join(current), held))
    return parts


_BOUNDARIES = (re.compile(r"(?<=\n)"), re.compile(r"(?<=[.!?])(?=\s)"), re.compile(r"(?<=\S)(?=\s)"))
"""Where :func:`_fit` cuts a paragraph, by preference: after a line, after a sentence, between words."""


def _fit(text: str, level: int = 0) -> list[tuple[str, int]]:
    """``text`` and its tokens, whole if it is at most :data:`SECTION_TOKENS` tokens, else in
    consecutive pieces that are: cut at line ends, else at sentence ends, else between words
    (:data:`_BOUNDARIES`), and a word longer than that between characters. Pieces are stripped:
    nothing but the whitespace where they were cut is lost.

    The pieces are gathered by characters, at this text's own characters per token (a tenth
    under), and only a piece still over is cut again: counting the tokens of each of 260,000
    words one by one took 15 s."""
    tokens = count_tokens(text)
    if tokens <= SECTION_TOKENS:
        return [(text, tokens)] if text else []
    if level == len(_BOUNDARIES):
        return [(piece, count_tokens(piece)) for piece in _characters(text)]
    units = [unit for unit in _BOUNDARIES[level].split(text) if unit]
    if len(units) == 1:
        return _fit(text, level + 1)
    budget = int(0.9 * SECTION_TOKENS * len(text) / tokens)  # under len(text): two pieces at least
    pieces: list[str] = []
    current: list[str] = []
    size = 0
    for unit in units:
        if current and size + len(unit) > budget:
            pieces.append("".join(current))
            current, size = [], 0
        current.append(unit)
        size += len(unit)
    pieces.append("".join(current))
    return [fitted for piece in pieces for fitted in _fit(piece.strip(), level)]


def _characters(text: str) -> list[str]:
    """``text`` in consecutive pieces of at most :data:`SECTION_TOKENS` tokens, cut between
    characters (a "word" with no space in it longer than a section: a base64 blob, a hash list)."""
    pieces, start = [], 0
    while start < len(text):
        end = min(len(text), start + 4 * SECTION_TOKENS)  # about 4 characters a token
        while (n := count_tokens(text[start:end])) > SECTION_TOKENS:  # shrink in proportion until it fits
            end = start + max(1, (end - start) * SECTION_TOKENS // n)
        pieces.append(text[start:end])
        start = end
    return pieces
