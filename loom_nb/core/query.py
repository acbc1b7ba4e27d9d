"""A query as an object: the user's message and the conversation before it, kept apart.

A follow-up ("and where is that called from?") names nothing; the exchange before it does.
Gluing that exchange onto the message made the classifier grade the glue. Here the message
and the history travel as separate fields: the classifier reads :attr:`Query.message`
alone, and ranking reads :meth:`Query.retrieval_text`, the message followed by the previous
exchange, clipped.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Iterable, Mapping

from .boilerplate import strip_boilerplate
from .secrets import mask_secrets

_LONE_SURROGATE = re.compile("[\ud800-\udfff]")

ROLES = ("user", "assistant", "system")


@dataclass(frozen=True)
class Turn:
    """One earlier message of the conversation."""

    role: str
    content: str

    def __post_init__(self) -> None:
        if self.role not in ROLES:
            raise ValueError(f"a history message's role must be one of {ROLES}, got {self.role!r}")
        if not isinstance(self.content, str):
            raise ValueError("a history message's content must be text")


@dataclass(frozen=True)
class Query:
    """What a user asked, and what was said before.

    Parameters
    ----------
    message : str
        The user's message, as typed. The classifier grades this alone.
    history : sequence of ``{role, content}`` or :class:`Turn`
        Earlier messages, oldest first (a chat's previous turns; an evaluation case's
        ``history``). :meth:`Loom.query <loom_nb.core.engine.Loom.query>` ranks with the
        previous exchange and sends the turns in its ``messages``, between the system prompt
        and the message, as they were said; with a window, only the newest that fit its
        history zone, and the context gets what they leave.

    Examples
    --------
    >>> q = Query("and where is it called from?", [{"role": "user", "content": "What does rank() do?"},
    ...                                             {"role": "assistant", "content": "It scores every node."}])
    >>> q.message
    'and where is it called from?'
    >>> print(q.retrieval_text())
    and where is it called from?
    <BLANKLINE>
    (previous question: What does rank() do?)
    (previous answer: It scores every node.)
    """

    message: str
    history: tuple[Turn, ...] = field(default=())

    def __post_init__(self) -> None:
        if not isinstance(self.message, str):
            raise TypeError(f"the message must be str, got {type(self.message).__name__}")
        # a lone surrogate (bytes decoded with surrogateescape) crashed the embedder's tokenizer
        object.__setattr__(self, "message", _LONE_SURROGATE.sub("\ufffd", self.message))
        object.__setattr__(self, "history", tuple(_turn(m) for m in (self.history or ())))

    @property
    def blank(self) -> bool:
        """Whether the message holds nothing to ask: only spaces, control or format characters
        (a zero-width space, a NUL)."""
        return all(c.isspace() or unicodedata.category(c) in ("Cc", "Cf") for c in self.message)

    @classmethod
    def of(cls, value: "str | Query", history: Iterable[Any] = ()) -> "Query":
        """``value`` as a Query (a string becomes the message)."""
        if isinstance(value, Query):
            return value
        return cls(value, tuple(history))

    def masked(self) -> "Query":
        """This query with the credentials in its message and history masked at their length:
        what a prompt, a result, a report and an embedder are given (the user's own message
        is no more trusted than a file). Itself when there is nothing to mask.

        >>> Query('why does password = "hunter22x" fail?').masked().message
        'why does password = "*********" fail?'
        """
        message = mask_secrets(self.message)[0]
        history = tuple(Turn(t.role, mask_secrets(t.content)[0]) for t in self.history)
        if message == self.message and all(a.content == b.content for a, b in zip(history, self.history)):
            return self
        return Query(message, history)

    @property
    def previous_exchange(self) -> tuple[str, str]:
        """The last user message of the history and the answer after it ("" when none)."""
        question = answer = ""
        for k in range(len(self.history) - 1, -1, -1):
            if self.history[k].role == "user":
                question = self.history[k].content
                after = self.history[k + 1] if k + 1 < len(self.history) else None
                answer = after.content if after is not None and after.role == "assistant" else ""
                break
        return question, answer

    @property
    def follows_up(self) -> bool:
        """Whether the message follows an earlier question (it ranks with that exchange)."""
        return bool(self.previous_exchange[0])

    @cached_property
    def ranked_message(self) -> str:
        """The message as it ranks: without the form of an issue template (its headings,
        environment sections and images: :func:`~loom_nb.core.boilerplate.strip_boilerplate`).
        Computed once per query; :meth:`retrieval_text` and :meth:`vector_text` both read it."""
        return strip_boilerplate(self.message)

    def retrieval_text(self, previous_tokens: int = 120) -> str:
        """What the engine ranks against: the message, then the previous exchange, clipped.

        The message goes as :attr:`ranked_message`. The previous question and the start of the
        previous answer share ``previous_tokens`` (about ¾ as many words) and go second, so the
        message leads.
        """
        message = self.ranked_message
        question, answer = self.previous_exchange
        if not question:
            return message
        words = previous_tokens * 3 // 4
        clip = lambda t, n: " ".join(t.split()[:n])  # noqa: E731
        return f"{message}{PREVIOUS_MARK}{clip(question, words // 2)})\n(previous answer: {clip(answer, words // 2)})"

    def vector_text(self) -> str:
        """What the query's vector is made from: :meth:`retrieval_text`, its pasted code, logs
        or data left out when it has prose enough (:func:`~loom_nb.core.classify.vector_text`)."""
        from .classify import vector_text

        return vector_text(self.retrieval_text())


PREVIOUS_MARK = "\n\n(previous question: "
"""Where :meth:`Query.retrieval_text` appends the previous exchange to the message."""


def lead_line(retrieval_text: str) -> str:
    r"""The line a query of several lines leads with: an issue's title, a commit's subject, or
    a follow-up's message ahead of the exchange :meth:`Query.retrieval_text` appends to it.

    A report or a commit message opens with one line that says what it is about, then
    explains, pastes code and quotes errors; the words of that line are the ones a fix is
    named by. A follow-up's own words say what it asks; the previous exchange only says
    about what. A merge commit's subject ("Merge pull request #12 from a/b") gives way to the
    title under it. A query of one line has no lead apart from itself (""), and neither has one
    that opens with pasted code (a fence or a ``>>>`` prompt).

    >>> lead_line("ccode(sinc(x)) doesn't work\n```\nIn [30]: ccode(sinc(x))\n```")
    "ccode(sinc(x)) doesn't work"
    >>> lead_line("How does ranking work?")
    ''
    >>> history = [{"role": "user", "content": "What does rank() do?"}, {"role": "assistant", "content": "It scores."}]
    >>> lead_line(Query("and where is it called?", history).retrieval_text())
    'and where is it called?'
    >>> lead_line("```python\nimport sympy\n```\nfails")
    ''
    >>> lead_line("Merge pull request #20097 from a/fix-vstack\n\nBUG: Return a copy from single-table vstack\nbody")
    'BUG: Return a copy from single-table vstack'
    >>> lead_line("Merge pull request #20097 from a/fix-vstack\n\nReturn a copy from single-table vstack")
    ''
    """
    lines = [line.strip() for line in retrieval_text.splitlines() if line.strip()]
    if len(lines) > 1 and _MERGE_SUBJECT.match(lines[0]):
        lines = lines[1:]  # "Merge pull request #12 from a/b", then the pull request's title
    if len(lines) < 2 or lines[0].startswith(("```", "~~~", ">>>")):
        return ""
    return lines[0]


_MERGE_SUBJECT = re.compile(r"Merge (?:pull request|branch|remote-tracking branch) ", re.IGNORECASE)
"""The subject git and GitHub write for a merge commit; the title of what was merged is the
next line."""

_CALL = re.compile(r"\b([A-Za-z_]\w*)\s*\(")
_COMMIT_TYPE = re.compile(r"^\w+(?:\(([^()]*)\))?!?:\s*")
"""A conventional commit's ``type(scope)!:`` prefix; group 1 is the scope."""


def called_names(message: str) -> list[str]:
    """The names a message's lead line writes as calls: ``parse_duration()``,
    ``QuerySet.in_bulk()`` (the method's name), ``integrate(1/(2-cos(x)))``.

    A fifth of SWE-bench's issue titles write a call (a quarter of Django's), and the fix is
    often in the function called. Only the lead line counts (an issue's
    title, a commit's subject, or a message of one line): the code pasted below it calls
    everything its example needs. A conventional commit's ``fix(parser):`` is not a call. Nor
    is a call inside another call's arguments or inside brackets: ``cos`` in the integral
    above, and ``Field()`` and ``Query()`` in ``Annotated[str, Field(), Query()]``, are the
    example's data, not what it is about.

    >>> called_names("Fix parse_duration() for some negative durations")
    ['parse_duration']
    >>> called_names("integrate(1/(2-cos(theta)),(theta,0,pi))\\nSympy produces NaN.")
    ['integrate']
    >>> called_names("fix(parser): Allow QuerySet.in_bulk() on unique fields")
    ['in_bulk']
    >>> called_names("Support `Annotated[str, Field(), Query()]`"), called_names("Mod(Mod(x + 1, 2) + 1, 2) should be Mod(x, 2)")
    ([], ['Mod'])
    >>> called_names("Sum is zero\\n```python\\nprint(M.sum())\\n```")
    []
    """
    return list(dict.fromkeys(name for name, _ in lead_calls(message)))


def lead_calls(message: str) -> list[tuple[str, bool]]:
    """``(name, written as a method)`` for each call :func:`called_names` reads, in order: a
    method's name follows a dot (``QuerySet.in_bulk()``); the others are bare calls of a
    function or class.

    >>> lead_calls("Allow QuerySet.in_bulk() and integrate() on unique fields")
    [('in_bulk', True), ('integrate', False)]
    """
    subject = _COMMIT_TYPE.sub("", _subject(message), count=1)
    depth, depths = 0, []
    for char in subject:  # how many brackets are open before each character
        depths.append(depth)
        depth = depth + 1 if char in "([{" else max(depth - 1, 0) if char in ")]}" else depth
    return [(m.group(1), subject[m.start() - 1 : m.start()] == ".") for m in _CALL.finditer(subject) if depths[m.start()] == 0]


def _subject(message: str) -> str:
    """The lead line of a message, or the message itself when it is one line."""
    lone = message.strip()
    return lead_line(message) or ("" if "\n" in lone else lone)


def commit_scopes(message: str) -> list[str]:
    """The scopes of a conventional commit's subject, lower-cased: ``perf(tree):`` gives
    ``['tree']``, ``fix(middleware/static, cors)!:`` gives ``['middleware/static', 'cors']``.

    The Conventional Commits specification makes a scope "a noun describing a section of the
    codebase", and projects that use it name the file or the folder the change is in: in gin's
    46 scoped subjects the scope is the changed file's stem 36 times and its folder 7 times, in
    echo's 17 subjects 7 and 6 times. Only the lead line counts, as for :func:`called_names`;
    prose has no ``type(scope):`` prefix.

    >>> commit_scopes("perf(tree): optimize path parsing using strings.Count")
    ['tree']
    >>> commit_scopes("fix(Middleware/Static, cors)!: serve index.html\\n\\nbody")
    ['middleware/static', 'cors']
    >>> commit_scopes("fix: no scope"), commit_scopes("How does rank() score (roughly)?")
    ([], [])
    """
    match = _COMMIT_TYPE.match(_subject(message))
    if match is None or not match.group(1):
        return []
    return list(dict.fromkeys(part for part in re.split(r"[,\s]+", match.group(1).strip().lower()) if part))


def message_part(retrieval_text: str) -> str:
    """The message alone, from a :meth:`Query.retrieval_text` (case-insensitive).

    >>> history = [{"role": "user", "content": "What does rank() do?"}, {"role": "assistant", "content": "It scores."}]
    >>> message_part(Query("and where is it called?", history).retrieval_text())
    'and where is it called?'
    """
    cut = retrieval_text.lower().find(PREVIOUS_MARK)
    return retrieval_text if cut < 0 else retrieval_text[:cut]


def _turn(value: Any) -> Turn:
    if isinstance(value, Turn):
        return value
    if isinstance(value, Mapping) and "role" in value and "content" in value:
        return Turn(str(value["role"]), value["content"])
    role, content = getattr(value, "role", None), getattr(value, "content", None)
    if role is not None and content is not None:
        return Turn(role, content)
    raise ValueError(f"a history message must be {{role, content}}, got {value!r}")
