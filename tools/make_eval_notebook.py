"""Writes notebooks/04_evaluation.ipynb (then run tools/execute_notebooks.py).

Only the cells whose output does not depend on the state of ``loom_nb/`` are checked by nbval:
the self set indexes the live package, so every figure moves with each edit to its code (and
the git-dirty signal with the working tree's uncommitted files).
"""

from _notebook import write
from nbformat.v4 import new_code_cell, new_markdown_cell

cells = [
    new_markdown_cell(
        "# Measuring what gets loaded\n\n"
        "Does the engine load the right few nodes out of hundreds, within the budget? A labelled query names\n"
        "the files (and optionally line ranges) that answer it; `evaluate` runs the engine and four baselines\n"
        "on the same budget and grades every loaded item. `datasets/self.jsonl` holds 36 such queries about\n"
        "loom-nb's own code (the self-referential dataset of the concept document, §8.2)."
    ),
    new_code_cell(
        "# NBVAL_CHECK_OUTPUT\n"
        "import tempfile\n"
        "from pathlib import Path\n"
        "from loom_nb.evaluation import STRATEGIES, evaluate, load_cases\n"
        "from loom_nb.views.figures import use_offline_plotly\n\n"
        "use_offline_plotly()  # plotly.js once: the figure draws with no network, here and in an HTML export\n"
        "cases, errors = load_cases('../datasets/self.jsonl')\n"
        "print(len(cases), 'cases;', len(errors), 'bad lines')\n"
        "print(cases[0].query, '->', cases[0].gold_files)\n"
        "print('strategies:', ', '.join(STRATEGIES))"
    ),
    new_markdown_cell(
        "One run at 4,000 tokens. The workspace is indexed once (kept in `cache` for the next runs) with the\n"
        "default MiniLM embedder. `loom` is the engine as a user calls it, with no `mode=` (so `auto` picks);\n"
        "`loom-bare`, `loom-fast` and `loom-fused` force each mode, to show what each one costs and earns:\n"
        "BARE ranks without the query vector, FAST on the query vector alone, FUSED on every signal. The\n"
        "baselines are BM25 over whole files, whole files in BM25 order until full (the concept document's\n"
        "Strategy A), BM25 over 40-line windows, and dense similarity over the same windows.\n\n"
        "The figures here move with loom-nb's own code, which is the workspace being measured."
    ),
    new_code_cell(
        "cache = Path(tempfile.mkdtemp())\n"
        "report = evaluate(cases, budget=4000, cache_dir=cache)\n"
        "print(report)\n"
        "loom_row = next(r for r in report.table() if r['strategy'] == 'loom')\n"
        "assert loom_row['file_recall'] >= 0.9"
    ),
    new_markdown_cell(
        "`auto` picks by the query's complexity with `config.bare_below` and `config.fast_below`, both 0 by\n"
        "default, so the default call runs FUSED on every query: `loom` and `loom-fused` load the same items."
    ),
    new_code_cell(
        "# NBVAL_CHECK_OUTPUT\n"
        "data = report.to_json()\n"
        "same = sum(case['strategies']['loom']['items'] == case['strategies']['loom-fused']['items'] for case in data['cases'])\n"
        "print(f\"loom and loom-fused loaded the same items in {same} of {len(data['cases'])} cases\")"
    ),
    new_markdown_cell("Per case: which strategy found the gold lines, and what it cost."),
    new_code_cell(
        "rows = [r for r in report.case_rows() if r['strategy'] in ('loom', 'bm25-chunks')][:8]\n"
        "for r in rows:\n"
        "    line_recall = '-' if r.get('line_recall') is None else f\"{r['line_recall']:.2f}\"\n"
        "    print(f\"{r['case']:<28} {r['strategy']:<12} file recall {r['file_recall']:.2f}  line recall {line_recall:>4}  {r['tokens']:>5} tokens\")"
    ),
    new_markdown_cell(
        "Is a lead real? With 27 cases that have gold lines, one case moves a mean by about 0.04, and the\n"
        "printed report ends with the default against each forced mode, case by case. `report.compare(a, b)`\n"
        "does the same for any two rows: the mean difference of a metric (`a − b`), its 95 % interval from a\n"
        "paired bootstrap over the cases, and how many cases went each way. An interval that holds 0 means\n"
        "these cases cannot tell the two apart."
    ),
    new_code_cell(
        "for a, b, metric in [('loom', 'loom-bare', 'line_recall'), ('loom', 'bm25-chunks', 'line_recall'),\n"
        "                     ('loom', 'bm25-chunks', 'file_recall')]:\n"
        "    c = report.compare(a, b, metric)\n"
        "    print(f\"{c}{' (could be chance)' if c.could_be_chance else ''}\")"
    ),
    new_markdown_cell(
        "## Quality against budget\n\n"
        "The same cases at four budgets: line recall and reference precision per strategy (`loom-fused` is\n"
        "left out, being the same run as `loom`, and so is `bm25` over whole files)."
    ),
    new_code_cell(
        "from loom_nb.evaluation import evaluate_budgets\n"
        "from loom_nb.views.figures import budget_curves\n\n"
        "shown = ('loom', 'loom-bare', 'loom-fast', 'bm25-chunks', 'dense', 'whole-file')\n"
        "reports = evaluate_budgets(cases, (1000, 2000, 4000, 8000), strategies=shown, cache_dir=cache)\n"
        "for b, r in reports.items():\n"
        "    row = {x['strategy']: x for x in r.table()}\n"
        "    print(f'{b:>5} tokens: line recall ' + ', '.join(f\"{s} {row[s]['line_recall']:.3f}\" for s in shown[:5]))\n"
        "budget_curves(reports)"
    ),
    new_markdown_cell(
        "## What each signal earns\n\n"
        "An ablation runs the engine with one signal's weight at 0 (`loom-no-terms`, `loom-no-semantic`, …)\n"
        "on the same cases and budget; `ablation_table()` gives the change against the full engine. A negative\n"
        "change is what the signal earns on these cases. A signal that is the same for every node here\n"
        "(staleness in a fresh index, `git_dirty` with no uncommitted changes) changes every score's scale\n"
        "when it is taken out, not their order, so a change in its row is a flip at the budget's edge (each\n"
        "manifest line prints its node's score), not something it earns. A change smaller than one case's\n"
        "share (about 0.04 here) can be such a flip too. Here the keyword signal (`terms`) and the embedding\n"
        "(`semantic`) earn the most, and the cell checks that each earns gold files. `loom-nb eval CASES\n"
        "--ablations` prints the same table."
    ),
    new_code_cell(
        "from loom_nb.evaluation import ablations\n\n"
        "ablated = evaluate(cases, budget=4000, strategies=('loom',) + ablations(), cache_dir=cache)\n"
        "for row in ablated.ablation_table():\n"
        "    print(f\"{row['signal']:<13} line recall {row['line_recall']:.3f} ({row['line_recall_change']:+.3f})  \"\n"
        "          f\"file recall {row['file_recall']:.3f} ({row['file_recall_change']:+.3f})\")\n"
        "semantic = next(r for r in ablated.ablation_table() if r['signal'] == 'semantic')\n"
        "terms = next(r for r in ablated.ablation_table() if r['signal'] == 'terms')\n"
        "assert semantic['file_recall_change'] < 0  # without the embedding the engine finds fewer of the files\n"
        "assert terms['file_recall_change'] < 0 and terms['line_recall_change'] < 0  # and without its keyword signal, fewer files and lines"
    ),
    new_markdown_cell(
        "Every loaded item (path, line range, tokens, score) is in `report.to_json()` — or `loom-nb eval CASES\n"
        "--json out.json` — so an outside tool can re-grade a run."
    ),
    new_code_cell(
        "# NBVAL_CHECK_OUTPUT\n"
        "first = data['cases'][0]\n"
        "print(sorted(data))\n"
        "print(sorted(first))\n"
        "print(sorted(first['strategies']['loom']), sorted(first['strategies']['loom']['items'][0]))"
    ),
]
write(cells, "notebooks/04_evaluation.ipynb")
