"""Issue-template headings, environment sections and links leave a message before it ranks."""

from __future__ import annotations

from loom_nb import Loom
from loom_nb.core.boilerplate import strip_boilerplate
from loom_nb.core.query import Query
from loom_nb.embed import HashingEmbedder

SPHINX_STYLE = """Overloaded default values rendered as string literal

### Describe the bug

Some arguments of overloaded functions are rendered as a string literal:

```
file: _io.FileIO = 'sys.stdin'
### OS
```

### How to Reproduce

Exactly the same as https://github.com/sphinx-doc/sphinx/issues/10278

### Expected behavior

Default values not rendered as string literals.

### Your project

https://github.com/someone/sphinx-issues-minimal

### Screenshots

![image](https://user-images.githubusercontent.com/1/2.png)

### OS

Ubuntu

### Python version

3.9

### Sphinx version

4.5.0

### Sphinx extensions

sphinx.ext.autodoc
"""


def test_a_template_issue_keeps_its_words_and_code_and_loses_the_form():
    text = strip_boilerplate(SPHINX_STYLE)
    assert text.splitlines() == [
        "Overloaded default values rendered as string literal",
        "",
        "Some arguments of overloaded functions are rendered as a string literal:",
        "",
        "```",
        "file: _io.FileIO = 'sys.stdin'",
        "### OS",  # inside a fenced block: pasted text, never edited
        "```",
        "",
        "Exactly the same as https://github.com/sphinx-doc/sphinx/issues/10278",
        "",
        "Default values not rendered as string literals.",
        "",
        "### Sphinx extensions",  # a project's own heading, not a template's: kept with what it lists
        "",
        "sphinx.ext.autodoc",
    ]


def test_an_environment_section_is_one_paragraph_and_what_follows_is_the_reporters():
    text = ("Names are fully qualified\n\n### Screenshots\n\n![image](https://example.com/1.png)\n\n"
            "The links work, but the names should be short.\n\n### OS\n\nLinux\n\n### Python version\n\n3.9")
    assert strip_boilerplate(text) == "Names are fully qualified\n\nThe links work, but the names should be short."
    versions = "Fails.\n\n### Versions\n\n```\nSystem:\n  python: 3.11\n```\n\nOnly on Windows."
    assert strip_boilerplate(versions) == "Fails.\n\nOnly on Windows."


def test_a_pasted_show_versions_report_goes_and_the_text_around_it_stays():
    """xarray's and pandas' templates ask for ``xr.show_versions()``: a list of every installed
    package, which names the backends and ``util/print_versions.py``, never the bug."""
    text = ("quantile raises numpy's error\n\n#### Output of ``xr.show_versions()``\n\n---\nEdit: uses `nanpercentile`.\n\n"
            "<details>\n\nINSTALLED VERSIONS\n------------------\ncommit: None\npython: 3.7.3 | packaged by conda-forge |\n"
            "[GCC 7.3.0]\npython-bits: 64\n\nxarray: 0.14.1+28.gf2b2f9f6 (current master)\nnetCDF4: 1.5.3\nzarr: None\n"
            "</details>\n\nIt should say 0..1.\n\n```python\nversions: dict = {}\n```")
    assert strip_boilerplate(text) == ("quantile raises numpy's error\n\n---\nEdit: uses `nanpercentile`.\n\n"
                                       "It should say 0..1.\n\n```python\nversions: dict = {}\n```")
    # a line "installed versions" in prose with no report under it keeps what follows
    assert strip_boilerplate("Installed versions:\nThe pin in setup.cfg is wrong.") == "The pin in setup.cfg is wrong."


def test_feature_request_and_bold_headings():
    text = ("**Is your feature request related to a problem? Please describe.**\nColours are lost in CI logs.\n\n"
            "**Describe the solution you'd like**\nHonour FORCE_COLOR.\n\n"
            "**Desktop (please complete the following information):**\n - OS: iOS\n - Browser: chrome\n\n"
            "#### Alternative Solutions\nNone.")
    assert strip_boilerplate(text) == "Colours are lost in CI logs.\n\nHonour FORCE_COLOR.\n\nNone."


def test_a_file_link_leaves_its_path_an_image_goes_other_links_stay():
    assert strip_boilerplate("broken at https://github.com/o/r/blob/0a1b2c3/src/_pytest/python.py#L120-L130 since 8.0") \
        == "broken at src/_pytest/python.py since 8.0"
    assert strip_boilerplate("in [python.py](https://github.com/o/r/tree/main/src/_pytest/python.py)") \
        == "in python.py src/_pytest/python.py"
    assert strip_boilerplate("looks like ![shot](https://user-images.githubusercontent.com/1/2.png) here") == "looks like  here"
    for kept in ("see [the docs](https://docs.python.org/3/library/unittest.html#unittest.TestCase.setUpClass)",
                 "Fix issue https://github.com/Seldaek/monolog/issues/1984 in the handler"):
        assert strip_boilerplate(kept) == kept
    assert strip_boilerplate("<details><summary>log</summary>\nE   ValueError\n</details>") == "log\nE   ValueError"


def test_what_is_not_boilerplate_stays():
    kept = [
        'the "http://:80" case and "http://user:pass@:8080" have no host',  # addresses under discussion
        "### Caching the tokenizer\n\nLoad it once.",  # a heading that is not a template's
        "How are concepts named?",
        "## Version\n\n",  # nothing would be left: the message as it is
        "Fails here:\n\n    # Python version\n    check()",  # a comment in indented code, not a heading
    ]
    for text in kept:
        assert strip_boilerplate(text) == text


def test_the_query_ranks_without_the_form_and_keeps_the_message_as_typed():
    history = [{"role": "user", "content": "### OS\nLinux"}, {"role": "assistant", "content": "Which version?"}]
    q = Query("Signatures lose defaults\n\n### Python version\n\n3.9", history)
    assert q.message.endswith("3.9")  # what the classifier grades and the chat shows
    assert q.retrieval_text().startswith("Signatures lose defaults\n\n(previous question: ### OS Linux)")
    assert q.vector_text() == q.retrieval_text()


def test_template_words_no_longer_pull_in_the_code_that_shares_them():
    """The form's "Python version" / "OS" / "project" matched a versions module before the code at fault."""
    loom = Loom(embedder=HashingEmbedder(64))
    version = loom.add("def describe_environment(): the OS, the Python version and the Sphinx version of your project, "
                       "to reproduce a bug as expected", type="analysis")
    render = loom.add("def stringify_default(value): how a default value of an overloaded function is rendered",
                      type="analysis")
    result = loom.query(SPHINX_STYLE, budget=300)
    assert result.loaded[0] == render.ids[0]
    assert version.ids[0] not in result.loaded[:1]
    terms = {row.node_id: row.signals["terms"] for row in result.table}
    assert terms[version.ids[0]] < terms[render.ids[0]]


def test_template_comments_go_but_not_inside_code():
    text = ("<!--\nThanks for submitting an issue!\nPlease describe the bug.\n-->\n"
            "Approx fails on nested dicts <!-- keep it short -->\n\n"
            "```xml\n<!-- a comment the reporter pasted -->\n<plugin/>\n```\n"
            "### Steps/Code to Reproduce\n\napprox({'a': {'b': 1}})\n\n"
            "### Versions\n\nSystem:\n    python: 3.11\n   machine: Linux")
    assert strip_boilerplate(text).splitlines() == [
        "Approx fails on nested dicts",
        "",
        "```xml",
        "<!-- a comment the reporter pasted -->",
        "<plugin/>",
        "```",
        "",
        "approx({'a': {'b': 1}})",
    ]


def test_pasted_text_of_any_shape_passes_through():
    """Every pattern runs on whatever a user pastes. A line of 100,000 '#' took the first
    version's heading pattern about a minute (two parts could match the same characters);
    each input here now takes milliseconds (benchmarks/README.md, 1 MB inputs)."""
    for text in ("#" * 100_000 + " x", "[" * 100_000, ("### " + "(" * 1_990 + "\n") * 50, "[a](https://x.io/" * 5_000, "<details" * 20_000,
                 "**" + "a" * 100_000, "### " + " " * 100_000 + "x", ("[" * 1_990 + "\n") * 50):
        assert strip_boilerplate(text) == text.strip()  # no template, no link to rewrite: unchanged
    assert strip_boilerplate("<!--" * 50_000) == "<!--" * 50_000  # nothing would be left: as typed
    assert strip_boilerplate("keep <!-- a -->" * 10_000 + "\n### OS\nLinux") == ("keep " * 10_000).strip()


def test_an_issue_forms_label_leaves_the_title():
    assert strip_boilerplate("[ENH]: gridspec_mosaic\n\nSome text.").splitlines()[0] == "gridspec_mosaic"
    # only before the title: a label further down is the reporter's text
    assert strip_boilerplate("Slider fails\n[Bug]: see above") == "Slider fails\n[Bug]: see above"
    # a bracket without a colon names something (a pylint message): it stays
    assert strip_boilerplate("[invalid-name] digits in TypeVar names\nbody").startswith("[invalid-name]")
    # a label with nothing after it is left as typed
    assert strip_boilerplate("[Bug]:") == "[Bug]:"
