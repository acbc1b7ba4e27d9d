"""The cases reader on malformed input (issue #13 C): only LoomError, or a valid result.

:func:`loom_nb.evaluation.run.load_cases` reports a bad line in its list of errors (naming the
file and line) and keeps the others; a file it cannot read or decode raises
:class:`~loom_nb.core.errors.LoomError` naming the file (and line). Nothing else may escape:
not ``UnicodeDecodeError``, ``RecursionError``, ``ValueError`` or ``RuntimeError``.
"""

from __future__ import annotations

import json
import os
import re
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from loom_nb.core.errors import LoomError
from loom_nb.evaluation.run import Case, load_cases

GOOD = [
    {"id": "refresh", "query": "How is the refresh token exchanged?", "workspace": ".", "gold_files": ["pkg/auth.py"],
     "gold_ranges": {"pkg/auth.py": [[4, 6]]}},
    {"id": "discount", "query": "Where is the discount applied?", "workspace": "ws", "gold_files": "shop/cart.py", "budget": 300},
    {"id": "follow", "query": "and where does that live?", "session": "s", "gold_nodes": ["n1"],
     "history": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]},
]


def write(folder: Path, data: bytes, name: str = "cases.jsonl") -> Path:
    path = folder / name
    path.write_bytes(data)
    return path


def assert_valid_or_loom_error(path: Path) -> None:
    """The property: a LoomError that names the file, or cases and per-line messages that do."""
    try:
        cases, errors = load_cases(path)
    except LoomError as exc:
        assert str(exc).startswith(f"{path}:"), str(exc)
        return
    assert all(isinstance(c, Case) for c in cases)
    assert len({c.id for c in cases}) == len(cases)
    assert all(c.line >= 1 and c.id.strip() and c.query.strip() for c in cases)
    line = re.compile(re.escape(str(path)) + r":\d+: \S")
    assert all(isinstance(m, str) and line.match(m) for m in errors), errors


# -- the reported failures, one by one ------------------------------------------------------------

def test_a_file_that_is_not_utf8_raises_loom_error_naming_file_and_line(tmp_path):
    path = write(tmp_path, (json.dumps(GOOD[0]) + "\n").encode() + b'{"id": "caf\xe9", "query": "q"}\n')
    with pytest.raises(LoomError, match=re.escape(f"{path}:2: not UTF-8 (byte 0xe9 at byte 12 of the line)")):
        load_cases(path)


def test_a_utf16_file_raises_loom_error(tmp_path):
    path = write(tmp_path, (json.dumps(GOOD[0]) + "\n").encode("utf-16"))
    with pytest.raises(LoomError, match=re.escape(f"{path}:1: not UTF-8")):
        load_cases(path)


def test_a_utf8_bom_is_dropped(tmp_path):
    path = write(tmp_path, b"\xef\xbb\xbf" + (json.dumps(GOOD[0]) + "\n").encode())
    cases, errors = load_cases(path)
    assert [c.id for c in cases] == ["refresh"] and errors == []


@pytest.mark.parametrize("line, message", [
    ("[" * 100_000, "not valid JSON (nested too deeply)"),
    ('{"a": ' * 100_000, "not valid JSON (nested too deeply)"),
    ('{"id": "a", "query": "q", "workspace": ".", "gold_files": ["a"], "budget": ' + "9" * 5000 + "}",
     "not valid JSON (Exceeds the limit (4300 digits) for integer string conversion)"),
])
def test_a_line_json_cannot_decode_is_reported_and_the_rest_kept(tmp_path, line, message):
    path = write(tmp_path, (line + "\n" + json.dumps(GOOD[0]) + "\n").encode())
    cases, errors = load_cases(path)
    assert [c.id for c in cases] == ["refresh"]
    assert errors == [f"{path}:1: {message}"]


def test_lines_end_at_newline_only(tmp_path):
    """JSON strings may hold U+2028, U+0085 and other characters str.splitlines breaks at;
    ``loom-nb mine`` writes queries with ``ensure_ascii=False``, so they reach the file raw."""
    case = {**GOOD[0], "query": "first\u2028second\x85third"}
    path = write(tmp_path, (json.dumps(case, ensure_ascii=False) + "\r\n" + json.dumps(GOOD[1]) + "\r\n").encode())
    cases, errors = load_cases(path)
    assert errors == []
    assert [(c.id, c.query, c.line) for c in cases] == [("refresh", case["query"], 1), ("discount", GOOD[1]["query"], 2)]


def test_a_workspace_that_is_a_symlink_loop_is_a_bad_line(tmp_path):
    os.symlink("loop", tmp_path / "loop")
    path = write(tmp_path, (json.dumps({**GOOD[0], "workspace": "loop/x"}) + "\n").encode())
    cases, errors = load_cases(path)
    assert cases == [] and len(errors) == 1 and errors[0].startswith(f"{path}:1: ")


@pytest.mark.parametrize("workspace", ["a\x00b", "x" * 5000, "/" + "y/" * 3000])
def test_a_workspace_path_the_system_rejects_is_a_bad_line_or_a_case(tmp_path, workspace):
    path = write(tmp_path, (json.dumps({**GOOD[0], "workspace": workspace}) + "\n").encode())
    assert_valid_or_loom_error(path)


# -- fuzzing -----------------------------------------------------------------------------------------

_FOLDER = Path(tempfile.mkdtemp(prefix="loom-nb-cases-fuzz-"))

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
    max_leaves=4,
)


@st.composite
def mutated_line(draw) -> bytes:
    """A valid case line, then one or more of: a field's value replaced by any JSON, a field
    dropped, a byte changed, inserted or deleted, the line cut, or wrapped in deep nesting."""
    case = dict(draw(st.sampled_from(GOOD)))
    for _ in range(draw(st.integers(0, 2))):
        key = draw(st.sampled_from(sorted(case) + ["id", "query", "gold_ranges", "history", "budget", "extra"]))
        if draw(st.booleans()):
            case[key] = draw(json_values)
        else:
            case.pop(key, None)
    line = json.dumps(case, ensure_ascii=draw(st.booleans())).encode()
    for _ in range(draw(st.integers(0, 3))):
        kind = draw(st.sampled_from(["flip", "insert", "delete", "cut", "nest"]))
        at = draw(st.integers(0, len(line)))
        if kind == "flip" and at < len(line):
            line = line[:at] + bytes([draw(st.integers(0, 255))]) + line[at + 1:]
        elif kind == "insert":
            line = line[:at] + draw(st.sampled_from([b"\n", b"\r", b"\x00", b"\xff", b"\xe2\x80\xa8", b"[", b"{", b'"', b"\\", b"1e999"])) + line[at:]
        elif kind == "delete":
            line = line[:at] + line[at + 1:]
        elif kind == "cut":
            line = line[:at]
        elif kind == "nest":
            depth = draw(st.sampled_from([10, 1000, 3000]))  # the recursion limit is 1,000
            line = b"[" * depth + line + b"]" * draw(st.sampled_from([0, depth]))
    return line


files = st.tuples(
    st.lists(st.one_of(mutated_line(), st.sampled_from([json.dumps(c).encode() for c in GOOD]), st.binary(max_size=40)), max_size=4),
    st.sampled_from([b"\n", b"\r\n", b"\r"]),
).map(lambda parts: parts[1].join(parts[0]))


@settings(max_examples=1200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.binary(max_size=200))
def test_arbitrary_bytes_give_a_result_or_a_loom_error(data):
    assert_valid_or_loom_error(write(_FOLDER, data))


@settings(max_examples=1200, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(files)
def test_mutated_cases_files_give_a_result_or_a_loom_error(data):
    assert_valid_or_loom_error(write(_FOLDER, data))
