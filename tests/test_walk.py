"""Walking a workspace: worked examples whose expected files and skip reasons are listed by hand."""

from __future__ import annotations

import codecs
import os
import sys
from pathlib import Path

import pytest

from loom_nb.core.errors import LoomError
from loom_nb.index import walk as walk_mod
from loom_nb.index.walk import (
    DEFAULT_IGNORES,
    LANGUAGES,
    MAX_LISTED_SKIPS,
    FileEntry,
    Skipped,
    WalkLimits,
    WalkResult,
    detect_language,
    is_binary,
    read_text,
    resolve_inside,
    walk_workspace,
)

needs_symlinks = pytest.mark.skipif(sys.platform == "win32", reason="symlinks need privileges on Windows")


def make(root: Path, files: dict[str, bytes | str]) -> None:
    for rel, content in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, str):
            path.write_text(content, encoding="utf-8")
        else:
            path.write_bytes(content)


def reasons(result: WalkResult) -> dict[str, str]:
    return {s.path: s.reason for s in result.skipped}


# --------------------------------------------------------------------------- the worked tree


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    make(tmp_path, {
        "src/a.py": "def a():\n    return 1\n",
        "src/b.ts": "export const b = 2;\n",
        "src/gen_models.py": "# generated\n",
        "src/.gitignore": "gen_*.py\n",
        "src/sub/gen_deep.py": "# nested .gitignore patterns also apply below their folder\n",
        "docs/x.md": "# Title\n",
        "node_modules/pkg/i.js": "module.exports = 1;\n",
        ".venv/lib/y.py": "import os\n",
        "build/out.js": "console.log(1);\n",
        "pkg.egg-info/PKG-INFO": "Name: pkg\n",
        "data.bin": b"\x00\x01\x02\x03binary\x00",
        "big.txt": "x" * 500,
        "app.log": "log line\n",
        "keep.log": "kept by the negation\n",
        "secret/key.txt": "hunter2\n",
        "notes": "no extension, but text\n",
        "Makefile": "all:\n\techo hi\n",
        ".gitignore": "*.log\nsecret/\n!keep.log\n",
    })
    return tmp_path


def test_walk_worked_tree(tree: Path):
    result = walk_workspace(tree, WalkLimits(max_file_bytes=100))

    assert [(f.path, f.language) for f in result.files] == [
        (".gitignore", "text"),
        ("Makefile", "text"),
        ("docs/x.md", "markdown"),
        ("keep.log", "text"),
        ("notes", "text"),
        ("src/.gitignore", "text"),
        ("src/a.py", "python"),
        ("src/b.ts", "typescript"),
    ]
    assert reasons(result) == {
        ".venv/": "default ignore",
        "app.log": "ignored by .gitignore",
        "big.txt": "over 100 bytes (500)",
        "build/": "default ignore",
        "data.bin": "binary",
        "node_modules/": "default ignore",
        "pkg.egg-info/": "default ignore",
        "secret/": "ignored by .gitignore",
        "src/gen_models.py": "ignored by src/.gitignore",
        "src/sub/gen_deep.py": "ignored by src/.gitignore",
    }
    assert result.skipped_count == 10
    assert result.root == tree.resolve()


def test_file_entries_carry_size_and_mtime(tree: Path):
    entry = next(f for f in walk_workspace(tree).files if f.path == "src/a.py")
    st = (tree / "src/a.py").stat()
    assert entry == FileEntry("src/a.py", st.st_size, st.st_mtime_ns, "python")


def test_ignored_folders_are_pruned_not_descended(tree: Path, monkeypatch):
    listed: list[str] = []
    real_scandir = os.scandir

    def spy(path):
        listed.append(os.path.relpath(path, tree))
        return real_scandir(path)

    monkeypatch.setattr(walk_mod.os, "scandir", spy)
    walk_workspace(tree)
    assert sorted(listed) == [".", "docs", "src", "src/sub"]


def test_unknown_text_can_be_excluded(tree: Path):
    result = walk_workspace(tree, WalkLimits(include_unknown_text=False))
    paths = [f.path for f in result.files]
    assert "notes" not in paths and "Makefile" in paths
    assert reasons(result)["notes"] == "unknown file type"


def test_git_info_exclude_and_extra_ignores(tree: Path):
    make(tree, {".git/info/exclude": "docs/\n", ".git/HEAD": "ref: refs/heads/main\n"})
    result = walk_workspace(tree, extra_ignores=["*.ts", "!secret/"])
    got = reasons(result)
    assert got["docs/"] == "ignored by .git/info/exclude"
    assert got["src/b.ts"] == "ignored by extra_ignores"
    assert got[".git/"] == "default ignore"
    # The caller's patterns have the last word: "!secret/" re-includes the git-ignored folder.
    assert "secret/key.txt" in [f.path for f in result.files]


def test_root_gitignore_overrides_info_exclude(tmp_path: Path):
    make(tmp_path, {".git/info/exclude": "*.md\n", ".gitignore": "!README.md\n",
                    "README.md": "hi\n", "other.md": "x\n"})
    result = walk_workspace(tmp_path)
    assert [f.path for f in result.files] == [".gitignore", "README.md"]
    assert reasons(result)["other.md"] == "ignored by .git/info/exclude"


def test_nested_gitignore_is_relative_to_its_folder(tmp_path: Path):
    make(tmp_path, {
        "a/.gitignore": "/top.py\n",  # anchored: only a/top.py, not a/deeper/top.py
        "a/top.py": "", "a/deeper/top.py": "", "top.py": "",
    })
    paths = [f.path for f in walk_workspace(tmp_path).files]
    assert paths == ["a/.gitignore", "a/deeper/top.py", "top.py"]


def test_bad_gitignore_pattern_degrades(tmp_path: Path, caplog):
    make(tmp_path, {".gitignore": "\\\n*.log\n", "a.log": "", "a.py": ""})
    result = walk_workspace(tmp_path)
    assert reasons(result) == {"a.log": "ignored by .gitignore"}
    assert "ignoring the pattern" in caplog.text


def test_default_ignores_match_folders_only(tmp_path: Path):
    make(tmp_path, {"build": "a file named build\n", "env/x.py": ""})
    result = walk_workspace(tmp_path)
    assert [f.path for f in result.files] == ["build"]
    assert reasons(result) == {"env/": "default ignore"}
    assert "*.egg-info" in DEFAULT_IGNORES and "node_modules" in DEFAULT_IGNORES


def test_empty_workspace(tmp_path: Path):
    result = walk_workspace(tmp_path)
    assert (result.files, result.skipped, result.skipped_count) == ([], [], 0)
    assert result.summary() == f"Walked {tmp_path.resolve()}: 0 files to index, nothing skipped."


# --------------------------------------------------------------------------- limits


def test_max_files(tmp_path: Path):
    make(tmp_path, {f"f{i}.py": "" for i in range(5)})
    result = walk_workspace(tmp_path, WalkLimits(max_files=3))
    # The walk goes in path order, so the files kept are the first three by path.
    assert [f.path for f in result.files] == ["f0.py", "f1.py", "f2.py"]
    assert result.skipped_count == 2
    assert result.skipped == [Skipped("f3.py", "file limit (3) reached"),
                              Skipped("f4.py", "file limit (3) reached")]


def test_skipped_list_is_capped_but_counted(tmp_path: Path):
    n = MAX_LISTED_SKIPS + 50
    make(tmp_path, {f"f{i:05d}.txt": "" for i in range(n + 1)})
    result = walk_workspace(tmp_path, WalkLimits(max_files=1))
    assert len(result.files) == 1
    assert len(result.skipped) == MAX_LISTED_SKIPS
    assert result.skipped_count == n
    assert result.reason_counts == {"file limit (1) reached": n}
    assert f"{n:,} skipped" in result.summary()
    assert f"the first {MAX_LISTED_SKIPS:,} are listed" in result.summary()


def test_summary_counts_by_reason(tree: Path):
    text = walk_workspace(tree, WalkLimits(max_file_bytes=100)).summary()
    assert "8 files to index" in text
    assert "10 skipped" in text
    assert "4 default ignore" in text
    assert "2 ignored by .gitignore" in text
    assert "2 ignored by src/.gitignore" in text
    assert "1 binary" in text
    assert "1 over 100 bytes" in text


def test_ten_thousand_files_are_all_walked(tmp_path: Path):
    for d in range(100):
        folder = tmp_path / f"pkg{d:03d}"
        folder.mkdir()
        for i in range(100):
            (folder / f"m{i:03d}.py").write_bytes(b"x = 1\n")
    result = walk_workspace(tmp_path)
    assert len(result.files) == 10_000


# --------------------------------------------------------------------------- failures degrade


def test_unreadable_file_is_skipped_not_raised(tmp_path: Path, monkeypatch):
    make(tmp_path, {"ok.py": "", "locked.py": ""})
    real_open = open

    def fake_open(path, *args, **kwargs):
        if str(path).endswith("locked.py"):
            raise PermissionError(13, "Permission denied", str(path))
        return real_open(path, *args, **kwargs)

    from loom_nb.core import files as files_mod  # files are opened where they are read

    monkeypatch.setattr(files_mod, "open", fake_open, raising=False)
    result = walk_workspace(tmp_path)
    assert [f.path for f in result.files] == ["ok.py"]
    assert result.skipped == [Skipped("locked.py", "unreadable: PermissionError: Permission denied")]


def test_unlistable_folder_is_skipped(tmp_path: Path, monkeypatch):
    make(tmp_path, {"ok.py": "", "locked/a.py": ""})
    real_scandir = os.scandir

    def fake_scandir(path):
        if str(path).endswith("locked"):
            raise PermissionError(13, "Permission denied", str(path))
        return real_scandir(path)

    monkeypatch.setattr(walk_mod.os, "scandir", fake_scandir)
    result = walk_workspace(tmp_path)
    assert [f.path for f in result.files] == ["ok.py"]
    assert reasons(result) == {"locked/": "unreadable: PermissionError: Permission denied"}


@needs_symlinks
def test_fifo_is_not_opened(tmp_path: Path):
    os.mkfifo(tmp_path / "pipe")  # opening it would block forever
    make(tmp_path, {"a.py": ""})
    result = walk_workspace(tmp_path)
    assert [f.path for f in result.files] == ["a.py"]
    assert reasons(result) == {"pipe": "not a regular file"}


@pytest.mark.parametrize("kind", ["missing", "file"])
def test_root_must_be_a_folder(tmp_path: Path, kind: str):
    root = tmp_path / "nope"
    if kind == "file":
        root.write_text("x")
    with pytest.raises(LoomError, match="is not a folder"):
        walk_workspace(root)


# --------------------------------------------------------------------------- symlinks


@needs_symlinks
def test_symlinks(tmp_path: Path):
    root = tmp_path / "ws"
    outside = tmp_path / "outside"
    make(outside, {"o.py": "", "dir/p.py": ""})
    make(root, {"src/a.py": "a = 1\n", "lib/b.py": "b = 2\n"})
    os.symlink(root / "src" / "a.py", root / "alias.py")        # file inside: indexed
    os.symlink(root / "lib", root / "lib_link")                 # folder inside: followed once
    os.symlink(root / "lib", root / "src" / "lib_again")        # same folder again: not followed
    os.symlink(outside / "o.py", root / "out.py")               # file outside
    os.symlink(outside / "dir", root / "out_dir")               # folder outside
    os.symlink(root / "missing.py", root / "broken.py")         # broken
    os.symlink("..", root / "src" / "up")                       # loop onto an ancestor
    os.symlink(root / "cycle_b", root / "cycle_a")              # a file link loop
    os.symlink(root / "cycle_a", root / "cycle_b")

    result = walk_workspace(root)

    assert [f.path for f in result.files] == [
        "alias.py",          # a symlinked file is indexed under its own (link) path...
        "lib/b.py",
        "lib_link/b.py",     # ...and so are the files of a symlinked folder inside the root
        "src/a.py",
    ]
    assert reasons(result) == {
        "broken.py": "broken symlink",
        "cycle_a": "broken symlink",
        "cycle_b": "broken symlink",
        "out.py": "symlink leaves the workspace",
        "out_dir/": "symlink leaves the workspace",
        "src/lib_again/": "symlink to a folder already followed",
        "src/up/": "symlink loop",
    }
    alias = next(f for f in result.files if f.path == "alias.py")
    assert alias.size == 6 and alias.language == "python"


@needs_symlinks
def test_symlink_cycle_between_folders_ends(tmp_path: Path):
    make(tmp_path, {"a/x.py": "", "b/y.py": ""})
    os.symlink(tmp_path / "b", tmp_path / "a" / "to_b")
    os.symlink(tmp_path / "a", tmp_path / "b" / "to_a")
    os.symlink(".", tmp_path / "self")
    result = walk_workspace(tmp_path)
    paths = [f.path for f in result.files]
    assert paths == ["a/to_b/y.py", "a/x.py", "b/to_a/x.py", "b/y.py"]
    assert reasons(result) == {
        "a/to_b/to_a/": "symlink loop",
        "b/to_a/to_b/": "symlink loop",
        "self/": "symlink loop",
    }
    assert not any(".." in p.split("/") for p in paths)


@needs_symlinks
def test_root_given_through_a_symlink(tmp_path: Path):
    make(tmp_path / "real", {"a.py": ""})
    os.symlink(tmp_path / "real", tmp_path / "link")
    result = walk_workspace(tmp_path / "link")
    assert result.root == (tmp_path / "real").resolve()
    assert [f.path for f in result.files] == ["a.py"]


# --------------------------------------------------------------------------- resolve_inside


@pytest.mark.parametrize("bad", ["../etc/passwd", "/etc/passwd", "a/../../x", "..", "C:\\x", "..\\x"])
def test_resolve_inside_refuses_escapes(tmp_path: Path, bad: str):
    with pytest.raises(LoomError, match="workspace"):
        resolve_inside(tmp_path, bad)


def test_resolve_inside_accepts_paths_under_root(tmp_path: Path):
    root = tmp_path.resolve()
    assert resolve_inside(tmp_path, "src/a.py") == root / "src" / "a.py"
    assert resolve_inside(tmp_path, "./src/../b.py") == root / "b.py"
    assert resolve_inside(tmp_path, "") == root


@needs_symlinks
def test_resolve_inside_refuses_symlinks_out(tmp_path: Path):
    root = tmp_path / "ws"
    root.mkdir()
    os.symlink(tmp_path, root / "escape")
    os.symlink(root, root / "inner")
    with pytest.raises(LoomError, match="outside the workspace"):
        resolve_inside(root, "escape/secret.txt")
    assert resolve_inside(root, "inner/a.py") == root.resolve() / "inner" / "a.py"


# --------------------------------------------------------------------------- read_text


@pytest.mark.parametrize("raw, expected", [
    (codecs.BOM_UTF8 + "héllo\r\nworld".encode(), "héllo\nworld"),
    (codecs.BOM_UTF16_LE + "naïve\r\nok".encode("utf-16-le"), "naïve\nok"),
    (codecs.BOM_UTF16_BE + "naïve".encode("utf-16-be"), "naïve"),
    (b"caf\xe9", "café"),                       # cp1252 fallback
    (b"a\rb\r\nc\n", "a\nb\nc\n"),              # old Mac and Windows line ends
    (b"\x81\x9d bad", "\ufffd\ufffd bad"),      # bytes cp1252 does not define: replaced
    (b"", ""),
])
def test_read_text(tmp_path: Path, raw: bytes, expected: str):
    path = tmp_path / "f.txt"
    path.write_bytes(raw)
    assert read_text(path) == expected


def test_read_text_max_bytes_drops_a_cut_character(tmp_path: Path):
    path = tmp_path / "f.txt"
    path.write_bytes("aé".encode())  # b"a\xc3\xa9": 2 bytes cut the é in half
    assert read_text(path, max_bytes=2) == "a"
    assert read_text(path, max_bytes=3) == "aé"


# --------------------------------------------------------------------------- is_binary, languages


@pytest.mark.parametrize("head, expected", [
    (b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR", True),
    ("def f():\n    return 'café'\n".encode(), False),
    (codecs.BOM_UTF16_LE + "hello".encode("utf-16-le"), False),
    (bytes(range(1, 32)) * 10, True),           # control bytes without a NUL
    (b"", False),
    (b"x" * 9000 + b"\x00", False),             # a NUL past the first 8 KiB is not looked at
])
def test_is_binary(head: bytes, expected: bool):
    assert is_binary(head) is expected


@pytest.mark.parametrize("path, expected", [
    ("src/a.py", "python"), ("types.pyi", "python"), ("x.MJS", "javascript"),
    ("App.tsx", "tsx"), ("main.go", "go"), ("lib.rs", "rust"), ("README.md", "markdown"),
    ("notes.txt", "text"), ("conf.yml", "yaml"), ("setup.cfg", "config"), ("a.hpp", "cpp"),
    ("Makefile", "text"), ("Dockerfile", "text"), ("LICENSE", "text"), ("docs/README", "text"),
    ("data.bin", None), (".gitignore", None), ("noext", None), ("makefile.bak", None),
])
def test_detect_language(path: str, expected: str | None):
    assert detect_language(path) == expected


def test_language_table_values():
    assert LANGUAGES[".ts"] == "typescript" and LANGUAGES[".cs"] == "csharp"
    assert all(ext.startswith(".") and ext == ext.lower() for ext in LANGUAGES)


@pytest.mark.skipif(sys.platform != "linux", reason="only Linux allows names that are not UTF-8")
def test_name_that_is_not_utf8_is_skipped(tmp_path: Path):
    (tmp_path / "ok.py").write_text("")
    open(os.path.join(os.fsencode(tmp_path), b"caf\xe9.py"), "wb").close()
    result = walk_workspace(tmp_path)
    assert [f.path for f in result.files] == ["ok.py"]
    assert result.skipped == [Skipped("caf?.py", "file name is not valid UTF-8")]


def test_generated_and_big_data_files_are_skipped(tmp_path: Path):
    make(tmp_path, {
        "app.py": "x = 1\n",
        "package-lock.json": "{}",
        "go.sum": "mod v1\n",
        "dist.min.js": "var a=1;",
        "small.json": '{"a": 1}',
        "fixture.json": "[" + ",".join(["1"] * 60_000) + "]",
    })
    result = walk_workspace(tmp_path)
    assert [f.path for f in result.files] == ["app.py", "small.json"]
    got = reasons(result)
    assert got["package-lock.json"] == got["go.sum"] == got["dist.min.js"] == "generated or lock file"
    assert got["fixture.json"].startswith("data file over 100,000 bytes")


def test_minified_bundles_are_skipped_by_their_lines_not_only_their_name(tmp_path: Path):
    """A 109 KB one-line ``bundle.js`` became one unit of 40,005 tokens. A JS, CSS or JSON file
    whose long lines are most of it is skipped as ``*.min.js`` is; code, JSON with long strings
    and a Python data table of long lines are kept, and only the file's head is read to decide."""
    statement = "function f%d(a,b){return a.map(function(x){return x*b+%d})}"
    one_line = ";".join(statement % (k, k) for k in range(2000))
    source = "".join(f"export function f{k}(a, b) {{\n  return a.map((x) => x * b + {k});\n}}\n\n" for k in range(900))
    prompt = "You are an agent that edits code. " * 130  # a 4,400-character string on one line
    make(tmp_path, {
        "bundle.js": one_line,
        "vendor/player.js": "/*! player v3 | MIT */\n" + one_line + "\n",
        "theme.css": "".join(f".c{k}{{margin:{k}px;padding:0}}" for k in range(3000)),
        "catalog.json": '{"messages": {' + ", ".join(f'"m{k}": "text {k}"' for k in range(900)) + "}}",
        "app.js": source,
        "late.js": source + one_line,  # minified past the part the walk reads: kept
        "agents.json": "{\n" + ",\n".join(f'  "a{k}": {{\n    "model": "m",\n    "prompt": "{prompt if k % 9 == 0 else "short"}"\n  }}' for k in range(40)) + "\n}\n",
        "table.py": "ROWS = [\n" + "".join(f"    ({', '.join(str(k * j) for j in range(400))}),\n" for k in range(30)) + "]\n",
    })
    assert (tmp_path / "late.js").stat().st_size > 65_536 and (tmp_path / "bundle.js").stat().st_size > 100_000
    result = walk_workspace(tmp_path)
    assert [f.path for f in result.files] == ["agents.json", "app.js", "late.js", "table.py"]
    assert set(reasons(result).values()) == {"generated or lock file"}


def test_csv_and_tsv_are_data_files_and_skipped_when_large(tmp_path: Path):
    """The README's rule for data files (over 100,000 bytes: skipped) holds for CSV too: a CSV
    was walked as unknown text and a 300 kB table was cut into windows."""
    rows = "".join(f"2024-01-{k % 28 + 1:02d},user{k},{k * 7 % 101}\n" for k in range(6000))
    make(tmp_path, {"small.csv": "day,user,clicks\n2024-01-01,ann,3\n", "big.csv": "day,user,clicks\n" + rows,
                    "big.tsv": rows.replace(",", "\t"), "Small.TSV": "a\tb\n"})
    assert (tmp_path / "big.csv").stat().st_size > 100_000
    result = walk_workspace(tmp_path)
    assert [(f.path, f.language) for f in result.files] == [("Small.TSV", "tsv"), ("small.csv", "csv")]
    got = reasons(result)
    assert got["big.csv"].startswith("data file over 100,000 bytes") and got["big.tsv"].startswith("data file over 100,000 bytes")


def test_images_and_fonts_stored_as_text_are_skipped(tmp_path: Path):
    make(tmp_path, {
        "lib/plot.py": "def plot():\n    pass\n",
        "tests/baseline_images/test_axes/hist.svg": '<?xml version="1.0"?>\n<svg><path d="M 0 0 L 1 1"/></svg>\n',
        "docs/figure.EPS": "%!PS-Adobe-3.0 EPSF-3.0\n",
        "fonts/afm/cmr10.afm": "StartFontMetrics 2.0\n",
        "docs/diagram.txt": "a diagram described in words\n",
    })
    result = walk_workspace(tmp_path)
    assert [f.path for f in result.files] == ["docs/diagram.txt", "lib/plot.py"]
    got = reasons(result)
    assert got["tests/baseline_images/test_axes/hist.svg"] == got["docs/figure.EPS"] == got["fonts/afm/cmr10.afm"] == "image, page or font"


PO_ENTRY = '#: sphinx/builders/html.py:120\nmsgid "Index"\nmsgstr "Índice"\n'


def test_translation_catalogues_are_left_out_unless_asked_for(tmp_path: Path):
    """gettext catalogues restate the program's strings once per language (sphinx: a third of its
    units); they are skipped with their own reason, and ``include_translations`` keeps them."""
    make(tmp_path, {
        "sphinx/builders/html.py": 'LABEL = _("Index")\n',
        "sphinx/locale/es/LC_MESSAGES/sphinx.po": PO_ENTRY,
        "sphinx/locale/sphinx.pot": PO_ENTRY.replace("Índice", ""),
        "sphinx/locale/es/LC_MESSAGES/sphinx.PO": PO_ENTRY,
        "docs/point.txt": "a po file is a portable object\n",
    })
    result = walk_workspace(tmp_path)
    assert [f.path for f in result.files] == ["docs/point.txt", "sphinx/builders/html.py"]
    assert set(reasons(result).values()) == {"translation catalogue"} and len(reasons(result)) == 3
    kept = walk_workspace(tmp_path, WalkLimits(include_translations=True))
    assert [f.path for f in kept.files] == ["docs/point.txt", "sphinx/builders/html.py", "sphinx/locale/es/LC_MESSAGES/sphinx.PO",
                                            "sphinx/locale/es/LC_MESSAGES/sphinx.po", "sphinx/locale/sphinx.pot"]
    assert kept.skipped == []


def test_the_index_command_keeps_translations_when_asked(tmp_path: Path, capsys):
    from loom_nb import Loom
    from loom_nb.cli import main

    make(tmp_path / "ws", {"app.py": 'LABEL = _("Index")\n', "locale/es/app.po": PO_ENTRY})
    index = ["index", str(tmp_path / "s"), str(tmp_path / "ws"), "--embedder", "hashing"]

    def files():
        return {node.reference.file for node in Loom.open(tmp_path / "s").graph.content_nodes()}

    assert main(index) == 0
    out = capsys.readouterr().out
    assert "1 translation catalogue" in out and "walk:" not in out
    assert main(index + ["--translations"]) == 0
    assert "walk: gettext catalogues kept" in capsys.readouterr().out
    assert files() == {"app.py", "locale/es/app.po"}
    # the next plain index walks as the last one did: it once dropped them without a word
    assert main(index) == 0
    out = capsys.readouterr().out
    assert "0 removed" in out and "walk: gettext catalogues kept" in out
    assert files() == {"app.py", "locale/es/app.po"}
    assert main(index + ["--no-translations"]) == 0
    assert "1 removed" in capsys.readouterr().out
    assert files() == {"app.py"}


def test_a_refresh_walks_as_the_last_index_did(tmp_path: Path, capsys):
    """The walk options are recorded in the session: a refresh that names none (the API's
    ``loom.index(root)``, a later ``loom-nb index``) keeps them; one that names some changes
    only those, and ``--ignore ''`` clears the patterns."""
    from loom_nb import HashingEmbedder, Loom
    from loom_nb.cli import main
    from loom_nb.index import WalkLimits

    ws = tmp_path / "ws"
    make(ws, {"app.py": "def run():\n    return 1\n", "gen/out.py": "X = 1\n", "big.py": "# " + "x" * 3000 + "\n",
              "locale/app.po": PO_ENTRY})
    loom = Loom.open(tmp_path / "s", embedder=HashingEmbedder())
    loom.index(ws, limits=WalkLimits(max_file_bytes=2000, include_translations=True), extra_ignores=["gen/"], wait=True)
    loom.save()

    def files():
        return {node.reference.file for node in Loom.open(tmp_path / "s").graph.content_nodes()}

    assert files() == {"app.py", "locale/app.po"}
    report = Loom.open(tmp_path / "s", embedder=HashingEmbedder()).index(ws, wait=True)
    assert report.nodes_removed == 0 and report.files_skipped == 2
    assert report.walk_options == ["files up to 2,000 bytes", "gettext catalogues kept", "ignoring 'gen/'"]
    index = ["index", str(tmp_path / "s"), str(ws), "--embedder", "hashing"]
    assert main(index + ["--max-file-bytes", "100000"]) == 0  # one option changed, the others kept
    assert files() == {"app.py", "big.py", "locale/app.po"}
    capsys.readouterr()
    assert main(index + ["--ignore", ""]) == 0
    assert files() == {"app.py", "big.py", "gen/out.py", "locale/app.po"}
    assert "  walk: files up to 100,000 bytes; gettext catalogues kept (recorded" in capsys.readouterr().out
    # explicit options through the API replace the record whole
    loom = Loom.open(tmp_path / "s", embedder=HashingEmbedder())
    report = loom.index(ws, limits=WalkLimits(), extra_ignores=(), wait=True)
    loom.save()
    assert report.walk_options == [] and files() == {"app.py", "big.py", "gen/out.py"}


def test_a_walk_record_that_does_not_fit_is_read_as_far_as_it_goes(tmp_path: Path):
    """A graph.json from elsewhere may hold anything under ``walk``: nothing in it raises."""
    from loom_nb import HashingEmbedder, Loom
    from loom_nb.index.indexer import recorded_walk

    loom = Loom.open(tmp_path / "s", embedder=HashingEmbedder())
    for record in (None, "x", [], {"limits": "x"}, {"limits": {"max_files": True, "max_file_bytes": 5.5}, "extra_ignores": "build/"}):
        loom.graph.metadata["workspace"] = {"walk": record}
        assert recorded_walk(loom.graph) == (WalkLimits(), ())
    loom.graph.metadata.pop("workspace")
    assert recorded_walk(loom.graph) == (WalkLimits(), ())


def test_a_session_folder_in_the_workspace_is_never_walked(tmp_path):
    """``loom-nb index ws/.loom ws`` twice once made the session's own graph.json, vectors and
    lock nodes of itself; so did a session folder equal to the workspace."""
    from loom_nb import HashingEmbedder, Loom

    ws = tmp_path / "ws"
    (ws / "src").mkdir(parents=True)
    (ws / "src" / "app.py").write_text("def refresh_token(u):\n    return u\n")
    for session in (ws / ".loom", ws / "notes-session", ws):
        for _ in range(2):  # Loom.editing refuses a folder holding files as a new session; Loom.open does not
            loom = Loom.open(session, embedder=HashingEmbedder())
            loom.index(ws, wait=True)
            loom.save()
        assert [f.path for f in walk_workspace(ws).files] == ["src/app.py"], session
        assert sorted({n.reference.file for n in loom.graph.content_nodes() if n.reference}) == ["src/app.py"]
    skipped = {s.path: s.reason for s in walk_workspace(ws).skipped}
    assert skipped[".loom/"] == skipped["notes-session/"] == "a loom-nb session folder"
    assert skipped["graph.json"] == skipped["embeddings/"] == "the session's own file"
    # a graph.json of some other format is a workspace file like any other
    (ws / "data").mkdir()
    (ws / "data" / "graph.json").write_text('{"nodes": []}\n')
    assert "data/graph.json" in [f.path for f in walk_workspace(ws).files]
