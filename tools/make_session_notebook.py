"""Writes notebooks/05_chat_with_ollama.ipynb from the cells below (then run execute_notebooks.py)."""

from _notebook import write
from nbformat.v4 import new_code_cell, new_markdown_cell

cells = [
    new_markdown_cell(
        "# Chatting with a local model\n\n"
        "A `Session` sends your messages to a model through Ollama, and loom-nb chooses each turn's context.\n"
        "One turn:\n\n"
        "1. your message is classified, split if it mixes structures, and added to the graph;\n"
        "2. the window (the `num_ctx` Ollama really uses) is split into **zones**: system prompt, decision\n"
        "   context, workspace summary, tool definitions, reserved output, history, and the engine's context;\n"
        "3. history is kept newest first; turns that fall out are **summarised** into a node the engine can load;\n"
        "4. the engine ranks every node and packs the context zone (nodes loaded are refreshed, staleness\n"
        "   decays per turn);\n"
        "5. the answer streams in; the model may ask for a node the manifest offered but did not load\n"
        "   (**callback retrieval**, at most 2 per turn);\n"
        "6. while you read, a background indexer adds the answer to the graph and saves the session.\n\n"
        "**With no Ollama server** this notebook replays a recorded chat: a stand-in server on 127.0.0.1\n"
        "(`loom_nb.chat.replay.OllamaStandIn`) answers from `loom_nb/_data/recorded_chat.json` through the same\n"
        "`ollama` client code. Those answers were written by hand for this tutorial, not by a model; everything\n"
        "loom-nb does around them (zones, context, history, callbacks, accounting) is computed live. Start\n"
        "`ollama serve` and `ollama pull llama3.2` (or set `LOOM_CHAT_MODEL`) to run the same cells live;\n"
        "`make test` sets `LOOM_CHAT_REPLAY=1` so the tests replay even where a server runs."
    ),
    new_code_cell(
        "# NBVAL_CHECK_OUTPUT\n"
        "import os\n"
        "from loom_nb import Session\n"
        "from loom_nb.demo import open_sample\n"
        "from loom_nb.chat.replay import OllamaStandIn, default_show, load_recording\n"
        "from loom_nb.ollama.probe import probe_ollama\n"
        "from loom_nb.views.figures import use_offline_plotly\n\n"
        "use_offline_plotly()  # plotly.js once: figures draw with no network\n"
        "MODEL = os.environ.get('LOOM_CHAT_MODEL', 'llama3.2')\n"
        "if os.environ.get('LOOM_CHAT_REPLAY'):  # make test sets it: the same run everywhere\n"
        "    live, why = False, 'LOOM_CHAT_REPLAY is set'\n"
        "else:\n"
        "    live, why = probe_ollama(MODEL)\n"
        "if live:\n"
        "    server, host = None, None\n"
        "    print(f'Live: Ollama answers and has {MODEL}.')\n"
        "else:\n"
        "    # the recorded model card: llama3.2 (128k maximum) run at num_ctx 2048 (Ollama's default before 0.6.7), with tool calling\n"
        "    server = OllamaStandIn(models=[MODEL], answers=load_recording(),\n"
        "                           show=default_show(context_length=131072, num_ctx=2048)).start()\n"
        "    host = server.host\n"
        "    print(f'Note: {why}')\n"
        "    print('Replaying the recorded chat through a local stand-in server; the answers are recorded, '\n"
        "          'the context decisions are live.')"
    ),
    new_markdown_cell(
        "## A session on the debugging sample\n\n"
        "`open_sample` copies the ready *auth-debugging* session (a question with a log, the code, an earlier\n"
        "analysis, API docs, a gateway log and its summary, some unrelated notes) to a temporary folder, so the\n"
        "chat writes to the copy. `connect()` asks Ollama for the model's window: the budget uses the\n"
        "`num_ctx` the server runs the model at, not the model's maximum."
    ),
    new_code_cell(
        "# NBVAL_CHECK_OUTPUT\n"
        "loom = open_sample('auth-debugging')\n"
        "session = Session(loom, model=MODEL, host=host)\n"
        "window = session.connect()\n"
        "print(window)\n"
        "print('callbacks through the load_context tool' if session.uses_tools else 'callbacks through the [[load: ID]] marker')"
    ),
    new_markdown_cell(
        "## Turn 1\n\n"
        "`send` streams the answer (`echo=True` prints it as it arrives; pass `on_token=` for your own display)\n"
        "and returns the `Turn`: its zones, what was loaded, the callbacks and the accounting.\n\n"
        "When the budget leaves relevant nodes out, the prompt lists them under\n"
        "*Available on request*, and the model may ask for one (**callback retrieval**) with the `load_context`\n"
        "tool, or a `[[load: ID]]` marker when it has no tools. loom-nb serves it within half the output\n"
        "reservation, at most 2 per turn, and marks it loaded."
    ),
    new_code_cell(
        "# NBVAL_CHECK_OUTPUT\n"
        "turn = session.send('Users are logged out every hour. Why does the token refresh fail?', echo=True)"
    ),
    new_code_cell(
        "# NBVAL_CHECK_OUTPUT\n"
        "turn  # the zones add up to the window; 'unused' is what nothing needed"
    ),
    new_markdown_cell(
        "The engine's decision for this turn is a full `QueryResult`: the manifest, the budget and every node's\n"
        "signals and decision. The message you just sent is a node too, *excluded* because it is already the\n"
        "question."
    ),
    new_code_cell(
        "# NBVAL_CHECK_OUTPUT\n"
        "print(turn.result.manifest)\n"
        "for row in turn.result.rows(6):\n"
        "    print(f'{row.node_id:>4} {row.decision:<14} {row.score:.2f}  {row.title[:50]:<50}  {row.reason[:60]}')\n"
        "print(turn.callbacks)"
    ),
    new_markdown_cell(
        "## Decisions\n\n"
        "The decision graph (seed 003) keeps *why*: goals, decisions, the options chosen and rejected. It is\n"
        "injected into the system prompt within its zone (6 % of the window, at most 1,024 tokens), newest first."
    ),
    new_code_cell(
        "# NBVAL_CHECK_OUTPUT\n"
        "d = session.decisions\n"
        "goal = d.add('goal', 'Stop the hourly logouts')\n"
        "fix = d.add('decision', 'Store the rotated refresh token and serialise refreshes', confidence=85)\n"
        "lock = d.add('option', 'A per-session lock around refresh()')\n"
        "retry = d.add('option', 'Retry the refresh on invalid_grant')\n"
        "d.link(goal, fix, 'leads_to')\n"
        "d.link(fix, lock, 'chosen', rationale='one refresh in flight; waiters reuse its token')\n"
        "d.link(fix, retry, 'rejected', rationale='a retry still presents a revoked token')\n"
        "print(d.render(300))"
    ),
    new_markdown_cell(
        "## Turn 2: a follow-up\n\n"
        "A follow-up names nothing (\"which code?\"). The engine ranks against the message *and* the previous\n"
        "exchange, clipped, so it still finds the code; the previous messages themselves ride in the history\n"
        "zone and are not loaded twice. The decisions just recorded are in the system prompt."
    ),
    new_code_cell(
        "# NBVAL_CHECK_OUTPUT\n"
        "turn = session.send('Which code must change, and how? Show the fix.', echo=True)\n"
        "print()\n"
        "print(turn.result.manifest)"
    ),
    new_markdown_cell(
        "## More turns: history fills up, and what falls out is summarised\n\n"
        "At a 2,048-token window the history zone holds only a few messages. When turns fall out, they are\n"
        "summarised once, a turn or more at a time (by the model; extractively if it cannot answer), into a\n"
        "*summary* node: the newest summaries ride at the head of the history, and the engine can load older\n"
        "ones by relevance. The newest exchange is never summarised, so a block can hold a single turn."
    ),
    new_code_cell(
        "# NBVAL_CHECK_OUTPUT\n"
        "for text in ['Is anything else failing in the gateway log?',\n"
        "             'Draft a short note for the team about the cause and the fix.',\n"
        "             'Write a test that would have caught the race.',\n"
        "             'Which lines of the gateway log show the race?',\n"
        "             'Remind me: what did we decide about the refresh, and what is still open?']:\n"
        "    print(f'>>> {text}')\n"
        "    turn = session.send(text, echo=True)\n"
        "    print(f'\\n[{len(turn.loaded)} loaded, {turn.history_messages} history messages, zones: history '\n"
        "          f\"{turn.zones['history']}, context {turn.zones['context']}]\\n\")"
    ),
    new_code_cell(
        "# NBVAL_CHECK_OUTPUT\n"
        "for s in session.summaries:\n"
        "    print(f\"{s['node_id']} (by {s['by']}) covers messages {s['messages'][0]}-{s['messages'][1] - 1}:\")\n"
        "    print(s['text'][:400], '\\n')"
    ),
    new_markdown_cell(
        "## Staleness moves with the turns\n\n"
        "Each turn advances the graph clock; a node loaded in a turn is refreshed, others decay\n"
        "(`0.5 ** (age / half_life)`, half-life 8 turns)."
    ),
    new_code_cell(
        "# NBVAL_CHECK_OUTPUT\n"
        "from loom_nb.core.rank import staleness_signal\n\n"
        "session.wait()  # the background indexer has added the last answer to the graph\n"
        "clock, half_life = loom.graph.turn, loom.graph.config.staleness_half_life\n"
        "print('graph clock:', clock)\n"
        "for node in sorted(loom.graph.content_nodes(), key=lambda n: (-n.last_access_turn, n.id))[:12]:\n"
        "    now = staleness_signal([node.last_access_turn], clock, half_life)[0]\n"
        "    print(f'{node.id:>4} last used at turn {node.last_access_turn}  staleness now {now:.2f}  {node.type:<8} {node.title[:45]}')"
    ),
    new_markdown_cell(
        "## Token accounting\n\n"
        "Each turn's prompt as loom-nb estimated it (cl100k, plus 4 tokens per message) next to what Ollama\n"
        "reported (`prompt_eval_count`), and the output (`eval_count`) against what was reserved. In replay the\n"
        "stand-in counts with cl100k too, so the two agree by construction; with a real model the counts\n"
        "differ by its tokenizer; Ollama also reports fewer prompt tokens when it reuses its\n"
        "cache (ollama/ollama#2068), so a large negative error on a later turn is the cache, not the estimate."
    ),
    new_code_cell(
        "# NBVAL_CHECK_OUTPUT\n"
        "from loom_nb.chat.session import AccountingTable\n\n"
        "table = session.accounting_table()  # .rows for the dicts; .to_frame() with pandas\n"
        "# the table also has each turn's wall-clock 'seconds', left out here: it changes from run to run\n"
        "AccountingTable([{k: v for k, v in row.items() if k != 'seconds'} for row in table.rows])"
    ),
    new_code_cell("# NBVAL_CHECK_OUTPUT\nsession.accounting_figure()"),
    new_markdown_cell(
        "## Resuming\n\n"
        "Messages, turns, summaries, decisions and the graph live in the session folder; `Session.open` picks\n"
        "up where the chat stopped (the model defaults to the one it used)."
    ),
    new_code_cell(
        "# NBVAL_CHECK_OUTPUT\n"
        "folder = session.folder\n"
        "session.close()  # waits for the background indexer, which saves\n"
        "again = Session.open(folder, host=host)\n"
        "print(again)\n"
        "print(sorted(p.name for p in folder.iterdir() if p.is_file()))"
    ),
    new_code_cell(
        "again.close()\n"
        "if server is not None:\n"
        "    server.stop()"
    ),
    new_markdown_cell(
        "## Project rules, and tools the model explores with\n\n"
        "A workspace may keep standing instructions at its root, in `.loom.toml` (a `[rules]` table) or\n"
        "`LOOM.md`: every turn carries them in the system message, in a zone of their own (at most 5 % of\n"
        "the window), and reads the file again when it changes.\n\n"
        "In a window of 4,096 tokens or more, a model with tool calling is offered two more tools beside\n"
        "`load_context`: `search_context(query)` runs the engine on a question of its own and gets a small\n"
        "context pack back (within the same limits: at most 2 callbacks a turn, half the output reservation),\n"
        "and `record_decision(type, text, links)` writes to the decision graph, stamped with the model and\n"
        "the turn. Here a second stand-in plays a model at `num_ctx` 8,192 on the code sample; its three\n"
        "answers are the list in the cell (with a live server, the real model decides what to call)."
    ),
    new_code_cell(
        "# NBVAL_CHECK_OUTPUT\n"
        "code = open_sample('loom-nb-code')\n"
        "rules_file = code.graph.workspace / '.loom.toml'\n"
        "rules_file.write_text('[rules]\\n'\n"
        "                      'instructions = [\"Cite the file and lines of every claim.\", \"Prefer the smallest change that works.\"]\\n'\n"
        "                      'never_touch = [\"loom_nb/_data/\"]\\n'\n"
        "                      'commands = { test = \"make test\", lint = \"ruff check loom_nb\" }\\n')\n"
        "explorer = None if live else OllamaStandIn(models=[MODEL], show=default_show(context_length=131072, num_ctx=8192), answers=[\n"
        "    {'tool_calls': [{'name': 'search_context', 'arguments': {'query': 'atomic write temporary file replace'}}]},\n"
        "    {'tool_calls': [{'name': 'record_decision', 'arguments': {\n"
        "        'type': 'observation', 'text': 'Session files are written to a temporary file and moved into place with os.replace'}}]},\n"
        "    'save_graph writes each new content text to a temporary file and moves it into place with os.replace, '\n"
        "    'then syncs once before graph.json names them (store.py:168-192) [n219]. graph.json itself goes through '\n"
        "    'atomic_file, which writes a temporary file in the same folder and replaces the old one in one step, '\n"
        "    'so a reader sees the old file or the new one, never half of either (store.py:40-57) [n206].',\n"
        "]).start()\n"
        "coder = Session(code, model=MODEL, host=None if live else explorer.host)\n"
        "print(coder.project_rules().text)"
    ),
    new_code_cell(
        "# NBVAL_CHECK_OUTPUT\n"
        "turn = coder.send('How does saving a session avoid a half-written graph.json?', echo=True)\n"
        "print()\n"
        "print(turn)  # the zones now include 'project rules'; the two tool calls are the callbacks"
    ),
    new_markdown_cell(
        "What `search_context` handed the model: the pack's items with why each matched and a snippet,\n"
        "evidence to read and not instructions to follow. The decision it recorded says who recorded it."
    ),
    new_code_cell(
        "# NBVAL_CHECK_OUTPUT\n"
        "if explorer is not None:  # the stand-in keeps every request it answered\n"
        "    served = next(m['content'] for m in explorer.chat_requests[1]['messages'] if m['role'] == 'tool')\n"
        "    print('\\n'.join(served.splitlines()[:9]), '\\n…\\n')\n"
        "print(coder.decisions.render(300))"
    ),
    new_markdown_cell(
        "`decisions.reject(id)` marks a decision the user disagrees with: it stays in the graph, marked, and\n"
        "is never injected again. A rules file that does not parse names its line, and the chat goes on\n"
        "without rules."
    ),
    new_code_cell(
        "# NBVAL_CHECK_OUTPUT\n"
        "coder.decisions.reject('d1')\n"
        "print('injected now:', repr(coder.decisions.render(300)))\n"
        "rules_file.write_text('[rules]\\ninstructions = [Cite the file]\\n')  # unquoted text: not TOML\n"
        "rules = coder.project_rules()  # logs the warning below, once per new error\n"
        "print('rules in the next turn:', repr(rules.text))\n"
        "coder.close()\n"
        "if explorer is not None:\n"
        "    explorer.stop()"
    ),
    new_markdown_cell(
        "## From a terminal\n\n"
        "```bash\n"
        "loom-nb chat my-session --model llama3.2        # /manifest, /accounting, /decide, /link, /decisions, /quit\n"
        "```\n\n"
        "With no server it stops at once: `loom-nb: error: no Ollama server answered at http://127.0.0.1:11434:\n"
        "start it with `ollama serve` ...`, and a model that is not pulled says `ollama pull NAME`."
    ),
]

write(cells, "notebooks/05_chat_with_ollama.ipynb")
