"""Writes notebooks/02_index_a_codebase.ipynb (then run tools/execute_notebooks.py).

The first part indexes a copy of the live ``loom_nb/index`` package, so its node ids, line
numbers and scores move with every edit to that code: nbval checks only the cells on the
ready ``loom-nb-code`` sample, whose files are a committed snapshot.
"""

from _notebook import write
from nbformat.v4 import new_code_cell, new_markdown_cell

cells = [
    new_markdown_cell(
        "# Indexing a codebase\n\n"
        "`Loom.index(path)` turns a folder into *reference nodes*: one per function, class, section or window,\n"
        "each holding a file, a line range, a signature and a content hash — never the text itself, which is\n"
        "read (and checked) only when the node is loaded. Here we index a copy of loom-nb's own `index`\n"
        "package, ask questions, change a file and refresh. The bars show the parsing and the embedding; a\n"
        "workspace that needs 512 texts or more embedded returns before its vectors and fills them in behind\n"
        "(`loom.wait()` blocks until they are in; this one is small enough to embed at once)."
    ),
    new_code_cell(
        "import shutil, tempfile\n"
        "from pathlib import Path\n"
        "from loom_nb import Loom\n\n"
        "workspace = Path(tempfile.mkdtemp()) / 'index'\n"
        "shutil.copytree('../loom_nb/index', workspace, ignore=shutil.ignore_patterns('__pycache__'))\n"
        "loom = Loom(Path(tempfile.mkdtemp()) / 'code-session')\n"
        "report = loom.index(workspace)  # progress bars: widgets in a notebook, text in a terminal\n"
        "print(report)\n"
        "assert report.files_indexed == report.files_seen and report.vectors_pending == 0"
    ),
    new_markdown_cell(
        "The report says what the walk left out, and why: lock files, minified bundles, images stored as\n"
        "text, and gettext translation catalogues, which restate the program's strings once per language\n"
        "(a third of sphinx's units). `loom.index(folder, limits=WalkLimits(include_translations=True))`\n"
        "or `loom-nb index --translations` keeps them. The session records the walk options, so a later\n"
        "`loom.index(folder)` or `loom-nb index` that names none walks the same way (`--no-translations`\n"
        "drops them again)."
    ),
    new_code_cell(
        "# NBVAL_CHECK_OUTPUT\n"
        "from loom_nb.index import WalkLimits\n\n"
        "app = Path(tempfile.mkdtemp()) / 'app'\n"
        "(app / 'locale' / 'fr' / 'LC_MESSAGES').mkdir(parents=True)\n"
        "(app / 'greet.py').write_text('def greet():\\n    return _(\"Hello\")\\n')\n"
        "(app / 'locale' / 'fr' / 'LC_MESSAGES' / 'app.po').write_text('#: greet.py:2\\nmsgid \"Hello\"\\nmsgstr \"Bonjour\"\\n')\n"
        "(app / 'poetry.lock').write_text('[[package]]\\nname = \"requests\"\\n')\n"
        "app_loom = Loom(Path(tempfile.mkdtemp()) / 'app-session')\n"
        "print(app_loom.index(app, progress=False))\n"
        "print(app_loom.index(app, progress=False, limits=WalkLimits(include_translations=True)).files_indexed, 'file indexed when asked')\n"
        "refresh = app_loom.index(app, progress=False)\n"
        "print(refresh.walk_options, refresh.nodes_removed, 'nodes removed by a plain refresh')"
    ),
    new_markdown_cell("Each node is a reference into a file. The title says where it points:"),
    new_code_cell(
        "for node in list(loom.graph.content_nodes())[:8]:\n"
        "    ref = node.reference\n"
        "    print(f'{node.id:<5} {ref.file}:{ref.lines[0]}-{ref.lines[1]:<5} {node.tokens:>5} tokens  {ref.signature[:60]}')"
    ),
    new_markdown_cell(
        "## Asking\n\n"
        "Eleven signals score every node: the six of the concept document (semantic, hop, staleness, size,\n"
        "provenance, density) and four lexical ones (BM25F terms over path, symbol, heading, import and\n"
        "content; the file named in the query; a tagged `@path`; uncommitted changes), and the file signal:\n"
        "the best score among the units of the node's file, since a change touches several places in one file."
    ),
    new_code_cell(
        "result = loom.query('How are .gitignore files applied when walking the workspace?', budget=3000)\n"
        "for row in result.rows(6):\n"
        "    strongest = sorted(row.contributions.items(), key=lambda kv: -kv[1])[:3]\n"
        "    print(f'{row.score:.3f} {row.decision:<13} {row.title[:55]:<55} ' + ', '.join(f'{k} {v:.2f}' for k, v in strongest))\n"
        "assert result.table[0].title.startswith('walk.py')"
    ),
    new_markdown_cell("A tagged path (`@git.py`) lifts every unit of that file above the rest: the user said where to look."),
    new_code_cell(
        "tagged = loom.query('what does @git.py do?', budget=2000)\n"
        "print(tagged.manifest)\n"
        "assert all(row.title.startswith('git.py') for row in tagged.rows(3))"
    ),
    new_markdown_cell(
        "A pasted traceback points at lines. Each frame in a workspace file tags the unit that holds its line\n"
        "(the frame's path may be another machine's: it only has to end in a workspace path), and when the code\n"
        "has moved since, the frame's function nearest that line. The message below says nothing else about git:"
    ),
    new_code_cell(
        "source = (workspace / 'git.py').read_text().splitlines()\n"
        "line = next(n for n, text in enumerate(source, 1) if text.startswith('def head_commit')) + 1\n"
        "trace = ('Traceback (most recent call last):\\n'\n"
        "         f'  File \"/home/me/.venv/lib/site-packages/loom_nb/index/git.py\", line {line}, in head_commit\\n'\n"
        "         'TypeError: expected str, bytes or os.PathLike object, not NoneType')\n"
        "pasted = loom.query(f'Indexing crashes on my laptop:\\n\\n```\\n{trace}\\n```', budget=2000)\n"
        "top = pasted.rows(1)[0]\n"
        "print(top.title, '| tagged', pasted.ranking.raw(top.node_id)['tagged'])\n"
        "assert top.title.endswith(' head_commit') and top.decision == 'loaded'"
    ),
    new_markdown_cell(
        "An issue names code the way code does: `shop.billing.invoice.total`, `Monolog\\Handler\\StreamHandler`,\n"
        "`crate::serve::Serve`. When the first two or more parts of such a name end a file's module path (a\n"
        "`src/` folder may be left out), the file counts as named, as if its path had been written. Below, both\n"
        "files define `total` and only one is the module the issue names; the other scores a quarter, for the\n"
        "folder `shop` the name also holds. A name that more than three files' module paths end with names none.\n\n"
        "A title that *calls* a function (`late_fee() charges a day too many`) names the file that defines it, as\n"
        "strongly as its stem would (0.4), when at most three files define that name: a fifth of SWE-bench's issue\n"
        "titles are written so. Only the first line counts, not the code pasted under it.\n\n"
        "A commit subject written the Conventional Commits way (`fix(cart): ...`) puts the section of the code it\n"
        "changes in its scope. A scope that is a file's stem names that file as its basename would (0.7), even a\n"
        "name too short to count in prose (`feat(gin):`), and a scope that is a folder names the files under it."
    ),
    new_code_cell(
        "# NBVAL_CHECK_OUTPUT\n"
        "shop = Path(tempfile.mkdtemp()) / 'shop'\n"
        "for path, text in {\n"
        "    'shop/billing/invoice.py': 'def total(lines):\\n    \"\"\"The amount due on an invoice.\"\"\"\\n'\n"
        "                               '    return sum(round(line.price, 2) for line in lines)\\n',\n"
        "    'shop/cart.py': 'def total(items):\\n    \"\"\"What the cart holds, before tax.\"\"\"\\n'\n"
        "                    '    return sum(item.price for item in items)\\n',\n"
        "    'shop/fees/late.py': 'def late_fee(days):\\n    \"\"\"What an overdue invoice adds.\"\"\"\\n'\n"
        "                         '    return 2.5 * max(days, 0)\\n',\n"
        "}.items():\n"
        "    (shop / path).parent.mkdir(parents=True, exist_ok=True)\n"
        "    (shop / path).write_text(text)\n"
        "store = Loom()\n"
        "store.index(shop, progress=False)\n"
        "issue = store.query('shop.billing.invoice.total rounds each line before summing', budget=500)\n"
        "for row in issue.rows(2):\n"
        "    print(row.title, '| path_mention', issue.ranking.raw(row.node_id)['path_mention'])\n"
        "assert issue.rows(1)[0].title.startswith('shop/billing/invoice.py')\n"
        "called = store.query('late_fee() charges a day too many', budget=500)\n"
        "print({row.title.split(':')[0]: called.ranking.raw(row.node_id)['path_mention'] for row in called.rows(3)})\n"
        "assert called.rows(1)[0].title.startswith('shop/fees/late.py')\n"
        "scoped = store.query('fix(cart): skip items that are out of stock', budget=500)\n"
        "print({row.title.split(':')[0]: scoped.ranking.raw(row.node_id)['path_mention'] for row in scoped.rows(3)})\n"
        "assert scoped.rows(1)[0].title.startswith('shop/cart.py')"
    ),
    new_markdown_cell(
        "A qualified name in the code's own spelling names its module: `shop.billing.invoice` above, a PHP\n"
        "namespace, or a Rust path. Rust keeps the module `serve` in `serve.rs` or in `serve/mod.rs`, so\n"
        "`axum::serve::Serve` names `axum/src/serve/mod.rs` (a crate's `src` is not part of its paths); the\n"
        "file beside it in the folder `serve` gets the folder's quarter."
    ),
    new_code_cell(
        "# NBVAL_CHECK_OUTPUT\n"
        "crates = Path(tempfile.mkdtemp()) / 'crates'\n"
        "for path, text in {\n"
        "    'axum/src/serve/mod.rs': '/// Serves an app on a listener.\\npub struct Serve;\\n',\n"
        "    'axum/src/serve/listener.rs': '/// What a server accepts connections from.\\npub trait Listener {}\\n',\n"
        "    'axum/src/routing/mod.rs': '/// Routes requests to handlers.\\npub struct Router;\\n',\n"
        "}.items():\n"
        "    (crates / path).parent.mkdir(parents=True, exist_ok=True)\n"
        "    (crates / path).write_text(text)\n"
        "rust = Loom()\n"
        "rust.index(crates, progress=False)\n"
        "hit = rust.query('axum::serve::Serve drops the connection', budget=300)\n"
        "print({row.title.split(':')[0]: hit.ranking.raw(row.node_id)['path_mention'] for row in hit.rows(3)})\n"
        "assert hit.rows(1)[0].title.startswith('axum/src/serve/mod.rs')"
    ),
    new_markdown_cell(
        "A file's **head** (its unit at line 1: imports, module docstring) shares few words with a question\n"
        "about the code below it, yet a change to that code touches its imports as often as not. The packer\n"
        "walks the head of each of the two best files at 0.88 of its file's best score (`head_files`,\n"
        "`head_share`), and its reason says which unit it came with. Below, `invoice.py`'s imports go in before\n"
        "`receipt_total`, which scores higher."
    ),
    new_code_cell(
        "# NBVAL_CHECK_OUTPUT\n"
        "books_root = Path(tempfile.mkdtemp())\n"
        "for path, text in {\n"
        "    'ledger/invoice.py': 'import logging\\nfrom decimal import ROUND_HALF_UP, Decimal\\n\\nlog = logging.getLogger(__name__)\\n\\n\\n'\n"
        "                  'def invoice_total(lines):\\n    \"\"\"The amount due on an invoice, rounded half up to cents.\"\"\"\\n'\n"
        "                  '    total = sum(Decimal(str(price)) * qty for price, qty in lines)\\n'\n"
        "                  '    return total.quantize(Decimal(\"0.01\"), rounding=ROUND_HALF_UP)\\n\\n\\n'\n"
        "                  'def invoice_number(year, serial):\\n    \"\"\"The printed number of an invoice.\"\"\"\\n    return f\"{year}-{serial:05d}\"\\n',\n"
        "    'ledger/receipt.py': 'def receipt_total(items):\\n    \"\"\"What a receipt adds up to, rounded to cents.\"\"\"\\n    return round(sum(items), 2)\\n',\n"
        "    'ledger/refund.py': 'def refund_total(lines):\\n    \"\"\"The amount refunded for the returned lines of an invoice.\"\"\"\\n'\n"
        "                 '    return -sum(line.price for line in lines)\\n',\n"
        "}.items():\n"
        "    (books_root / path).parent.mkdir(parents=True, exist_ok=True)\n"
        "    (books_root / path).write_text(text)\n"
        "books = Loom()\n"
        "books.index(books_root, progress=False)\n"
        "fix = books.query('invoice_total rounds half cents the wrong way', budget=250)\n"
        "for d in fix.packed.decisions[:3]:\n"
        "    print(f'{d.score:.2f} {d.decision:13s} {d.title} | {d.reason.split(\";\")[0]}')\n"
        "head = next(d for d in fix.packed.decisions if d.title == 'ledger/invoice.py (module)')\n"
        "receipt = next(d for d in fix.packed.decisions if d.title.startswith('ledger/receipt.py'))\n"
        "assert head.decision == 'loaded' and head.reason.startswith('the head of its file')\n"
        "assert receipt.score > head.score and receipt.decision == 'manifest_only'"
    ),
    new_markdown_cell(
        "## Structure\n\n"
        "Imports and calls become edges between nodes. A call joins the definition the language would bind:\n"
        "the one in the caller's own file, else in a file it imports (in Go, its own package's folder, else an\n"
        "imported package's); only a name with none of those in reach (a method called on an object) joins\n"
        "every file that defines it.\n"
        "Below, `pay` calls `total`, which two files define: the edge goes to the one `checkout.py` imports.\n\n"
        "The graph views and a chat's workspace summary read these edges. Ranking reads them through the\n"
        "`density` signal (relevant topics and relevant code neighbours), and only for a question on its own:\n"
        "one line that asks, with no previous exchange, weighs density `question_density` (0.1), because its\n"
        "answer is often a neighbourhood of code. A commit subject, an issue or a follow-up keeps the\n"
        "`density` weight, 0: on the labelled sets it cost more than it earned there (benchmarks/README.md,\n"
        "'The concept layer'). The cell after the next shows both weights."
    ),
    new_code_cell(
        "# NBVAL_CHECK_OUTPUT\n"
        "calls = Path(tempfile.mkdtemp()) / 'calls'\n"
        "for path, text in {\n"
        "    'calls/cart.py': 'def total(items):\\n    return sum(item.price for item in items)\\n',\n"
        "    'calls/invoice.py': 'def total(lines):\\n    return sum(round(line.price, 2) for line in lines)\\n',\n"
        "    'calls/checkout.py': 'from .cart import total\\n\\n\\ndef pay(items):\\n    return total(items)\\n',\n"
        "}.items():\n"
        "    (calls / path).parent.mkdir(parents=True, exist_ok=True)\n"
        "    (calls / path).write_text(text)\n"
        "small = Loom()\n"
        "small.index(calls, progress=False)\n"
        "pay = next(n for n in small.graph.content_nodes() if n.title.endswith(' pay'))\n"
        "neighbours = [small.node(nb).title for nb, kind in small.graph.structure_of(pay.id)]\n"
        "print(neighbours)\n"
        "assert neighbours == ['calls/cart.py:1-2 total']"
    ),
    new_code_cell(
        "# NBVAL_CHECK_OUTPUT\n"
        "asked = small.query('how is the total of a payment computed?', budget=300)\n"
        "subject = small.query('Round each line of the invoice total', budget=300)\n"
        "print('a question:', asked.ranking.weights.density, '· a commit subject:', subject.ranking.weights.density)"
    ),
    new_markdown_cell("On this package, `structure_of` lists a node's code neighbours (here the first window of\n"
                      "`index_workspace`, a function long enough to be cut into several units):"),
    new_code_cell(
        "index_ws = next(n for n in loom.graph.content_nodes() if n.title.endswith(' index_workspace'))\n"
        "for neighbour, kind in loom.graph.structure_of(index_ws.id)[:10]:\n"
        "    print(f'{kind:<10} {loom.node(neighbour).title}')"
    ),
    new_markdown_cell("`skeleton` is the cheap view of a file: signatures and first doc lines, no bodies."),
    new_code_cell("print(loom.skeleton('git.py'))"),
    new_markdown_cell(
        "## Freshness\n\n"
        "Change a file under the graph: its nodes are now *stale*. Loading one raises, and a query reports it\n"
        "in the table instead of serving text that no longer matches; the manifest you read starts with a line\n"
        "saying how many nodes were left out, from which files (the model's context counts them among the\n"
        "nodes not loaded). Re-indexing reads only what changed,\n"
        "and replaces only the units whose text changed: the rest of the file keeps its nodes (moved to their\n"
        "new lines when lines were added above them), so their ids, and the manifests of earlier turns that\n"
        "name them, still hold."
    ),
    new_code_cell(
        "git_py = workspace / 'git.py'\n"
        "git_py.write_text(git_py.read_text().replace('def head_commit', 'def current_head_commit'))\n"
        "result = loom.query('which commit is HEAD?', budget=3000)\n"
        "stale = [row for row in result.table if row.reason.startswith('stale')]\n"
        "print(stale[0].node_id, stale[0].reason[:110])\n"
        "print(result.manifest.splitlines()[0])\n"
        "assert stale and 'current_head_commit' not in result.context\n"
        "assert result.manifest.startswith('[stale: ') and '(git.py)' in result.stale_note"
    ),
    new_code_cell(
        "report = loom.index(workspace, progress=False)\n"
        "print(report)\n"
        "assert report.files_indexed == 1 and report.texts_embedded > 0\n"
        "assert report.nodes_added == report.nodes_removed == 1 and report.nodes_kept > 0  # only the renamed function is new\n"
        "again = loom.index(workspace, progress=False)\n"
        "assert again.files_indexed == 0 and again.texts_embedded == 0  # nothing changed: nothing parsed or embedded"
    ),
    new_code_cell("loom.save()\nprint(Loom.open(loom.folder))"),
    new_markdown_cell(
        "A file reached through a symlink inside the workspace is indexed under both paths (the link is how\n"
        "you refer to it), and a method pasted into two classes is two units with one text. Whichever ranks\n"
        "second goes into the context as a one-line reference to the first: the model learns where else the\n"
        "text lives without the budget paying for it twice."
    ),
    new_code_cell(
        "# NBVAL_CHECK_OUTPUT\n"
        "twins = Path(tempfile.mkdtemp()) / 'twins'\n"
        "(twins / 'src').mkdir(parents=True)\n"
        "(twins / 'src' / 'retry.py').write_text('def backoff(attempt):\\n'\n"
        "                                        '    \"\"\"Seconds to wait before retry number attempt.\"\"\"\\n'\n"
        "                                        '    return min(2 ** attempt, 60)\\n')\n"
        "(twins / 'retry.py').symlink_to('src/retry.py')  # the same file, reached by a second path\n"
        "both = Loom()\n"
        "both.index(twins, progress=False)\n"
        "asked = both.query('how long does backoff wait between retries?', budget=500)\n"
        "for row in asked.rows(2):\n"
        "    print(row.title, '|', row.decision, '-', row.reason)\n"
        "print(asked.context.count('return min(2 ** attempt, 60)'), 'copy of the code in the context')\n"
        "assert asked.context.count('return min(2 ** attempt, 60)') == 1"
    ),
    new_markdown_cell(
        "## Notebooks, cell by cell\n\n"
        "A `.ipynb` is indexed by its cells, not its JSON: code cells are outlined in the kernel's language,\n"
        "markdown cells split by heading, and each output is kept as a short `# Out:` line (images and widget\n"
        "state are dropped). A unit names its cell, so editing one cell stales only that cell's nodes.\n"
        "Jupytext percent scripts (`# %%` cells in a `.py` file) are cut the same way."
    ),
    new_code_cell(
        "# NBVAL_CHECK_OUTPUT\n"
        "import nbformat\n"
        "from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook, new_output\n\n"
        "analysis = Path(tempfile.mkdtemp()) / 'analysis'\n"
        "analysis.mkdir()\n"
        "nb = new_notebook(cells=[\n"
        "    new_markdown_cell('# Churn\\n\\nWhy customers leave.\\n\\n## Loading\\n\\nFrom the warehouse export.'),\n"
        "    new_code_cell(\"import pandas as pd\\nframe = pd.read_csv('churn.csv')\\nframe.shape\",\n"
        "                  outputs=[new_output('execute_result', data={'text/plain': '(7043, 21)', 'image/png': 'iVBORw0KGgo'})]),\n"
        "    new_code_cell('def churn_rate(frame):\\n    \"\"\"Share of customers who left.\"\"\"\\n    return frame.churned.mean()'),\n"
        "])\n"
        "for k, cell in enumerate(nb.cells):\n"
        "    cell.id = f'cell-{k}'\n"
        "nbformat.write(nb, analysis / 'churn.ipynb')\n"
        "notes = Loom()\n"
        "notes.index(analysis, progress=False)\n"
        "for node in notes.graph.content_nodes():\n"
        "    print(node.title)\n"
        "shape = next(n for n in notes.graph.content_nodes() if n.reference.cell == 'cell-1')\n"
        "print()\n"
        "print(notes.graph.text(shape.id))  # the cell's source and its output, not JSON and not the image"
    ),
    new_code_cell(
        "# NBVAL_CHECK_OUTPUT\n"
        "nb.cells[2].source = nb.cells[2].source.replace('mean()', 'mean().round(3)')\n"
        "nbformat.write(nb, analysis / 'churn.ipynb')\n"
        "from loom_nb import StaleReferenceError\n\n"
        "def freshness(node_id):\n"
        "    try:\n"
        "        notes.graph.text(node_id)  # reads the cell and checks its hash\n"
        "        return 'fresh'\n"
        "    except StaleReferenceError:\n"
        "        return 'stale'\n\n"
        "for node in notes.graph.content_nodes():  # only the edited cell's node is stale\n"
        "    print(f'{node.title:<52} {freshness(node.id)}')\n"
        "assert [freshness(n.id) for n in notes.graph.content_nodes()].count('stale') == 1"
    ),
    new_markdown_cell(
        "## Documents\n\n"
        "A paper or a saved web page goes in with `add_file`: a PDF is cut by its bookmarks (else by page),\n"
        "an HTML page by its headings (scripts, styles and navigation dropped), a notebook someone sent by\n"
        "its cells, and each section becomes a node titled with where it came from. Unlike an indexed file,\n"
        "what `add_file` adds is stored in the session: nothing keeps it fresh."
    ),
    new_code_cell(
        "# NBVAL_CHECK_OUTPUT\n"
        "page = analysis / 'retention.html'\n"
        "page.write_text('<html><head><title>Retention</title><script>track()</script></head><body>'\n"
        "                '<nav>Home | Reports</nav><h1>Why customers leave</h1><p>Most leave in the first year.</p>'\n"
        "                '<h2>Pricing</h2><p>A price rise in March doubled monthly churn.</p></body></html>')\n"
        "added = notes.add_file(page)\n"
        "for node in added.nodes:\n"
        "    print(f'{node.id:<4} {node.title:<45} {notes.graph.text(node.id)!r}')\n"
        "top = notes.query('What doubled monthly churn?', budget=500).rows(1)[0]\n"
        "print('first for the question:', top.title)\n"
        "assert top.title == 'retention.html § Why customers leave > Pricing'"
    ),
    new_code_cell(
        "# NBVAL_CHECK_OUTPUT\n"
        "sent = Path(tempfile.mkdtemp()) / 'churn_by_plan.ipynb'\n"
        "nbformat.write(new_notebook(cells=[\n"
        "    new_markdown_cell('# Churn by plan'),\n"
        "    new_code_cell(\"rates = {'basic': 0.08, 'pro': 0.03}\\nrates['basic'] / rates['pro']\",\n"
        "                  outputs=[new_output('execute_result', data={'text/plain': '2.67', 'image/png': 'iVBORw0KGgo'})]),\n"
        "]), sent)\n"
        "for node in notes.add_file(sent).nodes:  # a node per cell: source and output, no JSON, no image\n"
        "    print(f'{node.title:<28} {notes.graph.text(node.id)!r}')"
    ),
    new_markdown_cell(
        "## Secrets stay out of prompts\n\n"
        "Credentials in indexed files are masked wherever node text is read (the context, the prompt, a\n"
        "callback, a report), at their own length so line numbers hold, and the manifest line says so:\n"
        "here a key id and the password inside a database URL. A value that only sits under a token-like\n"
        "name, such as a header's name, is code the model needs and stays as written.\n"
        "Files that are only credentials (`.env`, `*.pem`, `id_rsa`) are indexed by name alone."
    ),
    new_code_cell(
        "# NBVAL_CHECK_OUTPUT\n"
        "key = 'AKIA' + 'Z7XQ2LMN4PWR8TYU'  # a made-up AWS key id, written in two parts\n"
        "(analysis / 'warehouse.py').write_text(\n"
        "    f'WAREHOUSE_KEY_ID = \"{key}\"\\n'\n"
        "    f'WAREHOUSE_URL = \"postgres://churn:Tr4nsit-{key[-6:]}@warehouse/prod\"\\n'\n"
        "    'WAREHOUSE_TOKEN_HEADER = \"X-Warehouse-Token\"  # the header a token travels in\\n\\n\\n'\n"
        "    'def load_churn(table):\\n    return read(table, key=WAREHOUSE_KEY_ID)\\n')\n"
        "(analysis / '.env').write_text(f'WAREHOUSE_SECRET=q8ZL2-{key[::-1]}\\n')\n"
        "print(notes.index(analysis, progress=False))\n"
        "masked = notes.query('How is the churn table loaded from the warehouse?', budget=800)\n"
        "print([line for line in masked.manifest.splitlines() if 'masked' in line])\n"
        "print('\\n'.join(line for line in masked.prompt.splitlines() if line.startswith('WAREHOUSE_')))\n"
        "assert key not in masked.prompt and key[::-1] not in masked.prompt and 'Tr4nsit' not in masked.prompt\n"
        "assert 'X-Warehouse-Token' in masked.prompt"
    ),
    new_markdown_cell(
        "## A ready code session\n\n"
        "The ready sample `loom-nb-code` holds nine modules of loom-nb indexed the same way, with a snapshot of\n"
        "the files its references point to (so they never go stale). `open_sample` opens a copy in\n"
        "milliseconds, and the concept document's three example queries run at once."
    ),
    new_code_cell(
        "# NBVAL_CHECK_OUTPUT\n"
        "from loom_nb.demo import open_sample, sample_spec\n\n"
        "code = open_sample('loom-nb-code')\n"
        "print(code.graph.counts())\n"
        "for question in sample_spec('loom-nb-code')['queries']:\n"
        "    answer = code.query(question, budget=3000)\n"
        "    print(f'{question:<45} ' + ' | '.join(row.title for row in answer.rows(3)))"
    ),
    new_markdown_cell(
        "`result.pack()` is the same decision as a *context pack*: each loaded item with where it is, why\n"
        "it was chosen in words, the query terms it matched and a snippet of the matching lines, then the\n"
        "open questions: what the question asks about that nothing loaded covers."
    ),
    new_code_cell(
        "# NBVAL_CHECK_OUTPUT\n"
        "pack = code.query('How does count_tokens in tokens.py handle an empty string, and where is retry.py?', budget=1500).pack()\n"
        "print(pack)\n"
        "print()\n"
        "print(pack.items[0].snippet)\n"
        "assert any('retry.py' in q for q in pack.open_questions)"
    ),
    new_markdown_cell(
        "A reference node's view says where it points, whether the file still matches the hash taken at\n"
        "indexing (`text: fresh`), which concepts it linked to, and its code-structure edges."
    ),
    new_code_cell(
        "# NBVAL_CHECK_OUTPUT\n"
        "ranking = next(n for n in code.graph.content_nodes() if n.title.endswith(' Ranking'))\n"
        "assert ranking.reference.file.endswith('rank.py')\n"
        "code.view(ranking.id)  # rank.py: the Ranking class"
    ),
    new_markdown_cell("The concept with the most linked content (a unit links to every concept close enough, so its\n"
                      "members, the units whose strongest concept it is, are fewer), and the concepts around it:"),
    new_code_cell(
        "# NBVAL_CHECK_OUTPUT\n"
        "biggest = max(code.graph.concept_nodes(), key=lambda c: len(code.graph.content_of(c.id)))\n"
        "code.view(biggest.id)"
    ),
    new_markdown_cell(
        "Indexing built those concepts as topics: communities of the units' vectors, each named by the\n"
        "terms that set its units apart. `concept_quality()` gives the figures. `merge_candidates` lists\n"
        "concept pairs whose vectors are at or above the linking threshold, and `merge_concepts` /\n"
        "`split_concept` edit the layer by hand (`code.rebuild_concepts()` starts it over)."
    ),
    new_code_cell(
        "# NBVAL_CHECK_OUTPUT\n"
        "from loom_nb.core.concepts import merge_candidates, merge_concepts\n\n"
        "print(code.concept_quality())\n"
        "first, second, cosine = merge_candidates(code.graph)[0]\n"
        "print(f'{code.node(first).name!r} and {code.node(second).name!r}: cosine {cosine:.2f}')\n"
        "merged = merge_concepts(code.graph, first, second)\n"
        "print(merged, code.node(merged).name, len(code.graph.content_of(merged)), 'units')\n"
        "assert first not in code.graph and second not in code.graph"
    ),
    new_markdown_cell(
        "The concept threshold (0.7 for MiniLM) decides which *other* concepts a unit also belongs to: those\n"
        "whose mean it reaches at the threshold. `preview_threshold` shows what another value would do, changing\n"
        "nothing: concepts whose members mostly reach each other merge, concepts most of whose members fall\n"
        "below it split along their own communities. `apply_threshold` does it and keeps the value (the\n"
        "tuner's threshold slider and its **apply threshold** button call the same two methods)."
    ),
    new_code_cell(
        "# NBVAL_CHECK_OUTPUT\n"
        "print(code.preview_threshold(0.6))\n"
        "print()\n"
        "print(code.preview_threshold(0.8))"
    ),
    new_code_cell(
        "# NBVAL_CHECK_OUTPUT\n"
        "print(code.apply_threshold(0.75))  # the layer's figures after re-linking at 0.75\n"
        "print(code.graph.concept_threshold)"
    ),
    new_markdown_cell(
        "A large session is drawn as its concepts: one diamond per concept, sized by its members and named by\n"
        "its terms, with its members folded until you click it (click again to fold them). `graph_view`\n"
        "chooses this by itself past 800 content nodes; this sample has 256, so the cell asks for it with `clusters=True`."
    ),
    new_code_cell("code.graph_view(clusters=True)"),
    new_markdown_cell(
        "`code.graph.nx` is a read-only networkx view, so networkx algorithms run on it directly;\n"
        "`to_networkx()` is a copy with plain attribute values, for `node_link_data` (JSON) or GraphML."
    ),
    new_code_cell(
        "# NBVAL_CHECK_OUTPUT\n"
        "import json\n"
        "import networkx as nx\n\n"
        "ranks = nx.pagerank(code.graph.nx)\n"
        "hub = max((n for n in ranks if n.startswith('c')), key=ranks.get)\n"
        "print('concept with the highest PageRank:', hub, code.node(hub).name)\n"
        "exported = json.dumps(nx.node_link_data(code.graph.to_networkx(), edges='links'))\n"
        "print(len(json.loads(exported)['nodes']), 'nodes exported as JSON')"
    ),
    new_markdown_cell(
        "## Vectors in Qdrant\n\n"
        "A session keeps its vectors in `embeddings/*.npy` by default. For a team, they can live in a Qdrant\n"
        "collection instead (`pip install 'loom-nb[qdrant]'`): `vectors='http://HOST:6333/COLLECTION'` for a\n"
        "server, or, as here, qdrant-client's embedded local mode, a folder and no server. Opening a numpy\n"
        "session with `vectors=` moves its vectors at the next save; graph.json stays in the session folder\n"
        "as the source of truth for nodes and edges. Ranking still scores every node from the same numbers,\n"
        "so the answers do not change."
    ),
    new_code_cell(
        "# NBVAL_CHECK_OUTPUT\n"
        "code.save()\n"
        "questions = [*sample_spec('loom-nb-code')['queries'], 'How is a session saved without losing data?']\n"
        "before = [code.query(q, budget=3000).loaded for q in questions]\n\n"
        "team = Loom.open(code.folder, vectors='qdrant+local:vectors/loom-demo')  # a folder inside the session\n"
        "team.save()  # the vectors move into the collection\n"
        "team = Loom.open(code.folder)  # graph.json now names the collection: read back from Qdrant\n"
        "print(team.vectors.spelling, '| .npy files left:', list((code.folder / 'embeddings').glob('*.npy')))\n"
        "after = [team.query(q, budget=3000).loaded for q in questions]\n"
        "print(sum(a == b for a, b in zip(before, after)), 'of', len(questions), 'questions load the same nodes as with numpy')\n"
        "assert after == before"
    ),
    new_markdown_cell(
        "Each vector is one point, keyed by its node and a digest of the vector, so a save after re-indexing\n"
        "one file sends only that file's units. The client is qdrant-client's own:"
    ),
    new_code_cell(
        "# NBVAL_CHECK_OUTPUT\n"
        "from loom_nb.core.qdrant_store import connect\n\n"
        "with connect(team.vectors, team.folder) as client:\n"
        "    print(client.count('loom-demo').count, 'points in the collection loom-demo')\n"
        "    (point,), _ = client.scroll('loom-demo', limit=1, with_payload=True, with_vectors=True)\n"
        "    print(point.payload, len(point.vector), 'dimensions')"
    ),
    new_markdown_cell(
        "A collection is checked, never mixed: opening it with another embedder is refused, as a numpy\n"
        "session's graph.json is, and a server that does not answer is reported at once."
    ),
    new_code_cell(
        "# NBVAL_CHECK_OUTPUT\n"
        "from loom_nb import EmbeddingMismatchError, HashingEmbedder, LoomError\n\n"
        "try:\n"
        "    Loom.open(team.folder, embedder=HashingEmbedder())\n"
        "except EmbeddingMismatchError as error:\n"
        "    print('EmbeddingMismatchError:', error)\n"
        "try:\n"
        "    Loom(tempfile.mkdtemp(), vectors='http://127.0.0.1:9/loom-myrepo')  # nothing listens on port 9\n"
        "except LoomError as error:\n"
        "    print('LoomError:', error)"
    ),
]
write(cells, "notebooks/02_index_a_codebase.ipynb")
