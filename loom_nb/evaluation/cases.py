"""Labelled cases: a query with the answer a person knows (files, nodes or line ranges),
read from JSON Lines (the format is in ``datasets/README.md``). A malformed line is reported
with its file and line number, and the other cases still load."""

from __future__ import annotations

import codecs
import json
import logging
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


from ..core.errors import LoomError

log = logging.getLogger(__name__)

# -- cases ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Case:
    """One labelled query: where to look, and what answers it."""

    id: str
    query: str
    workspace: Path | None = None
    """A folder to index (resolved against the cases file's folder)."""
    session: Path | None = None
    """Or a session folder, opened as it is."""
    gold_files: tuple[str, ...] = ()
    """Workspace-relative POSIX paths of the files that answer the query."""
    gold_nodes: tuple[str, ...] = ()
    """Or node ids (for sessions, whose content is not files)."""
    gold_ranges: dict[str, tuple[tuple[int, int], ...]] = field(default_factory=dict)
    """Line ranges (1-based, inclusive) that answer it, per path: graded by line recall."""
    budget: int | None = None
    line: int = 0
    """Line of the cases file the case came from (0 when built in code)."""
    history: tuple[tuple[str, str], ...] = ()
    """Earlier chat messages ``(role, content)``, oldest first: the case is a follow-up
    turn, planned by the chat's turn planner (:func:`loom_nb.chat.planner.plan_turn`)."""


def _str_list(value: Any, name: str) -> tuple[str, ...]:
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
        raise ValueError(f"{name} must be a list of non-empty strings")
    return tuple(v.replace("\\", "/").removeprefix("./") for v in value)


def _inside_path(path: str, name: str) -> str:
    """``path`` if it is relative and stays in the workspace: a gold file outside it can
    never be loaded, so the case would only ever grade as a miss."""
    if path.startswith("/") or re.match(r"^[A-Za-z]:", path) or ".." in path.split("/"):
        raise ValueError(f"{name}: {path!r} must be a path inside the workspace (relative, no '..')")
    return path


def _ranges(value: Any) -> dict[str, tuple[tuple[int, int], ...]]:
    if not isinstance(value, dict):
        raise ValueError('gold_ranges must be an object {"path": [[start, end], ...]}')
    out = {}
    for path, spans in value.items():
        if not isinstance(spans, list) or not spans:
            raise ValueError(f"gold_ranges[{path!r}] must be a non-empty list of [start, end]")
        clean = []
        for span in spans:
            ok = isinstance(span, list) and len(span) == 2 and all(isinstance(x, int) and not isinstance(x, bool) for x in span)
            if not ok or not 1 <= span[0] <= span[1]:
                raise ValueError(f"gold_ranges[{path!r}]: {span!r} is not [start, end] with 1 <= start <= end")
            clean.append((span[0], span[1]))
        out[path.replace("\\", "/").removeprefix("./")] = tuple(clean)
    return out


def parse_case(data: Any, base: Path, line: int = 0) -> Case:
    """One case from a parsed JSON object; ``ValueError`` says what is wrong with it.

    Paths in ``workspace`` and ``session`` resolve against ``base``; unknown fields are
    ignored. Gold paths must stay inside the workspace (relative, no ``..``), and a file with
    ``gold_ranges`` must be among the ``gold_files`` when those are given.
    """
    if not isinstance(data, dict):
        raise ValueError("a case must be a JSON object")
    for key in ("id", "query"):
        if not isinstance(data.get(key), str) or not data[key].strip():
            raise ValueError(f"{key!r} must be a non-empty string")
    if ("workspace" in data) == ("session" in data):
        raise ValueError("give exactly one of 'workspace' and 'session'")
    where = data.get("workspace", data.get("session"))
    if not isinstance(where, str) or not where:
        raise ValueError("'workspace' / 'session' must be a folder path")
    try:
        folder = (base / where).resolve()
    except (OSError, RuntimeError) as exc:  # pathlib raises RuntimeError on a symlink loop
        raise ValueError(f"'workspace' / 'session' {where!r} cannot be resolved ({exc})") from None
    gold_files = _str_list(data["gold_files"], "gold_files") if "gold_files" in data else ()
    gold_nodes = _str_list(data["gold_nodes"], "gold_nodes") if "gold_nodes" in data else ()
    gold_ranges = _ranges(data["gold_ranges"]) if "gold_ranges" in data else {}
    if not gold_files and not gold_nodes:
        raise ValueError("give 'gold_files' or 'gold_nodes'")
    for path in gold_files:
        _inside_path(path, "gold_files")
    for path in gold_ranges:
        _inside_path(path, "gold_ranges")
        if gold_files and path not in gold_files:
            raise ValueError(f"gold_ranges names {path!r}, which is not in gold_files")
    budget = data.get("budget")
    if budget is not None and (not isinstance(budget, int) or isinstance(budget, bool) or budget <= 0):
        raise ValueError("'budget' must be a positive integer")
    history = _history(data["history"]) if "history" in data else ()
    return Case(
        id=data["id"], query=data["query"],
        workspace=folder if "workspace" in data else None,
        session=folder if "session" in data else None,
        gold_files=gold_files, gold_nodes=gold_nodes, gold_ranges=gold_ranges, budget=budget, line=line,
        history=history,
    )


def _history(value: Any) -> tuple[tuple[str, str], ...]:
    if not isinstance(value, list):
        raise ValueError('history must be a list of {"role": "user"|"assistant", "content": "..."}')
    out = []
    for k, message in enumerate(value):
        ok = isinstance(message, dict) and message.get("role") in ("user", "assistant") and isinstance(message.get("content"), str)
        if not ok:
            raise ValueError(f'history[{k}] must be {{"role": "user"|"assistant", "content": "..."}}')
        out.append((message["role"], message["content"]))
    return tuple(out)


def load_cases(path: str | Path) -> tuple[list[Case], list[str]]:
    """Read a JSON Lines cases file: the valid cases, and one message per bad line.

    Blank lines and lines starting with ``#`` are skipped. A malformed line (bad JSON,
    nested too deeply, a number too long, a case with a missing or wrong field) does not
    stop the others; its message names the file and line number. A repeated ``id`` is an
    error for the later line. Lines end at ``\\n`` only, as JSON Lines says: a query may hold
    U+2028 or a form feed.

    Raises
    ------
    LoomError
        If the file cannot be read, or is not UTF-8 (the message names the line and byte).
        Nothing else escapes, whatever the file holds.

    >>> import tempfile
    >>> folder = Path(tempfile.mkdtemp())
    >>> _ = (folder / "cases.jsonl").write_text(
    ...     '{"id": "a", "query": "q", "workspace": ".", "gold_files": ["x.py"]}\\n{"id": "b"\\n')
    >>> cases, errors = load_cases(folder / "cases.jsonl")
    >>> [c.id for c in cases], len(errors), errors[0].endswith(":2: not valid JSON (Expecting ',' delimiter, column 11)")
    (['a'], 1, True)
    """
    path = Path(path)
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise LoomError(f"{path}: cannot read the cases file ({exc.strerror or exc})") from None
    text = _decode_cases(path, data)
    cases, errors, seen = [], [], set()
    for number, raw in enumerate(text.split("\n"), 1):
        raw = raw.removesuffix("\r")
        if not raw.strip() or raw.lstrip().startswith("#"):
            continue
        try:
            data = json.loads(raw)
        except json.JSONDecodeError as exc:
            errors.append(f"{path}:{number}: not valid JSON ({exc.msg}, column {exc.colno})")
            continue
        except RecursionError:  # "[[[[…": json's decoder recurses once per level
            errors.append(f"{path}:{number}: not valid JSON (nested too deeply)")
            continue
        except ValueError as exc:  # a number of more than 4,300 digits (sys.get_int_max_str_digits)
            errors.append(f"{path}:{number}: not valid JSON ({str(exc).split(':')[0]})")
            continue
        try:
            case = parse_case(data, path.parent, number)
        except ValueError as exc:
            errors.append(f"{path}:{number}: {exc}")
            continue
        if case.id in seen:
            errors.append(f"{path}:{number}: id {case.id!r} is already used")
            continue
        seen.add(case.id)
        cases.append(case)
    return cases, errors


def _decode_cases(path: Path, data: bytes) -> str:
    """The cases file as text (UTF-8, a BOM dropped); LoomError naming the line if it is not."""
    data = data.removeprefix(codecs.BOM_UTF8)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        column = exc.start - (data.rfind(b"\n", 0, exc.start) + 1) + 1
        raise LoomError(
            f"{path}:{line}: not UTF-8 (byte 0x{data[exc.start]:02x} at byte {column} of the line); "
            "save the cases file as UTF-8"
        ) from None


def gold_problems(case: Case, root: Path) -> list[str]:
    """What is wrong with ``case``'s gold labels against the workspace ``root``: a gold file
    that is not there, a range that runs past its file's end. Each would only ever grade
    as a miss, however well a strategy did.

    >>> import tempfile
    >>> root = Path(tempfile.mkdtemp())
    >>> _ = (root / "app.py").write_text("def f():\\n    return 1\\n")
    >>> gold_problems(Case("c", "q", gold_files=("app.py", "gone.py"), gold_ranges={"app.py": ((1, 2), (9, 10))}), root)
    ["case c: gold_ranges 'app.py' [9, 10] runs past the file's end (2 lines)", "case c: gold file 'gone.py' is not in the workspace"]
    """
    from ..core.files import read_text

    problems = []
    for path in dict.fromkeys((*case.gold_files, *case.gold_ranges)):
        file = root / path
        if not file.is_file():
            problems.append(f"case {case.id}: gold file {path!r} is not in the workspace")
            continue
        spans = case.gold_ranges.get(path, ())
        if not spans:
            continue
        try:
            text = read_text(file)
        except OSError:
            continue
        lines = text.count("\n") + (0 if text.endswith("\n") or not text else 1)
        for start, end in spans:
            if end > lines:
                problems.append(f"case {case.id}: gold_ranges {path!r} [{start}, {end}] runs past the file's end ({lines} lines)")
    return problems


# -- what a strategy loaded, and grading it ------------------------------------------------
