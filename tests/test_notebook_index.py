"""Notebooks indexed cell by cell (issue 18): units name their cell, a loaded node reads as
the cell's source with the gist of its outputs (never JSON, never an image), and editing
one cell stales only that cell's nodes. Jupytext percent scripts are cut by cell too."""

from __future__ import annotations

import json

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook, new_output

from loom_nb import HashingEmbedder, Loom
from loom_nb.core.errors import StaleReferenceError
from loom_nb.core.notebooks import NotebookError, cell_text, notebook_cells
from loom_nb.index.indexer import cut_file

PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk"


def analysis_notebook() -> nbformat.NotebookNode:
    nb = new_notebook(metadata={"kernelspec": {"name": "python3", "language": "python", "display_name": "Python 3"}})
    nb.cells = [
        new_markdown_cell("# Churn analysis\n\nWhy customers leave.\n\n## Loading the data\n\nFrom the warehouse export."),
        new_code_cell("import pandas as pd\n\nframe = pd.read_csv('churn.csv')\nframe.shape",
                      outputs=[new_output("execute_result", data={"text/plain": "(7043, 21)"}, execution_count=1)]),
        new_code_cell("def churn_rate(frame):\n    \"\"\"Share of customers who left.\"\"\"\n    return frame.churned.mean()\n\n\n"
                      "def tenure_buckets(frame):\n    return frame.tenure // 12\n",
                      outputs=[new_output("display_data", data={"image/png": PNG, "text/plain": "<Figure size 640x480>"})]),
        new_code_cell("churn_rate(frame.head(0))",
                      outputs=[new_output("error", ename="ZeroDivisionError", evalue="division by zero",
                                          traceback=["\x1b[0;31mZeroDivisionError\x1b[0m: division by zero"])]),
    ]
    for k, cell in enumerate(nb.cells):
        cell.id = f"cell-{k}"
    return nb


@pytest.fixture
def indexed(tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    nbformat.write(analysis_notebook(), ws / "churn.ipynb")
    loom = Loom(embedder=HashingEmbedder())
    report = loom.index(ws, progress=False, wait=True)
    return loom, ws, report


def index_notebook(tmp_path, name: str, text: str) -> Loom:
    """A session that indexed a workspace holding one notebook, ``name``, of JSON ``text``."""
    ws = tmp_path / "ws"
    ws.mkdir(exist_ok=True)
    (ws / name).write_text(text)
    loom = Loom(embedder=HashingEmbedder())
    loom.index(ws, progress=False, wait=True)
    return loom


def nodes_of(loom, cell: str):
    return [n for n in loom.graph.content_nodes() if n.reference is not None and n.reference.cell == cell]


def test_each_cell_becomes_units_that_name_their_cell(indexed):
    loom, _, report = indexed
    assert report.parse_errors == 0
    titles = sorted(n.title for n in loom.graph.content_nodes())
    assert titles == [
        "churn.ipynb[cell 1]:1-4 Churn analysis",
        "churn.ipynb[cell 1]:5-7 Churn analysis > Loading the data",
        "churn.ipynb[cell 2]:1-5 import pandas as pd",
        "churn.ipynb[cell 3]:1-3 churn_rate",
        "churn.ipynb[cell 3]:6-8 tenure_buckets",  # its output line stays with it
        "churn.ipynb[cell 4]:1-2 churn_rate(frame.head(0))",
    ]
    (rate,) = [n for n in nodes_of(loom, "cell-2") if n.title.endswith("churn_rate")]
    assert rate.reference.lines == (1, 3) and rate.reference.file == "churn.ipynb"


def test_a_loaded_cell_reads_as_its_source_and_its_outputs_gist(indexed):
    loom, _, _ = indexed
    result = loom.query("how is the churn rate computed from the frame?", budget=2000)
    prompt = result.prompt
    assert "def churn_rate(frame):" in prompt
    assert '"source"' not in prompt and '"cell_type"' not in prompt  # never the JSON
    (shape,) = nodes_of(loom, "cell-1")
    assert loom.graph.text(shape.id).endswith("frame.shape\n# Out: (7043, 21)")
    (error,) = nodes_of(loom, "cell-3")
    assert loom.graph.text(error.id).endswith("# Out: ZeroDivisionError: division by zero")  # no ANSI codes
    figure = "\n".join(loom.graph.text(n.id) for n in nodes_of(loom, "cell-2"))
    assert PNG not in figure and "iVBOR" not in prompt  # images are dropped


def test_editing_one_cell_stales_only_its_nodes(indexed):
    loom, ws, _ = indexed
    edited = {n.title.split(" ")[-1]: n.id for n in nodes_of(loom, "cell-2")}
    nb = nbformat.read(ws / "churn.ipynb", as_version=4)
    nb.cells[2].source = "# now three lines longer\n\n\n" + nb.cells[2].source
    nbformat.write(nb, ws / "churn.ipynb")
    for node in nodes_of(loom, "cell-2"):
        with pytest.raises(StaleReferenceError, match=r"churn.ipynb\[cell cell-2\]"):
            loom.graph.text(node.id)
    others = {cell: [n.id for n in nodes_of(loom, cell)] for cell in ("cell-0", "cell-1", "cell-3")}
    for ids in others.values():  # the other cells read as they were
        for node_id in ids:
            assert loom.graph.text(node_id)
    report = loom.index(ws, progress=False, wait=True)
    assert report.files_indexed == 1
    # and re-indexing replaces only what changed: the other cells keep their nodes, and so
    # do the edited cell's two functions, which only moved down three lines
    assert {cell: [n.id for n in nodes_of(loom, cell)] for cell in others} == others
    assert report.nodes_kept == sum(map(len, others.values())) + 2
    moved = [n for n in nodes_of(loom, "cell-2") if n.title.endswith("churn_rate")]
    assert [n.reference.lines for n in moved] == [(4, 6)] and moved[0].id == edited["churn_rate"]
    assert loom.graph.text(moved[0].id).startswith("def churn_rate(frame):")


def test_a_session_with_notebook_cells_saves_and_reopens(indexed, tmp_path):
    loom, ws, _ = indexed
    loom.save(tmp_path / "session")
    doc = json.loads((tmp_path / "session" / "graph.json").read_text())
    cells = [r.get("cell") for r in doc["content"]["reference"] if r]
    assert sorted(set(cells)) == ["cell-0", "cell-1", "cell-2", "cell-3"]
    again = Loom.open(tmp_path / "session", embedder=HashingEmbedder(), workspace=ws)
    (shape,) = nodes_of(again, "cell-1")
    assert again.graph.text(shape.id).startswith("import pandas as pd")


def test_cells_without_ids_are_found_by_position():
    nb = analysis_notebook()
    raw = json.loads(nbformat.writes(nb))
    raw["nbformat_minor"] = 4
    for cell in raw["cells"]:
        del cell["id"]
    cells = notebook_cells(json.dumps(raw))
    assert [c.key for c in cells] == ["#0", "#1", "#2", "#3"] and [c.number for c in cells] == [1, 2, 3, 4]
    assert cells[1].language == "python" and cells[0].language == "markdown"


def test_a_4_5_notebook_written_without_ids_keeps_its_cells_fresh(tmp_path, recwarn):
    """Some tools write nbformat 4.5 with no cell ids; nbformat then invents random ones on each
    read. The cells are keyed by position instead, so they are served, and nothing warns."""
    raw = json.loads(nbformat.writes(analysis_notebook()))
    for cell in raw["cells"]:
        del cell["id"]
    assert raw["nbformat_minor"] >= 5
    assert [c.key for c in notebook_cells(json.dumps(raw))] == ["#0", "#1", "#2", "#3"]
    loom = index_notebook(tmp_path, "churn.ipynb", json.dumps(raw))
    (node,) = [n for n in nodes_of(loom, "#1")]
    assert "import pandas as pd" in loom.graph.text(node.id)
    assert not [w for w in recwarn if "MissingIDField" in type(w.message).__name__]


def test_cells_that_share_an_id_are_keyed_by_position_and_both_stay_fresh(tmp_path):
    """A cell duplicated in an editor that keeps ids: keyed by id, the second cell could never
    be read back (the first match was returned) and was stale from the start."""
    cell = lambda key, src: {"cell_type": "code", "id": key, "metadata": {}, "execution_count": None, "outputs": [], "source": src}
    raw = {"nbformat": 4, "nbformat_minor": 5, "metadata": {"kernelspec": {"name": "python3", "language": "python", "display_name": "P"}},
           "cells": [cell("a1b2c3", "def load(path):\n    return open(path).read()\n"),
                     cell("a1b2c3", "def save(path, text):\n    open(path, 'w').write(text)\n"),
                     cell("z9", "def keep():\n    return 1\n")]}
    assert [c.key for c in notebook_cells(json.dumps(raw))] == ["#0", "#1", "z9"]  # a unique id is kept
    odd = {**raw, "cells": [*raw["cells"], cell("#0", "x = 1\n")]}  # an id that reads as a position key is not one
    assert [c.key for c in notebook_cells(json.dumps(odd))] == ["#0", "#1", "z9", "#3"]
    loom = index_notebook(tmp_path, "dup.ipynb", json.dumps(raw))
    texts = {n.reference.cell: loom.graph.text(n.id) for n in loom.graph.content_nodes()}
    assert texts == {"#0": "def load(path):\n    return open(path).read()",
                     "#1": "def save(path, text):\n    open(path, 'w').write(text)",
                     "z9": "def keep():\n    return 1"}


def test_a_file_named_ipynb_that_is_not_a_notebook_is_cut_as_text():
    with pytest.raises(NotebookError, match="not notebook JSON"):
        notebook_cells("{ not json", "broken.ipynb")
    units, errors = cut_file("broken.ipynb", "notebook", "{ not json\nsecond line\n")
    assert errors == 1 and [u.kind for u in units] == ["window"] and units[0].cell == ""


def test_long_outputs_are_clipped_and_marked():
    cell = {"cell_type": "code", "source": "for i in range(100): print(i)",
            "outputs": [{"output_type": "stream", "name": "stdout", "text": "".join(f"{i}\n" for i in range(100))}]}
    lines = cell_text(cell).split("\n")
    assert lines[1:4] == ["# Out: 0", "# Out: 1", "# Out: 2"] and lines[-1] == "# Out: … 94 more lines"


@pytest.mark.parametrize("path", ["top.ipynb", "sub/churn.ipynb", "a/b/churn.ipynb"])
def test_a_markdown_cell_without_a_heading_is_named_by_its_first_line_in_any_folder(path):
    """The outline names text before any heading by the file's base name; a notebook one
    folder down kept that name (``sub/churn.ipynb[cell 1]:1-1 churn.ipynb``), and a percent
    script's markdown cell kept it everywhere (``top.py:2-2 top.py``)."""
    nb = new_notebook(cells=[new_markdown_cell("This notebook loads the churn data."), new_code_cell("x = 1")])
    units, _ = cut_file(path, "notebook", nbformat.writes(nb))
    assert units[0].title == f"{path}[cell 1]:1-1 This notebook loads the churn data."
    script = "# %% [markdown]\n# This notebook loads the churn data.\n\n# %%\nx = 1\n"  # its Jupytext twin
    twin = path.replace(".ipynb", ".py")
    units, _ = cut_file(twin, "python", script)
    assert units[0].title == f"{twin}:2-2 This notebook loads the churn data."


def test_ipython_magics_and_shell_escapes_are_not_parse_errors():
    """``%matplotlib inline``, ``%%time`` and ``!pip install`` are IPython, not syntax errors:
    the cell is outlined with those lines blank (its line numbers kept) and its units show its
    own source; a ``%%bash`` cell is text. A ``%`` line inside a string is left as it is."""
    nb = new_notebook(metadata={"kernelspec": {"name": "python3", "language": "python", "display_name": "Python 3"}}, cells=[
        new_code_cell("%matplotlib inline\nimport pandas as pd"),
        new_code_cell("%%time\n!pip install churnlib\nfiles = !ls data\n\n\ndef load(path):\n    return pd.read_csv(path)\n\n\ndf.merge??"),
        new_code_cell("%%bash\nls -la | grep csv"),
        new_code_cell('def fmt(x):\n    """Format x.\n%s is kept: this line is in a string."""\n    return "%s" % x'),
    ])
    units, errors = cut_file("sub/churn.ipynb", "notebook", nbformat.writes(nb))
    assert errors == 0
    by_name = {u.name: u for u in units}
    assert by_name["load"].cell_number == 2 and (by_name["load"].start, by_name["load"].end) == (6, 7)
    assert units[0].text == "%matplotlib inline\nimport pandas as pd"  # the cell's own source
    assert units[1].text.startswith("%%time\n!pip install churnlib")
    assert [u.text for u in units if u.cell_number == 3] == ["%%bash\nls -la | grep csv"]
    assert "%s is kept" in by_name["fmt"].doc
    from loom_nb.index.notebooks import cell_outline  # as skeleton() outlines a cell

    assert cell_outline("n.ipynb", "python", "%matplotlib inline\nimport os").error is None
    # the same cells in a notebook of another kernel are not Python: nothing is blanked
    units, errors = cut_file("r.ipynb", "notebook", nbformat.writes(new_notebook(
        metadata={"kernelspec": {"name": "ir", "language": "R", "display_name": "R"}}, cells=[new_code_cell("%%time\nx <- 1")])))
    assert [u.text for u in units] == ["%%time\nx <- 1"]


def test_a_percent_script_is_cut_by_cell_with_the_files_line_numbers():
    script = ("# %% [markdown]\n# # Churn\n# Why customers leave.\n\n"
              "# %%\nimport pandas as pd\n\n"
              "# %% Rates\ndef churn_rate(frame):\n    return frame.churned.mean()\n")
    units, errors = cut_file("churn.py", "python", script)
    assert errors == 0
    assert [(u.kind, u.name, u.start, u.end) for u in units] == [
        ("heading", "Churn", 2, 3), ("window", "import pandas as pd", 5, 6), ("function", "churn_rate", 8, 10)]
    assert units[-1].text == "# %% Rates\ndef churn_rate(frame):\n    return frame.churned.mean()"  # the file's lines
    assert all(u.language == "python" and u.cell == "" for u in units)


def test_add_file_and_skeleton_read_a_notebook_by_cell_not_as_json(indexed, tmp_path):
    """add_file of a .ipynb makes a node per cell (the outputs' gist kept, the image dropped), and
    skeleton() outlines its cells, as indexing does, instead of showing the notebook's JSON."""
    loom, ws, _ = indexed
    pasted = Loom(embedder=HashingEmbedder())
    added = pasted.add_file(ws / "churn.ipynb")
    assert [n.title for n in added.nodes] == [f"churn.ipynb[cell {k}]" for k in (1, 2, 3, 4)]
    texts = [pasted.graph.text(n.id) for n in added.nodes]
    assert texts[1].endswith("frame.shape\n# Out: (7043, 21)") and "<Figure size 640x480>" in texts[2]
    assert not [t for t in texts if PNG in t or '"cell_type"' in t]
    outline = loom.skeleton("churn.ipynb")
    assert outline.startswith("[cell 1] markdown") and "[cell 2] code" in outline
    assert '"cell_type"' not in outline and PNG not in outline


def test_a_cell_that_imports_a_module_of_the_workspace_draws_the_edge(tmp_path):
    # a notebook's units were stored under the language "notebook", which no import resolver reads
    ws = tmp_path / "ws"
    (ws / "pkg").mkdir(parents=True)
    (ws / "pkg" / "churn_utils.py").write_text("def load(path):\n    return open(path).read()\n")
    nb = analysis_notebook()
    nb.cells[1].source = "from pkg.churn_utils import load\n\nframe = load('churn.csv')"
    loom = index_notebook(tmp_path, "churn.ipynb", nbformat.writes(nb))
    cell = next(n for n in nodes_of(loom, "cell-1"))
    assert cell.meta["language"] == "python"
    edges = loom.graph.structure_of(cell.id)
    assert [(kind, loom.graph.node(other).title) for other, kind in edges] == [("imports", "pkg/churn_utils.py:1-2 load")]
