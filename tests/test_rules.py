"""Project rules (seed 001, issue 19): a workspace's standing instructions go into every chat
turn's system message, in a zone of their own, and are read again when the file changes; a
malformed file names its line and the chat goes on without it."""

from __future__ import annotations

import logging
import re

import ollama
import pytest

from loom_nb import HashingEmbedder, Loom
from loom_nb.chat.replay import OllamaStandIn, default_show
from loom_nb.chat.session import Session
from loom_nb.core.rules import ProjectRules, read_rules
from loom_nb.core.tokens import count_tokens

RULES = '''[rules]
instructions = ["Answer with file paths and line numbers.", "Prefer small diffs."]
never_touch = ["generated/"]
commands = { test = "make test" }
'''


def test_a_toml_file_becomes_rule_lines(tmp_path):
    (tmp_path / ".loom.toml").write_text(RULES)
    rules = read_rules(tmp_path)
    assert rules.error == "" and rules.path.name == ".loom.toml"
    assert rules.text.split("\n") == [
        "Project rules (.loom.toml, the user's standing instructions for this workspace):",
        "- Answer with file paths and line numbers.", "- Prefer small diffs.",
        "- Never change: generated/", "- Commands: test: `make test`"]


def test_a_loom_md_is_taken_as_written_and_toml_comes_first(tmp_path):
    (tmp_path / "LOOM.md").write_text("# House rules\n\nNo new dependencies without a reason.\n")
    assert read_rules(tmp_path).text.endswith("# House rules\n\nNo new dependencies without a reason.")
    (tmp_path / ".loom.toml").write_text(RULES)
    assert read_rules(tmp_path).path.name == ".loom.toml"
    assert read_rules(tmp_path / "nowhere") == ProjectRules(None, "") and not read_rules(None)


@pytest.mark.parametrize("text, message", [
    ("[rules]\ninstructions = [\"ok\"]\nnever_touch = generated/\n", r"\.loom\.toml: .*line 3"),
    ("[other]\nx = 1\n", r"no \[rules\] table"),
    ("[rules]\ninstruction = \"typo\"\n", r"unknown key 'instruction' in \[rules\] \(line 2\) \(known: commands, "),
    ("[rules]\ninstructions = 3\n", r"\[rules\] instructions \(line 2\) wants a string or a list of strings"),
    # the key and its line, not the whole table's shape: which value is wrong was left to guess
    ("[rules]\ninstructions = [\"ok\"]\n\n never_touch = \"generated/\"\n", r"\[rules\] never_touch \(line 4\) wants a list of strings"),
    ("[rules]\ncommands = { test = 3 }\n", r"\[rules\] commands \(line 2\) wants \{name = \"command\", \.\.\.\}"),
])
def test_a_malformed_file_says_what_and_where(tmp_path, text, message):
    (tmp_path / ".loom.toml").write_text(text)
    rules = read_rules(tmp_path)
    assert rules.text == "" and not rules
    assert re.search(message, rules.error), rules.error
    assert rules.error.endswith("the chat goes on without project rules")


def test_long_rules_are_cut_to_their_zone(tmp_path):
    (tmp_path / "LOOM.md").write_text("Rule. " * 2000)
    rendered = read_rules(tmp_path).render(100)
    assert count_tokens(rendered) <= 100 and rendered.endswith("[… rules cut to fit the window]")


def indexed_loom(workspace) -> Loom:
    (workspace / "auth.py").write_text("def refresh(token):\n    \"\"\"Rotate the refresh token.\"\"\"\n    return token\n")
    loom = Loom(embedder=HashingEmbedder())
    loom.index(workspace, progress=False, wait=True)
    return loom


def test_every_turn_carries_the_rules_and_sees_an_edit(tmp_path):
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / ".loom.toml").write_text(RULES)
    loom = indexed_loom(workspace)
    with OllamaStandIn(answers=["First.", "Second."], show=default_show(num_ctx=8192)) as server:
        session = Session(loom, model="llama3.2", client=ollama.Client(host=server.host), background=False)
        first = session.send("How is the token refreshed?")
        (workspace / ".loom.toml").write_text(RULES.replace("Prefer small diffs.", "Write tests first."))
        second = session.send("And where is it called?")
    systems = [request["messages"][0]["content"] for request in server.chat_requests]
    assert "- Prefer small diffs." in systems[0] and "- Write tests first." not in systems[0]
    assert "- Write tests first." in systems[1] and "- Prefer small diffs." not in systems[1]
    assert first.zones["project rules"] == count_tokens("\n\n" + read_rules(workspace).text.replace(
        "Write tests first.", "Prefer small diffs."))
    assert second.zones["project rules"] > 0 and sum(second.zones.values()) == 8192


def test_a_malformed_file_is_logged_once_and_the_chat_goes_on(tmp_path, caplog):
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / ".loom.toml").write_text("[rules]\ninstructions = [\"a\"]\nnever_touch = generated/\n")
    loom = indexed_loom(workspace)
    with caplog.at_level(logging.WARNING), OllamaStandIn(answers=["One.", "Two."]) as server:
        session = Session(loom, model="llama3.2", client=ollama.Client(host=server.host), background=False)
        turns = [session.send("How is the token refreshed?"), session.send("Why?")]
    assert [t.answer for t in turns] == ["One.", "Two."] and all(t.zones["project rules"] == 0 for t in turns)
    warnings = [r.getMessage() for r in caplog.records if ".loom.toml" in r.getMessage()]
    assert len(warnings) == 1 and "line" in warnings[0]
    assert "Project rules" not in server.chat_requests[0]["messages"][0]["content"]
