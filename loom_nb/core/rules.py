"""Project rules: the standing instructions of a workspace, in every chat turn (seed 001;
issue 19).

A workspace may hold, at its root, ``.loom.toml`` with a ``[rules]`` table or a ``LOOM.md``
file: style rules, folders never to touch, the commands to run. A chat turn puts them in the
system message, in a zone of their own that a window share caps (``project rules`` in
:mod:`loom_nb.core.budget`), and reads the file again when it changes. A malformed file never
stops a chat: the turn goes on without rules, and :attr:`ProjectRules.error` names the file and
the line.

``.loom.toml``::

    [rules]
    instructions = ["Answer with file paths and line numbers.", "Prefer small diffs."]
    never_touch = ["generated/", "vendor/"]
    commands = { test = "make test", lint = "ruff check loom_nb" }
"""

from __future__ import annotations

import re
import threading
import tomllib
from dataclasses import dataclass
from pathlib import Path

from .files import read_text
from .secrets import mask_secrets
from .tokens import count_tokens, truncate_to_tokens

__all__ = ["RULE_FILES", "MAX_RULES_BYTES", "ProjectRules", "RulesReader", "read_rules"]

RULE_FILES = (".loom.toml", "LOOM.md")
"""Where rules are looked for at the workspace root, in this order (the first found wins)."""
MAX_RULES_BYTES = 64_000
"""A rules file larger than this is refused: standing instructions are a page, not a manual."""
_KEYS = {"instructions", "never_touch", "commands"}


@dataclass(frozen=True)
class ProjectRules:
    """The rules of one workspace as read from its file."""

    path: Path | None
    """The file read (None: the workspace has none)."""
    text: str
    """What a turn's system message carries ("" without rules, or when the file is malformed)."""
    error: str = ""
    """Why the file was not used: the file and the line, as the parser said it."""

    def render(self, max_tokens: int) -> str:
        """The rules within ``max_tokens`` (cut at the end, with a note that they were)."""
        if not self.text or max_tokens <= 0:
            return ""
        if count_tokens(self.text) <= max_tokens:
            return self.text
        note = "\n[… rules cut to fit the window]"
        return truncate_to_tokens(self.text, max(max_tokens - count_tokens(note), 0)) + note

    def __bool__(self) -> bool:
        return bool(self.text)


_WANTS = {"instructions": "a string or a list of strings", "never_touch": "a list of strings",
          "commands": '{name = "command", ...}'}


def _at_line(text: str, key: str) -> str:
    """`` (line N)`` where ``key`` is assigned in the ``[rules]`` table of the TOML ``text``
    (tomllib names no line for a value it parsed), or "" when no line reads so.

    >>> _at_line('[other]\\nnever_touch = 1\\n\\n[rules]\\nnever_touch = "x"\\n', "never_touch")
    ' (line 5)'
    """
    pattern = re.compile(rf"""^\s*["']?{re.escape(key)}["']?\s*=""")
    inside = False
    for number, line in enumerate(text.splitlines(), 1):
        if re.match(r"\s*\[", line):  # a table header: is it [rules]?
            inside = re.match(r"\s*\[\s*rules\s*\]", line) is not None
        elif inside and pattern.match(line):
            return f" (line {number})"
    return ""


def _toml_rules(path: Path, text: str) -> ProjectRules:
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:  # its message names the line and column
        return ProjectRules(path, "", f"{path.name}: {exc}; the chat goes on without project rules")
    table = data.get("rules")
    if not isinstance(table, dict):
        return ProjectRules(path, "", f"{path.name}: no [rules] table; the chat goes on without project rules")
    unknown = sorted(set(table) - _KEYS)
    if unknown:
        return ProjectRules(path, "", f"{path.name}: unknown key {unknown[0]!r} in [rules]{_at_line(text, unknown[0])}"
                                      f"{f' (and {len(unknown) - 1} more)' if len(unknown) > 1 else ''} "
                                      f"(known: {', '.join(sorted(_KEYS))}); the chat goes on without project rules")
    instructions = table.get("instructions", [])
    instructions = [instructions] if isinstance(instructions, str) else instructions
    never = table.get("never_touch", [])
    commands = table.get("commands", {})
    wrong = [key for key, ok in (
        ("instructions", isinstance(instructions, list) and all(isinstance(i, str) for i in instructions)),
        ("never_touch", isinstance(never, list) and all(isinstance(n, str) for n in never)),
        ("commands", isinstance(commands, dict) and all(isinstance(c, str) for c in commands.values()))) if not ok]
    if wrong:
        return ProjectRules(path, "", f"{path.name}: [rules] {wrong[0]}{_at_line(text, wrong[0])} wants "
                                      f"{_WANTS[wrong[0]]}; the chat goes on without project rules")
    lines = [f"Project rules ({path.name}, the user's standing instructions for this workspace):"]
    lines += [f"- {' '.join(i.split())}" for i in instructions if i.strip()]
    if never:
        lines.append("- Never change: " + ", ".join(never))
    if commands:
        lines.append("- Commands: " + "; ".join(f"{name}: `{command}`" for name, command in commands.items()))
    return ProjectRules(path, "\n".join(lines) if len(lines) > 1 else "")


def read_rules(root: str | Path | None) -> ProjectRules:
    """The rules at the root of the workspace ``root`` (no rules when it has none)."""
    if root is None:
        return ProjectRules(None, "")
    for name in RULE_FILES:
        path = Path(root) / name
        if not path.is_file():
            continue
        try:
            if path.stat().st_size > MAX_RULES_BYTES:
                return ProjectRules(path, "", f"{name} is over {MAX_RULES_BYTES:,} bytes; the chat goes on without project rules")
            text = mask_secrets(read_text(path), remember=False)[0]  # rules go into every turn's system message
        except OSError as exc:
            return ProjectRules(path, "", f"{name} cannot be read ({exc.strerror or exc}); the chat goes on without project rules")
        if name.endswith(".toml"):
            return _toml_rules(path, text)
        body = text.strip()
        return ProjectRules(path, f"Project rules ({name}, the user's standing instructions for this workspace):\n{body}"
                            if body else "")
    return ProjectRules(None, "")


class RulesReader:
    """The rules of a workspace, read again only when the file changes (size or mtime)."""

    def __init__(self):
        self._key: tuple | None = None
        self._rules = ProjectRules(None, "")
        self._lock = threading.Lock()

    def current(self, root: str | Path | None) -> ProjectRules:
        key: tuple = (str(root),)
        if root is not None:
            for name in RULE_FILES:
                try:
                    st = (Path(root) / name).stat()
                    key += (name, st.st_size, st.st_mtime_ns)
                except OSError:
                    key += (name, None)
        with self._lock:
            if key != self._key:
                self._rules, self._key = read_rules(root), key
            return self._rules
