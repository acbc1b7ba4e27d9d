"""Writes notebooks/01_quickstart.ipynb from the cells below (then run execute_notebooks.py)."""

from _notebook import write
from nbformat.v4 import new_code_cell, new_markdown_cell

cells = [
    new_markdown_cell(
        "# loom-nb quickstart\n\n"
        "loom-nb decides what context a local LLM gets, and shows you that decision. In this notebook we\n"
        "build a small session from a debugging conversation, ask three queries of different complexity,\n"
        "and look at what was loaded, what was left out, and why.\n\n"
        "Everything runs offline: the default embedder is all-MiniLM-L6-v2 running in-process, and no\n"
        "Ollama server is needed."
    ),
    new_code_cell(
        "# NBVAL_CHECK_OUTPUT\n"
        "from pathlib import Path\n"
        "from loom_nb import Loom, LoomConfig\n\n"
        "SOURCES = Path('../loom_nb/_data/samples/auth-debugging/sources')\n"
        "loom = Loom()  # in memory for now; the default embedder loads on first use\n"
        "loom"
    ),
    new_markdown_cell(
        "## Adding text\n\n"
        "`add` classifies the input without calling a model. A question followed by a pasted log is split into\n"
        "two content nodes, so that later queries can load the question without the log, or the log without the\n"
        "question. Each node is linked to every concept at or above the threshold (calibrated for the embedder:\n"
        "0.7 for MiniLM), or founds a new concept; the closest concept below the threshold is recorded as the\n"
        "*near miss*."
    ),
    new_code_cell(
        "# NBVAL_CHECK_OUTPUT\n"
        "pasted = (SOURCES / '01-question-with-log.txt').read_text()\n"
        "print(loom.classify(pasted))"
    ),
    new_markdown_cell("In a notebook the classification draws itself: the verdict, the segments and the reasons."),
    new_code_cell("# NBVAL_CHECK_OUTPUT\nloom.classify(pasted)"),
    new_code_cell(
        "# NBVAL_CHECK_OUTPUT\n"
        "result = loom.add(pasted)\n"
        "print(result)\n"
        "assert len(result.nodes) == 2  # the question and the log"
    ),
    new_code_cell(
        "# NBVAL_CHECK_OUTPUT\n"
        "kinds = {\n"
        "    '02-token-refresh.py': 'input',\n"
        "    '03-earlier-analysis.md': 'analysis',  # an earlier answer of the model\n"
        "    '04-api-docs.md': 'input',\n"
        "    '05-middleware.py': 'input',\n"
        "    '06-css-theme-notes.md': 'input',\n"
        "    '07-deploy-runbook.md': 'input',\n"
        "}\n"
        "for name, kind in kinds.items():\n"
        "    print(name, '->', loom.add((SOURCES / name).read_text(), type=kind, reason=name))"
    ),
    new_markdown_cell(
        "The session shows its size, its concepts with the most content and its largest nodes\n"
        "(`print(loom)` gives the same in a terminal)."
    ),
    new_code_cell("# NBVAL_CHECK_OUTPUT\nloom"),
    new_markdown_cell(
        "## Asking a query\n\n"
        "`query` embeds the question, scores every content node on eleven signals (six semantic and structural:\n"
        "semantic relevance, hop distance from the most relevant concept (weighted 0 by default), staleness, size, provenance, link\n"
        "density; four lexical: keyword terms, path mention, tag, git-dirty; and the best score in the\n"
        "node's file), then fills the\n"
        "budget in descending score order. The window here is 4,096 tokens: the budget subtracts the system\n"
        "prompt, the question and an output reservation that grows with the question's complexity."
    ),
    new_code_cell(
        "# NBVAL_CHECK_OUTPUT\n"
        "simple = loom.query('What does POST /oauth/token return?', window=4096)\n"
        "simple"
    ),
    new_markdown_cell(
        "The result holds both what goes to the model and the table behind it. The manifest header opens\n"
        "the user message the model reads: what was loaded, and how much relevant context was left out."
    ),
    new_code_cell(
        "# NBVAL_CHECK_OUTPUT\n"
        "print(simple.manifest)\n"
        "print()\n"
        "for zone, tokens in simple.budget_split().items():\n"
        "    print(f'{zone:>16}: {tokens:,}')\n"
        "assert simple.packed.context_tokens <= simple.budget.context"
    ),
    new_code_cell(
        "# NBVAL_CHECK_OUTPUT\n"
        "top = simple.table[0]\n"
        "print(top.node_id, top.title, top.decision, '-', top.reason)\n"
        "for signal, contribution in top.contributions.items():\n"
        "    print(f'  {signal:>10}: raw {top.signals[signal]:.2f} -> contributes {contribution:.3f}')\n"
        "print(f'  {\"score\":>10}: {top.score:.3f}')"
    ),
    new_markdown_cell(
        "## Modes\n\n"
        "A mode chooses which signals rank. **BARE** ranks without the query vector (the lexical, structure,\n"
        "size, provenance and recency signals), so it skips embedding the query; **FAST** ranks on the query\n"
        "vector alone; **FUSED** ranks on every signal. None of them caps the budget by default (a configuration\n"
        "can give BARE or FAST an item limit or a token cap).\n\n"
        "With no `mode=`, `query` runs `auto`, which picks by the message's complexity: below\n"
        "`config.bare_below` BARE, below `config.fast_below` FAST, otherwise FUSED. Both are 0 by default,\n"
        "because on every labelled set measured the cheaper modes lost recall that FUSED kept; so `auto` runs\n"
        "FUSED, for the simple query above as for a multi-part question with a pasted traceback.\n"
        "`loom-nb eval` has the rows `loom-bare`, `loom-fast` and `loom-fused` beside `loom` to show what each\n"
        "mode costs and earns on labelled queries.\n\n"
        "A message that pastes code, a log or a traceback beside its question is embedded from its prose\n"
        "(`Query.vector_text()`, printed below): the traceback's words still count for the lexical signals,\n"
        "but the query's vector says what is wrong, not what the pasted text looks like."
    ),
    new_code_cell(
        "# NBVAL_CHECK_OUTPUT\n"
        "complex_query = (\n"
        "    'Users are logged out every hour. First, explain why the refresh token is rejected; then, show which '\n"
        "    'code must change and how; finally, is anything else failing?\\n'\n"
        "    'Traceback (most recent call last):\\n'\n"
        "    '  File \"token_refresh.py\", line 33, in refresh\\n'\n"
        "    '    raise PermissionError(response.json().get(\"error\", \"refresh failed\"))\\n'\n"
        "    'PermissionError: invalid_grant'\n"
        ")\n"
        "deep = loom.query(complex_query, window=4096)\n"
        "print(deep.request.vector_text())\n"
        "print(deep.classification.kind, round(deep.classification.complexity, 2), deep.mode.name)\n"
        "print(deep.manifest)\n"
        "assert deep.mode.name == 'fused'"
    ),
    new_markdown_cell(
        "A question pasted from a bug report ranks without the report's form: the template's headings, the\n"
        "OS, version and screenshot sections under them, and images go before ranking (a GitHub link to a file\n"
        "becomes that file's path), while fenced code and the message as typed stay as they are. Otherwise\n"
        "words such as *version* and *project* would pull in every configuration file. `Query.retrieval_text()`\n"
        "shows what ranks; the top node is the note about users logged out every hour:"
    ),
    new_code_cell(
        "# NBVAL_CHECK_OUTPUT\n"
        "from loom_nb import Query\n\n"
        "report = ('Users are logged out every hour\\n\\n### Describe the bug\\n\\nThe refresh token is rejected with '\n"
        "          'invalid_grant.\\n\\n### OS\\n\\nmacOS 14\\n\\n### Python version\\n\\n3.11\\n\\n'\n"
        "          '![screenshot](https://example.com/shot.png)')\n"
        "print(Query(report).retrieval_text())\n"
        "top = loom.query(report, window=4096).rows(1)[0]\n"
        "print(f'top: {top.node_id} {top.title!r}')"
    ),
    new_markdown_cell(
        "A message of several lines leads with one that says what it is about: an issue's title, a commit's\n"
        "subject. Its words count three times in the lexical signal (once, and `config.lead_line_weight` = 2 more), since\n"
        "what follows pastes code and logs whose words match everything around the fault. A follow-up's own\n"
        "message leads the exchange before it the same way. The context pack says which matched words came\n"
        "from that line:"
    ),
    new_code_cell(
        "# NBVAL_CHECK_OUTPUT\n"
        "from loom_nb.core.query import lead_line\n\n"
        "print('leads with:', repr(lead_line(Query(report).retrieval_text())))\n"
        "for item in loom.query(report, window=4096).pack().items[:3]:\n"
        "    print(item.node_id, '|', '; '.join(item.reasons))"
    ),
    new_markdown_cell(
        "`mode=` still forces one, to compare: here BARE on the simple query. It skips the query's embedding,\n"
        "so the semantic signal is 0 for every node; with no concept near the query to anchor them, so are the\n"
        "structure signals (hop, density) under the default configuration. A node then counts as relevant only\n"
        "through the lexical signals (or a file the query names): the same top 3, but two relevant nodes fewer."
    ),
    new_code_cell(
        "# NBVAL_CHECK_OUTPUT\n"
        "bare = loom.query('What does POST /oauth/token return?', window=4096, mode='bare')  # forced, for comparison\n"
        "for r in (simple, bare):\n"
        "    loaded = [row.node_id for row in r.table if row.decision == 'loaded']\n"
        "    print(f'{r.mode.name:<6} embeds the query: {r.mode.embeds_query!s:<5}  top 3 {[row.node_id for row in r.rows(3)]}  '\n"
        "          f'{r.packed.relevant_count} relevant, loaded {loaded}')\n"
        "print('BARE: semantic, hop and density 0 for every node:',\n"
        "      all(row.signals[s] == 0 for row in bare.table for s in ('semantic', 'hop', 'density')))\n"
        "assert simple.mode.name == 'fused' and not bare.mode.embeds_query"
    ),
    new_markdown_cell(
        "Which mode `auto` picks is configuration. Seed 002's thresholds (`bare_below=0.3`, `fast_below=0.6`)\n"
        "would send the simple query to BARE and keep the traceback on FUSED:"
    ),
    new_code_cell(
        "# NBVAL_CHECK_OUTPUT\n"
        "from loom_nb.core.modes import choose_mode\n\n"
        "seed = LoomConfig(bare_below=0.3, fast_below=0.6)\n"
        "for r in (simple, deep):\n"
        "    c = r.classification.complexity\n"
        "    print(f'complexity {c:.2f}: auto picks {choose_mode(c).name} by default, {choose_mode(c, seed).name} with the seed thresholds')"
    ),
    new_markdown_cell(
        "## A follow-up\n\n"
        "A follow-up names nothing (\"and how do I fix it?\"). Pass a `Query` with the conversation so far:\n"
        "the message and the history travel apart, the classifier grades the message alone, and ranking reads\n"
        "the message followed by the previous exchange, clipped. `follow.messages` carry the conversation, ready to send:\n"
        "with a window, the newest turns that fit its history zone. A chat `Session` builds this `Query` on every turn."
    ),
    new_code_cell(
        "# NBVAL_CHECK_OUTPUT\n"
        "from loom_nb import Query\n\n"
        "history = [{'role': 'user', 'content': 'Why does the token refresh fail with invalid_grant?'},\n"
        "           {'role': 'assistant', 'content': 'Two requests present the same single-use refresh token.'}]\n"
        "alone = loom.query('and how do I fix it?', window=4096)\n"
        "follow = loom.query(Query('and how do I fix it?', history), window=4096)\n"
        "print('classified:', follow.classification.kind, '- the same as the message alone:', follow.classification == alone.classification)\n"
        "print('alone, top 3:   ', [row.title[:40] for row in alone.rows(3)])\n"
        "print('follow-up, top 3:', [row.title[:40] for row in follow.rows(3)])\n"
        "# the messages to send carry the conversation between the system prompt and the question\n"
        "print('messages:', [m['role'] for m in follow.messages], '- history zone:', follow.budget_split()['history'], 'tokens')"
    ),
    new_markdown_cell(
        "## A large note: its best chunks\n\n"
        "A node over 1,200 tokens that would take more than half the budget goes in as its summary, if it has\n"
        "one (`loom.add_summary`), else as its most relevant chunks: each chunk of about 300 tokens has a vector\n"
        "of its own, and the chunks nearest the question and holding its words go in, in document order. Here\n"
        "the gateway's 260-line log is pasted as one note, and a 2,000-token budget cannot take it whole."
    ),
    new_code_cell(
        "# NBVAL_CHECK_OUTPUT\n"
        "log = loom.add((SOURCES / '09-gateway.log').read_text(), split=False, title='gateway.log, 20 November')\n"
        "node = log.nodes[0]\n"
        "print(node.id, f'{node.tokens:,} tokens in', len(node.chunks), 'chunks')\n"
        "answer = loom.query('Which dashboard request failed with 401 invalid_grant in the gateway log?', budget=2000)\n"
        "row = answer.packed.decision_of(node.id)\n"
        "print(row.decision, '-', row.reason)\n"
        "print(next(line for line in answer.manifest.splitlines() if node.id in line))\n"
        "# the one failed request of the log is in what was loaded\n"
        "assert '10:00:25 gateway 401 GET /api/dashboard' in answer.context"
    ),
    new_markdown_cell(
        "## The prompt\n\n"
        "This is exactly what would be sent to the model (`result.messages` is the same as chat messages).\n"
        "The evidence is labelled as evidence, not instructions."
    ),
    new_code_cell("# NBVAL_CHECK_OUTPUT\nprint(simple.prompt)"),
    new_markdown_cell(
        "## Saving the session\n\n"
        "A session folder holds `graph.json` (every node, edge and setting), `content/` (the texts) and\n"
        "`embeddings/` (the vectors, bit for bit), and `.loom.lock`, which lets one process write at a time.\n"
        "Saves are atomic; reopening gives an equal graph."
    ),
    new_code_cell(
        "# NBVAL_CHECK_OUTPUT\n"
        "import tempfile\n"
        "folder = Path(tempfile.mkdtemp()) / 'auth-session'\n"
        "loom.save(folder)\n"
        "print(sorted(p.name for p in folder.iterdir()))\n"
        "again = Loom.open(folder)\n"
        "assert again.graph == loom.graph\n"
        "print(again)"
    ),
    new_markdown_cell(
        "## Ready sessions\n\n"
        "Building a session embeds every text once. loom-nb ships three ready ones (`loom_nb/_data/samples/`): this debugging\n"
        "conversation, part of loom-nb's own code indexed into reference nodes, and twenty short notes on\n"
        "baking sourdough bread. `open_sample` opens a copy in well under a second: nothing is embedded again,\n"
        "and whatever the notebook records or saves, the committed folder stays as it is."
    ),
    new_code_cell(
        "# NBVAL_CHECK_OUTPUT\n"
        "from loom_nb.demo import open_sample, sample_names\n\n"
        "print(sample_names())\n"
        "notes = open_sample('sourdough-notes')\n"
        "notes"
    ),
    new_markdown_cell(
        "Once every note was in, the sample rebuilt its concepts as topics (`notes.rebuild_concepts()`):\n"
        "communities of the note vectors, each named by the terms that set its notes apart from the\n"
        "others. `concept_quality()` says whether they are topics: how many, how large, and how much closer\n"
        "notes are to the notes of their own concept than to the others (the mean cosines)."
    ),
    new_code_cell("# NBVAL_CHECK_OUTPUT\nprint(notes.concept_quality())"),
    new_markdown_cell(
        "A concept is an index entry, never sent to the model. The view of the bulk-fermentation note's\n"
        "concept gives its distinctive terms (the words that set its notes apart from the other concepts'), the\n"
        "content linked to it, with each link's cosine, and its neighbour concepts."
    ),
    new_code_cell(
        "# NBVAL_CHECK_OUTPUT\n"
        "concept_id, _ = notes.graph.concepts_of('n8')[0]\n"
        "notes.view(concept_id)"
    ),
    new_markdown_cell(
        "How strict a topic is follows the concept threshold. `preview_threshold` shows what another value\n"
        "would do, without changing the session: at 0.4 the three concepts' notes mostly reach each other's\n"
        "concepts, so they would merge into one (`apply_threshold(0.4)` would do it)."
    ),
    new_code_cell("# NBVAL_CHECK_OUTPUT\nprint(notes.preview_threshold(0.4))"),
    new_markdown_cell(
        "A content node's view: provenance, staleness (the signal decays by half every 8 turns unused),\n"
        "its concepts (and its *near miss*, the closest concept below the threshold, when it has one) and a preview."
    ),
    new_code_cell("# NBVAL_CHECK_OUTPUT\nnotes.view('n10')"),
    new_code_cell(
        "# NBVAL_CHECK_OUTPUT\n"
        "answer = notes.query('How do I know when bulk fermentation is done?', budget=600)\n"
        "print(answer.manifest)\n"
        "assert 'n8' in answer.loaded  # the note on bulk fermentation"
    ),
    new_markdown_cell(
        "## Where the time goes\n\n"
        "Telemetry is off until switched on. Then every query records a `classify`, `embed`, `rank` and\n"
        "`pack` event (an index run an `index` event, a chat turn its requests to the model), with its\n"
        "duration and counts, in `events.jsonl` beside `graph.json`; `loom-nb show SESSION --events` prints them\n"
        "and `telemetry_figure()` draws them."
    ),
    new_code_cell(
        "# NBVAL_CHECK_OUTPUT\n"
        "notes.telemetry(True)\n"
        "timed = notes.query('How warm should the proof be?', budget=600)\n"
        "for event in notes.events():\n"
        "    print(event['kind'], sorted(k for k in event if k not in ('time', 'kind', 'seconds')))\n"
        "assert [e['seconds'] for e in notes.events()] == list(timed.timings.values())"
    ),
    new_code_cell(
        "from loom_nb.views.figures import use_offline_plotly\n\n"
        "use_offline_plotly()  # plotly.js once: the figure draws with no network, here and in an HTML export\n"
        "notes.telemetry_figure()"
    ),
    new_markdown_cell(
        "A model's window decides the budget when you pass `model=` instead of `budget=`. A local model's\n"
        "maximum comes from a table, but the budget is the window Ollama runs it at: its `num_ctx` when the\n"
        "server is asked, else 4,096 (Ollama's default on a machine with under 24 GiB of GPU memory). Hosted\n"
        "models get their documented window in full, and `source` says where it came from. An unknown name gets a conservative 4,096 and a warning."
    ),
    new_code_cell(
        "# NBVAL_CHECK_OUTPUT\n"
        "from loom_nb import context_window\n\n"
        "for model in ('llama3.1:8b', 'qwen2.5-coder:7b', 'claude-sonnet-4-5', 'gpt-4o'):\n"
        "    print(context_window(model))"
    ),
]

write(cells, "notebooks/01_quickstart.ipynb")
