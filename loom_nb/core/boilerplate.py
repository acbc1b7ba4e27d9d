"""What in a message is about the form, not the code: issue-template headings, the environment
sections under them, screenshots, and an issue form's label before the title.

A GitHub issue as its reporter opens it carries its template: ``### Describe the bug``,
``### How to Reproduce``, ``### Expected behavior``, ``### OS`` / ``mac``, ``### Python version`` /
``3.9``, a screenshot, the template's own ``<!-- … -->`` instructions. Ranked as they are, those
words match configuration, docs and any code that says *version*, *project* or *context*, and they
pull the query's vector toward every bug report.
:func:`strip_boilerplate` removes them before a message ranks; the message the user typed (what
the classifier grades, what the chat shows) is untouched.

Kept on purpose: the code a message pastes (fenced blocks are never edited), a section whose
heading is not a template one, and links, except that a GitHub file link is replaced by the file's
path (``…/blob/<ref>/sphinx/util/inspect.py#L778`` becomes ``sphinx/util/inspect.py``, which the
path signal then reads) and an image link goes.

Measured through the default path (``benchmarks/README.md``): on 22 sphinx issues as their
reporters wrote them (every one has a template), line recall at 4k / 8k / 16k rose by 0.028 /
0.028 / 0.021 and gold-file recall by 0.045 / 0.068 / 0.136, no case losing a line; on 27 pytest
issues (11 change) by 0 / 0.002 / 0. No commit message of the mined sets has a template but one
(axum's ``## Motivation``, unchanged). Removing every link was measured too and not kept: it won
sphinx 0.05 more at 8k but lost a case each on pytest issues and caddy.
"""

from __future__ import annotations

import re
from typing import Iterator

from .classify import FENCE

_ENVIRONMENT_TITLES = (
    r"os|operating system|os ?/ ?environment|[\w.-]+ version( info(rmation)?)?|versions?|environment( info(rmation)?)?"
    r"|extra tools|screenshots?|your project|desktop|smartphone|system (info(rmation)?|details)|(python|installed) packages"
    r"|installation|additional dependencies|mvce confirmation"
)
_ENVIRONMENT = re.compile(_ENVIRONMENT_TITLES, re.IGNORECASE)
"""Template sections whose body (its first paragraph) is dropped with the heading: an OS name,
version numbers, a package list, how it was installed, a screenshot, a link to the reporter's
project. A paragraph after it is the reporter's own text and stays."""

_TEMPLATE_HEADING = re.compile(
    r"describe the bug|bug (description|report|summary)|description|(how|steps|steps/code|code) to reproduce( the bug)?"
    r"|to reproduce|reproduction( steps)?|code for reproduction|minimal (reproducible |complete verifiable )?example"
    r"|(expected|actual|current|observed) (behaviou?r|results?|outcome)|what happened\??|what did you expect to happen\??"
    r"|additional (context|information|info)|anything else we need to know\??|relevant log output|command used"
    r"|[\w.-]+ output|configuration|what'?s the problem this feature will solve\??|describe the solution you'?d like"
    r"|alternative solutions|describe alternatives you'?ve considered"
    r"|is your feature request related to a problem\??( please describe\.?)?|proposed solution|motivation|checklist"
    r"|code of conduct|output of [^#]{1,80}|" + _ENVIRONMENT_TITLES,
    re.IGNORECASE,
)
"""Headings of GitHub's default issue templates and of widely used project ones (sphinx, pytest,
matplotlib, scikit-learn, xarray, pylint, requests): only the heading goes, the text under it stays."""

_VERSIONS_REPORT = re.compile(r"\s*installed versions\s*:?\s*", re.IGNORECASE)
"""The first line of what ``pd.show_versions()`` and ``xr.show_versions()`` print, which xarray's
and pandas' templates ask for: a list of every installed package and its version, which matches
the backends and the version-printing module by name (a pasted report put xarray's
``util/print_versions.py`` ahead of the code an issue was about)."""
_VERSIONS_ENTRY = re.compile(r"\s*(?:[\w.+-]{1,40}\s*:.{0,200}|-{3,}|\[[^\]]{0,200}\]|</?details>)\s*")
"""A line of that report: ``numpy: 1.17.3``, its dashes, a compiler line in brackets, the
``<details>`` around it."""

_HEADING = re.compile(r" {0,3}(?:#{1,6}(?P<atx>[^#].*)|\*\*(?P<bold>[^*]+)\*\*\s*)")
"""A markdown heading or a bold line (indented by at most three spaces, as markdown has it: a
``# comment`` in an indented block of pasted code is not a heading). Written so that no two parts
can match the same characters: every pattern here runs on whatever a user pastes, and each stays
linear in the line's length."""
TITLE_CHARS = 200
"""A template's heading is short; a longer one is the reporter's own."""
_FORM_LABEL = re.compile(r"\A\[[A-Za-z][A-Za-z ]{0,19}\]:[ \t]*(?=\S)")
"""The label an issue form puts before the title (matplotlib's ``[Bug]: ``, ``[ENH]: ``,
``[MNT]: ``): the kind of report, not its subject, and the title is the line that ranks most
(:func:`~loom_nb.core.query.lead_line`). A bracket without the colon (pylint's
``[invalid-name] …`` names a message) stays."""
_LINK = re.compile(
    r"(?P<image>!?)\[(?P<text>[^\]\[]{0,300})\]\((?P<target>https?://[^()\s]{1,500})\)"
    r"|<?(?P<bare>https?://(?:[\w-]+\.)+[A-Za-z]{2,}(?::\d+)?(?:[/?#][^\s<>()\[\]\"'`]{0,500})?)>?"
)
"""A markdown link or image to a web address, or a bare address with a real host name (an
address such as ``http://:80`` in a message about a web server is content, not a link)."""
_GITHUB_FILE = re.compile(r"https?://github\.com/[^/\s]+/[^/\s]+/(?:blob|tree)/[^/\s]+/(?P<path>[^\s#?)]+)")
_HTML_TAG = re.compile(r"</?(?:details|summary|br|p|sub|sup|kbd|img)\b[^<>]{0,200}>", re.IGNORECASE)
LONG_LINE = 2000
"""Lines longer than this (minified data, a pasted blob) are never a template heading or a link
to rewrite; they pass through as they are, which keeps the bounded patterns cheap on them."""


def _kept_of_link(match: re.Match) -> str:
    """What a link leaves behind: a GitHub file link its path (and its text), an image nothing
    unless it shows a file; any other link stays as written."""
    url = match.group("target") or match.group("bare")
    github = _GITHUB_FILE.match(url)
    if github is None:
        return "" if match.group("image") else match.group(0)
    text = "" if match.group("image") else (match.group("text") or "").strip()
    return " ".join(part for part in (text, github.group("path")) if part)


def _template_title(line: str) -> str | None:
    """The title of a heading line (``### OS``, ``**To Reproduce**``) when it is a template's, else None."""
    heading = _HEADING.fullmatch(line)
    if heading is None:
        return None
    title = (heading.group("atx") or heading.group("bold")).strip().rstrip("#").strip()
    if len(title) > TITLE_CHARS:
        return None
    # "Desktop (please complete the following information):" is the title "Desktop"
    title = re.sub(r"\s*\([^()]*\)\s*$", "", title.rstrip(":").strip()).strip().rstrip(":").strip()
    return title if _TEMPLATE_HEADING.fullmatch(title) else None


def _marked_lines(lines: list[str]) -> Iterator[tuple[str, bool]]:
    """Each line and whether it belongs to fenced code (fence lines included, by
    :data:`~loom_nb.core.classify.FENCE`, the classifier's rule), with HTML comments (a
    template's ``<!-- Thanks for submitting … -->``, which GitHub does not show but keeps in the
    text) taken out of the lines outside fences."""
    in_fence = in_comment = False
    for line in lines:
        if not in_comment and FENCE.match(line):
            in_fence = not in_fence
            yield line, True
            continue
        if in_fence:
            yield line, True
            continue
        touched = in_comment or "<!--" in line
        kept, at = [], 0
        while at <= len(line):  # str.find, left to right: linear however many markers a line has
            if in_comment:
                end = line.find("-->", at)
                if end < 0:
                    break
                at, in_comment = end + 3, False
            else:
                start = line.find("<!--", at)
                kept.append(line[at:] if start < 0 else line[at:start])
                if start < 0:
                    break
                at, in_comment = start + 4, True
        line = "".join(kept)
        if line.strip() or not touched:  # a line that held only a comment goes
            yield line, False


def strip_boilerplate(text: str) -> str:
    """``text`` without issue-template headings and comments, the environment sections under
    them and images, a GitHub file link replaced by the file's path.

    Returns ``text`` unchanged when nothing would be left.

    >>> print(strip_boilerplate("Signature shows a string default\\n\\n### Describe the bug\\n\\n"
    ...     "See https://github.com/o/r/blob/abc1234/sphinx/util/inspect.py#L778\\n\\n### OS\\n\\nmac\\n\\n"
    ...     "### Python version\\n\\n3.9"))
    Signature shows a string default
    <BLANKLINE>
    See sphinx/util/inspect.py
    >>> strip_boilerplate("Docs: [config](https://flask.palletsprojects.com/en/stable/config/#SECRET_KEY_FALLBACKS)")
    'Docs: [config](https://flask.palletsprojects.com/en/stable/config/#SECRET_KEY_FALLBACKS)'
    >>> print(strip_boilerplate("quantile gives numpy's message\\n\\n#### Output of ``xr.show_versions()``\\n"
    ...     "<details>\\nINSTALLED VERSIONS\\n------------------\\ncommit: None\\npython: 3.7.3 (default)\\n"
    ...     "[GCC 7.3.0]\\n\\nxarray: 0.14.1\\nzarr: None\\n</details>\\nThe message should say 0..1."))
    quantile gives numpy's message
    <BLANKLINE>
    The message should say 0..1.
    >>> strip_boilerplate("[Bug]: Line2D should copy its inputs\\n\\nIt keeps a reference.")
    'Line2D should copy its inputs\\n\\nIt keeps a reference.'
    >>> strip_boilerplate("How are concepts named?")
    'How are concepts named?'
    """
    out: list[str] = []
    dropping = seen = False  # in an environment section; and past the first line of its body
    versions = False  # in a pasted show_versions() report
    for line, fenced in _marked_lines(text.splitlines()):
        plain = not fenced and len(line) <= LONG_LINE  # pasted code and blobs are never rewritten
        if plain and (versions or _VERSIONS_REPORT.fullmatch(line)):
            versions = not line.strip() or _VERSIONS_ENTRY.fullmatch(line) is not None or _VERSIONS_REPORT.fullmatch(line) is not None
            if versions:
                continue
        if plain:
            title = _template_title(line)
            if title is not None:
                dropping, seen = bool(_ENVIRONMENT.fullmatch(title)), False
                continue
            if dropping and _HEADING.fullmatch(line):  # another heading ends the section
                dropping = False
        if dropping:  # the section's body is its first paragraph: "mac", "3.9", a package list
            if line.strip() or fenced:
                seen = True
            elif seen:
                dropping = False  # what follows the blank line is the reporter's again
            continue
        out.append(_HTML_TAG.sub("", _LINK.sub(_kept_of_link, line)).rstrip() if plain else line)
    stripped = _FORM_LABEL.sub("", re.sub(r"\n{3,}", "\n\n", "\n".join(out)).strip(), count=1)
    return stripped if stripped.strip() else text
