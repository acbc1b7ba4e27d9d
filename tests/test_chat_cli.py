"""``loom-nb chat`` against the stand-in server: streaming, /commands, saving, errors."""

from __future__ import annotations

import io
import json

import pytest

from loom_nb.cli import _chat_messages, main
from loom_nb.chat.replay import OllamaStandIn


def run_chat(monkeypatch, capsys, argv, stdin_text):
    monkeypatch.setattr("sys.stdin", io.StringIO(stdin_text))
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


def test_chat_streams_answers_records_decisions_and_saves(tmp_path, monkeypatch, capsys):
    folder = tmp_path / "s"
    stdin = 'why does refresh fail?\n"""\nline one of a log\nline two\n"""\n/decide goal Fix refresh\n/decisions\n/quit\nnever sent\n'
    with OllamaStandIn(answers=["Because the token rotated.", "The log shows two uses."]) as server:
        code, out, err = run_chat(monkeypatch, capsys, ["chat", str(folder), "--model", "llama3.2", "--host", server.host,
                                                        "--embedder", "hashing"], stdin)
        requests = server.chat_requests
    assert code == 0
    assert out.startswith("Because the token rotated.\nThe log shows two uses.\nrecorded d1\n")
    assert "  d1   goal        active    Fix refresh" in out  # /decisions printed the graph
    assert "[turn 1: loaded" in err and "[turn 2: loaded" in err
    assert len(requests) == 2  # "never sent" came after /quit
    assert requests[1]["messages"][-1]["content"].endswith("Question: line one of a log\nline two")
    chat = json.loads((folder / "chat.json").read_text())
    assert [m["role"] for m in chat["messages"]] == ["user", "assistant", "user", "assistant"]
    decisions = json.loads((folder / "decisions.json").read_text())
    assert decisions["nodes"][0]["title"] == "Fix refresh"


def test_chat_resumes_with_the_stored_model(tmp_path, monkeypatch, capsys):
    folder = tmp_path / "s"
    with OllamaStandIn(answers=["one", "two"]) as server:
        run_chat(monkeypatch, capsys, ["chat", str(folder), "--model", "llama3.2", "--host", server.host,
                                       "--embedder", "hashing"], "first\n")
        code, out, err = run_chat(monkeypatch, capsys, ["chat", str(folder), "--host", server.host], "second\n")
        sent = server.chat_requests[-1]["messages"]
    assert code == 0 and "1 earlier turns" in err
    assert [m["content"] for m in sent[1:3]] == ["first", "one"]


def test_chat_without_a_server_exits_2_and_says_what_to_do(tmp_path, monkeypatch, capsys):
    folder = tmp_path / "s"
    code, out, err = run_chat(monkeypatch, capsys, ["chat", str(folder), "--model", "llama3.2", "--host",
                                                    "http://127.0.0.1:9", "--embedder", "hashing"], "hello\n")
    assert code == 2
    assert "no Ollama server answered at http://127.0.0.1:9" in err and "ollama serve" in err
    assert not (folder / "chat.json").exists()


def test_chat_with_a_model_not_pulled(tmp_path, monkeypatch, capsys):
    with OllamaStandIn(models=["llama3.2"]) as server:
        code, out, err = run_chat(monkeypatch, capsys, ["chat", str(tmp_path / "s"), "--model", "mistral",
                                                        "--host", server.host, "--embedder", "hashing"], "hi\n")
    assert code == 2 and "ollama pull mistral" in err


def test_message_splitting():
    lines = ["a\n", "\n", '"""\n', "x\n", "\n", "y\n", '"""\n', "  b  \n", '"""\n', "tail\n"]
    assert [text for text, _ in _chat_messages(lines)] == ["a", "x\n\ny", "b", "tail"]


def test_a_pasted_block_and_a_line_starting_with_a_path_are_messages_not_commands():
    """A pasted traceback starting with /usr/lib/… was run as a /command and dropped (exit 0)."""
    lines = ['"""\n', "/usr/lib/python3/site.py line 3: ImportError\n", "Traceback follows\n", '"""\n',
             "/etc/hosts is missing an entry, why?\n", "/quit\n", "/quitt\n", "/decide goal X\n"]
    assert list(_chat_messages(lines)) == [
        ("/usr/lib/python3/site.py line 3: ImportError\nTraceback follows", False),
        ("/etc/hosts is missing an entry, why?", False), ("/quit", True), ("/quitt", True), ("/decide goal X", True)]


def test_an_empty_pasted_block_is_skipped_not_the_end_of_a_piped_chat(tmp_path, monkeypatch, capsys):
    with OllamaStandIn(answers=["one", "two"]) as server:
        code, out, err = run_chat(monkeypatch, capsys, ["chat", str(tmp_path / "s"), "--model", "llama3.2", "--host",
                                                        server.host, "--embedder", "hashing"], 'first\n"""\n  \n"""\nsecond\n')
        sent = [b["messages"][-1]["content"] for b in server.chat_requests]
    assert code == 0, err
    assert len(sent) == 2 and sent[1].endswith("Question: second")


@pytest.mark.parametrize("option", [["--window", "0"], ["--window", "-5"], ["--max-callbacks", "-1"], ["--window", "x"]])
def test_chat_refuses_a_window_below_1_and_negative_callbacks(tmp_path, capsys, option):
    with pytest.raises(SystemExit) as exit_info:
        main(["chat", str(tmp_path / "s"), "--model", "llama3.2", *option])
    assert exit_info.value.code == 2 and option[0] in capsys.readouterr().err


def test_a_failed_turn_in_a_piped_chat_exits_2_and_keeps_what_came_before(tmp_path, monkeypatch, capsys):
    folder = tmp_path / "s"
    with OllamaStandIn(answers=["fine", {"error": "model runner has unexpectedly stopped"}]) as server:
        code, out, err = run_chat(monkeypatch, capsys, ["chat", str(folder), "--model", "llama3.2", "--host", server.host,
                                                        "--embedder", "hashing"], "first\nsecond\nthird\n")
        sent = len(server.chat_requests)
    assert code == 2 and "unexpectedly stopped" in err
    assert sent == 2  # "third" was never sent
    chat = json.loads((folder / "chat.json").read_text())
    assert [m["content"] for m in chat["messages"]] == ["first", "fine"]  # the first turn was saved


def test_at_a_terminal_a_failed_turn_is_reported_and_the_chat_goes_on(tmp_path, monkeypatch, capsys):
    typed = iter(["first", "second", "third"])

    def fake_input(prompt):
        try:
            return next(typed)
        except StopIteration:
            raise EOFError from None

    stdin = io.StringIO("")
    stdin.isatty = lambda: True
    monkeypatch.setattr("sys.stdin", stdin)
    monkeypatch.setattr("builtins.input", fake_input)
    folder = tmp_path / "s"
    with OllamaStandIn(answers=["one", {"error": "model runner has unexpectedly stopped"}, "three"]) as server:
        code = main(["chat", str(folder), "--model", "llama3.2", "--host", server.host, "--embedder", "hashing"])
    out, err = capsys.readouterr()
    assert code == 0 and "loom-nb: error:" in err and "unexpectedly stopped" in err
    chat = json.loads((folder / "chat.json").read_text())
    assert [m["content"] for m in chat["messages"]] == ["first", "one", "third", "three"]


def test_latin1_bytes_piped_into_chat_are_decoded_as_add_decodes_them(tmp_path, monkeypatch, capsys):
    """printf 'caf\\xe9 …' | loom-nb chat failed the turn, blamed on Ollama ("'utf-8' codec can't
    encode character '\\udce9'"): stdin's lone byte became a surrogate no request can carry."""
    stdin = io.TextIOWrapper(io.BytesIO(b"caf\xe9 fails at startup\n"), encoding="utf-8", errors="surrogateescape")
    with OllamaStandIn(answers=["Check the locale."]) as server:
        monkeypatch.setattr("sys.stdin", stdin)
        code = main(["chat", str(tmp_path / "s"), "--model", "llama3.2", "--host", server.host, "--embedder", "hashing"])
        out, err = capsys.readouterr()
        sent = server.chat_requests[0]["messages"][-1]["content"]
    assert code == 0, err
    assert sent.endswith("café fails at startup") and out.startswith("Check the locale.")


def test_a_line_too_large_for_one_add_says_how_to_index_it_from_the_command_line(tmp_path, monkeypatch, capsys):
    from loom_nb.core import engine

    monkeypatch.setattr(engine, "MAX_ADD_CHARS", 100)
    with OllamaStandIn(answers=["one"]) as server:
        code, out, err = run_chat(monkeypatch, capsys, ["chat", str(tmp_path / "s"), "--model", "llama3.2", "--host",
                                                        server.host, "--embedder", "hashing"], "word " * 50 + "\n")
    assert code == 2 and "`loom-nb index SESSION FOLDER`" in err
