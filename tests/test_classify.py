"""Worked examples for the rule-based input classifier (seed 000 §7).

Each input is small enough to label by hand: the line numbers, kinds and split decisions in
the assertions are what a reader gets by reading the input line by line.
"""

from __future__ import annotations


import pytest

from loom_nb.core.classify import (
    INPUT_KINDS,
    SEGMENT_KINDS,
    Classification,
    Segment,
    classify,
    segment,
    split_input,
)
from loom_nb.core.config import LoomConfig
from loom_nb.core.tokens import count_tokens

SIMPLE = "What format is graph.json?"
MULTI = (
    "First, how does the ranking combine its signals? Then, why is the budget split "
    "before packing? And also, where are the weights stored?"
)
PYTHON = '''def add(a, b):
    """Add two numbers."""
    result = a + b

    return result
'''
# 30 lines, each about 25 tokens: 700+ tokens, well over the 120-token split threshold.
LOG_LINES = [
    f"2024-05-01 12:00:{i:02d} INFO worker-{i % 3} processed batch {i} in {i * 7} ms"
    for i in range(30)
]
LOG = "\n".join(LOG_LINES)
QUESTION = "Why does my worker keep restarting every few seconds? Here is the log:"
TRACEBACK = '''Traceback (most recent call last):
  File "main.py", line 9, in <module>
    main()
  File "main.py", line 5, in main
    raise ValueError("bad config")
ValueError: bad config'''
JSON_TEXT = '{\n  "name": "loom",\n  "nodes": [1, 2, 3],\n  "edges": {"a": "b"}\n}'
XML_TEXT = '<?xml version="1.0"?>\n<graph>\n  <node id="1">hello</node>\n  <node id="2"/>\n</graph>'


def kinds(segments: list[Segment] | tuple[Segment, ...]) -> list[tuple[str, int, int]]:
    return [(s.kind, s.start_line, s.end_line) for s in segments]


# -- kinds ---------------------------------------------------------------------------------


def test_simple_query():
    c = classify(SIMPLE)
    assert c.kind == "simple_query"
    assert c.complexity < 0.3
    assert not c.should_split
    assert kinds(c.segments) == [("prose", 1, 1)]
    assert c.segments[0].text == SIMPLE
    assert c.signals["questions"] == 1
    assert c.signals["interrogatives"] == 1  # "What"
    assert c.tokens == count_tokens(SIMPLE)


def test_multi_part_query_is_complex_and_scores_higher():
    c = classify(MULTI)
    assert c.kind == "complex_query"
    assert c.signals["questions"] == 3
    # "First", "Then", "And also": the marker regex finds each once
    assert c.signals["multi_part_markers"] == 3
    assert c.complexity > classify(SIMPLE).complexity


def test_python_function_is_code():
    c = classify(PYTHON)
    assert c.kind == "code"
    assert kinds(c.segments) == [("code", 1, 5)]  # the blank line 4 stays inside the segment
    assert c.signals["code_lines"] == 4
    assert c.signals["indented_line_ratio"] == pytest.approx(3 / 6)  # 6 lines: trailing "\n"


def test_javascript_is_code():
    js = (
        "const add = (a, b) => {\n  return a + b;\n};\n"
        "function main() {\n  console.log(add(1, 2));\n}"
    )
    assert classify(js).kind == "code"


def test_timestamped_lines_are_logs():
    c = classify(LOG)
    assert c.kind == "logs"
    assert c.signals["log_lines"] == 30
    assert c.signals["timestamps"] == 30
    assert kinds(c.segments) == [("logs", 1, 30)]
    assert not c.should_split  # over the threshold, but only one kind of content


@pytest.mark.parametrize(
    "line",
    [
        "[12:00:01] server started",
        "May  1 12:00:01 host sshd[42]: Accepted publickey",
        "[ERROR] connection refused",
        "WARNING: disk almost full",
        '127.0.0.1 - - [01/May/2024:12:00:01 +0000] "GET / HTTP/1.1" 200 512',
    ],
)
def test_other_log_formats(line):
    assert classify("\n".join([line] * 3)).kind == "logs"


def test_json_object_is_pasted_data():
    c = classify(JSON_TEXT)
    assert c.kind == "pasted_data"
    assert c.signals["json_like"] == 1.0
    assert {s.kind for s in c.segments} == {"data"}


def test_xml_is_pasted_data():
    c = classify(XML_TEXT)
    assert c.kind == "pasted_data"
    assert c.signals["xml_like"] == 1.0
    assert c.signals["json_like"] == 0.0


def test_csv_rows_are_data():
    csv = "id,name,score\n1,alice,3\n2,bob,4\n3,carol,5"
    c = classify(csv)
    assert c.kind == "pasted_data"
    assert c.signals["data_lines"] == 4


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        ("DATABASE_URL=postgres://localhost/db\nDEBUG=true\nPORT=8080", "pasted_data"),
        ("name: loom\nversion: 0.1\ndeps:\n  - networkx\n  - textstat", "pasted_data"),
        ("x = load()\ny = transform(x)\nprint(y)", "code"),
        ("Shopping list:\n- eggs\n- milk", "complex_query"),  # two list items: multi-part
    ],
)
def test_line_level_formats(text, kind):
    assert classify(text).kind == kind


def test_python_traceback_is_logs():
    c = classify(TRACEBACK)
    assert c.kind == "logs"
    assert c.signals["stack_traces"] == 1  # one trace: frames and source lines continue it
    assert kinds(c.segments) == [("logs", 1, 6)]


def test_java_and_js_stack_traces():
    java = (
        'Exception in thread "main" java.lang.IllegalStateException: boom\n'
        "\tat com.x.Y.z(Y.java:12)\n\tat com.x.Y.main(Y.java:5)\n"
        "Caused by: java.io.IOException: disk\n\tat com.x.Z.q(Z.java:1)\n\t... 3 more"
    )
    js = "TypeError: x is not a function\n    at f (app.js:1:2)\n    at /srv/app.js:9:5"
    for text in (java, js):
        c = classify(text)
        assert c.kind == "logs"
        assert c.signals["stack_traces"] == 1


# -- mixed input, splitting and splicing ---------------------------------------------------


def test_question_plus_log_is_mixed_and_splits_in_two():
    text = QUESTION + "\n\n" + LOG  # line 1 question, line 2 blank, lines 3..32 the log
    c = classify(text)
    assert c.tokens >= LoomConfig().split_threshold_tokens
    assert c.kind == "mixed"
    assert c.should_split
    parts = split_input(text)
    assert kinds(parts) == [("prose", 1, 1), ("logs", 3, 32)]
    assert parts[0].text == QUESTION
    assert parts[1].text == LOG


def test_short_question_plus_log_is_never_split():
    text = "Why does it crash?\n" + "\n".join(LOG_LINES[:3])
    assert count_tokens(text) < LoomConfig().split_threshold_tokens
    c = classify(text)
    assert c.kind == "mixed"  # the structure differs...
    assert not c.should_split  # ...but short inputs pass through (§7.2)
    assert len(c.segments) == 2
    parts = split_input(text)
    assert len(parts) == 1
    assert parts[0].text == text
    assert (parts[0].start_line, parts[0].end_line) == (1, 4)
    assert parts[0].kind == "logs"  # the dominant kind: three log lines outweigh the question


def test_threshold_comes_from_config():
    text = QUESTION + "\n\n" + LOG
    huge = LoomConfig(split_threshold_tokens=10_000)
    assert not classify(text, huge).should_split
    assert len(split_input(text, huge)) == 1


def test_tiny_prose_bridge_between_logs_is_spliced():
    # lines 1-15 log, 16 blank, 17 bridge, 18 blank, 19-33 log: the bridge is 1 line, no question
    text = "\n".join(LOG_LINES[:15]) + "\n\nAnd here is the rest:\n\n" + "\n".join(LOG_LINES[15:])
    assert kinds(segment(text)) == [("logs", 1, 15), ("prose", 17, 17), ("logs", 19, 33)]
    parts = split_input(text)
    assert kinds(parts) == [("logs", 1, 33)]
    assert parts[0].text == text
    assert not classify(text).should_split


def test_fenced_code_inside_prose():
    body = "\n".join(f"    total += weight_{i} * signal_{i}" for i in range(12))
    text = (
        "Can you explain what this ranking snippet computes and why it loops?\n\n"
        "```python\ndef score(node):\n    total = 0.0\n" + body + "\n    return total\n```\n\n"
        "What would change if the weights were normalised first?"
    )
    # line 1 prose, 2 blank, 3 fence, 4..18 code, 19 fence, 20 blank, 21 prose
    segs = segment(text)
    assert kinds(segs) == [("prose", 1, 1), ("code", 4, 18), ("prose", 21, 21)]
    assert "```" not in segs[1].text
    assert segs[1].text.startswith("def score(node):")
    assert segs[1].text.endswith("    return total")
    c = classify(text)
    assert c.signals["code_blocks"] == 1
    assert c.kind == "mixed"
    assert c.tokens >= LoomConfig().split_threshold_tokens
    assert c.should_split
    # both questions are kept (prose with a question is never tiny); the code stands alone
    assert [s.kind for s in split_input(text)] == ["prose", "code", "prose"]


def test_fence_language_decides_block_kind():
    text = "Here is the response:\n```json\n{\"a\": 1}\n```"
    assert [s.kind for s in segment(text)] == ["prose", "data"]


# -- complexity -----------------------------------------------------------------------------


def test_multi_part_question_with_stack_trace_scores_high():
    text = (
        "First, why does this crash when the config is loaded? Then, how do I fix it? "
        "And what does the error actually mean?\n\n" + TRACEBACK
    )
    c = classify(text)
    assert c.kind == "mixed"
    assert c.signals["stack_traces"] == 1
    assert c.complexity > 0.6


def test_complexity_by_hand():
    # "What is X?": 4 tokens, 1 question, no markers, one kind, fk_grade <= 0, 3 distinct words.
    # 0.25 * ln(5)/ln(1001) + 0.25 * 1/2 + 0 + 0 + 0.10 * 1.0 * 3/100 = 0.0582 + 0.125 + 0.003
    c = classify("What is X?")
    assert c.tokens == 4
    assert c.signals["fk_grade"] <= 0
    assert c.complexity == pytest.approx(0.1862, abs=1e-3)


@pytest.mark.parametrize(
    "text",
    ["", " ", "?", SIMPLE, MULTI, PYTHON, LOG, JSON_TEXT, XML_TEXT, TRACEBACK,
     QUESTION + "\n" + LOG + "\n" + PYTHON + "\n" + JSON_TEXT, "why? " * 5000],
)
def test_complexity_in_unit_interval(text):
    c = classify(text)
    assert 0.0 <= c.complexity <= 1.0
    assert c.kind in INPUT_KINDS
    assert all(s.kind in SEGMENT_KINDS for s in c.segments)


def test_more_questions_raise_complexity():
    questions = ["What is a concept node?", "How is it linked?", "Why 0.8?", "When is it pruned?"]
    scores = [classify(" ".join(questions[:n])).complexity for n in range(1, 5)]
    assert scores == sorted(scores)
    assert scores[0] < scores[-1]


# -- robustness ------------------------------------------------------------------------------


@pytest.mark.parametrize("text", ["", "   ", "\n\n\t\n"])
def test_empty_and_whitespace(text):
    c = classify(text)
    assert c.kind == "simple_query"
    assert c.complexity == 0.0
    assert c.segments == ()
    assert not c.should_split
    assert segment(text) == []
    assert split_input(text) == []


def test_crlf_line_endings():
    text = QUESTION + "\r\n\r\n" + "\r\n".join(LOG_LINES)
    parts = split_input(text)
    assert kinds(parts) == [("prose", 1, 1), ("logs", 3, 32)]
    assert "\r" not in parts[1].text
    assert parts[1].text == LOG


def test_one_megabyte_single_line_is_one_prose_segment():
    text = "a" * 1_000_000
    c = classify(text)
    parts = split_input(text)
    assert len(parts) == 1
    assert c.kind == "simple_query"
    assert kinds(c.segments) == [("prose", 1, 1)]
    assert len(parts) == 1 and len(parts[0].text) == 1_000_000


def test_binary_junk_and_unclosed_fence_do_not_crash():
    junk = bytes(range(256)).decode("latin-1") * 50
    assert classify(junk).kind in INPUT_KINDS
    c = classify("```python\ndef f():\n    return 1")  # never closed: code to the end
    assert kinds(c.segments) == [("code", 2, 3)]
    assert classify("```\n```").segments  # fences only: kept as one prose segment


# -- presentation ----------------------------------------------------------------------------


def test_str_is_readable():
    c = classify(QUESTION + "\n\n" + LOG)
    text = str(c)
    assert "mixed" in text
    assert f"{c.complexity:.2f}" in text
    assert "split: yes" in text
    assert "logs   lines 3-32" in text
    assert "0x" not in text
    assert isinstance(c, Classification) and c.reasons
