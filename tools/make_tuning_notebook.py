"""Writes notebooks/03_tuning_weights.ipynb (then run tools/execute_notebooks.py)."""

from _notebook import write
from nbformat.v4 import new_code_cell, new_markdown_cell

cells = [
    new_markdown_cell(
        "# Seeing and steering the decisions\n\n"
        "Every score is a weighted sum of eleven signals, and every decision has a reason. This notebook draws\n"
        "them — contributions, the budget, the graph — moves the weights with sliders, and exports a\n"
        "report to share. It opens the ready debugging session (the sample `auth-debugging`, made with the\n"
        "default MiniLM embedder)."
    ),
    new_code_cell(
        "# NBVAL_CHECK_OUTPUT\n"
        "from loom_nb.demo import open_sample\n"
        "from loom_nb.views.figures import use_offline_plotly\n\n"
        "use_offline_plotly()  # plotly.js once, in this cell's output: figures draw with no network, here and in an HTML export\n"
        "loom = open_sample('auth-debugging')  # a copy of the ready session: nothing to embed\n"
        "folder = loom.folder\n"
        "result = loom.query('Why does the refresh fail with invalid_grant after the token expires?', window=4096)\n"
        "result"
    ),
    new_markdown_cell("## What each signal contributed\n\nThe bars of a node add up to its score; the label says what was decided."),
    new_code_cell(
        "# NBVAL_CHECK_OUTPUT\n"
        "fig = result.contributions_figure(top=12)\n"
        "top = result.rows(1)[0]\n"
        "assert abs(sum(top.contributions.values()) - top.score) < 1e-9\n"
        "fig"
    ),
    new_markdown_cell("## Where the window went"),
    new_code_cell(
        "# NBVAL_CHECK_OUTPUT\n"
        "budget = result.budget_figure()\n"
        "assert sum(bar.x[0] for bar in budget.data) == result.budget.window  # every token of the window is accounted for\n"
        "budget"
    ),
    new_markdown_cell(
        "## The graph\n\n"
        "Concepts are diamonds, content nodes dots coloured by type; loaded nodes have a red border,\n"
        "manifest-only ones a dashed border, excluded ones are faded. The layout is computed in Python, so\n"
        "the drawing appears at once and needs no network."
    ),
    new_code_cell(
        "# NBVAL_CHECK_OUTPUT\n"
        "view = loom.graph_view(result, max_nodes=60)\n"
        "print(view)\n"
        "view"
    ),
    new_markdown_cell(
        "Any node of the drawing can be opened. The top node's concept: the content linked to it (with the\n"
        "cosine at link time) and its neighbour concepts, when any reach the concept-edge floor (the hop signal\n"
        "reads them; the default weights give hop 0)."
    ),
    new_code_cell(
        "# NBVAL_CHECK_OUTPUT\n"
        "concept_id, similarity = loom.graph.concepts_of(result.rows(1)[0].node_id)[0]\n"
        "loom.view(concept_id)"
    ),
    new_markdown_cell(
        "## Sliders\n\n"
        "`loom.tune(query)` shows a slider for each weight in a compact grid, with the relevance floor, the\n"
        "concept threshold, the mode and the budget beside them. Under them stay the first rows of the table:\n"
        "after each move, rows that moved are highlighted, with a rank arrow and their score change. The full\n"
        "decision table and the threshold preview are folded below. At first the panel shows exactly what\n"
        "`loom.query(query, budget=...)` returns; a move re-ranks with a copy of the session's config, so the\n"
        "session's own settings do not change. The query below is a question on its own, so its density slider\n"
        "starts at `question_density` (0.1), the weight such a question gets; for a commit subject or an issue it\n"
        "is the `density` weight (0). Here we move the sliders from code, as a reader would with the mouse."
    ),
    new_code_cell(
        "# NBVAL_CHECK_OUTPUT\n"
        "tuner = loom.tune('What does POST /oauth/token return?', budget=1500)\n"
        "tuner.panel"
    ),
    new_code_cell(
        "# NBVAL_CHECK_OUTPUT\n"
        "before = [row.node_id for row in tuner.result.rows(3)]\n"
        "for name, slider in tuner.sliders.items():  # provenance alone: analysis and summaries first\n"
        "    slider.value = 1.0 if name == 'provenance' else 0.0\n"
        "after = [row.node_id for row in tuner.result.rows(3)]\n"
        "print('top 3 with the default weights:', before)\n"
        "print('provenance only:               ', after)\n"
        "print('now first:', tuner.result.rows(1)[0].title, f'({tuner.result.rows(1)[0].type})')\n"
        "assert before != after and tuner.result.rows(1)[0].type in ('analysis', 'summary')"
    ),
    new_markdown_cell(
        "The panel needs a live kernel (or a widget renderer) to move. `snapshot()` freezes what the sliders\n"
        "show and the table they produced as plain text and HTML: it reads the same in a terminal, here and\n"
        "in an exported page."
    ),
    new_code_cell("# NBVAL_CHECK_OUTPUT\ntuner.snapshot()"),
    new_markdown_cell(
        "**copy as LoomConfig(…)** shows the settings as code to keep (`tuner.config_code()`; `tuner.config()`\n"
        "is the same as an object). It names every weight and each setting that differs from the defaults,\n"
        "so pasting it into a cell gives back what the sliders show. **reset to defaults** brings every\n"
        "control back to what a plain `loom.query` uses."
    ),
    new_code_cell(
        "# NBVAL_CHECK_OUTPUT\n"
        "from loom_nb import LoomConfig, Weights\n\n"
        "print(tuner.config_code())\n"
        "assert eval(tuner.config_code()) == tuner.config()  # the code rebuilds the tuned config\n"
        "tuner.reset()\n"
        "assert [r.node_id for r in tuner.result.rows(3)] == before  # back to what a plain query returns"
    ),
    new_markdown_cell(
        "The concept threshold slider previews what re-linking at another threshold would do: which\n"
        "concepts would merge (their members mostly reach each other at it), which would split (most\n"
        "of their members fall below it), and how many units would also link to a second concept.\n"
        "The **apply threshold** button beside it (or `loom.apply_threshold(value)`) re-links the session."
    ),
    new_code_cell(
        "# NBVAL_CHECK_OUTPUT\n"
        "tuner.threshold.value = 0.5  # the panel opens its 'concept threshold preview' fold on this plan\n"
        "assert tuner.details.selected_index == 1\n"
        "print(tuner.plan)"
    ),
    new_markdown_cell(
        "## A report to share\n\n"
        "One HTML file with the decision table, the manifest, the charts (plotly.js included once), the graph\n"
        "and the prompt. It opens in a browser with no network, and everything taken from the session is\n"
        "escaped."
    ),
    new_code_cell(
        "# NBVAL_CHECK_OUTPUT\n"
        "path = loom.export_report(result, folder / 'report.html')\n"
        "print(path.name, f'{path.stat().st_size / 1e6:.1f} MB')\n"
        "html = path.read_text()\n"
        "assert html.count('plotly.js v') == 1 and '<script src=\"http' not in html"
    ),
]
write(cells, "notebooks/03_tuning_weights.ipynb")
