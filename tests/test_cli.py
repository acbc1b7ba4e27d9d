import json
import logging
import os
import warnings

import pytest

from loom_nb import cli
from loom_nb.cli import MAX_INPUT_BYTES, main


def run(capsys, *argv):
    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


def test_add_query_show(tmp_path, capsys):
    s = str(tmp_path / "session")
    code, out, _ = run(capsys, "add", s, "OAuth refresh tokens are single use.", "--embedder", "hashing", "--type", "analysis")
    assert code == 0 and "added 1 node(s)" in out and "n1 [analysis" in out
    f = tmp_path / "notes.md"
    f.write_text("The dark theme lives in theme.css.")
    code, out, _ = run(capsys, "add", s, "--file", str(f), "--embedder", "hashing")
    assert code == 0 and "n2" in out
    code, out, _ = run(capsys, "query", s, "refresh tokens single use", "--budget", "300", "--mode", "fused", "--embedder", "hashing")
    assert code == 0
    assert "[Context loaded: 1 of 1 relevant nodes]" in out and "decision" in out
    code, out, _ = run(capsys, "query", s, "refresh tokens single use", "--budget", "300", "--json", "--embedder", "hashing")
    data = json.loads(out)
    assert data["table"][0]["node_id"] == "n1" and data["table"][0]["decision"] == "loaded"
    code, out, _ = run(capsys, "show", s)  # the session's own embedder, found from graph.json
    assert "2 content nodes" in out and "hashing-256" in out
    code, out, _ = run(capsys, "show", s, "n1", "--embedder", "hashing")
    assert "Content n1" in out and "OAuth refresh tokens are single use." in out
    code, out, _ = run(capsys, "show", s, "c1", "--embedder", "hashing")
    assert out.startswith("Concept c1")
    code, _, err = run(capsys, "show", s, "n99")
    assert code == 2 and "no node 'n99'" in err
    code, _, err = run(capsys, "show", s, "--embedder", "minilm")
    assert code == 2 and "hashing-256" in err and "all-MiniLM-L6-v2" in err  # vector spaces never mix


def test_a_one_shot_command_answers_without_the_cyclic_collector_and_gives_it_back(tmp_path, capsys, monkeypatch):
    """``loom-nb query`` and ``show`` exit after one answer: a full collection over a large
    session's objects was a third of the command (issue 16). main() restores the collector
    for a process that goes on."""
    import gc

    import loom_nb.cli as cli

    s = str(tmp_path / "session")
    assert run(capsys, "add", s, "OAuth refresh tokens are single use.", "--embedder", "hashing")[0] == 0
    seen = []
    real_open = cli._open
    monkeypatch.setattr(cli, "_open", lambda args: seen.append(gc.isenabled()) or real_open(args))
    assert gc.isenabled()
    assert run(capsys, "query", s, "refresh tokens", "--budget", "300", "--embedder", "hashing")[0] == 0
    assert run(capsys, "show", s)[0] == 0
    assert seen == [False, False]  # the session was opened with the collector off
    assert gc.isenabled()  # and main() gave it back
    assert run(capsys, "show", s, "n99")[0] == 2 and gc.isenabled()  # after an error too


def test_errors_are_one_clear_line(tmp_path, capsys):
    s = str(tmp_path / "session")
    binary = tmp_path / "image.png"
    binary.write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00")
    code, _, err = run(capsys, "add", s, "--file", str(binary), "--embedder", "hashing")
    assert code == 2 and "looks binary" in err
    huge = tmp_path / "huge.txt"
    huge.write_bytes(b"a" * (MAX_INPUT_BYTES + 1))
    code, _, err = run(capsys, "add", s, "--file", str(huge), "--embedder", "hashing")
    assert code == 2 and "limit" in err
    code, _, err = run(capsys, "add", s, "--file", str(tmp_path / "missing.txt"), "--embedder", "hashing")
    assert code == 2 and "no such file" in err
    if hasattr(os, "mkfifo"):  # a pipe is there, and is not a file to read to its end: say that, not "no such file"
        os.mkfifo(tmp_path / "pipe")
        code, _, err = run(capsys, "add", s, "--file", str(tmp_path / "pipe"), "--embedder", "hashing")
        assert code == 2 and "is not a regular file" in err and "without --file" in err
    (tmp_path / "bad").mkdir()
    (tmp_path / "bad" / "graph.json").write_text("{ truncated")
    code, _, err = run(capsys, "show", str(tmp_path / "bad"), "--embedder", "hashing")
    assert code == 2 and "graph.json" in err and "not valid JSON" in err
    code, _, err = run(capsys, "show", s, "n99", "--embedder", "hashing")
    assert code == 2 and "no session here" in err  # nothing was ever added to s
    code, _, err = run(capsys, "query", str(tmp_path / "nowhere"), "anything")
    assert code == 2 and "no session here" in err
    assert not (tmp_path / "nowhere").exists()
    with pytest.raises(SystemExit):
        main(["query"])


def test_paths_that_cannot_be_used_are_one_clear_line_not_a_traceback(tmp_path, capsys):
    """A session path that is a file, a report or --json path that is a folder: exit 2 with one
    line, and --json is checked before a long run, not after it."""
    a_file = tmp_path / "notes.txt"
    a_file.write_text("hello")
    for command in (["add", str(a_file), "hello"], ["index", str(a_file), str(tmp_path)]):
        code, _, err = run(capsys, *command, "--embedder", "hashing")
        assert code == 2 and err.strip() == f"loom-nb: error: {a_file} is a file, not a session folder"
    cases = tmp_path / "cases.jsonl"
    cases.write_text(json.dumps({"id": "x", "query": "q", "workspace": str(tmp_path / "gone"), "gold_files": ["a.py"]}) + "\n")
    code, out, err = run(capsys, "eval", str(cases), "--json", str(tmp_path), "--embedder", "hashing")
    assert code == 2 and "is a folder" in err and out == ""  # refused before any case ran


def test_eval_says_why_cases_failed_and_fails_when_none_ran(tmp_path, capsys):
    cases = tmp_path / "cases.jsonl"
    cases.write_text(json.dumps({"id": "x", "query": "q", "workspace": str(tmp_path / "gone"), "gold_files": ["a.py"]}) + "\n")
    code, out, err = run(capsys, "eval", str(cases), "--strategy", "loom,bm25", "--embedder", "hashing")
    assert code == 2 and "(1 failed)" in out  # an error, as every command's: the README says exit 2
    assert f"failed: x: {tmp_path / 'gone'} is not a folder" in out and "no case could be run" in err


def test_escape_sequences_in_a_workspace_are_shown_not_obeyed(tmp_path, capsys):
    # a file name and a heading that set the terminal's title and clear its screen
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "a\x1b[31mred.md").write_text("# \x1b]0;PWNED\x07\x1b[2J heading\n\nOAuth token refresh text \x9b31m\n")
    s = str(tmp_path / "session")
    assert run(capsys, "index", s, str(workspace), "--embedder", "hashing")[0] == 0
    shown = {}
    for command in (["show", s], ["show", s, "n1"], ["query", s, "oauth token refresh", "--budget", "500"]):
        code, out, _ = run(capsys, *command)
        assert code == 0 and "red.md" in out
        assert not [c for c in out if ord(c) < 32 and c not in "\n\t" or 0x7F <= ord(c) <= 0x9F]
        shown[command[-1]] = out
    assert "a^[[31mred.md" in shown[s] and "^[]0;PWNED^G" in shown["n1"] and "M-^[31m" in shown["n1"]
    code, out, _ = run(capsys, "query", s, "oauth token refresh", "--budget", "500", "--json")
    assert "M-^[31m" in json.dumps(json.loads(out))  # printed JSON is still JSON
    code, _, err = run(capsys, "show", s, "n\x1b[2J9")
    assert code == 2 and "\x1b" not in err


def test_a_warning_is_one_line_in_the_command_lines_words(tmp_path, capsys):
    """A library warning printed the library's file, its line of code, and advice in Python
    words (``pass window=N``, ``ask_ollama=True``) to someone who typed options."""
    s = str(tmp_path / "session")
    assert run(capsys, "add", s, "oauth refresh tokens rotate", "--embedder", "hashing")[0] == 0
    code, _, err = run(capsys, "query", s, "refresh", "--model", "my-own-model", "--embedder", "hashing")
    assert code == 0
    assert err.startswith("loom-nb: warning: no window known for model 'my-own-model'") and len(err.strip().splitlines()) == 1
    assert "pass --window N" in err and "(--ask-ollama)" in err and "window=N" not in err and ".py:" not in err
    code, _, err = run(capsys, "query", s, "refresh", "--budget", "9000", "--window", "4096", "--embedder", "hashing")
    assert code == 0 and err.startswith("loom-nb: warning: a budget of 9,000 tokens is more than") and ".py:" not in err
    assert warnings.showwarning is not cli._show_warning  # a notebook that calls main() keeps Python's display


def test_report_secrets_warns_of_a_bad_gitignore_line_once(tmp_path, caplog):
    """--report-secrets walks the workspace a second time; the user was already told of each
    pattern the walk drops."""
    ws = tmp_path / "ws"
    (ws / "a").mkdir(parents=True)
    (ws / "a" / ".gitignore").write_text("!\n*.log\n")
    (ws / "a" / "m.py").write_text("x = 1\n")
    with caplog.at_level("WARNING"):
        assert main(["index", str(tmp_path / "session"), str(ws), "--report-secrets", "--embedder", "hashing"]) == 0
    assert sum("ignoring the pattern" in r.getMessage() for r in caplog.records) == 1
    assert logging.getLogger("loom_nb.index.walk").level == logging.NOTSET  # put back as it was
