"""Rule-based input classification, chunking and splicing (seed 000 §7).

Why no LLM call: the classifier runs synchronously on every input before anything else (its
complexity sets the answer's share of the budget, its segments decide whether a paste becomes
separate content nodes), so it must take milliseconds, work offline and answer the same way
every time. Regexes label each line as prose, code, logs or data; runs of lines make
:class:`Segment` objects; simple statistics on the prose (questions, multi-part markers,
readability, lexical diversity) and the token length give the kind and a complexity score whose
formula is written out in :func:`classify` so a person can recompute it by hand.

Size: one table of line patterns and the segmenter, splicer and classifier that share it.
"""

from __future__ import annotations

import json
import logging
import math
import re
import threading
from dataclasses import dataclass

from .config import LoomConfig
from .display import Displayable
from .tokens import count_tokens, count_tokens_many

log = logging.getLogger(__name__)

INPUT_KINDS = ("simple_query", "complex_query", "pasted_data", "code", "logs", "mixed")
SEGMENT_KINDS = ("prose", "code", "logs", "data")

COMPLEXITY_WEIGHTS = {"length": 0.25, "asks": 0.25, "structure": 0.25,
                      "readability": 0.15, "diversity": 0.10}
"""Weights of the complexity components (they sum to 1). Hand-set starting values: size, the
number of things asked and a second kind of content each weigh a quarter; readability and
diversity only nudge (short questions have unreliable grades)."""
LENGTH_SATURATION_TOKENS = 1000  # the length component reaches 1 here (log scale)
MAX_LINE_CHARS = 500     # regexes see at most this much of a line: a 1 MB line costs O(1)
MAX_PROSE_CHARS = 20_000  # prose sample for textstat and word statistics
EXACT_TOKEN_CHARS = 100_000  # longer texts are counted in line-aligned chunks (within a few tokens)
TINY_LINES, TINY_TOKENS = 3, 24  # a segment under both is merged into a neighbour when splitting

FENCE = re.compile(r"\s{0,3}(```|~~~)\s*([\w+#.-]*)")
"""A line that opens or closes a fenced block (``match``; group 2 is the language). Any fence
closes the open block; core.boilerplate leaves what lies between untouched by the same rule."""
_TIMESTAMP = re.compile(
    r"\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}"                        # ISO 2024-05-01 12:00
    r"|\[\d{1,2}:\d{2}:\d{2}(?:[.,]\d+)?\]"                    # [12:00:01]
    r"|(?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) +\d{1,2} \d{2}:\d{2}:\d{2}"  # syslog
    r"|\d{2}/\w{3}/\d{4}:\d{2}:\d{2}:\d{2}"                    # Apache 01/May/2024:12:00:01
    r"|^\d{2}:\d{2}:\d{2}\b")
_LEVELS = "INFO|WARN|WARNING|ERROR|DEBUG|TRACE|FATAL|CRITICAL"
_LEVEL = re.compile(rf"\[(?:{_LEVELS}|ERR|NOTICE)\]|^\s*(?:{_LEVELS})\b[:\s|\]-]|\blevel=\w")
_STACK = re.compile(
    r"Traceback \(most recent call last\):|\s+File \"[^\"]*\", line \d+"     # Python frames
    r"|[A-Za-z_][\w.]*(?:Error|Exception|Exit|Interrupt)(?::\s|:?\s*$)"      # exception line
    r"|Exception in thread |\s*Caused by: |\s+\.\.\. \d+ more"               # Java
    r"|\s+at [\w$.<>/]+\([^()]*\)|\s+at [^\s(]+ \([^()]*:\d+(?::\d+)?\)|\s+at \S+:\d+:\d+"
    r"|During handling of the above exception|The above exception was the direct cause")
_CODE = re.compile(
    r"\s*(?:(?:async\s+)?def\s+\w+\s*\(|class\s+\w+[\s(:{<]|import\s+[\w.{*]"
    r"|from\s+[\w.]+\s+import\s|export\s+\w|(?:async\s+)?function\b\s*[\w$]*\s*\("
    r"|(?:const|let|var)\s+[\w$]+\s*[=;:]|(?:public|private|protected|static)\s+\w"
    r"|(?:pub\s+)?fn\s+\w+|func\s+[\w(]|#include\s*[<\"]|package\s+[\w.]+;?\s*$"
    r"|@[A-Za-z_][\w.]*(?:\(|\s*$)|(?:if|elif|while|for|with|except)\b.*:\s*$"
    r"|(?:else|try|finally)\s*:\s*$|//|/\*|[\w.]+\([^()]*\)\s*;?\s*$"
    r"|[\w.]+\s*[-+*/]?=\s*[\w.]*[(\[{])")  # last: calls and assignments of calls
_CODE_ENDS = ("{", "}", ";", "):", "=>")
_PROSE_START = re.compile(r"[A-Z][a-z']*,?\s+[a-z]")  # "Here is", "What does": not code
_DATA = re.compile(
    r"\s*(?:\{\s*(?:\"|$)|\[\s*(?:[\[{\"]|-?\d+(?:\.\d+)?\s*[,\]]|$)|\"[^\"]{1,200}\"\s*:"
    r"|</?[A-Za-z][\w:.-]*(?:\s[^<>]*)?/?>|<\?xml|<!--|\[[\w .-]+\]\s*$)")
_YAML = re.compile(r"\s*(?:- )?[\w.-]+:(?:\s|$)|\s*- \S")
_KEY_VALUE = re.compile(r"\s*[\w.-]+\s*=\s*(?:\"[^\"]*\"|'[^']*'|[\w.:/@+-]+)\s*$")  # literals
_WORD = re.compile(r"[A-Za-z][A-Za-z'-]*")
_INTERROGATIVE = re.compile(r"\b(?:what|why|how|when|where|which|who|whom|whose)\b", re.I)
_MARKER = re.compile(r"\b(?:and also|also|then|first(?:ly)?|second(?:ly)?|third(?:ly)?|finally"
                     r"|additionally|moreover|furthermore|as well as|after that|lastly)\b", re.I)
_LIST_ITEM = re.compile(r"^\s*(?:\d{1,2}[.)]|[-*\u2022])\s+\S", re.M)
_CLAUSE = re.compile(r"[,;]|\b(?:because|although|while|whereas|unless|but|if)\b", re.I)
_FENCE_KINDS = {"json": "data", "xml": "data", "csv": "data", "yaml": "data", "yml": "data",
                "toml": "data", "html": "data", "log": "logs", "logs": "logs"}


@dataclass(frozen=True)
class Segment:
    """A run of lines of one kind; ``text`` excludes code-fence lines and surrounding blanks."""

    kind: str
    text: str
    start_line: int
    end_line: int


@dataclass(frozen=True)
class Classification(Displayable):
    """What :func:`classify` found, with every measured signal and the reasons for the verdict."""

    kind: str
    complexity: float
    should_split: bool
    tokens: int
    signals: dict[str, float]
    segments: tuple[Segment, ...]
    reasons: tuple[str, ...]


    def __str__(self) -> str:
        why = next((r for r in self.reasons if "split" in r.lower()), "")
        out = [f"Classification: {self.kind} (complexity {self.complexity:.2f}, "
               f"{self.tokens:,} tokens)", f"split: {'yes' if self.should_split else 'no'} - {why}"]
        out += ["segments:"] + [f"  {s.kind:<6} lines {s.start_line}-{s.end_line}"
                                for s in self.segments] if self.segments else ["segments: none"]
        return "\n".join(out + ["reasons:"] + [f"  - {r}" for r in self.reasons])


@dataclass(frozen=True)
class _Scan:
    """Per-line labels (a SEGMENT_KIND, "blank" or "fence") and the structural counts."""

    lines: tuple[str, ...]
    labels: tuple[str, ...]
    code_blocks: int
    timestamps: int
    stack_traces: int


def _lines(text: str) -> list[str]:
    return text.replace("\r\n", "\n").replace("\r", "\n").split("\n")


def _table_rows(cut: list[str]) -> set[int]:
    """Indices of lines in data runs that one line alone cannot show: >= 3 CSV rows with the
    same comma count (>= 2, fields <= 40 chars), or >= 3 YAML lines with >= 2 ``key:``."""
    rows: set[int] = set()
    csv: list[int] = []
    yaml: list[int] = []
    for i, line in enumerate(cut + [""]):
        n = line.count(",")
        ok = n >= 2 and max(len(f) for f in line.split(",")) <= 40 and not FENCE.match(line)
        if csv and (not ok or n != cut[csv[0]].count(",")):
            rows.update(csv if len(csv) >= 3 else ())
            csv = []
        csv += [i] if ok else []
        if _YAML.match(line):
            yaml.append(i)
        elif line.strip() or i == len(cut):
            keys = sum(not cut[k].lstrip().startswith("- ") for k in yaml)
            rows.update(yaml if len(yaml) >= 3 and keys >= 2 else ())
            yaml = []
    return rows


def _label(line: str, prev: str, in_trace: bool, csv_row: bool) -> tuple[str, bool, bool]:
    """Label one non-blank line given the previous label; return (label, timestamp, stack)."""
    indented = line[:1] in (" ", "\t")
    if _STACK.match(line):
        return "logs", False, True
    stamped = _TIMESTAMP.search(line, 0, 48) is not None
    if stamped or _LEVEL.search(line, 0, 80):
        return "logs", stamped, False
    if (in_trace or prev == "logs") and indented:  # frame source lines, wrapped log messages
        return "logs", False, False
    stripped = line.strip()
    if prev == "code" and not _PROSE_START.match(line) and not stripped.endswith("?"):
        return "code", False, False  # indented bodies, closing braces, comments, assignments
    if csv_row or _DATA.match(line) or (prev == "data" and (indented or not stripped.strip("]},"))):
        return "data", False, False
    if _CODE.match(line) or stripped.endswith(_CODE_ENDS):
        return "code", False, False
    return ("data" if _KEY_VALUE.match(line) else "prose"), False, False


def _scan(text: str) -> _Scan:
    """Label every line. Fenced blocks take their language's kind, or the majority label of
    their lines (logs or data), else code; regexes only see the first MAX_LINE_CHARS."""
    lines = _lines(text)
    cut = [line[:MAX_LINE_CHARS] for line in lines]
    labels = ["blank"] * len(lines)
    fences: list[tuple[int, int, str]] = []
    i = 0
    while i < len(lines):
        fence = FENCE.match(cut[i])
        if fence:  # the block runs to the next fence line (or the end when unclosed)
            j = next((k for k in range(i + 1, len(lines)) if FENCE.match(cut[k])), len(lines))
            fences.append((i, j, fence.group(2).lower()))
            labels[i] = "fence"
            if j < len(lines):
                labels[j] = "fence"
            i = j
        i += 1
    csv = _table_rows(cut)
    prev, in_trace, stamps, traces = "", False, 0, 0
    for k, line in enumerate(cut):
        if labels[k] == "fence":
            prev, in_trace = "", False  # context never crosses a fence
        elif line.strip():
            labels[k], stamped, stack = _label(line, prev, in_trace, k in csv)
            stamps += stamped
            traces += stack and not in_trace  # count trace starts; continuations keep it open
            in_trace = stack or (in_trace and line[:1] in " \t")
            prev = labels[k]
    for start, end, lang in fences:
        inside = [labels[k] for k in range(start + 1, end) if labels[k] != "blank"]
        first = next((cut[k] for k in range(start + 1, end) if labels[k] != "blank"), "")
        votes = {"logs": True, "data": bool(_DATA.match(first))}  # key=value alone is code
        kind = _FENCE_KINDS.get(lang) or next((c for c in ("logs", "data") if votes[c] and
                                               inside.count(c) * 2 > len(inside)), "code")
        for k in range(start + 1, end):
            labels[k] = kind if labels[k] != "blank" else "blank"
    return _Scan(tuple(lines), tuple(labels), len(fences), stamps, traces)


def _make(scan: _Scan, kind: str, first: int, last: int) -> Segment:
    """A segment over 0-based lines first..last; fence lines are markup, never text."""
    body = [scan.lines[k] for k in range(first, last + 1) if scan.labels[k] != "fence"]
    return Segment(kind, "\n".join(body), first + 1, last + 1)


def _segments(scan: _Scan) -> list[Segment]:
    out: list[Segment] = []
    kind, first, last = "", -1, -1
    for k, label in enumerate(scan.labels + ("fence",)):
        if label == "blank":
            continue
        if label != kind and kind in SEGMENT_KINDS:
            out.append(_make(scan, kind, first, last))
        if label != kind:
            kind, first = label, k
        last = k
    filled = [k for k, lab in enumerate(scan.labels) if lab != "blank"]
    if not out and filled:  # only fence lines: keep them as prose rather than lose the text
        body = "\n".join(scan.lines[filled[0] : filled[-1] + 1]).strip()
        out.append(Segment("prose", body, filled[0] + 1, filled[-1] + 1))
    return out


def segment(text: str) -> list[Segment]:
    """The structural segments of ``text``: maximal runs of lines with one label.

    Blank lines join the run around them; a fence line always ends a run, so ``prose, code,
    prose`` around a fenced block stays three segments. Line numbers are 1-based.

    Examples
    --------
    >>> [(s.kind, s.start_line, s.end_line) for s in segment("Why?\\n```\\nx = 1\\n```")]
    [('prose', 1, 1), ('code', 3, 3)]
    """
    return _segments(_scan(text))


VECTOR_PROSE_WORDS = 5
"""Prose a message needs, beside its code, logs or data, for its vector to be made from the prose."""


def vector_text(text: str) -> str:
    """What a query's vector is made from: the prose of ``text`` when it also pastes code,
    logs or data and has at least :data:`VECTOR_PROSE_WORDS` words of prose, else ``text``.

    A sentence model's vector of a message that pastes a reproduction or a traceback follows
    the pasted code's surface (``package main``, imports, handlers) and pulls in every file that
    looks like it; the prose says what is wrong. The lexical signals still read the whole
    message, identifiers in the code included. Measured through the default path (2026-11-25,
    ``benchmarks/README.md``): gin +0.020 line recall at 4k (2 of 50 commit messages paste
    code), neutral on GitHub issues as reporters write them (37 of 49 change: −0.013 to
    +0.012 by budget), no other labelled set has such messages.

    >>> vector_text("Binding fails on an empty header value.\\n\\n```go\\nfunc main() {}\\n```")
    'Binding fails on an empty header value.'
    >>> vector_text("How are concepts named?")
    'How are concepts named?'
    """
    segs = segment(text)
    if all(s.kind == "prose" for s in segs):
        return text
    prose = "\n".join(s.text for s in segs if s.kind == "prose")
    return prose if len(prose.split()) >= VECTOR_PROSE_WORDS else text


def _count(text: str) -> int:
    """Exact tokens up to EXACT_TOKEN_CHARS characters; beyond, chunked (BPE on one 1 MB
    word is quadratic in tiktoken) and so within a token or two per 8,000 characters."""
    if len(text) <= EXACT_TOKEN_CHARS:
        return count_tokens(text)
    chunks, start = [], 0
    while start < len(text):
        end = text.rfind("\n", start + 4000, start + 8000) + 1 or start + 8000
        chunks.append(text[start:end])
        start = end
    return sum(count_tokens_many(chunks))


def _rough_tokens(texts: list[str]) -> list[int]:
    """Token sizes for splicing decisions only: exact for short texts (the tiny test), chars/4
    for long ones, whose size only breaks ties between neighbours."""
    exact = iter(count_tokens_many([t for t in texts if len(t) < 2000]))
    return [next(exact) if len(t) < 2000 else len(t) // 4 for t in texts]


def _splice(scan: _Scan, segs: list[Segment]) -> list[Segment]:
    """Merge same-kind neighbours, then absorb tiny segments (under TINY_LINES lines and
    TINY_TOKENS tokens; prose with a question is never tiny): a tiny bridge between two
    segments of one kind joins both, any other tiny segment joins its larger neighbour."""
    # a unit: [kind, first, last (0-based), tokens, non-blank lines, prose with a question]
    units = [[s.kind, s.start_line - 1, s.end_line - 1, n,
              sum(bool(line.strip()) for line in s.text.split("\n")),
              s.kind == "prose" and "?" in s.text]
             for s, n in zip(segs, _rough_tokens([s.text for s in segs]))]

    def tiny(u: list) -> bool:
        return u[4] < TINY_LINES and u[3] < TINY_TOKENS and not u[5]

    def absorb(us: list[list], absorb_tiny: bool) -> list[list]:
        out: list[list] = []
        for i, u in enumerate(us):
            left, right = (out[-1] if out else None), (us[i + 1] if i + 1 < len(us) else None)
            if absorb_tiny and tiny(u) and (left or right):
                both = left and right and left[0] == right[0]
                big = left if right is None or (left is not None and left[3] >= right[3]) else right
                u[0] = left[0] if both else big[0]
            if left and left[0] == u[0]:
                out[-1] = [u[0], left[1], u[2], left[3] + u[3], left[4] + u[4], left[5] or u[5]]
            else:
                out.append(list(u))
        return out

    units = absorb(units, False)
    for _ in range(5):  # each pass can only shrink the list; two passes settle real inputs
        before = len(units)
        units = absorb(units, True)
        if len(units) in (1, before):
            break
    return [_make(scan, kind, first, last) for kind, first, last, *_ in units]


def split_input(text: str, config: LoomConfig | None = None) -> list[Segment]:
    """Chunking and splicing (§7.2): the units to store as separate content nodes.

    Below ``config.split_threshold_tokens`` the input is never split: one segment holding
    the whole stripped text (fences included), of its dominant kind by characters. Above, the
    structural segments with same-kind neighbours spliced and tiny segments merged (see
    :func:`_splice`), so a question plus a pasted log gives exactly two units.
    """
    config = config or LoomConfig()
    scan = _scan(text)
    segs = _segments(scan)
    if not segs:
        return []
    if _count(text) < config.split_threshold_tokens:
        filled = [k for k, lab in enumerate(scan.labels) if lab != "blank"]
        whole = "\n".join(scan.lines).strip()
        sizes = {kind: sum(len(s.text) for s in segs if s.kind == kind) for kind in SEGMENT_KINDS}
        return [Segment(max(sizes, key=sizes.get), whole, filled[0] + 1, filled[-1] + 1)]
    return _splice(scan, segs)


def _prose_signals(prose: str) -> dict[str, float]:
    """Question, marker and readability statistics of the prose (first MAX_PROSE_CHARS)."""
    sample = prose[:MAX_PROSE_CHARS]
    words = _WORD.findall(sample)
    sig = {"words": float(len(words)), "questions": float(len(re.findall(r"\?+", sample))),
           "interrogatives": float(len(_INTERROGATIVE.findall(sample))),
           "multi_part_markers": float(len(_MARKER.findall(sample))
                                       + len(_LIST_ITEM.findall(sample))),
           "clauses": float(len(_CLAUSE.findall(sample))),
           "lexical_diversity": len({w.lower() for w in words}) / len(words) if words else 0.0,
           "avg_word_length": sum(map(len, words)) / len(words) if words else 0.0,
           "fk_grade": 0.0, "syllables_per_word": 0.0}
    if words:
        try:  # textstat is heuristic; junk text must degrade to neutral values, not crash
            sig["fk_grade"], sig["syllables_per_word"] = _readability(sample)
        except Exception as exc:  # pragma: no cover - depends on textstat internals
            log.debug("textstat failed on prose sample: %s", exc)
    return sig


_PUNCTUATION = re.compile(r"[^\w\s']")


def _readability(sample: str) -> tuple[float, float]:
    """The Flesch–Kincaid grade and syllables per word, with syllables counted by pyphen's
    en_US hyphenation rules.

    textstat's own count looks each word up in CMUdict first, which costs a 0.5–0.9 s load of
    134,000 entries on the first call of a process: most of a cold ``loom-nb query``
    (issue 16). pyphen, textstat's fallback for words outside CMUdict, loads in 0.05 s and
    gives the same count for 96 % of the words of the labelled queries and sample notes;
    the classifier's kinds, splits and modes are unchanged on them
    (``benchmarks/README.md``). Sentence and word counts are textstat's.

    >>> grade, syllables = _readability("The cat sat on the mat.")
    >>> round(grade, 2), syllables
    (-1.45, 1.0)
    """
    import textstat

    words = _PUNCTUATION.sub("", sample).lower().split()
    if not words:
        return 0.0, 0.0
    hyphenator = _hyphenator()
    per_word = sum(len(hyphenator.positions(w)) + 1 for w in words) / len(words)
    per_sentence = float(textstat.words_per_sentence(sample))
    return 0.39 * per_sentence + 11.8 * per_word - 15.59, per_word


def _hyphenator():
    global _HYPHENATOR
    with _HYPHENATOR_LOCK:  # loaded once, whichever thread asks first
        if _HYPHENATOR is None:
            import pyphen

            _HYPHENATOR = pyphen.Pyphen(lang="en_US")
    return _HYPHENATOR


_HYPHENATOR = None
_HYPHENATOR_LOCK = threading.Lock()


def _whole_text_signals(text: str) -> dict[str, float]:
    """json_like: the stripped text parses to a dict or list; xml_like: it opens with a tag
    (after an optional ``<?xml ...?>``) whose closing tag ends the text."""
    stripped = text.strip()
    json_like = xml_like = 0.0
    if stripped[:1] in ("{", "["):
        try:
            json_like = float(isinstance(json.loads(stripped), (dict, list)))
        except (ValueError, RecursionError):
            pass
    tag = re.match(r"(?:<\?xml[^<>]*\?>\s*)?<([A-Za-z][\w:.-]*)", stripped)
    if tag and stripped.endswith(">"):
        xml_like = float(f"</{tag.group(1)}>" in stripped[-200:] or stripped.endswith("/>"))
    return {"json_like": json_like, "xml_like": xml_like}


def _decide_kind(counts: dict[str, int], sig: dict[str, float]) -> tuple[str, str]:
    """The INPUT_KINDS verdict and its reason, by the rules in :func:`classify`."""
    structural = counts["code"] + counts["logs"] + counts["data"]
    nonblank = max(1, structural + counts["prose"])
    prose_big = counts["prose"] > 0 and (sig["questions"] > 0 or sig["words"] >= 8)
    struct_big = structural >= 3 or structural / nonblank >= 0.3
    top = max(("code", "logs", "data"), key=counts.get)
    if sig["json_like"] or sig["xml_like"]:
        return "pasted_data", f"The whole text parses as {'JSON' if sig['json_like'] else 'XML'}."
    if prose_big and struct_big:
        found = ", ".join(k for k in ("code", "logs", "data") if counts[k])
        return "mixed", (f"Prose ({counts['prose']} line(s), with a question or >= 8 words) "
                         f"plus {structural} line(s) of {found}.")
    if struct_big or (structural and not prose_big):
        if counts[top] < 0.6 * structural:
            return "mixed", f"No structural kind holds 60 % of the {structural} structured lines."
        return ({"data": "pasted_data"}.get(top, top),
                f"{counts[top]} of {nonblank} non-blank lines are {top}.")
    many = [name for name, limit in (("questions", 2), ("multi_part_markers", 2),
                                     ("clauses", 5), ("words", 60)) if sig[name] >= limit]
    if many:
        return "complex_query", f"Prose only, at or above the limit for {', '.join(many)}."
    return "simple_query", (f"Prose only: {sig['questions']:.0f} question(s), "
                            f"{sig['words']:.0f} words, under every multi-part limit.")


def _complexity(tokens: int, sig: dict[str, float], kinds: int) -> tuple[float, dict[str, float]]:
    """The weighted sum documented in :func:`classify`, and its components."""
    n = sig["questions"] + sig["multi_part_markers"]
    parts = {"length": min(1.0, math.log1p(tokens) / math.log1p(LENGTH_SATURATION_TOKENS)),
             "asks": n / (n + 1), "structure": min(1.0, max(0.0, kinds - 1.0)),
             "readability": min(max(sig["fk_grade"], 0.0), 16.0) / 16.0,
             "diversity": sig["lexical_diversity"] * min(1.0, sig["words"] / 100)}
    total = sum(COMPLEXITY_WEIGHTS[k] * v for k, v in parts.items())
    return min(1.0, max(0.0, total)), parts


_NAMED_CODE = re.compile(
    r"`[^`\n]+`"  # text in backticks
    r"|\b[a-z]+[A-Z]\w*|\b[A-Z][a-z0-9]+[A-Z]\w*"  # camelCase, CamelCase
    r"|\b[A-Za-z]\w*_\w*[A-Za-z0-9]"  # snake_case
    r"|\b[A-Za-z_]\w*\.[A-Za-z_]\w*"  # dotted: ctx.Bind, os.path
    r"|^\w+(?:\([\w./-]+\))?!?:",  # a commit's "fix(binding):" prefix
    re.M,
)


def names_code(text: str) -> bool:
    """Whether a message names code: an identifier, a dotted name, text in backticks, or a
    conventional commit's ``type(scope):`` prefix. Prose asking about a topic does not.

    >>> names_code("feat(binding): support encoding.UnmarshalText"), names_code("How are embeddings cached?")
    (True, False)
    >>> names_code("why does `pack` skip it"), names_code("what calls save_graph?"), names_code("Fix the README. Thanks!")
    (True, True, False)
    """
    return bool(_NAMED_CODE.search(text))


_INTERROGATIVES = frozenset(
    "how what where why which who whom whose when does do did is are was were can could should would will "
    "has have what's where's how's who's explain describe summarize summarise".split()
)
"""Words a question opens with, and the verbs of a request for an explanation ("Explain input
classification", one of seed 000's example queries). Over the mined sets' 461 commit subjects
and issue titles, only two "Do not …" subjects (left out below) and one issue title ("Where oo
belongs?", with a report under it) open with one."""


def asks_question(text: str) -> bool:
    """Whether a message is a question on its own: one line that ends with ``?``, opens with an
    interrogative word, or asks for an explanation ("Explain ...", "Describe ..."). A commit
    subject or an issue title describes a change ("Do not set ...", "Fix ..."), and an issue
    whose title asks ("Where oo belongs?") reports a fault below it; a question on its own
    asks how something works, and its answer is often a neighbourhood of code rather than
    one place (``LoomConfig.question_density``).

    >>> asks_question("How does the ranking engine score content?"), asks_question("Explain input classification")
    (True, True)
    >>> asks_question("Do not set WriteTimeout"), asks_question("Turn on _repr_html_ by default?"), asks_question("")
    (False, True, False)
    >>> asks_question("Why does it fail?\\nTraceback (most recent call last): ...")
    False
    """
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    if len(lines) != 1:
        return False
    if lines[0].endswith("?"):
        return True
    words = re.findall(r"[\w']+", lines[0].lower())
    return bool(words) and words[0] in _INTERROGATIVES and words[:2] != ["do", "not"]


def classify(text: str, config: LoomConfig | None = None) -> Classification:
    """Classify ``text`` by rules and statistics; no model call.

    Kind: whole-text JSON/XML is ``pasted_data``. Prose is *substantial* when it has a question
    or >= 8 words; structure (code, logs, data lines) when it has >= 3 lines or 30 % of the
    non-blank lines. Both -> ``mixed``; structure only -> its dominant kind (``mixed`` if none
    holds 60 %); prose only -> ``complex_query`` when it has >= 2 questions, >= 2 multi-part
    markers (also, then, first, list items...), >= 5 clause markers or >= 60 words, else
    ``simple_query``.

    Complexity, each component in [0, 1] and non-decreasing in its input::

        length      = min(1, ln(1 + tokens) / ln(1 + 1000))
        asks        = n / (n + 1),   n = questions + multi_part_markers
        structure   = min(1, kinds - 1),   kinds = distinct segment kinds
        readability = clip(fk_grade, 0, 16) / 16
        diversity   = lexical_diversity * min(1, words / 100)   (prose words)
        complexity  = .25 length + .25 asks + .25 structure + .15 readability + .10 diversity

    A second kind of content counts fully: a question about a paste asks the model to read
    two kinds of text. "What is X?" (4 tokens, 1 question, grade 0, diversity 1 * 3/100)
    scores .25 * .23 + .25 * .5 + .10 * .03 = 0.19.

    Split: only when tokens >= ``config.split_threshold_tokens`` and splicing leaves >= 2
    kinds.
    """
    config = config or LoomConfig()
    if not text.strip():
        return Classification("simple_query", 0.0, False, _count(text), {"lines": 0.0}, (),
                              ("Empty input: nothing to classify; no split.",))
    scan = _scan(text)
    segs = _segments(scan)
    tokens = _count(text)
    counts = {k: scan.labels.count(k) for k in SEGMENT_KINDS}
    spliced = _splice(scan, segs)
    kinds = sorted({s.kind for s in spliced}, key=SEGMENT_KINDS.index)
    raw_kinds = {s.kind for s in segs}
    n_lines = len(scan.lines)
    signals = {"lines": float(n_lines), "tokens": float(tokens),
               "blank_line_ratio": scan.labels.count("blank") / n_lines,
               "indented_line_ratio": sum(bool(line.strip()) and line[:1] in " \t"
                                          for line in scan.lines) / n_lines,
               "code_blocks": float(scan.code_blocks), "code_lines": float(counts["code"]),
               "log_lines": float(counts["logs"]), "data_lines": float(counts["data"]),
               "prose_lines": float(counts["prose"]), "timestamps": float(scan.timestamps),
               "stack_traces": float(scan.stack_traces), "segments": float(len(segs)),
               "segment_kinds": float(len(raw_kinds)), **_whole_text_signals(text),
               **_prose_signals("\n".join(s.text for s in segs if s.kind == "prose"))}
    kind, why = _decide_kind(counts, signals)
    complexity, parts = _complexity(tokens, signals, len(raw_kinds))
    reasons = [why, f"Complexity {complexity:.2f} = " + " + ".join(
        f"{COMPLEXITY_WEIGHTS[k]:.2f}*{k} {v:.2f}" for k, v in parts.items()) + "."]
    should_split = tokens >= config.split_threshold_tokens and len(kinds) >= 2
    if tokens < config.split_threshold_tokens:
        reasons.append(f"No split: {tokens} tokens < threshold {config.split_threshold_tokens}.")
    elif should_split:
        reasons.append(f"Split into {len(spliced)} units ({', '.join(kinds)}): "
                       f"{tokens} tokens >= threshold {config.split_threshold_tokens}.")
    else:
        reasons.append(f"No split: one kind of content ({', '.join(kinds)}) after splicing.")
    log.debug("classified %d tokens as %s (complexity %.2f)", tokens, kind, complexity)
    return Classification(kind, round(complexity, 4), should_split, tokens, signals,
                          tuple(segs), tuple(reasons))
