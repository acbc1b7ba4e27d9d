"""Indexing a workspace: reference nodes, structure edges, freshness, refresh."""

import subprocess
import threading
from pathlib import Path

import pytest

from loom_nb import HashingEmbedder, Loom, LoomError
from loom_nb.index import resolve_import

FILES = {
    "app/tokens.py": '''"""Token refresh for the dashboard."""

import time

from .store import TokenStore


def refresh(store, client_id):
    """Exchange the refresh token for a new access token."""
    store.save(client_id)
    return rotate(store)


def rotate(store):
    """Rotate the refresh token after each use."""
    return store
''',
    "app/store.py": '''class TokenStore:
    """Holds one session's tokens."""

    def save(self, client_id):
        return client_id
''',
    "web/client.ts": '''import { fetchJson } from "./http";

/** Calls the refresh endpoint. */
export async function refreshToken(id: string): Promise<string> {
  return fetchJson("/oauth/token", id);
}
''',
    "web/http.ts": '''export function fetchJson(url: string, body: string): Promise<string> {
  return fetch(url, { body }).then((r) => r.text());
}
''',
    "docs/guide.md": "# Guide\n\nIntro text.\n\n## Refresh tokens\n\nThey rotate on every use.\n\n## Theme\n\nColours.\n",
    "notes.txt": "plain text notes about deployment\n",
    "node_modules/lib/index.js": "module.exports = 1;\n",
    "logo.png": b"\x89PNG\r\n\x1a\n\x00\x00\x00",
}


def make_workspace(root: Path, files=FILES):
    for rel, content in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(content if isinstance(content, bytes) else content.encode())


def git(root: Path, *args):
    subprocess.run(["git", "-C", str(root), *args], check=True, capture_output=True,
                   env={"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@e", "GIT_COMMITTER_NAME": "t",
                        "GIT_COMMITTER_EMAIL": "t@e", "PATH": "/usr/bin:/bin:/usr/local/bin", "HOME": str(root)})


@pytest.fixture
def workspace(tmp_path):
    root = tmp_path / "ws"
    make_workspace(root)
    return root


def nodes_by_title(loom):
    return {n.title: n for n in loom.graph.content_nodes()}


def indexed(root: Path, files: dict[str, str]):
    """``files`` written under ``root`` and indexed: the Loom, and its nodes by title."""
    make_workspace(root, files)
    loom = Loom(embedder=HashingEmbedder())
    loom.index(root, progress=False)
    return loom, nodes_by_title(loom)


def test_index_makes_reference_nodes_per_symbol(workspace):
    loom = Loom(embedder=HashingEmbedder())
    report = loom.index(workspace, progress=False)
    assert report.files_seen == 6 and report.files_indexed == 6
    assert report.files_skipped >= 2  # node_modules and the PNG
    titles = set(nodes_by_title(loom))
    assert "app/tokens.py (module)" in titles
    assert "app/tokens.py:8-11 refresh" in titles and "app/tokens.py:14-16 rotate" in titles
    assert "app/store.py:1-5 TokenStore" in titles
    assert any(t.startswith("web/client.ts:") and t.endswith("refreshToken") for t in titles)
    assert "docs/guide.md:5-8 Guide > Refresh tokens" in titles
    node = nodes_by_title(loom)["app/tokens.py:8-11 refresh"]
    assert node.type == "file_reference" and node.reference.file == "app/tokens.py"
    assert node.reference.lines == (8, 11) and node.reference.signature.startswith("def refresh(store, client_id)")
    assert loom.text(node.id).startswith("def refresh(store, client_id):")
    assert node.id not in loom.graph._texts  # lazy: read from the file when needed


def test_structure_edges_follow_imports_and_calls(workspace):
    loom = Loom(embedder=HashingEmbedder())
    loom.index(workspace, progress=False)
    by_title = nodes_by_title(loom)
    refresh = by_title["app/tokens.py:8-11 refresh"].id
    rotate = by_title["app/tokens.py:14-16 rotate"].id
    store_cls = by_title["app/store.py:1-5 TokenStore"].id
    edges = dict(loom.graph.structure_of(refresh))
    assert edges[rotate] == "references" and edges[store_cls] == "references"  # calls rotate() and store.save()
    module = by_title["app/tokens.py (module)"].id
    assert dict(loom.graph.structure_of(module))[store_cls] == "imports"
    client = next(n.id for t, n in by_title.items() if t.endswith("refreshToken"))
    http = next(n.id for t, n in by_title.items() if t.endswith("fetchJson"))
    assert (http, "imports") in loom.graph.structure_of(client) or (http, "references") in loom.graph.structure_of(client)


def test_a_file_cut_into_windows_keeps_its_imports_on_the_first_window(tmp_path):
    """A script with no definitions, a Lua file of top-level code and a percent script's cell
    are cut into windows; their imports used to go with the outline, so they drew no edge."""
    from loom_nb.index.symbols import outline
    from loom_nb.index.units import file_units

    script = "from pkg.churn_utils import load\n\ndata = load('x.csv')\nprint(len(data))\n"
    units = file_units("script.py", "python", script, outline("script.py", script, "python"))
    assert [(u.kind, u.start, u.end, u.imports) for u in units] == [("window", 1, 4, ("pkg.churn_utils",))]
    files = {
        "pkg/churn_utils.py": "def load(path):\n    return open(path).read()\n",
        "script.py": script,
        "perc.py": "# %%\nfrom pkg.churn_utils import load\n\n# %%\ndef main():\n    return load('x.csv')\n",
        "lib/util.lua": "local M = {}\nfunction M.go() return 1 end\nreturn M\n",
        "main.lua": 'local util = require("lib.util")\nutil.go()\n',
    }
    loom, by_title = indexed(tmp_path / "ws", files)
    load = by_title["pkg/churn_utils.py:1-2 load"].id
    util = by_title["lib/util.lua (module)"].id  # an imports edge goes to the file's first unit
    assert (load, "imports") in loom.graph.structure_of(by_title["script.py:1-4 lines 1-4"].id)
    assert (load, "imports") in loom.graph.structure_of(by_title["perc.py:1-2 from pkg.churn_utils import load"].id)
    assert (util, "imports") in loom.graph.structure_of(by_title["main.lua:1-2 lines 1-2"].id)


def test_a_call_joins_the_definition_in_scope_not_every_namesake(tmp_path):
    # `parse` is defined three times: beside the caller, in a module it imports and in an
    # unrelated one. A bare-name join linked all three; the language binds the nearest.
    loom, by_title = indexed(tmp_path, {
        "pkg/reader.py": "def parse(text):\n    return text\n\n\ndef read(path):\n    return parse(path)\n",
        "pkg/loader.py": "from .codec import parse\n\n\ndef load(blob):\n    return parse(blob)\n",
        "pkg/codec.py": "def parse(blob):\n    return blob\n",
        "other/dates.py": "def parse(day):\n    return day\n",
        "other/unrelated.py": "def clean(day):\n    return parse(day)\n",
        "srv/a.go": "package srv\n\nfunc route(p string) string {\n\treturn match(p)\n}\n",
        "srv/b.go": "package srv\n\nfunc match(p string) string {\n\treturn p\n}\n",
        "cli/c.go": "package cli\n\nfunc match(p string) string {\n\treturn p\n}\n",
        # a Go import names a package, a folder; the name may be in any of its files
        "util/a.go": "package util\n\nfunc Helper() string {\n\treturn \"\"\n}\n",
        "util/b.go": "package util\n\nfunc Format(s string) string {\n\treturn s\n}\n",
        "text/format.go": "package text\n\nfunc Format(s string) string {\n\treturn s\n}\n",
        "web/h.go": "package web\n\nimport \"example.com/shop/util\"\n\nfunc Serve(s string) string {\n"
                    "\treturn util.Format(s)\n}\n",
    })

    def refs(title):
        return {loom.graph.node(n).title for n, kind in loom.graph.structure_of(by_title[title].id) if kind == "references"}

    assert refs("pkg/reader.py:5-6 read") == {"pkg/reader.py:1-2 parse"}  # the same file's
    assert refs("pkg/loader.py:4-5 load") == {"pkg/codec.py:1-2 parse"}  # the imported module's
    assert refs("srv/a.go:3-5 route") == {"srv/b.go:3-5 match"}  # a Go package is its folder
    assert refs("web/h.go:5-7 Serve") == {"util/b.go:3-5 Format"}  # the imported package's, not text's
    # nothing in scope: every definition, as long as there are few enough to mean something
    assert refs("other/unrelated.py:1-2 clean") == {
        "pkg/reader.py:1-2 parse", "pkg/codec.py:1-2 parse", "other/dates.py:1-2 parse"}


def test_a_nodes_view_says_which_way_each_code_edge_runs(tmp_path):
    loom, by_title = indexed(tmp_path, {
        "app/cart.py": "def total(items):\n    return sum(items)\n",
        "app/checkout.py": "from .cart import total\n\n\ndef pay(items):\n    return total(items)\n\n\n"
                           "def receipt(items):\n    return total(items)\n",
    })
    total, pay = by_title["app/cart.py:1-2 total"].id, by_title["app/checkout.py:4-5 pay"].id
    receipt, module = by_title["app/checkout.py:8-9 receipt"].id, by_title["app/checkout.py (module)"].id
    # grouped by relation: what it calls, what calls it, what it imports, what imports it
    assert loom.graph.structure_of(total, directed=True) == [(pay, "called by"), (receipt, "called by"), (module, "imported by")]
    assert loom.graph.structure_of(module, directed=True) == [(total, "imports")]
    assert loom.graph.structure_of(receipt, directed=True) == [(total, "calls")]
    assert loom.graph.structure_of(receipt) == [(total, "references")]  # undirected, as before
    assert f"code structure: called by {pay}, called by {receipt}, imported by {module}" in str(loom.view(total))
    html = loom.view(total)._repr_html_()
    assert "<th>relation</th>" in html and f"<td>called by</td><td>{pay}</td>" in html


def test_the_parts_of_a_unit_cut_by_size_are_joined_in_order(tmp_path):
    """A class too long for one unit is cut into parts that share its name; nothing else
    joined its middle to its head, so density saw the middle alone. Each part now continues
    in the next: from either end the relation says which way, and an overload (a unit of the
    same name that defines it again) or the next symbol is not a part."""
    fields = "".join(f"    field_{k}: int = {k}\n    \"\"\"What field {k} is for.\"\"\"\n\n" for k in range(60))
    text = ("class Weights:\n    \"\"\"Every weight.\"\"\"\n\n" + fields + "\n\ndef seed():\n    return Weights()\n"
            "\n\ndef seed():\n    return None\n")
    loom, by_title = indexed(tmp_path, {"config.py": text})
    parts = sorted((n for n in by_title.values() if n.title.endswith(" Weights")), key=lambda n: n.reference.lines[0])
    assert len(parts) >= 3
    for before, after in zip(parts, parts[1:]):
        assert (after.id, "next part") in loom.graph.structure_of(before.id, directed=True)
        assert (before.id, "previous part") in loom.graph.structure_of(after.id, directed=True)
    first, last = parts[0].id, parts[-1].id
    assert [k for _, k in loom.graph.structure_of(first, directed=True)].count("previous part") == 0
    assert [k for _, k in loom.graph.structure_of(last, directed=True)].count("next part") == 0
    seeds = [n for n in by_title.values() if n.title.endswith(" seed")]
    assert len(seeds) == 2 and not any(kind == "continues" for n in seeds for _, kind in loom.graph.structure_of(n.id))
    # plain networkx edges, of a kind a saved session keeps
    assert "continues" in {d["kind"] for _, _, d in loom.graph.nx.edges(data=True)}
    loom.save(tmp_path / "session")
    again = Loom.open(tmp_path / "session", embedder=HashingEmbedder())
    assert again.graph.structure_of(first, directed=True) == loom.graph.structure_of(first, directed=True)


def test_a_question_counts_a_parts_relevant_neighbours_toward_its_density(tmp_path):
    """Density reads the part edges: a question on the class gives its middle part the
    density of the parts before and after it when they are near the question."""
    fields = "".join(f"    weight_{k}: float = 0.{k}\n    \"\"\"Why weight {k} has this value.\"\"\"\n\n" for k in range(60))
    loom, by_title = indexed(tmp_path, {"config.py": "class Weights:\n    \"\"\"The signal weights.\"\"\"\n\n" + fields})
    parts = sorted((n for n in by_title.values() if n.title.endswith(" Weights")), key=lambda n: n.reference.lines[0])
    assert len(parts) >= 3
    result = loom.query("Why does each weight have this value?", budget=2000)
    ranking, middle = result.ranking, parts[1].id
    assert ranking.weights.density > 0  # a question on its own weighs density
    neighbours = [other for other, _ in loom.graph.structure_of(middle)]
    assert neighbours == sorted([parts[0].id, parts[2].id])
    # a neighbour counts when it is near the question (the semantic floor), as concepts did
    near = [ranking.raw(other)["semantic"] >= loom.graph.config.relevance_floor for other in neighbours]
    assert all(near)
    assert ranking.raw(middle)["density"] == 1 - 0.5 ** sum(near)


def test_a_session_linked_before_part_edges_gets_them_on_its_next_refresh(tmp_path):
    """Joining parts changed how edges are worked out, not how files are cut: a session
    indexed before is linked again on its next refresh, without cutting or embedding again."""
    from loom_nb.index.structure import STRUCTURE_VERSION

    fields = "".join(f"    field_{k}: int = {k}\n    \"\"\"What field {k} is for.\"\"\"\n\n" for k in range(60))
    make_workspace(tmp_path / "ws", {"config.py": "class Weights:\n" + fields,
                                     "app.py": "from config import Weights\n\n\ndef weights():\n    return Weights()\n"})
    loom = Loom(tmp_path / "session", embedder=HashingEmbedder())
    loom.index(tmp_path / "ws", progress=False)
    count = loom.graph.structure_count
    older = [(d["source"], d["target"], d["kind"]) for _, _, d in loom.graph.nx.edges(data=True) if d["kind"] in ("imports", "references")]
    assert older and count >= len(older) + 2
    loom.graph.replace_structure(older)  # as a session linked by the version before: no part edges
    del loom.graph.metadata["workspace"]["structure_version"]
    loom.save()
    again = Loom.open(tmp_path / "session", embedder=HashingEmbedder())
    report = again.index(tmp_path / "ws", progress=False)
    assert report.files_unchanged == 2 and report.files_indexed == 0  # nothing cut again
    assert again.graph.structure_count == count
    assert again.graph.metadata["workspace"]["structure_version"] == STRUCTURE_VERSION


def test_a_nodes_view_counts_the_code_neighbours_it_does_not_list(tmp_path):
    callers = "".join(f"def use{k}(x):\n    return total(x)\n\n\n" for k in range(15))
    loom, by_title = indexed(tmp_path, {"app/cart.py": "def total(items):\n    return sum(items)\n\n\n" + callers})
    total = by_title["app/cart.py:1-2 total"].id
    assert len(loom.graph.structure_of(total)) == 15
    view = loom.view(total)
    assert str(view).count("called by n") == 12 and str(view).rstrip().count(", and 3 more") == 1
    assert "… and 3 more" in view._repr_html_()


def test_reindexing_an_unchanged_workspace_parses_and_embeds_nothing(workspace):
    loom = Loom(embedder=HashingEmbedder())
    first = loom.index(workspace, progress=False)
    again = loom.index(workspace, progress=False)
    assert again.files_indexed == 0 and again.texts_embedded == 0 and again.nodes_added == 0
    assert again.files_unchanged == first.files_seen


def test_refresh_after_edit_delete_and_rename_outside_git(workspace):
    loom = Loom(embedder=HashingEmbedder())
    loom.index(workspace, progress=False)
    before = loom.graph.counts()["content"]
    path = workspace / "app/tokens.py"
    path.write_text(path.read_text() + "\n\ndef revoke(store):\n    return None\n")
    (workspace / "notes.txt").unlink()
    (workspace / "web/http.ts").rename(workspace / "web/fetch.ts")
    report = loom.index(workspace, progress=False)
    assert report.files_indexed == 2 and report.files_removed == 2  # tokens.py, fetch.ts; notes.txt, http.ts
    titles = set(nodes_by_title(loom))
    assert any(t.endswith(" revoke") for t in titles)
    assert not any(t.startswith("notes.txt") or t.startswith("web/http.ts") for t in titles)
    assert any(t.startswith("web/fetch.ts") for t in titles)
    assert loom.graph.counts()["content"] == before  # +1 revoke, -1 notes.txt; http.ts became fetch.ts


def test_changed_file_is_stale_until_reindexed_and_never_served(workspace):
    loom = Loom(embedder=HashingEmbedder())
    loom.index(workspace, progress=False)
    node = nodes_by_title(loom)["app/tokens.py:14-16 rotate"]
    path = workspace / "app/tokens.py"
    path.write_text(path.read_text().replace("return store\n", "return None  # changed\n"))
    from loom_nb import StaleReferenceError

    with pytest.raises(StaleReferenceError, match="changed since indexing"):
        loom.text(node.id)
    result = loom.query("rotate the refresh token", budget=2000, mode="fused")
    row = result.decision(node.id)
    assert row.decision != "loaded" or "return None" not in result.context
    assert "return None  # changed" not in result.context
    stale_rows = [r for r in result.table if r.reason.startswith("stale:")]
    assert stale_rows, "the stale node is reported as such"
    # and the user is told, on the manifest's first line, why and what to run
    assert result.packed.stale == [r.node_id for r in stale_rows]
    note = result.manifest.splitlines()[0]
    assert note.startswith(f"[stale: {len(stale_rows)} node") and "(app/tokens.py)" in note and "re-index" in note
    assert "[stale:" not in result.context  # the model's manifest counts them among the nodes not loaded
    loom.index(workspace, progress=False)
    fresh = nodes_by_title(loom)["app/tokens.py:14-16 rotate"]
    assert "return None  # changed" in loom.text(fresh.id)
    assert loom.query("rotate the refresh token", budget=2000).stale_note == ""


def test_a_unit_whose_text_did_not_change_keeps_its_node_when_its_file_is_reindexed(workspace, tmp_path):
    loom = Loom(tmp_path / "session", embedder=HashingEmbedder())
    loom.index(workspace, progress=False)
    before = nodes_by_title(loom)
    refresh, rotate = before["app/tokens.py:8-11 refresh"], before["app/tokens.py:14-16 rotate"]
    loom.graph.mark_accessed([rotate.id])
    path = workspace / "app/tokens.py"
    # two lines above everything, and refresh's body edited: rotate only moves
    path.write_text("# header\n# header\n" + path.read_text().replace("store.save(client_id)", "store.save(client_id, True)"))
    report = loom.index(workspace, progress=False)
    assert report.files_indexed == 1 and report.nodes_kept == 1  # rotate
    assert report.nodes_added == 2 and report.nodes_removed == 2  # refresh, and the preamble the header joined
    assert "kept in changed files" in str(report)
    after = nodes_by_title(loom)
    moved = after["app/tokens.py:16-18 rotate"]
    assert moved.id == rotate.id and moved.reference.lines == (16, 18)
    assert moved.last_access_turn == rotate.last_access_turn  # its access history stays
    assert loom.text(moved.id).startswith("def rotate(store):")  # read from its new lines, not stale
    edited = after["app/tokens.py:10-13 refresh"]
    assert edited.id != refresh.id and "store.save(client_id, True)" in loom.text(edited.id)
    assert refresh.id not in loom.graph
    assert dict(loom.graph.structure_of(edited.id))[moved.id] == "references"  # edges follow both
    loom.save()
    again = Loom.open(tmp_path / "session", embedder=HashingEmbedder(), workspace=workspace)
    assert nodes_by_title(again)["app/tokens.py:16-18 rotate"].id == rotate.id
    assert again.text(rotate.id).startswith("def rotate(store):")


def test_relocate_refuses_another_file_or_other_text(workspace):
    loom = Loom(embedder=HashingEmbedder())
    loom.index(workspace, progress=False)
    node = nodes_by_title(loom)["app/tokens.py:14-16 rotate"]
    from loom_nb.core.graph import Reference

    with pytest.raises(LoomError, match="keeps its file and its text"):
        loom.graph.relocate(node.id, Reference("app/store.py", (1, 3), "", node.reference.sha256), "x")
    with pytest.raises(LoomError, match="keeps its file and its text"):
        loom.graph.relocate(node.id, Reference("app/tokens.py", (1, 3), "", "0" * 64), "x")
    note = loom.add("a note with no file")
    with pytest.raises(LoomError, match="not a file unit"):
        loom.graph.relocate(note.ids[0], Reference("app/tokens.py", (1, 3), "", node.reference.sha256), "x")


def test_git_aware_refresh(workspace):
    git(workspace, "init", "-q")
    git(workspace, "add", ".")
    git(workspace, "commit", "-q", "-m", "initial")
    loom = Loom(embedder=HashingEmbedder())
    first = loom.index(workspace, progress=False)
    assert first.git
    assert loom.graph.metadata["workspace"]["commit"]
    (workspace / "app/store.py").write_text((workspace / "app/store.py").read_text() + "\n\ndef helper():\n    return 1\n")
    git(workspace, "commit", "-q", "-am", "add helper")
    report = loom.index(workspace, progress=False)
    assert report.files_indexed == 1 and report.files_unchanged == first.files_seen - 1
    (workspace / "notes.txt").write_text("uncommitted edit about deployment\n")
    report = loom.index(workspace, progress=False)
    assert report.files_indexed == 1  # a dirty file is caught without a commit


def test_a_refresh_reads_what_git_cannot_see_into(tmp_path):
    # git status names only the folder of a nested repository, and a symlinked file's edits
    # under its target's path: "not named by git" must not mean "unchanged" for either
    root = tmp_path / "ws"
    make_workspace(root, {"real.py": "def real():\n    return 1\n"})
    (root / "link.py").symlink_to("real.py")
    git(root, "init", "-q")
    git(root, "add", ".")
    git(root, "commit", "-q", "-m", "initial")
    make_workspace(root, {"vendor/lib/helper.py": "def helper():\n    return 'old'\n"})
    git(root / "vendor/lib", "init", "-q")
    git(root / "vendor/lib", "add", ".")
    git(root / "vendor/lib", "commit", "-q", "-m", "lib")
    loom = Loom(embedder=HashingEmbedder())
    loom.index(root, progress=False)
    (root / "real.py").write_text("def real():\n    return 2\n")
    (root / "vendor/lib/helper.py").write_text("def helper():\n    return 'new'\n")
    loom.index(root, progress=False)
    texts = {node.title.split(":")[0]: loom.text(node.id) for node in loom.graph.content_nodes()}
    assert "return 2" in texts["link.py"] and "return 2" in texts["real.py"]
    assert "'new'" in texts["vendor/lib/helper.py"]
    assert not [row for row in loom.query("real helper", budget=2000).table if row.reason.startswith("stale")]
    assert loom.graph.metadata["workspace"]["dirty"] == ["real.py"]  # the git_dirty signal: the edited file, not the link


@pytest.mark.parametrize("ignored_by, indexed_root, options", [
    (".gitignore above the indexed folder", "src", {}),
    ("a file re-included by extra_ignores", ".", {"extra_ignores": ["!local_settings.py"]}),
])
def test_a_refresh_reads_the_edits_of_a_file_git_ignores(tmp_path, ignored_by, indexed_root, options):
    # git status never names an ignored file, so "not dirty" said nothing about it: it was
    # recorded clean at the first index and skipped before its size and mtime were compared
    repo = tmp_path / "repo"
    make_workspace(repo, {"src/main.py": "def main():\n    return 1\n",
                          "src/local_settings.py": "def tuning_value():\n    return 'alpha_original'\n",
                          ".gitignore": "src/local_settings.py\n" if indexed_root == "src" else "local_settings.py\n"})
    (repo / "src/link.py").symlink_to("main.py")  # in a sub-folder too, git names its edits under the target's path
    git(repo, "init", "-q")
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "initial")
    root = repo / indexed_root
    loom = Loom(embedder=HashingEmbedder())
    loom.index(root, progress=False, **options)
    (repo / "src/local_settings.py").write_text("def tuning_value():\n    return 'beta_edited_later'\n")
    (repo / "src/main.py").write_text("def main():\n    return 2\n")
    git(repo, "commit", "-q", "-am", "edit main")
    report = loom.index(root, progress=False, **options)
    assert report.git
    texts = {node.title.split(":")[0].removeprefix("src/"): loom.text(node.id) for node in loom.graph.content_nodes()}
    assert "beta_edited_later" in texts["local_settings.py"]
    assert "return 2" in texts["link.py"]
    assert not [row for row in loom.query("tuning_value main", budget=2000).table if row.reason.startswith("stale")]
    assert loom.index(root, progress=False, **options).files_indexed == 0  # and then unchanged, by size and mtime


class FailingEmbedder(HashingEmbedder):
    """Hashing vectors, until ``fail`` is set: then the next call raises it."""

    fail: BaseException | None = None

    def embed(self, texts):
        if self.fail is not None:
            raise self.fail
        return super().embed(texts)


def _by_file(loom) -> dict[str, list[tuple[int, int]]]:
    """Each file's reference nodes, by their line ranges (a unit indexed twice shows twice)."""
    found: dict[str, list[tuple[int, int]]] = {}
    for node in loom.graph.content_nodes():
        if node.reference is not None:
            found.setdefault(node.reference.file, []).append(tuple(node.reference.lines))
    return {path: sorted(lines) for path, lines in found.items()}


def _grow(workspace):
    path = workspace / "app/tokens.py"
    path.write_text(path.read_text() + "\n\ndef revoke(store):\n    return None\n")


@pytest.mark.parametrize("failure", [RuntimeError("embedder down"), KeyboardInterrupt()])
def test_a_refresh_that_fails_to_embed_changes_nothing_and_its_retry_adds_each_unit_once(workspace, failure):
    # the failed refresh had popped the file's entry, and the retry added its units again
    embedder = FailingEmbedder()
    loom = Loom(embedder=embedder)
    loom.index(workspace, progress=False)
    files_before = {path: dict(entry) for path, entry in loom.graph.metadata["workspace"]["files"].items()}
    nodes_before = len(loom.graph.content_vectors)
    _grow(workspace)
    embedder.fail = failure
    with pytest.raises(type(failure)):
        loom.index(workspace, progress=False, wait=True)
    assert loom.graph.metadata["workspace"]["files"] == files_before and len(loom.graph.content_vectors) == nodes_before
    embedder.fail = None
    report = loom.index(workspace, progress=False, wait=True)
    assert report.nodes_added == 1 and report.nodes_removed == 0
    fresh = Loom(embedder=HashingEmbedder())
    fresh.index(workspace, progress=False)
    assert _by_file(loom) == _by_file(fresh)


@pytest.mark.parametrize("wait", [True, False])
def test_a_refresh_interrupted_while_it_changes_the_graph_is_redone_by_the_next_after_a_save(workspace, tmp_path, monkeypatch, wait):
    loom = Loom(tmp_path / "session", embedder=HashingEmbedder())
    loom.index(workspace, progress=False)
    path = workspace / "app/tokens.py"
    path.write_text("# a line above moves every unit\n" + path.read_text() + "\n\ndef revoke(store):\n    return None\n")
    (workspace / "notes.txt").unlink()
    real_add, calls = loom.graph.add_content, []

    def add_then_stop(*args, **kwargs):  # Ctrl-C after the first new node, with the old ones moved
        if calls:
            raise KeyboardInterrupt
        calls.append(1)
        return real_add(*args, **kwargs)

    monkeypatch.setattr(loom.graph, "add_content", add_then_stop)
    with pytest.raises(KeyboardInterrupt):
        loom.index(workspace, progress=False, wait=wait)
    monkeypatch.undo()
    loom.save()
    again = Loom.open(tmp_path / "session", embedder=HashingEmbedder())
    again.index(workspace, progress=False, wait=True)
    fresh = Loom(embedder=HashingEmbedder())
    fresh.index(workspace, progress=False)
    assert _by_file(again) == _by_file(fresh)
    named = {n for entry in again.graph.metadata["workspace"]["files"].values() for n in entry["nodes"]}
    assert named == set(again.graph.content_vectors.ids)
    assert again.wait() and not again.graph.pending_vectors


def test_a_refresh_removes_reference_nodes_no_file_entry_names(workspace):
    # a session damaged before refreshes committed their entries at the end: a file's entry
    # was dropped while its nodes stayed, and the retry added them again beside the old ones
    loom = Loom(embedder=HashingEmbedder())
    loom.index(workspace, progress=False)
    expected = _by_file(loom)
    pasted = loom.add("a pasted note about tokens").nodes[0].id
    del loom.graph.metadata["workspace"]["files"]["app/tokens.py"]
    report = loom.index(workspace, progress=False)
    assert report.nodes_removed == report.nodes_added == len(expected["app/tokens.py"])
    assert {path: lines for path, lines in _by_file(loom).items()} == expected
    assert pasted in loom.graph  # only the indexer's nodes are its to remove


class HeldEmbedder(HashingEmbedder):
    """Hashing vectors; its first call waits for ``release`` (a refresh held in its embed step)."""

    def __init__(self):
        super().__init__()
        self.entered, self.release, self.calls = threading.Event(), threading.Event(), 0

    def embed(self, texts):
        self.calls += 1
        if self.calls == 1:
            self.entered.set()
            assert self.release.wait(30)
        return super().embed(texts)


class Announced:
    """The loom's refresh lock, saying when another thread asks for it."""

    def __init__(self, lock, asked: threading.Event):
        self.lock, self.asked = lock, asked

    def __enter__(self):
        self.asked.set()
        return self.lock.__enter__()

    def __exit__(self, *exc):
        return self.lock.__exit__(*exc)


@pytest.mark.parametrize("second", ["save", "index"])
def test_a_save_or_a_second_refresh_waits_for_the_running_refresh(workspace, tmp_path, second):
    # a save beside a refresh wrote the session half refreshed, and two refreshes at once
    # each added the units of the file both found changed
    loom = Loom(tmp_path / "session", embedder=HashingEmbedder())
    loom.index(workspace, progress=False)
    loom.save()
    loom.embedder.inner = held = HeldEmbedder()
    _grow(workspace)
    first = threading.Thread(target=loom.index, args=(workspace,), kwargs={"progress": False, "wait": True})
    first.start()
    assert held.entered.wait(30)  # the refresh is in its embed step, holding the lock
    asked = threading.Event()  # set when the second asks for the lock, or (without one) has finished
    loom._refresh_lock = Announced(getattr(loom, "_refresh_lock", threading.RLock()), asked)

    def run_second():
        loom.save() if second == "save" else loom.index(workspace, progress=False, wait=True)
        asked.set()

    other = threading.Thread(target=run_second)
    other.start()
    assert asked.wait(30)
    held.release.set()
    first.join(30)
    other.join(30)
    if second == "save":
        loom = Loom.open(tmp_path / "session", embedder=HashingEmbedder())
    fresh = Loom(embedder=HashingEmbedder())
    fresh.index(workspace, progress=False)
    assert _by_file(loom) == _by_file(fresh)  # the save wrote the refreshed session, and once each
    named = {n for entry in loom.graph.metadata["workspace"]["files"].values() for n in entry["nodes"]}
    assert named == set(loom.graph.content_vectors.ids)


def test_a_refresh_draws_the_edges_a_fresh_index_draws(tmp_path):
    # the preamble holds the file's imports: one added inside a function leaves its text as it
    # was, and the refresh kept the node with the old imports (no edge to plugins.py)
    root = tmp_path / "ws"
    make_workspace(root, {"pkg/__init__.py": "", "pkg/plugins.py": "def load_plugins():\n    return []\n",
                          "pkg/app.py": "import os\n\n\ndef run():\n    return os.getcwd()\n"})
    loom = Loom(embedder=HashingEmbedder())
    loom.index(root, progress=False)
    (root / "pkg/app.py").write_text("import os\n\n\ndef run():\n    from pkg.plugins import load_plugins\n"
                                     "    return os.getcwd(), load_plugins()\n")
    loom.index(root, progress=False)
    fresh = Loom(embedder=HashingEmbedder())
    fresh.index(root, progress=False)

    def edges(session):
        graph = session.graph
        return sorted((node.title, kind, graph.node(other).title) for node in graph.content_nodes()
                      for other, kind in graph.structure_of(node.id, directed=True))

    assert edges(loom) == edges(fresh)
    assert ("pkg/app.py (module)", "imports", "pkg/plugins.py:1-2 load_plugins") in edges(loom)


def test_index_survives_save_and_open(workspace, tmp_path):
    loom = Loom(tmp_path / "session", embedder=HashingEmbedder())
    loom.index(workspace, progress=False)
    loom.save()
    again = Loom.open(tmp_path / "session", embedder=HashingEmbedder())
    assert again.graph.workspace == workspace.resolve()
    node = nodes_by_title(again)["app/tokens.py:8-11 refresh"]
    assert again.text(node.id).startswith("def refresh")
    assert again.graph.structure_of(node.id)
    report = again.index(workspace, progress=False)
    assert report.files_indexed == 0


def test_one_session_one_workspace(workspace, tmp_path):
    loom = Loom(embedder=HashingEmbedder())
    loom.index(workspace, progress=False)
    other = tmp_path / "other"
    other.mkdir()
    with pytest.raises(LoomError, match="open another session"):
        loom.index(other, progress=False)


def test_a_file_that_does_not_parse_is_still_indexed(tmp_path):
    """It is cut into units, and the report names it; a notebook whose cells hold IPython
    magics (``%matplotlib inline``, ``!pip install``) is not counted as a parse error."""
    import json

    magics = {"cells": [{"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": None,
                         "source": "%matplotlib inline\n!pip install churnlib\nimport pandas as pd"}],
              "metadata": {"kernelspec": {"name": "python3", "language": "python", "display_name": "Python 3"}},
              "nbformat": 4, "nbformat_minor": 4}
    make_workspace(tmp_path, {"broken.py": "def ok():\n    return 1\n\ndef broken(:\n    pass\n", "blob.xyz": "just some text\n" * 5,
                              "nb/magics.ipynb": json.dumps(magics)})
    loom = Loom(embedder=HashingEmbedder())
    report = loom.index(tmp_path, progress=False)
    assert report.files_indexed == 3
    titles = set(nodes_by_title(loom))
    assert any(t.startswith("broken.py") for t in titles) and any(t.startswith("blob.xyz") for t in titles)
    assert (report.parse_errors, report.parse_error_paths) == (1, ["broken.py"])
    assert "1 files with parse errors (broken.py)" in str(report)


def test_skeleton(workspace):
    loom = Loom(embedder=HashingEmbedder())
    loom.index(workspace, progress=False)
    sk = loom.skeleton("app/tokens.py")
    assert "def refresh(store, client_id)" in sk and "store.save(client_id)" not in sk


@pytest.mark.parametrize(
    "importer, spec, language, paths, expected",
    [
        ("pkg/a.py", ".b", "python", {"pkg/b.py"}, "pkg/b.py"),
        ("pkg/sub/a.py", "..b", "python", {"pkg/b.py"}, "pkg/b.py"),
        ("x.py", "loom_nb.core.graph", "python", {"src/loom_nb/core/graph.py"}, "src/loom_nb/core/graph.py"),
        ("src/app.ts", "./util", "typescript", {"src/util.ts"}, "src/util.ts"),
        ("src/app.ts", "../lib", "typescript", {"lib/index.js"}, "lib/index.js"),
        ("src/app.ts", "react", "typescript", {"react.ts"}, None),
        ("src/main.rs", "crate::graph::node", "rust", {"src/graph/node.rs"}, "src/graph/node.rs"),
        ("A.java", "com.x.Store", "java", {"src/main/java/com/x/Store.java"}, "src/main/java/com/x/Store.java"),
        ("main.go", "example.com/app/store", "go", {"store/store.go", "store/util.go"}, "store/store.go"),
    ],
)
def test_resolve_import(importer, spec, language, paths, expected):
    assert resolve_import(importer, spec, language, paths) == expected


def test_module_level_code_between_symbols_is_indexed(tmp_path):
    make_workspace(tmp_path, {"modes.py": (
        "import os\n\n\ndef first():\n    return 1\n\n\n"
        "MODES = {\n    'bare': 3,\n    'fused': None,\n}\n\n\n"
        "def second():\n    return MODES\n"
    )})
    loom = Loom(embedder=HashingEmbedder())
    loom.index(tmp_path, progress=False)
    titles = sorted(nodes_by_title(loom))
    assert titles == ["modes.py (module)", "modes.py:14-15 second", "modes.py:4-5 first", "modes.py:8-11 MODES = {"]
    node = nodes_by_title(loom)["modes.py:8-11 MODES = {"]
    assert loom.text(node.id) == "MODES = {\n    'bare': 3,\n    'fused': None,\n}"


def test_a_split_class_keeps_the_lines_between_and_after_its_methods():
    """A class over max_unit_tokens is cut into its header and its methods; the attributes
    between and after the methods are units too, named as module-level code is (by their
    first line), under the class's name."""
    from loom_nb.index.symbols import outline
    from loom_nb.index.units import file_units

    text = (
        "class Router:\n"                                    # 1
        "    \"\"\"Routes requests.\"\"\"\n"                # 2
        "\n"                                                 # 3
        "    timeout = 30\n"                                 # 4
        "\n"                                                 # 5
        "    def get(self, request):\n"                      # 6
        "        return self.routes[request.path](request)\n"  # 7
        "\n"                                                 # 8
        "    # registered after the handlers\n"              # 9
        "    ROUTES = {'/a': 'get'}\n"                       # 10
        "    MAX_BODY = 1_000_000\n"                         # 11
        "\n"                                                 # 12
        "    def post(self, request):\n"                     # 13
        "        return self.get(request)\n"                 # 14
        "\n"                                                 # 15
        "    LIMIT = 5\n"                                    # 16
    )
    units = file_units("router.py", "python", text, outline("router.py", text, "python"), max_unit_tokens=30)
    assert [(u.kind, u.name, u.start, u.end) for u in units] == [
        ("class", "Router", 1, 5), ("method", "Router.get", 6, 7),
        ("module", "Router: # registered after the handlers", 9, 11),
        ("method", "Router.post", 13, 14), ("module", "Router: LIMIT = 5", 16, 16)]
    assert units[2].text == "    # registered after the handlers\n    ROUTES = {'/a': 'get'}\n    MAX_BODY = 1_000_000"
    # under the limit the class is one unit, as before
    assert [(u.name, u.start, u.end) for u in file_units("router.py", "python", text, outline("router.py", text, "python"))] == [
        ("Router", 1, 16)]


def test_a_deleted_or_unreadable_file_is_reported_not_fatal(workspace, monkeypatch):
    loom = Loom(embedder=HashingEmbedder())
    loom.index(workspace, progress=False)
    (workspace / "app/store.py").unlink()
    result = loom.query("TokenStore save", budget=2000, mode="fused")
    reasons = [r.reason for r in result.table if r.title.startswith("app/store.py")]
    assert any(r.startswith("stale") and "no longer exists" in r for r in reasons)
    assert "class TokenStore" not in result.context
    import loom_nb.core.files as files  # where a reference's text is read back from

    def refuse(path, max_bytes=None):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(files, "read_text", refuse)
    for path in workspace.rglob("*.py"):  # a permission change (ctime) makes the next read go to the file
        path.chmod(0o600)
    result = loom.query("refresh tokens rotate", budget=2000, mode="fused")
    assert result.loaded == [] and any("cannot be read" in r.reason for r in result.table)


def test_go_methods_are_units_with_their_comments():
    from loom_nb.index.symbols import outline
    from loom_nb.index.units import file_units

    text = (
        "package gin\n"            # 1
        "\n"                       # 2
        "type Engine struct {\n"   # 3
        "\tname string\n"          # 4
        "}\n"                      # 5
        "\n"                       # 6
        "// Run starts the engine.\n"  # 7
        "// It blocks.\n"          # 8
        "func (e *Engine) Run() error {\n"  # 9
        "\treturn nil\n"           # 10
        "}\n"                      # 11
        "\n"                       # 12
        "// RunFd listens on a file descriptor.\n"  # 13
        "func (e *Engine) RunFd(fd int) error {\n"  # 14
        "\treturn nil\n"           # 15
        "}\n"                      # 16
    )
    units = file_units("gin.go", "go", text, outline("gin.go", text, "go"))
    spans = {u.name: (u.start, u.end) for u in units}
    # methods name their receiver as parent but sit outside it: each is a unit, from its comment
    assert spans["Engine.Run"] == (7, 11) and spans["Engine.RunFd"] == (13, 16)
    assert spans["Engine"] == (3, 5)
    assert not any(u.kind == "module" for u in units)  # no leftover gap unit swallowing them


def test_go_constants_and_variables_name_the_module_level_unit_that_declares_them(tmp_path):
    from loom_nb import HashingEmbedder, Loom
    from loom_nb.index.symbols import outline
    from loom_nb.index.units import file_units

    text = (
        "package echo\n"                                       # 1
        "\n"                                                   # 2
        "const (\n"                                            # 3
        "\t// NotFoundRouteName names the 404 route.\n"       # 4
        "\tNotFoundRouteName = \"echo_route_not_found\"\n"   # 5
        "\tstaticKind, paramKind = 0, 1\n"                    # 6
        ")\n"                                                  # 7
        "\n"                                                   # 8
        "var _ Router = (*DefaultRouter)(nil)\n"               # 9
        "\n"                                                   # 10
        "func NewRouter() *DefaultRouter {\n"                  # 11
        "\treturn nil\n"                                      # 12
        "}\n"                                                  # 13
        "\n"                                                   # 14
        "// errors the router returns\n"                       # 15
        "var (\n"                                              # 16
        "\tErrNotFound = errors.New(\"not found\")\n"        # 17
        ")\n"                                                  # 18
    )
    found = outline("router.go", text, "go")
    assert found.declarations == ((5, "const", "NotFoundRouteName"), (6, "const", "staticKind"),
                                  (6, "const", "paramKind"), (17, "var", "ErrNotFound"))  # "_" names nothing
    units = file_units("router.go", "go", text, found)
    # before the first symbol: the file's preamble, which keeps its title and defines the names
    assert (units[0].kind, units[0].start, units[0].end, units[0].defines) == (
        "preamble", 1, 10, ("NotFoundRouteName", "staticKind", "paramKind"))
    assert units[0].fields()["symbol"] == "NotFoundRouteName staticKind paramKind"
    # between symbols: a unit named by what it declares, not by its first line (a comment)
    gaps = [(u.start, u.end, u.name, u.defines) for u in units if u.kind == "module"]
    assert gaps == [(15, 18, "var ErrNotFound", ("ErrNotFound",))]
    # the name is what a manifest and a view show
    (tmp_path / "ws").mkdir()
    (tmp_path / "ws" / "router.go").write_text(text)
    loom = Loom(embedder=HashingEmbedder())
    loom.index(tmp_path / "ws", progress=False, wait=True)
    result = loom.query("which error is ErrNotFound?", budget=2000)
    assert result.table[0].title == "router.go:15-18 var ErrNotFound"


def test_rust_macros_name_their_unit_and_attributes_do_not():
    """A ``macro_rules!`` between symbols defines its name (so ``vpath!(…)`` leads to it) and
    titles its unit, not the ``///`` comment above it; re-exports behind ``#[cfg(…)]`` are titled
    by the first line of code, not by the attribute."""
    from loom_nb.index.symbols import outline
    from loom_nb.index.units import file_units

    text = (
        "mod form;\n"                                          # 1
        "\n"                                                   # 2
        "#[cfg(feature = \"form\")]\n"                         # 3
        "pub use self::form::Form;\n"                          # 4
        "pub use self::json::Json;\n"                          # 5
        "fn route() {}\n"                                      # 6
        "\n"                                                   # 7
        "/// Builds a path at compile time.\n"                 # 8
        "macro_rules! vpath {\n"                               # 9
        "    ($s:literal) => { $s };\n"                        # 10
        "}\n"                                                  # 11
        "\n"                                                   # 12
        "pub const LIMIT: usize = 16;\n"                       # 13
        "\n"                                                   # 14
        "fn serve() {}\n"                                      # 15
        "\n"                                                   # 16
        "#[cfg(test)]\n"                                       # 17
        "use self::tests::fixture;\n"                          # 18
        "\n"                                                   # 19
        "fn check() {}\n"                                      # 20
    )
    found = outline("mod.rs", text, "rust")
    assert found.declarations == ((9, "macro_rules!", "vpath"),)  # a const names itself on its first line
    units = file_units("mod.rs", "rust", text, found)
    gaps = [(u.start, u.end, u.name, u.defines) for u in units if u.kind == "module" and u.start > 1]
    assert gaps == [(3, 5, "pub use self::form::Form;", ()), (8, 13, "macro_rules! vpath", ("vpath",)),
                    (17, 18, "use self::tests::fixture;", ())]  # a statement stays a unit, however short


def test_the_parts_of_a_long_preamble_have_titles_of_their_own():
    """A module docstring too long for one unit is cut into parts; each used to be titled
    ``walk.py (module)``, so a manifest listed two nodes by one name."""
    from loom_nb.index.symbols import outline
    from loom_nb.index.units import file_units

    text = '"""' + "\n".join(f"Line {k} of a long module docstring about walking." for k in range(90)) + '"""\n\n\ndef walk():\n    pass\n'
    units = [u for u in file_units("walk.py", "python", text, outline("walk.py", text, "python"), 200) if u.kind == "preamble"]
    assert len(units) > 1 and units[0].title == "walk.py (module)"
    assert [u.title for u in units[1:]] == [f"walk.py:{u.start}-{u.end} (module)" for u in units[1:]]
    assert len({u.title for u in units}) == len(units)


def test_windows_of_dense_text_stay_under_the_unit_cap():
    """A file with no outline is cut into windows of 60 lines and 4,000 characters; base64 or
    Japanese prose fills that with far more than 800 tokens, so such windows are halved until
    each fits (one unit of 2,000 tokens used to cost a quarter of an 8k budget)."""
    import base64
    from loom_nb.core.tokens import count_tokens
    from loom_nb.index.symbols import outline
    from loom_nb.index.units import file_units

    blob = base64.b64encode(bytes(range(256)) * 40).decode()
    text = "\n".join(blob[k:k + 76] for k in range(0, len(blob), 76)) + "\n"
    lines = text.count("\n")
    units = file_units("logo.b64", "text", text, outline("logo.b64", text, "text"))
    assert max(count_tokens(u.text) for u in units) <= 800
    assert [u.start for u in units][0] == 1 and units[-1].end == lines
    assert all(a.end + 1 == b.start for a, b in zip(units, units[1:]))  # every line, once, in order
    assert len(units) > len(range(0, lines, 60))  # more pieces than the 60-line windows alone


def test_go_units_name_each_keyword_and_keep_a_type_group_s_parentheses():
    """A unit holding consts and a var names each with its own keyword; a grouped
    ``type ( … )`` keeps ``type (`` with its first type and ``)`` with its last, instead of
    ``type (`` stuck to the unit above and a unit named ``)``."""
    from loom_nb.index.symbols import outline
    from loom_nb.index.units import file_units

    text = (
        "package gen\n"        # 1
        "\n"                   # 2
        "func Init() {}\n"     # 3
        "\n"                   # 4
        "const (\n"            # 5
        "\tA = 1\n"            # 6
        "\tB = 2\n"            # 7
        ")\n"                  # 8
        "\n"                   # 9
        "var Default = 3\n"    # 10
        "\n"                   # 11
        "// Keys of a record.\n"  # 12
        "type (\n"             # 13
        "\tID int\n"           # 14
        "\t// Name is shown.\n"  # 15
        "\tName string\n"      # 16
        ")\n"                  # 17
        "\n"                   # 18
        "func Run() {}\n"      # 19
    )
    found = outline("gen.go", text, "go")
    units = file_units("gen.go", "go", text, found)
    assert [(u.kind, u.name, u.start, u.end) for u in units] == [
        ("preamble", "gen.go", 1, 2), ("function", "Init", 3, 3),
        ("module", "const A, B; var Default", 5, 10),
        ("type", "ID", 12, 14), ("type", "Name", 15, 17),
        ("function", "Run", 19, 19)]
    assert units[2].defines == ("A", "B", "Default")
    types = {s.name: s for s in found.symbols if s.kind == "type"}
    assert types["ID"].signature == "type ID int" and types["ID"].doc == "Keys of a record."
    assert types["Name"].signature == "type Name string" and types["Name"].doc == "Name is shown."


def test_a_session_cut_by_an_older_units_version_is_recut(tmp_path):
    from loom_nb import HashingEmbedder, Loom

    (tmp_path / "ws").mkdir()
    (tmp_path / "ws" / "a.py").write_text("def f():\n    return 1\n")
    loom = Loom(embedder=HashingEmbedder())
    assert loom.index(tmp_path / "ws", progress=False).files_indexed == 1
    assert loom.index(tmp_path / "ws", progress=False).files_indexed == 0  # unchanged
    loom.graph.metadata["workspace"]["units_version"] = 1
    assert loom.index(tmp_path / "ws", progress=False).files_indexed == 1


def test_a_large_unit_symbols_cannot_split_is_cut_into_parts(tmp_path):
    """A documented TypedDict of ~90 fields (pydantic's ConfigDict is 9,600 tokens) becomes
    parts of at most 40 lines; a question about one field finds the part that holds it."""
    from loom_nb import HashingEmbedder, Loom
    from loom_nb.index.symbols import outline
    from loom_nb.index.units import PART_LINES, file_units

    fields = "".join(f"    field_{k}: int\n    \"\"\"Documents field {k}: what it does and why.\"\"\"\n\n" for k in range(90))
    text = "from typing import TypedDict\n\n\nclass Config(TypedDict):\n    \"\"\"Every setting.\"\"\"\n\n" + fields
    units = file_units("config.py", "python", text, outline("config.py", text, "python"), max_unit_tokens=800)
    parts = [u for u in units if u.name == "Config"]
    assert len(parts) > 5 and all(u.end - u.start + 1 <= PART_LINES for u in parts)
    # contiguous, in order, covering the class to its last field
    assert parts[0].start == 4 and parts[-1].end == text.rstrip("\n").count("\n") + 1
    assert all(b.start > a.end for a, b in zip(parts, parts[1:]))
    # only the head part defines the symbol (references lead there), every part keeps the name
    assert parts[0].defines == ("Config",) and all(p.defines == () for p in parts[1:])
    assert parts[0].signature and not any(p.signature or p.doc for p in parts[1:])
    # a unit under the limit is untouched
    small = file_units("s.py", "python", "def f():\n    return 1\n", outline("s.py", "def f():\n    return 1\n", "python"))
    assert [(u.start, u.end) for u in small] == [(1, 2)]

    (tmp_path / "ws").mkdir()
    (tmp_path / "ws" / "config.py").write_text(text)
    loom = Loom(embedder=HashingEmbedder())
    loom.index(tmp_path / "ws", progress=False)
    result = loom.query("what does field_61 of Config do?", budget=400)
    loaded = [loom.node(b.node_id).reference.lines for b in result.packed.blocks]
    line = text.split("\n").index("    field_61: int") + 1
    assert any(a <= line <= b for a, b in loaded)
    assert sum(b - a + 1 for a, b in loaded) < 100  # parts, not the whole 270-line class


_LAST_LINE_CASES = {
    "doc.md": ("markdown", "# Title\n\nSome text.\n\n## Usage\n\nRun it.\n"),
    "no-newline.md": ("markdown", "# Title\n\nSome text.\n\n## Usage\n\nRun it."),
    "preamble.md": ("markdown", "Just a paragraph,\nno heading.\n"),
    "notes.rst": ("text", "Title\n=====\n\nSome text.\n"),
    "config.yaml": ("yaml", "build:\n  x: 1\n\ntest:\n  y: 2\n"),
    "pyproject.toml": ("toml", "[build]\nx = 1\n\n[test]\ny = 2\n"),
    "setup.cfg": ("config", "[metadata]\nname = x\n"),
    "data.json": ("json", '{\n  "a": 1,\n  "b": [\n    2\n  ]\n}\n'),
    "mod.py": ("python", "import os\n\n\ndef f():\n    return 1\n\n\nX = 2\n"),
    "percent.py": ("python", "# %%\nx = 1\n\n# %% [markdown]\n# # Notes\n#\n# The end.\n"),
}


@pytest.mark.parametrize("name", sorted(_LAST_LINE_CASES))
def test_every_unit_ends_on_or_before_the_files_last_line(name):
    """A file ending in a newline has no line after it: ``text.split("\\n")`` counted one,
    and a Markdown file's last section ran to it (``doc.md:5-8 Title > Usage`` of 7 lines)."""
    from loom_nb.index.indexer import cut_file

    language, text = _LAST_LINE_CASES[name]
    last = len(text.rstrip("\n").split("\n"))
    units, _ = cut_file(name, language, text)
    assert units and all(1 <= u.start <= u.end <= last for u in units), [u.title for u in units]
    assert max(u.end for u in units) == last
    if name == "doc.md":
        assert [u.title for u in units] == ["doc.md:1-4 Title", "doc.md:5-7 Title > Usage"]


@pytest.mark.skipif(__import__("os").sep == "\\", reason="a backslash is a separator on Windows")
def test_a_file_with_a_backslash_in_its_name_is_read_fresh_and_stays_unchanged(tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "we\\ird.py").write_text("def odd_name():\n    return 1\n")
    loom = Loom(embedder=HashingEmbedder(32))
    loom.index(ws, progress=False)
    (node,) = list(loom.graph.content_nodes())
    assert node.reference.file == "we\\ird.py"
    assert loom.graph.text(node.id).startswith("def odd_name")  # not "no longer exists"
    again = loom.index(ws, progress=False)
    assert again.files_unchanged == 1 and again.nodes_added == 0


def test_a_file_grown_past_the_walks_size_limit_is_stale_without_being_read(tmp_path, monkeypatch):
    """A 2-line a.py replaced by 300 MB: the next query read and masked all of it (39 s, 1.6 GB)
    only to call the node stale. A file over the size limit the index ran with (the walk would
    skip it now) is stale unread; so is it for skeleton(). Old sessions: the walk's default."""
    import loom_nb.core.files as files
    from loom_nb import StaleReferenceError
    from loom_nb.index.walk import WalkLimits

    root = tmp_path / "ws"
    root.mkdir()
    (root / "a.py").write_text("def f():\n    return 1\n")
    loom = Loom(embedder=HashingEmbedder())
    loom.index(root, progress=False, limits=WalkLimits(max_file_bytes=2_000))
    node = nodes_by_title(loom)["a.py:1-2 f"]
    with open(root / "a.py", "a") as fh:  # the unit's lines are as they were: only the size says
        fh.write("# padding\n" * 300)

    def unread(*args, **kwargs):
        raise AssertionError("the file was read")

    monkeypatch.setattr(files, "read_text", unread)
    with pytest.raises(StaleReferenceError, match=r"a.py is 3,02\d bytes now, over the 2,000"):
        loom.text(node.id)
    with pytest.raises(LoomError, match="over the 2,000"):
        loom.skeleton("a.py")
    del loom.graph.metadata["workspace"]["max_file_bytes"]  # a session indexed before the limit was kept
    monkeypatch.setattr(files, "MAX_FILE_BYTES", 2_500)
    with pytest.raises(StaleReferenceError, match="over the 2,500"):
        loom.text(node.id)


def test_a_refresh_keeps_the_nodes_of_files_it_cannot_read(tmp_path, monkeypatch):
    """A file that could not be read at a refresh (chmod 000, an editor's save half-done, an
    unreadable folder) was taken for deleted: its nodes were dropped, and came back later under
    new ids, without their links and access history. Its nodes stay; the walk reports it skipped."""
    import os

    from loom_nb.index import walk as walk_mod

    root = tmp_path / "ws"
    loom, _ = indexed(root, {"auth.py": "def refresh_token(t):\n    return t + 1\n", "keep.py": "def other():\n    return 2\n",
                             "lib/util.py": "def helper():\n    return 3\n"})
    before = {n.id: n.title for n in loom.graph.content_nodes()}
    opened, listed = walk_mod.open_regular, os.scandir

    def refuse_open(path, **kwargs):  # we may run as root, whom chmod 000 does not stop
        if os.fspath(path).endswith("auth.py"):
            raise PermissionError(13, "Permission denied", os.fspath(path))
        return opened(path, **kwargs)

    def refuse_listing(path="."):
        if os.fspath(path).endswith("lib"):
            raise PermissionError(13, "Permission denied", os.fspath(path))
        return listed(path)

    with monkeypatch.context() as patch:
        patch.setattr(walk_mod, "open_regular", refuse_open)
        patch.setattr(walk_mod.os, "scandir", refuse_listing)
        report = loom.index(root, progress=False)
    assert (report.files_removed, report.nodes_removed, report.files_unreadable_kept) == (0, 0, 2)
    assert report.skipped_reasons == {"unreadable": 2} and "2 unreadable files kept as last indexed" in str(report)
    assert {n.id: n.title for n in loom.graph.content_nodes()} == before
    report = loom.index(root, progress=False)  # readable again: the same nodes, nothing re-added
    assert (report.nodes_added, report.nodes_removed) == (0, 0)
    assert {n.id: n.title for n in loom.graph.content_nodes()} == before
    (root / "auth.py").unlink()  # a file really gone still goes
    assert loom.index(root, progress=False).files_removed == 1


def test_scraps_between_symbols_join_a_unit_and_a_go_file_of_vars_defines_them():
    """Found indexing cobra and click as a user would: a comment set apart by a blank line
    (``// NoArgs``, ``// ---- helpers ----``) and an ``else:`` between two definitions were units
    of two to four tokens, and two were loaded ahead of the function a question was after; a Go
    file of one ``var`` was windows that defined nothing. A statement of one line stays a unit."""
    from loom_nb.index.symbols import outline
    from loom_nb.index.units import file_units

    go = ("package cobra\n\nfunc A() error {\n\treturn nil\n}\n\n"   # 1-5
          "// NoArgs\n\n"                                              # 7
          "func NoArgs() error {\n\treturn nil\n}\n\n"               # 9-11
          "// ---- helpers ----\n\n"                                 # 13
          "func helper() {}\n")                                      # 15
    units = file_units("args.go", "go", go, outline("args.go", go, "go"))
    assert [(u.name, u.start, u.end) for u in units] == [("args.go", 1, 2), ("A", 3, 5), ("NoArgs", 7, 11), ("helper", 13, 15)]
    py = ("import typing as t\n\n"
          "def first():\n    pass\n\n"                               # 3-4
          "if t.TYPE_CHECKING:\n    def f(x): return x\n"            # 6-7
          "else:\n    def f(x): return x + 1\n\n"                    # 8-9
          "# Only Bash >= 4.4 has the nosort option.\n"              # 11
          "_SOURCE_BASH = '''\\\ncomplete -F _f prog\n'''\n\n"       # 12-14
          "def g():\n    return 1\n")                                # 16-17
    units = file_units("shell.py", "python", py, outline("shell.py", py, "python"))
    assert [(u.name, u.start, u.end) for u in units] == [
        ("shell.py", 1, 2), ("first", 3, 4), ("f", 6, 7), ("f", 8, 9),
        ("# Only Bash >= 4.4 has the nosort option.", 11, 14), ("g", 16, 17)]  # the comment still titles a table
    var = "//go:build !windows\n\npackage cobra\n\nvar preExecHookFn func(*Command)\n"
    (unit,) = file_units("command_notwin.go", "go", var, outline("command_notwin.go", var, "go"))
    assert (unit.kind, unit.defines, unit.fields()["symbol"]) == ("preamble", ("preExecHookFn",), "preExecHookFn")


def test_the_report_names_the_first_files_skipped_for_each_reason(tmp_path):
    """A new user saw `skipped: 1 binary, 1 generated or lock file` and had to guess which:
    the report names them (the first three per reason)."""
    ws = tmp_path / "ws"
    (ws / "assets").mkdir(parents=True)
    (ws / "app.py").write_text("def run():\n    return 1\n")
    (ws / "assets" / "logo.png").write_bytes(b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 4)
    for name in ("go.sum", "package-lock.json", "yarn.lock", "poetry.lock"):
        (ws / name).write_text("pinned v1\n")
    report = Loom(embedder=HashingEmbedder()).index(ws, progress=False)
    assert report.skipped_paths["binary"] == ["assets/logo.png"]
    assert len(report.skipped_paths["generated or lock file"]) == 3
    line = next(line for line in str(report).splitlines() if line.startswith("  skipped: "))
    assert "1 binary (assets/logo.png)" in line
    assert "4 generated or lock file (go.sum, package-lock.json, poetry.lock and 1 more)" in line
