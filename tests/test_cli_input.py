"""The command line refuses bad input with one line and exit code 2, and changes nothing."""

from __future__ import annotations

import io
import json

import pytest

from loom_nb import HashingEmbedder, Loom, LoomError
from loom_nb.cli import main
from loom_nb.chat.replay import OllamaStandIn


class Stdin(io.TextIOWrapper):
    """A text stdin with a bytes buffer, as the real one has."""

    def __init__(self, data: bytes):
        super().__init__(io.BytesIO(data), encoding="utf-8")

    def isatty(self):
        return False


def run(monkeypatch, capsys, argv, stdin: bytes = b""):
    monkeypatch.setattr("sys.stdin", Stdin(stdin))
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture()
def session(tmp_path):
    folder = tmp_path / "s"
    loom = Loom.open(folder, embedder=HashingEmbedder())
    loom.add("Refresh tokens rotate on every use.")
    loom.save()
    return folder


def snapshot(folder):
    return {p.relative_to(folder): p.read_bytes() for p in folder.rglob("*") if p.is_file()}


@pytest.mark.parametrize("flags, message", [
    (["--budget", "-5"], "budget must be 0-10,000,000 tokens, got -5"),
    (["--budget", "18446744073709551615"], "budget must be"),
    (["--window", "-100"], "window must be 1-10,000,000 tokens, got -100"),
    (["--window", "0"], "window must be"),
])
def test_query_refuses_impossible_budgets_and_windows(session, monkeypatch, capsys, flags, message):
    before = snapshot(session)
    code, out, err = run(monkeypatch, capsys, ["query", str(session), "tokens", *flags])
    assert code == 2 and message in err and err.count("\n") == 1
    assert snapshot(session) == before


def test_add_refuses_binary_stdin_and_reads_cp1252(session, monkeypatch, capsys):
    before = snapshot(session)
    code, out, err = run(monkeypatch, capsys, ["add", str(session)], stdin=b"\x7fELF\x02\x01\x01\x00\x00" + bytes(range(256)))
    assert code == 2 and "stdin: looks binary" in err
    assert snapshot(session) == before
    code, out, err = run(monkeypatch, capsys, ["add", str(session)], stdin="caf\xe9 na\xefve, r\xe9sum\xe9".encode("cp1252"))
    assert code == 0
    texts = [Loom.open(session).text(n) for n in ("n1", "n2")]
    assert texts[1] == "café naïve, résumé"


def test_add_file_refuses_a_folder_and_decodes_like_indexing(session, tmp_path, monkeypatch, capsys):
    code, out, err = run(monkeypatch, capsys, ["add", str(session), "--file", str(tmp_path)])
    assert code == 2 and "is a folder" in err
    latin = tmp_path / "latin1.txt"
    latin.write_bytes("caf\xe9\r\nok".encode("cp1252"))
    code, out, err = run(monkeypatch, capsys, ["add", str(session), "--file", str(latin)])
    assert code == 0 and Loom.open(session).text("n2") == "café\nok"


def test_missing_session_error_speaks_to_a_cli_user(tmp_path, monkeypatch, capsys):
    code, out, err = run(monkeypatch, capsys, ["show", str(tmp_path / "nothing")])
    assert code == 2 and "start one by adding text or indexing a folder" in err and "create=True" not in err


def test_the_api_takes_embedder_names(tmp_path):
    assert Loom(embedder="hashing").embedder.model_id == "hashing-256"
    with pytest.raises(LoomError, match="unknown embedder 'word2vec'"):
        Loom(embedder="word2vec")
    with pytest.raises(LoomError, match="needs embed"):
        Loom(embedder=42)


def test_a_chat_that_fails_to_start_leaves_the_folder_as_it_was(session, monkeypatch, capsys):
    with OllamaStandIn(models=["llama3.2"], answers=["one"]) as server:
        run(monkeypatch, capsys, ["chat", str(session), "--model", "llama3.2", "--host", server.host], b"hello\n")
        before = snapshot(session)
        code, out, err = run(monkeypatch, capsys, ["chat", str(session), "--model", "mistral", "--host", server.host], b"hi\n")
        assert code == 2 and "ollama pull mistral" in err
        assert snapshot(session) == before  # chat.json still names llama3.2; no new generation
    code, out, err = run(monkeypatch, capsys, ["chat", str(session), "--host", "http://127.0.0.1:9"], b"hi\n")
    assert code == 2 and "ollama serve" in err
    assert snapshot(session) == before
    assert json.loads((session / "chat.json").read_text())["model"] == "llama3.2"


def test_piped_chat_errors_print_once_and_bad_commands_do_not_end_it(session, monkeypatch, capsys):
    stdin = b"/decide bogus thing\n/frobnicate\n/link d1\nfirst\n"
    with OllamaStandIn(models=["llama3.2"], answers=["one", {"error": "model runner has unexpectedly stopped"}]) as server:
        code, out, err = run(monkeypatch, capsys, ["chat", str(session), "--model", "llama3.2", "--host", server.host], stdin)
        assert code == 0
        assert err.count("decision node type must be one of") == 1
        assert "/frobnicate: unknown command" in err and "/link: usage" in err
        assert out.startswith("one")
        code, out, err = run(monkeypatch, capsys, ["chat", str(session), "--host", server.host], b"second\n")
    assert code == 2 and err.count("unexpectedly stopped") == 1


def test_add_file_refuses_a_credentials_file_as_add_file_does(session, tmp_path, monkeypatch, capsys):
    env = tmp_path / ".env"
    env.write_text("REDIS_AUTH=correcthorsebatterystaple\n")
    before = snapshot(session)
    code, out, err = run(monkeypatch, capsys, ["add", str(session), "--file", str(env)])
    assert code == 2 and "is a credentials file" in err and "correcthorse" not in out + err
    assert snapshot(session) == before


@pytest.mark.parametrize("argv, message", [
    (["add", "{s}", "TEXT", "--file", "{f}"], "give the text or --file, not both"),
    (["show", "{s}", "--events", "0"], "--events 0: give a number of events of at least 1"),
    (["show", "{s}", "--events", "-1"], "--events -1: give a number"),
    (["query", "{s}", "tokens", "--pack", "--prompt"], "give one of them"),
    (["add", "{s}", "a note", "--embedder", "ollama:"], "'ollama:' names no model"),
])
def test_options_that_would_be_dropped_or_misread_are_refused(session, tmp_path, monkeypatch, capsys, argv, message):
    note = tmp_path / "note.md"
    note.write_text("a note\n")
    before = snapshot(session)
    code, out, err = run(monkeypatch, capsys, [a.format(s=session, f=note) for a in argv])
    assert code == 2 and message in err and err.count("\n") == 1
    assert snapshot(session) == before


def test_a_reader_that_leaves_ends_the_command_quietly(session, monkeypatch, capsys):
    """``loom-nb query … --json | head -1`` printed "loom-nb: error: Broken pipe" and exit 2."""
    import loom_nb.cli as cli

    class Gone(io.StringIO):
        def write(self, text):
            raise BrokenPipeError(32, "Broken pipe")

    quieted = []
    monkeypatch.setattr(cli, "_quiet_stdout", lambda: quieted.append(True))
    monkeypatch.setattr("sys.stdout", Gone())
    code = main(["query", str(session), "tokens", "--json"])
    monkeypatch.undo()
    assert code == 141 and quieted and capsys.readouterr().err == ""


def test_the_unconfirmed_workspace_hint_names_the_option_on_the_command_line(tmp_path, monkeypatch, capsys, caplog):
    import shutil

    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "app.py").write_text("def refresh_token(u):\n    return u\n")
    assert main(["index", str(tmp_path / "s"), str(ws), "--embedder", "hashing"]) == 0
    shutil.copytree(tmp_path / "s", tmp_path / "copy")
    monkeypatch.setenv("LOOM_NB_CONFIG_DIR", str(tmp_path / "elsewhere"))  # another account: nothing confirmed
    with caplog.at_level("WARNING", logger="loom_nb.core.engine"):
        main(["query", str(tmp_path / "copy"), "refresh token", "--budget", "300"])
    hint = [r.getMessage() for r in caplog.records if "never confirmed" in r.getMessage()]
    assert hint and f"until you pass --workspace {ws}" in hint[0]


def test_a_library_warning_reads_as_the_command_lines_own(tmp_path):
    """Found by a new user copying a session folder: the hint came out as ``WARNING
    loom_nb.core.engine: …``, where the README promises ``loom-nb: warning: …``."""
    import os
    import shutil
    import subprocess
    import sys

    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "app.py").write_text("def refresh_token(u):\n    return u\n")
    assert main(["index", str(tmp_path / "s"), str(ws), "--embedder", "hashing"]) == 0
    shutil.copytree(tmp_path / "s", tmp_path / "copy")
    env = {**os.environ, "LOOM_NB_CONFIG_DIR": str(tmp_path / "elsewhere")}  # another account: nothing confirmed
    run = subprocess.run([sys.executable, "-m", "loom_nb.cli", "query", str(tmp_path / "copy"), "refresh token",
                          "--budget", "300"], capture_output=True, text=True, env=env, timeout=120)
    assert run.returncode == 0
    hints = [line for line in run.stderr.splitlines() if "never confirmed" in line]
    assert len(hints) == 1 and hints[0].startswith("loom-nb: warning: ") and f"--workspace {ws}" in hints[0]
    assert "WARNING" not in run.stderr
