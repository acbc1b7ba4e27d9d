"""Credentials found and masked before text reaches a context, a prompt or a report (issue 18).

Indexing masks each file's whole text before it is cut into units
(:func:`loom_nb.index.indexer.mask_file`; a notebook cell by cell), so a key cut across units
is masked in every part, and titles, signatures, terms and embedded text come from the masked
text. Every node text is then read through :meth:`LoomGraph.text
<loom_nb.core.graph.LoomGraph.text>`, where :func:`mask_secrets` runs again: the packed
context, the prompt, a callback's text, a context pack's snippets, a node's view and an
exported report all get the masked text. A mask has **the length of what it hides**
(``[aws-access-key]****``, or asterisks when the label is longer), newlines kept, so line
numbers, character spans of chunks and the token budget all still hold. Files that are nothing but credentials (``.env``, ``*.pem``,
``id_rsa``, …) are indexed by name only: their content is never read (:func:`is_secret_file`).

Size: the rule set is the module, each rule beside the checks that keep it from masking code.

Detection is a documented rule set, not a dependency: ``detect-secrets`` would scan a file
per call with a plugin pass each, where loom-nb masks every text it loads (tens per query) and
must stay fast. The rules:

- private key blocks (``-----BEGIN … PRIVATE KEY-----`` to its END line, PGP's ``PRIVATE KEY
  BLOCK`` too);
- keys with a known shape: AWS access key ids (``AKIA``/``ASIA``…), GitHub tokens (``ghp_``,
  ``gho_``, ``ghu_``, ``ghs_``, ``ghr_``, ``github_pat_``), Slack (``xox?-``), Stripe
  (``sk_live_``…), OpenAI and Anthropic (``sk-…``, ``sk-ant-…``), Google API keys (``AIza…``),
  npm tokens (``npm_…``), JSON web tokens (``eyJ….eyJ….…``);
- a quoted literal of 6 or more characters assigned to a name that ends in password, secret,
  token, API key, access key, private key or a key of a credential's kind (``SECRET_KEY``,
  ``signing_key``, ``ENCRYPTION_KEY``; a bare ``primary_key``, ``sort_key`` or ``cache_key`` is
  not one): ``password = "hunter22"``, ``password: str = "…"``, Go's ``:=``, PHP's and Ruby's
  ``'password' => '…'``, ``b"…"`` and triple quotes (an ``f"…"`` with a field is a template, an
  ``r"…"`` a pattern). ``password = get_password()`` is a call, not a literal, and is left
  alone. The word must end the name, give or take a suffix such as ``_value`` or ``_prod``:
  ``token_endpoint``, ``TokenLookup``, ``token_type``, ``api-keyword``, ``DB_PASSWORD_FILE`` and
  ``AUTH_TOKEN_HEADER`` name something else. A hex value is one (``SECRET_KEY =
  "09d25e…"``, from ``secrets.token_hex()``). Not taken for a credential: a number, a lower-case identifier, a URL without a user in it, a path, a template
  (``{env.SECRET}``), a bracketed name (``"[MASK]"``), and, unless the name says password,
  letters and separators with no digit (``"X-CSRF-Token"``, ``"header:X-Token,form:csrf"``,
  ``"Bearer"``): header names and settings, where a token or key of random characters has digits;
- the same names with an unquoted value on a line of its own: ``.env`` and shell lines
  (``export``), docker-compose (``- POSTGRES_PASSWORD=…``, ``POSTGRES_PASSWORD: …``), a
  Dockerfile's ``ENV``, YAML (``password: hunter2pass``), INI and properties files
  (``aws_secret_access_key = …``), with the same checks, and none for a name
  (``password=DB_PASSWORD``, ``token = settings.TOKEN``, ``password = password1``); letters
  alone only in an env line whose name says password (``DB_PASSWORD=SuperSecret``), since in
  code and YAML they are a type (``password: SecretStr``);
- a connection string's ``AccountKey=…``, ``SharedAccessKey=…`` and, next to a ``;``,
  ``Password=…`` / ``Pwd=…``;
- the password of a URL that carries one (``postgres://app:s3cret@db/prod``); a template
  (``${DB_PASSWORD}``) or a lower-case word (``user:pass@`` in docs) is left alone;
- a quoted literal of 32 or more characters of base64 or hex-and-letters in an assignment
  whose Shannon entropy is above 4.2 bits per character (random keys; a hex digest has at
  most 4.0, so hashes are left alone), unless it is an alphabet (``"0123…XYZabc…xyz"``, its
  characters in ascending runs, as Django's ``RANDOM_STRING_CHARS``) or a chain of words and
  numbers (``id_form-content_type-object_id-0-DELETE``), which have the entropy of a key and
  none of its randomness, or a ``sha384-…`` digest (subresource integrity, lock files).

Not caught: a credential in prose ("the password is hunter22"), an unquoted value in the middle
of a line (``DB_PASSWORD=… ./run.sh``, ``mysql -p…``), an unquoted one of letters alone outside
an env line, a key of a shape not listed above (GitLab, Hugging Face, Slack webhooks). Masking
errs toward keeping code readable.
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

__all__ = ["RULES_VERSION", "SECRET_FILES", "Finding", "find_secrets", "is_secret_file", "line_spans", "mask_each", "mask_lines", "mask_secrets",
           "secret_file_notice"]

SECRET_FILES = (".env", ".env.*", "*.env", "*.pem", "*.key", "*.p12", "*.pfx", "id_rsa", "id_dsa", "id_ecdsa", "id_ed25519",
                ".netrc", ".pgpass", "*.keystore", "credentials", ".git-credentials", ".npmrc", ".pypirc")
"""File names indexed by name only: their content is never read into the session."""
ENTROPY_BITS = 4.2
RULES_VERSION = 2
"""Raised whenever a rule change alters what some text masks. 2: a quote that closes a literal
opens no value; a regex is no URL's password; a version, a shell's ``$(…)``, Swift's ``\\(…)``
and a path are no credential; a CamelCase phrase is not random. A workspace records it
(``state["secrets_version"]``), and the next index re-cuts every file of a session cut under
other rules: a unit's text, and so its hash, follows the masking, and a unit masked otherwise
would read as changed for ever."""


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
    ("npm-token", re.compile(r"\bnpm_[A-Za-z0-9]{30,}\b")),
    ("gitlab-token", re.compile(r"\bgl(?:pat|oas|dt|rt|cbt|ptt|ft|imt|agent|soat)-[A-Za-z0-9_-]{20,}")),
    ("huggingface-token", re.compile(r"\bhf_[A-Za-z0-9]{30,}\b")),
    ("pypi-token", re.compile(r"\bpypi-AgEIcHlwaS5vcmc[A-Za-z0-9_-]{40,}")),
    ("sendgrid-key", re.compile(r"\bSG\.[A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]{43}\b")),
]
_PREFIXES = {"aws-access-key": ("AKIA", "ASIA"), "github-token": ("gh", "github_pat_"), "slack-token": ("xox",),
             "stripe-key": ("k_live_", "k_test_"), "anthropic-key": ("sk-ant-",), "openai-key": ("sk-",),
             "google-api-key": ("AIza",), "jwt": ("eyJ",), "npm-token": ("npm_",),
             "gitlab-token": ("glpat-", "gloas-", "gldt-", "glrt-", "glcbt-", "glptt-", "glft-", "glimt-", "glagent-", "glsoat-"),
              "huggingface-token": ("hf_",), "pypi-token": ("pypi-",), "sendgrid-key": ("SG.",)}
"""A literal each shape starts with: a text holding none of them skips the shape's pattern."""
_PRIVATE_KEY = re.compile(r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----.*?(?:-----END [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----|\Z)",
                          re.S)
_BARE_HINTS = ("pass", "pwd", "secret", "token", "key")
"""Words one of which every name in :data:`_NAMES` holds: a line :data:`_BARE` may take, or the
text before a quoted literal, is tried only when it has one (found in the lower-cased text, far
faster than a case-blind pattern run over all of it)."""
_BETWEEN = re.compile(r"[,;(){}\n]")
"""What cannot stand between a name and the literal assigned to it."""
_KEY_KINDS = (r"(?:secret|signing|sign|encryption|encrypt|decryption|crypto|cipher|master|hmac|jwt|session|app|aes|"
              r"license|licence|webhook|account|shared|storage|consumer|client|ssh|gpg|pgp|rsa|service|subscription)")
"""What a ``…_key`` name must start with to name a credential (``SECRET_KEY``, ``signing_key``): a
bare ``key`` names a dictionary's, a table's or a cache's key far more often."""
_NAMES = (r"(?:pass(?:word|wd)?|pwd|secret|client[_-]?secret|api[_-]?key|apikey|access[_-]?key|auth[_-]?token|"
          rf"access[_-]?token|token|private[_-]?key|{_KEY_KINDS}[_-]?key)")
_QUOTED = re.compile(r"[:=][=>]?\s*([bBrRuUfF]{1,2}(?=[\"']))?(\"\"\"|\'\'\'|[\"'])([^\"'\s]{6,})\2")
"""A quoted literal after ``=``, ``:``, Go's ``:=`` or PHP's and Ruby's ``=>`` (``==`` is let
through by the pattern and left out after), with a Python prefix (``b"…"``, ``f"…"``) or in
triple quotes."""
_NAME_SUFFIX = r"(?:[_-]?(?:value|val|str|string|bytes|b64|base64|hash|hashed|plain|raw|enc|encrypted|prod|dev|test|live|staging|base|env|[0-9]+))*"
_NAME_BEFORE = re.compile(rf"(?i)({_NAMES}){_NAME_SUFFIX}[\"']?\s*(?::\s*[\w\[\]., |]+?)?\s*$")
"""A quoted literal assigned to a name that ends in a password-like word, a type annotation
(``password: str = "…"``) allowed between them: the literal is found first (a cheap pattern),
then the name is looked for in the 48 characters before it."""
_PASSWORD_WORD = re.compile(r"(?i)pass(?:word|wd)?|pwd")
_WORDS_ONLY = re.compile(r"[A-Za-z]+(?:[-_.:,/ ]+[A-Za-z]*)*")
"""Letters and separators, no digit: a header name or a setting (``X-CSRF-Token``, ``form:csrf``)."""
_NOT_A_VALUE = re.compile(r"(?i)^(?:[a-z][a-z0-9+.-]*://[^@\s]*|[~.]{0,2}/\S*|#[0-9a-f]{3,8}|\{.*\}|\{\{.*\}\}|%[a-z_]\w*%.*|\[[^\]]*\]|"
                          r"[^()]*\\\([^()]*\)[^()]*)$")
"""A URL with no user in it, a path, a colour, a template, a Windows variable (``%HOMEPATH%``),
a bracketed name (a tokenizer's ``"[MASK]"``) or a string Swift interpolates (``"a\\(count)"``):
never a credential by itself. (Every ``.*`` here meets a fixed character or the end: no
pattern backtracks over a long literal.)"""
_SEGMENT = r"[A-Za-z][a-z]*(?:[A-Z][a-z]*|[-_.][a-z]+|\d+)*"
_WORDY_PATH = re.compile(rf"{_SEGMENT}(?:/{_SEGMENT}){{2,}}/?")
"""A relative path of three or more word-like parts (``layers/SiteBuilder/packages/src``): a
key's slashes cut random runs, not words. Each repeated part starts with a character class no
other part starts with, so a literal that is no such path fails in linear time."""
_BARE = re.compile(
    rf"(?m)[ \t]*(?:(?P<env>ENV[ \t]+)|-[ \t]+|export[ \t]+)?(?P<name>[A-Za-z0-9_.-]*?(?i:(?P<word>{_NAMES}){_NAME_SUFFIX}))"
    r"(?P<sep>[ \t]*[=:][ \t]*|(?(env)[ \t]+|(?!)))"
    r"(?P<value>[^\s\"'`#()\[\]{}<>,;$%@!&*|\\][^\s\"'`()\[\]{}<>,;]{5,})(?:[ \t]+[#;].*)?[ \t]*$")
"""An unquoted value on a line of its own, assigned to a name that ends in a password-like
word: ``.env`` and shell lines (``export``), docker-compose (``- POSTGRES_PASSWORD=…``,
``POSTGRES_PASSWORD: …``), a Dockerfile's ``ENV``, YAML, INI and properties files."""
_REFERENCE = re.compile(r"_*[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+|[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+")
"""A name, not a value: an upper-case constant (``password=DB_PASSWORD``) or a dotted path
(``token = windll.advapi32.OpenProcessToken``)."""
_CONNECTION_FIELDS = ("accountkey=", "sharedaccesskey=", "sharedaccesssignature=", "password=", "pwd=")
_CONNECTION_VALUE = re.compile(r"[ \t]*([^;\"'`\s]{3,})[ \t]*(?=;|[\"']|$)", re.M)
"""A field of a connection string (``AccountKey=…;``, ``Password=…;``): Azure's keys always, a
password when a ``;`` stands before its name or after its value."""
_URL_PASSWORD = re.compile(r"://[^/\s:@'\"]*:([^@\s/'\"]{3,})@")
_REGEX_PART = re.compile(r"\(\?|\[\^|\(\.[*+]\)|\\[sdwSDW]")
"""A group, a negated class, ``(.+)`` or a class escape: a pattern that matches a URL's password
(composer's ``https?://(.+):(.+)@``, ``(?::(?P<pass>[^:@]+))?@``), not a password."""
_LONG_LITERAL = re.compile(r"[:=]\s*([\"'])([A-Za-z0-9+/=_-]{32,})\1")
_DIGEST = re.compile(r"sha(?:1|224|256|384|512)-[A-Za-z0-9+/]+={0,2}")
"""A subresource-integrity or lock-file digest (``integrity="sha384-…"``): a hash, not a key."""
_COMMAND_LINE: list[tuple[tuple[str, ...], re.Pattern]] = [
    (("-pass", "-token", "-api", "-secret"),  # "--access-token" holds "-token", "--client-secret" "-secret"
     re.compile(r"--(?P<flag>password|passwd|pass|token|api-key|apikey|access-token|auth-token|client-secret|secret)"
                r"(?:=|[ \t]+)(?P<q>['\"]?)(?P<value>[^\s'\"]{3,})(?P=q)")),
    (("-u ", "-u\t", "--user "), re.compile(r"(?:-u|--user)[ \t]+(?P<q>['\"]?)[^\s:'\"]+:(?P<value>[^\s'\"]{3,})(?P=q)")),
    (("mysql", "mariadb"), re.compile(r"\b(?:mysql|mysqldump|mysqladmin|mariadb|mariadb-dump)\b[^\n]*?[ \t]-p(?P<value>[^\s'\"-][^\s'\"]{2,})")),
    (("sshpass", " login"), re.compile(r"\b(?:sshpass|(?:docker|podman)[ \t]+login\b[^\n]*?)[ \t]+-p[ \t]*(?P<value>[^\s'\"-][^\s'\"]{2,})")),
]
"""A credential on a command line: ``--password …`` / ``--token=…``, curl's ``-u user:…``,
MySQL's ``-p…`` (the value joined to the flag), ``sshpass -p …`` and ``docker login -p …``;
each pattern is tried only on a text holding one of its literals."""
_PLACEHOLDER = re.compile(r"(?i)^(?:x+|\*+|changeme|change_me|password|secret|example\w*|dummy\w*|test\w*|your[_-]\w+|<.*>|\$\{.*\}|\$\w+|\$\(.*\)|%\(.*\)s|"
                          r"none|null|nil|true|false|undefined)$")


_VERSION_SPEC = re.compile(r"[\^~<>=v]*\d+(?:\.(?:\d+|[x*]))+(?:[-+][0-9A-Za-z.-]+)?")
"""A version or a version range (``^7.1.2``): a lock file's ``"minipass": "^7.1.2"`` names a package."""


def _plausible(value: str) -> bool:
    """A value a credential's name is given that could be the credential: not a placeholder, a
    number, a version, a mask, or a lower-case identifier or dotted name (``ollama_first_token_timeout``,
    ``core.tokens``). Hex is plausible here: ``secrets.token_hex()`` and ``openssl rand -hex``
    make the usual ``SECRET_KEY``; only the high-entropy rule, which has no name to go by,
    leaves hex digests alone."""
    return not (_PLACEHOLDER.match(value) or re.fullmatch(r"[\d_.,]+", value) or _VERSION_SPEC.fullmatch(value)
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


def _bare_fits(m: re.Match) -> bool:
    """Whether an unquoted value (:data:`_BARE`) can be a credential: what a quoted one must be,
    and not a reference to a constant. Letters alone (``SuperSecret``) only in an env line
    (``DB_PASSWORD=…``: an upper-case name, ``=`` with no space) whose name says password: in
    code and YAML they are a type or a name (``password: SecretStr``).

    >>> [_bare_fits(_BARE.match(line)) for line in ("DB_PASSWORD=SuperSecret", "password: SecretStr", "password: hunter2pass")]
    [True, False, True]
    """
    value, word = m.group("value"), m.group("word")
    if not _plausible(value) or _NOT_A_VALUE.match(value) or _REFERENCE.fullmatch(value) or word.lower() in value.lower():
        return False  # a name, not a value (password = password1, too)
    if not _WORDS_ONLY.fullmatch(value):
        return True
    return bool(_PASSWORD_WORD.fullmatch(word)) and m.group("sep") == "=" and m.group("name").isupper()


def _entropy(value: str) -> float:
    counts = Counter(value)
    return -sum(n / len(value) * math.log2(n / len(value)) for n in counts.values())


_CAMEL_PHRASE = re.compile(r"(?:[A-Z][a-z]+|\d+)+")
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
    >>> _looks_random("Vbmuc30dLLFdm7POIe3xfTa4nODYc/la/wLrI1OLEOI="), _looks_random("NonExistentPatternThatShouldNotBeFound12345")
    (True, False)
    """
    steps = sum(1 <= ord(b) - ord(a) <= 2 for a, b in zip(value, value[1:]))
    if steps >= 0.75 * (len(value) - 1):
        return False
    if _CAMEL_PHRASE.fullmatch(value) and len(re.findall(r"[A-Z][a-z]", value)) >= 4:
        return False  # capitalised words and numbers: a name (NonExistentPatternThatShouldNotBeFound12345)
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
    if "-" in text:
        spans += _command_line_spans(text)
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
    lower = _lower(text)
    for m in _QUOTED.finditer(text):
        value = m.group(3)
        prefix = (m.group(1) or "").lower()
        if "r" in prefix or ("f" in prefix and "{" in value) or text.startswith("==", m.start()):
            continue  # a raw string is a pattern; an f-string with a field, a template; == compares
        before = max(m.start() - 48, 0)
        last = max(lower.rfind(word, before, m.start()) for word in _BARE_HINTS)
        if last < 0 or _BETWEEN.search(text, last, m.start()):
            continue  # every name _NAME_BEFORE takes holds one, with no , ; ( or line end after it
        name = _NAME_BEFORE.search(text, max(before, last - 24), m.start())  # the name's word holds the last one
        if name and _plausible(value) and _literal_fits(value, name.group(1)) \
                and not (len(m.group(2)) == 1 and _inside_literal(text, m.start(), m.group(2))):
            spans.append((m.start(3), m.end(3), "password-like"))  # (inside a literal, the quote closes it)
    if "://" in text:
        for m in _URL_PASSWORD.finditer(text):
            if _plausible(m.group(1)) and not _NOT_A_VALUE.match(m.group(1)) and not m.group(1).startswith(("$", "%", "<")) \
                    and not _REGEX_PART.search(m.group(1)):
                spans.append((m.start(1), m.end(1), "url-password"))
    if "=" in text or ":" in text or "ENV" in text:
        spans += _bare_spans(text, lower)
    if "=" in text:
        spans += _connection_spans(text, lower)
    for m in _LONG_LITERAL.finditer(text):
        value = m.group(2)
        if (_entropy(value) > ENTROPY_BITS and re.search(r"[A-Za-z]", value) and re.search(r"\d", value)
                and not _DIGEST.fullmatch(value) and not _NOT_A_VALUE.match(value) and not _WORDY_PATH.fullmatch(value)
                and _looks_random(value)):
            spans.append((m.start(2), m.end(2), "high-entropy"))
    return spans


def _inside_literal(text: str, at: int, quote: str) -> bool:
    """Whether position ``at`` of ``text`` lies inside a ``quote``-delimited literal opened
    earlier on its line (an odd count of unescaped quotes before it). Then the ``=`` or ``:``
    found there is text, the quote after it closes the literal, and what follows is code
    joined to it (PHP's ``'PRIVATE-TOKEN: '.$auth['username']``, in composer), not a value.

    >>> line = "$h[] = 'PRIVATE-TOKEN: '.$auth['username'];"
    >>> _inside_literal(line, line.index(":"), "'"), _inside_literal("password = 'x'", 9, "'")
    (True, False)
    """
    start = text.rfind("\n", 0, at) + 1
    count, i = 0, text.find(quote, start, at)
    while i >= 0:
        j = i
        while j > start and text[j - 1] == "\\":
            j -= 1
        count += (i - j) % 2 == 0  # an even run of backslashes escapes nothing
        i = text.find(quote, i + 1, at)
    return count % 2 == 1


def _lower(text: str) -> str:
    """``text`` in lower case, character for character (a character whose lower case is
    longer, as ``İ``'s is, would shift every position after it: then ASCII only)."""
    lower = text.lower()
    return lower if len(lower) == len(text) else text.encode("ascii", "replace").decode().lower()


def _bare_spans(text: str, lower: str) -> list[tuple[int, int, str]]:
    """:data:`_BARE` values, tried only on the lines that hold one of :data:`_BARE_HINTS`."""
    starts = set()
    for word in _BARE_HINTS:
        at = lower.find(word)
        while at >= 0:
            start = text.rfind("\n", 0, at) + 1
            starts.add(start)
            end = text.find("\n", at)
            at = lower.find(word, end + 1) if end >= 0 else -1
    spans = []
    for start in sorted(starts):
        m = _BARE.match(text, start)
        if m and _bare_fits(m):
            spans.append((m.start("value"), m.end("value"), "password-like"))
    return spans


def _command_line_spans(text: str) -> list[tuple[int, int, str]]:
    """:data:`_COMMAND_LINE` values that could be credentials: not a variable (``"$PASS"``,
    ``${{ secrets.X }}``), a placeholder or a path, and for a token's flag not letters alone.

    >>> line = "curl -u admin:Hunter22 --token $TOKEN x"
    >>> [line[start:end] for start, end, _ in _command_line_spans(line)]
    ['Hunter22']
    """
    spans = []
    for literals, pattern in _COMMAND_LINE:
        for start, end in _lines_holding(text, literals):
            for m in pattern.finditer(text, start, end):
                if m.start() and not text[m.start() - 1].isspace() and m.group(0).startswith("-"):
                    continue  # a flag is a word of its own (``a--token b`` is not one)
                value, flag = m.group("value"), m.groupdict().get("flag")
                word = "password" if flag and flag.startswith("pass") else flag
                if (value.startswith(("$", "%", "<", "{", "-")) or not _plausible(value) or _NOT_A_VALUE.match(value)
                        or (word and not _literal_fits(value, word))):
                    continue
                spans.append((m.start("value"), m.end("value"), "password-like"))
    return spans


def _lines_holding(text: str, literals: tuple[str, ...]) -> list[tuple[int, int]]:
    """The (start, end) of each line holding one of ``literals``, in order: a pattern with no
    literal prefix is then run over a few short lines, not the whole text."""
    lines = set()
    for literal in literals:
        at = text.find(literal)
        while at >= 0:
            start = text.rfind("\n", 0, at) + 1
            end = text.find("\n", at)
            end = len(text) if end < 0 else end
            lines.add((start, end))
            at = text.find(literal, end)
    return sorted(lines)


def _connection_spans(text: str, lower: str) -> list[tuple[int, int, str]]:
    """Connection-string fields (:data:`_CONNECTION_FIELDS`): an Azure key always, a password
    when a ``;`` stands before its name or right after its value."""
    spans = []
    for field in _CONNECTION_FIELDS:
        at = lower.find(field)
        while at >= 0:
            here, at = at, lower.find(field, at + 1)
            if here and (text[here - 1].isalnum() or text[here - 1] in "_.-"):
                continue  # the end of a longer name (db_password=): the assignment rules' business
            m = _CONNECTION_VALUE.match(text, here + len(field))
            if m is None:
                continue
            value = m.group(1)
            before = here - 1
            while before >= 0 and text[before] in " \t":
                before -= 1
            if field in ("password=", "pwd=") and not (text.startswith(";", m.end()) or (before >= 0 and text[before] == ";")):
                continue
            if _plausible(value) and not _NOT_A_VALUE.match(value) and not value.startswith(("$", "%", "<", "{")):
                spans.append((m.start(1), m.end(1), "connection-secret"))
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
