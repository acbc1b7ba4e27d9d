"""Credentials found and masked before text reaches a context, a prompt or a report (issue 18).

Indexing masks each file's whole text before it is cut into units
(:func:`loom_nb.index.indexer.mask_file`; a notebook cell by cell), so a key cut across units
is masked in every part, and titles, signatures, terms and embedded text come from the masked
text. Every node text is then read through :meth:`LoomGraph.text
<loom_nb.core.graph.LoomGraph.text>`, where :func:`mask_secrets` runs again: the packed
context, the prompt, a callback's text, a context pack's snippets, a node's view and an
exported report all get the masked text. A mask has **the length of what it hides** (``[aws-access-key]****``, or asterisks when
the label is longer), newlines kept, so line numbers, character spans of chunks and the
token budget all still hold. Files that are nothing but credentials (``.env``, ``*.pem``,
``id_rsa``, …) are indexed by name only: their content is never read (:func:`is_secret_file`).

Detection is a documented rule set, not a dependency: ``detect-secrets`` would scan a file
per call with a plugin pass each, where loom-nb masks every text it loads (tens per query) and
must stay fast. The rules:

- private key blocks (``-----BEGIN … PRIVATE KEY-----`` to its END line);
- keys with a known shape: AWS access key ids (``AKIA``/``ASIA``…), GitHub tokens (``ghp_``,
  ``gho_``, ``ghu_``, ``ghs_``, ``ghr_``, ``github_pat_``), Slack (``xox?-``), Stripe
  (``sk_live_``…), OpenAI and Anthropic (``sk-…``, ``sk-ant-…``), Google API keys (``AIza…``),
  JSON web tokens (``eyJ….eyJ….…``);
- a quoted literal of 6 or more characters assigned to a name that ends in password, secret,
  token, API key or private key (``password = "hunter22"``, ``refresh_token = "…"``;
  ``password = get_password()`` is a call, not a literal, and is left alone), and the same names
  in ``KEY=value`` lines of env files and shell, with the same checks. The word must end the
  name, give or take a suffix such as ``_value`` or ``_prod``: ``token_endpoint``,
  ``TokenLookup``, ``token_type``, ``api-keyword``, ``DB_PASSWORD_FILE`` and
  ``AUTH_TOKEN_HEADER`` name something else. Not taken for a credential: a number, a hex digest, a
  lower-case identifier, a URL without a user in it, a path, a template (``{env.SECRET}``), and,
  unless the name says password, letters and separators with no digit (``"X-CSRF-Token"``,
  ``"header:X-Token,form:csrf"``, ``"Bearer"``): header names and settings, where a token or
  key of random characters has digits;
- the password of a URL that carries one (``postgres://app:s3cret@db/prod``); a template
  (``${DB_PASSWORD}``) or a lower-case word (``user:pass@`` in docs) is left alone;
- a quoted literal of 32 or more characters of base64 or hex-and-letters in an assignment
  whose Shannon entropy is above 4.2 bits per character (random keys; a hex digest has at
  most 4.0, so hashes are left alone), unless it is an alphabet (``"0123…XYZabc…xyz"``, its
  characters in ascending runs, as Django's ``RANDOM_STRING_CHARS``) or a chain of words and
  numbers (``id_form-content_type-object_id-0-DELETE``), which have the entropy of a key and
  none of its randomness, or a ``sha384-…`` digest (subresource integrity, lock files).

Not caught: a credential in prose ("the password is hunter22"), a short unquoted value in code,
a key of a shape not listed above. Masking errs toward keeping code readable.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from dataclasses import dataclass
from fnmatch import fnmatchcase
from functools import lru_cache
from pathlib import PurePosixPath

from .lru import BoundedLRU

__all__ = ["SECRET_FILES", "Finding", "find_secrets", "is_secret_file", "line_spans", "mask_each", "mask_lines", "mask_secrets",
           "secret_file_notice"]

SECRET_FILES = (".env", ".env.*", "*.env", "*.pem", "*.key", "*.p12", "*.pfx", "id_rsa", "id_dsa", "id_ecdsa", "id_ed25519",
                ".netrc", ".pgpass", "*.keystore", "credentials", ".git-credentials", ".npmrc", ".pypirc")
"""File names indexed by name only: their content is never read into the session."""
ENTROPY_BITS = 4.2


@dataclass(frozen=True)
class Finding:
    """One credential: what kind, where (line from 1, character span), never its value."""

    kind: str
    line: int
    start: int
    end: int


_SHAPES: list[tuple[str, re.Pattern]] = [
    ("aws-access-key", re.compile(r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b")),
    ("github-token", re.compile(r"\bgh[pousr]_[A-Za-z0-9]{36,255}\b|\bgithub_pat_[A-Za-z0-9_]{22,255}\b")),
    ("slack-token", re.compile(r"\bxox[abprs]-[A-Za-z0-9-]{10,}\b")),
    ("stripe-key", re.compile(r"\b[rs]k_(?:live|test)_[A-Za-z0-9]{16,}\b")),
    ("anthropic-key", re.compile(r"\bsk-ant-[A-Za-z0-9_-]{20,}")),
    ("openai-key", re.compile(r"\bsk-(?:proj-)?[A-Za-z0-9_-]{32,}")),
    ("google-api-key", re.compile(r"\bAIza[0-9A-Za-z_-]{35}\b")),
    ("jwt", re.compile(r"\beyJ[A-Za-z0-9_-]{10,}\.eyJ[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}")),
]
_PREFIXES = {"aws-access-key": ("AKIA", "ASIA"), "github-token": ("gh", "github_pat_"), "slack-token": ("xox",),
             "stripe-key": ("k_live_", "k_test_"), "anthropic-key": ("sk-ant-",), "openai-key": ("sk-",),
             "google-api-key": ("AIza",), "jwt": ("eyJ",)}
"""A literal each shape starts with: a text holding none of them skips the shape's pattern."""
_PRIVATE_KEY = re.compile(r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----.*?(?:-----END [A-Z0-9 ]*PRIVATE KEY-----|\Z)", re.S)
_NAMES = r"(?:pass(?:word|wd)?|pwd|secret|client[_-]?secret|api[_-]?key|apikey|access[_-]?key|auth[_-]?token|access[_-]?token|token|private[_-]?key)"
_QUOTED = re.compile(r"[:=]\s*([\"'])([^\"'\s]{6,})\1")
_NAME_SUFFIX = r"(?:[_-]?(?:value|val|str|string|bytes|b64|base64|hash|hashed|plain|raw|enc|encrypted|prod|dev|test|live|staging|base|env|[0-9]+))*"
_NAME_BEFORE = re.compile(rf"(?i)({_NAMES}){_NAME_SUFFIX}[\"']?\s*$")
"""A quoted literal assigned to a name that ends in a password-like word: the literal is found
first (a cheap pattern), then the name is looked for in the 48 characters before it."""
_PASSWORD_WORD = re.compile(r"(?i)pass(?:word|wd)?|pwd")
_WORDS_ONLY = re.compile(r"[A-Za-z]+(?:[-_.:,/ ]+[A-Za-z]*)*")
"""Letters and separators, no digit: a header name or a setting (``X-CSRF-Token``, ``form:csrf``)."""
_NOT_A_VALUE = re.compile(r"(?i)^(?:[a-z][a-z0-9+.-]*://[^@\s]*|[~.]{0,2}/\S*|#[0-9a-f]{3,8}|\{.*\}|\{\{.*\}\}|%[a-z_]\w*%.*)$")
"""A URL with no user in it, a path, a colour, a template or a Windows variable (``%HOMEPATH%``):
never a credential by itself."""
_ENV_NAMES = r"(?:PASSWORD|PASSWD|PWD|SECRET|API_?KEY|ACCESS_?KEY|AUTH_?TOKEN|ACCESS_?TOKEN|TOKEN|PRIVATE_?KEY)"
_ENV_LINE = re.compile(rf"(?m)^\s*(?:export\s+)?[A-Z0-9_]*?({_ENV_NAMES})(?i:{_NAME_SUFFIX})\s*=\s*([^\s\"'#()][^\s#()]{{5,}})\s*$")
"""A ``NAME=value`` line whose name ends in a password-like word, give or take a suffix, as a
quoted literal's must: ``TOKEN_ENDPOINT``, ``DB_PASSWORD_FILE`` and ``AUTH_TOKEN_HEADER`` name
something else."""
_URL_PASSWORD = re.compile(r"://[^/\s:@'\"]*:([^@\s/'\"]{3,})@")
_LONG_LITERAL = re.compile(r"[:=]\s*([\"'])([A-Za-z0-9+/=_-]{32,})\1")
_DIGEST = re.compile(r"sha(?:1|224|256|384|512)-[A-Za-z0-9+/]+={0,2}")
"""A subresource-integrity or lock-file digest (``integrity="sha384-…"``): a hash, not a key."""
_PLACEHOLDER = re.compile(r"(?i)^(?:x+|\*+|changeme|change_me|password|secret|example\w*|dummy\w*|test\w*|your[_-]\w+|<.*>|\$\{.*\}|%\(.*\)s)$")


def _plausible(value: str) -> bool:
    """A value that could be a credential: not a placeholder, a number, a hex digest, a mask,
    or a lower-case identifier or dotted name (``ollama_first_token_timeout``, ``core.tokens``)."""
    return not (_PLACEHOLDER.match(value) or re.fullmatch(r"[\d_.,]+", value) or re.fullmatch(r"[0-9a-f]{32,}", value)
                or re.fullmatch(r"\[[a-z-]+\]\**", value) or (re.fullmatch(r"[a-z_][a-z0-9_.]*", value) and not re.search(r"\d", value)))


def _literal_fits(value: str, word: str) -> bool:
    """Whether a literal assigned to a name ending in ``word`` can be a credential: not a URL,
    path, colour or template, and, unless ``word`` says password, not letters alone.

    >>> _literal_fits("X-CSRF-Token", "Token"), _literal_fits("hunter22", "Secret"), _literal_fits("IAmSensitive", "password")
    (False, True, True)
    """
    if _NOT_A_VALUE.match(value):
        return False
    return bool(_PASSWORD_WORD.fullmatch(word)) or not _WORDS_ONLY.fullmatch(value)


def _entropy(value: str) -> float:
    counts = Counter(value)
    return -sum(n / len(value) * math.log2(n / len(value)) for n in counts.values())


_WORD_CHAIN = re.compile(r"(?:[a-z]+|[A-Z]+|[A-Z][a-z]+|\d+)(?:[-_./]+(?:[a-z]+|[A-Z]+|[A-Z][a-z]+|\d+))+")


def _looks_random(value: str) -> bool:
    """Whether a long literal of high entropy is random, as a key is: not an alphabet, whose
    neighbouring characters mostly follow each other (``abc…``, skipping at most one, as
    ``23456789ABCDEFGHJKLMN…`` skips ``I``), and not words and numbers joined by separators,
    each word in one case (``content_type-object_id-0-DELETE``), where a key mixes cases and
    digits within its runs.

    >>> _looks_random("0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz")
    False
    >>> _looks_random("id_generic_relations-taggeditem-content_type-object_id-0-DELETE")
    False
    >>> _looks_random("Vbmuc30dLLFdm7POIe3xfTa4nODYc/la/wLrI1OLEOI=")
    True
    """
    steps = sum(1 <= ord(b) - ord(a) <= 2 for a, b in zip(value, value[1:]))
    if steps >= 0.75 * (len(value) - 1):
        return False
    return not (_WORD_CHAIN.fullmatch(value) and value.count("-") + value.count("_") >= 3)


def find_secrets(text: str) -> list[Finding]:
    """The credentials in ``text``, in order, never overlapping.

    >>> [f.kind for f in find_secrets('key = "AKIAIOSFODNN7EXAMPLE"\\npassword = get_password()')]
    ['aws-access-key']
    """
    spans: list[tuple[int, int, str]] = [(m.start(), m.end(), "private-key") for m in _PRIVATE_KEY.finditer(text)]
    for kind, pattern in _SHAPES:
        if any(prefix in text for prefix in _PREFIXES[kind]):
            spans.extend((m.start(), m.end(), kind) for m in pattern.finditer(text))
    spans += _assigned_spans(text)
    findings, covered = [], -1
    for start, end, kind in sorted(spans, key=lambda s: (s[0], -s[1])):
        if start < covered:
            continue  # inside a span already found (a key in a PEM block, a token in an assignment)
        findings.append(Finding(kind, text.count("\n", 0, start) + 1, start, end))
        covered = end
    return findings


def _assigned_spans(text: str) -> list[tuple[int, int, str]]:
    """Values that are credentials by where they stand: assigned to a password-like name, in a
    URL's password, on an env line, or long and random."""
    spans = []
    for m in _QUOTED.finditer(text):
        name = _NAME_BEFORE.search(text, max(m.start() - 48, 0), m.start())
        if name and _plausible(m.group(2)) and _literal_fits(m.group(2), name.group(1)):
            spans.append((m.start(2), m.end(2), "password-like"))
    if "://" in text:
        for m in _URL_PASSWORD.finditer(text):
            if _plausible(m.group(1)) and not _NOT_A_VALUE.match(m.group(1)) and not m.group(1).startswith(("$", "%", "<")):
                spans.append((m.start(1), m.end(1), "url-password"))
    spans += [(m.start(2), m.end(2), "env-secret") for m in _ENV_LINE.finditer(text)
              if _plausible(m.group(2)) and _literal_fits(m.group(2), m.group(1))]  # the checks a quoted literal gets
    for m in _LONG_LITERAL.finditer(text):
        value = m.group(2)
        if (_entropy(value) > ENTROPY_BITS and re.search(r"[A-Za-z]", value) and re.search(r"\d", value)
                and not _DIGEST.fullmatch(value) and _looks_random(value)):
            spans.append((m.start(2), m.end(2), "high-entropy"))
    return spans


def _mask(value: str, kind: str) -> str:
    """``value`` hidden at the same length, newlines and each later line's indent kept (a key
    block in YAML or in an indented string still leaves the file's structure readable)."""
    label = f"[{kind}]"
    out = []
    for k, line in enumerate(value.split("\n")):
        if k == 0 and len(line) >= len(label):
            out.append(label + "*" * (len(line) - len(label)))
        elif k == 0:
            out.append("*" * len(line))
        else:
            body = line.lstrip(" \t")
            out.append(line[:len(line) - len(body)] + "*" * len(body))
    return "\n".join(out)


def mask_secrets(text: str, *, remember: bool = True) -> tuple[str, list[Finding]]:
    """``text`` with every credential masked (same length, same lines), and what was found.

    ``remember=False`` skips the cache: a whole file masked once before it is cut into units
    would push out the node texts that queries mask again and again.

    >>> masked, found = mask_secrets('token = "ghp_' + 'a1B2' * 9 + '"')
    >>> masked, len(masked) == len('token = "ghp_' + 'a1B2' * 9 + '"'), found[0].kind
    ('token = "[github-token]**************************"', True, 'github-token')
    """
    if not remember:
        found = _mask_all(text)
        return found[0], list(found[1])
    found = _MASKED.get(text)
    if found is None:
        found = _mask_all(text)
        _MASKED.put(text, found)
    return found[0], list(found[1])


def mask_lines(text: str) -> tuple[str, tuple[tuple[int, int], ...]]:
    """``text`` masked as :func:`mask_secrets` masks it (not cached: for a whole file or cell),
    and the first and last line (from 1) of each credential: a unit cut from the masked text
    counts the credentials whose lines it overlaps.

    >>> mask_lines('a = 1\\npassword = "hunter22"\\n')[1]
    ((2, 2),)
    """
    masked, found = mask_secrets(text, remember=False)
    return masked, line_spans(masked, found)


def mask_each(texts: list[str]) -> list[str]:
    """Several short texts (a signature, a reason, a name) masked with one scan, not cached: a
    mask keeps its length, so the masked join splits back at the same places.

    >>> mask_each(["connect", 'password="hunter22"', ""])
    ['connect', 'password="********"', '']
    """
    masked, found = mask_secrets("\n".join(texts), remember=False)
    if not found:
        return list(texts)
    out, at = [], 0
    for text in texts:
        out.append(masked[at:at + len(text)])
        at += len(text) + 1
    return out


def line_spans(text: str, found: list[Finding]) -> tuple[tuple[int, int], ...]:
    """The first and last line of each finding in ``text`` (or its masked form: same lines)."""
    return tuple((f.line, f.line + text.count("\n", f.start, f.end)) for f in found)


_MASKED: BoundedLRU[str, tuple[str, tuple[Finding, ...]]] = BoundedLRU(65536, 16_000_000, size=lambda v: len(v[0]))
"""Texts' masked forms and findings, 16M characters at most: a query masks every text it
loads, and the same units come back query after query (issue 16)."""


def _mask_all(text: str) -> tuple[str, tuple[Finding, ...]]:
    findings = find_secrets(text)
    if not findings:
        return text, ()
    parts, last = [], 0
    for f in findings:
        parts.append(text[last:f.start])
        parts.append(_mask(text[f.start:f.end], f.kind))
        last = f.end
    parts.append(text[last:])
    return "".join(parts), tuple(findings)



@lru_cache(maxsize=65536)
def is_secret_file(path: str) -> bool:
    """A file whose name says it holds credentials (:data:`SECRET_FILES`).

    >>> is_secret_file("deploy/.env.production"), is_secret_file("certs/server.pem"), is_secret_file("env.py")
    (True, True, False)
    """
    name = PurePosixPath(str(path).replace("\\\\", "/")).name
    return any(fnmatchcase(name, pattern) for pattern in SECRET_FILES)


def secret_file_notice(path: str) -> str:
    """What stands for a secrets file's content: its name, never its text."""
    return f"({path}: a credentials file, indexed by name only; its content is never read)"
