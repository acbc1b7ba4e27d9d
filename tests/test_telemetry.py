"""Telemetry (seed 003, issue 19): off by default; when on, a query emits classify, embed,
rank and pack events, an index run an index event, a chat turn its requests and callbacks,
each with its duration and counts, in events.jsonl and in memory."""

from __future__ import annotations

import json

import ollama

from loom_nb import HashingEmbedder, Loom
from loom_nb.chat.replay import OllamaStandIn
from loom_nb.chat.session import Session
from loom_nb.cli import main
from loom_nb.core.telemetry import EVENTS_FILE, read_events


def notes_loom(folder=None) -> Loom:
    loom = Loom(folder, embedder=HashingEmbedder())
    for text in ("OAuth refresh tokens rotate on every use.", "The gateway retries failed requests twice.",
                 "Dark theme colours live in theme.css."):
        loom.add(text, split=False)
    return loom


def test_off_by_default_nothing_is_recorded_or_written(tmp_path):
    loom = notes_loom(tmp_path / "s")
    loom.query("why does the refresh fail?", budget=300)
    loom.save()
    assert loom.events() == [] and not (tmp_path / "s" / EVENTS_FILE).exists()


def test_a_query_emits_its_steps_with_durations_that_add_up(tmp_path):
    loom = notes_loom(tmp_path / "s")
    loom.telemetry(True)
    result = loom.query("why does the refresh fail?", budget=300)
    events = read_events(tmp_path / "s")
    assert [e["kind"] for e in events] == ["classify", "embed", "rank", "pack"]
    assert [e["seconds"] for e in events] == [result.timings[k] for k in ("classify", "embed", "rank", "pack")]
    assert sum(result.timings.values()) <= result.seconds
    pack = events[-1]
    assert pack["loaded"] == result.loaded and pack["context_tokens"] == result.packed.context_tokens
    assert events[2]["nodes"] == 3 and events[0]["kind"] == "classify" and events == loom.events()


def test_index_and_chat_turns_emit_theirs(tmp_path):
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "auth.py").write_text("def refresh(token):\n    return token\n")
    loom = notes_loom(tmp_path / "s")
    loom.telemetry(True)
    report = loom.index(workspace, progress=False, wait=True)
    (index_event,) = [e for e in loom.events() if e["kind"] == "index"]
    assert index_event["files_indexed"] == report.files_indexed == 1 and index_event["nodes_added"] == report.nodes_added
    with OllamaStandIn(answers=["It rotates [n1]."]) as server:
        session = Session(loom, model="llama3.2", client=ollama.Client(host=server.host), background=False)
        turn = session.send("How is the token refreshed?")
    (request,) = [e for e in loom.events() if e["kind"] == "chat request"]
    assert request["model"] == "llama3.2" and request["turn"] == turn.number
    assert request["estimated_prompt"] == turn.calls[0].estimated_prompt and request["eval_count"] == turn.calls[0].eval_count


def test_a_torn_last_line_is_skipped_and_the_cli_prints_events(tmp_path, capsys):
    loom = notes_loom(tmp_path / "s")
    loom.telemetry(True)
    loom.query("why does the refresh fail?", budget=300)
    loom.save()
    with open(tmp_path / "s" / EVENTS_FILE, "a") as fh:
        fh.write('{"time": "2026-11-24T00:00:00", "kind": "ra')  # a process killed mid-write
    assert [e["kind"] for e in read_events(tmp_path / "s")] == ["classify", "embed", "rank", "pack"]
    assert main(["show", str(tmp_path / "s"), "--events", "2", "--embedder", "hashing"]) == 0
    lines = capsys.readouterr().out.strip().split("\n")
    assert len(lines) == 2 and " rank " in lines[0] and " pack " in lines[1] and " ms " in lines[1]


def test_the_figure_draws_a_trace_per_kind(tmp_path):
    loom = notes_loom()
    loom.telemetry(True)
    for _ in range(2):
        loom.query("why does the refresh fail?", budget=300)
    fig = loom.telemetry_figure()
    assert [t.name for t in fig.data] == ["classify", "embed", "rank", "pack"] and all(len(t.x) == 2 for t in fig.data)
    assert json.loads(fig.to_json())["layout"]["title"]["text"].startswith("Telemetry")
    assert notes_loom().telemetry_figure().layout.title.text.startswith("Telemetry: no events")
