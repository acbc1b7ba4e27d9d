"""Text to terms, the same way for what is indexed and what is asked: identifiers split at
case and underscore changes (``UnmarshalText`` → unmarshal, text), light stemming, and the
stopwords that carry no topic. :class:`~loom_nb.core.lexical.LexicalIndex` and the path
signals both analyse text here, so a query term matches exactly what the index holds.
"""

from __future__ import annotations

import re
from functools import lru_cache



STOPWORDS = frozenset(
    """a about above after again against all also am an and any are aren as at be because been
    before being below between both but by can cannot could couldn did didn do does doesn doing
    don down during each few for from further had has have having he her here hers herself him
    himself his how i if in into is isn it its itself just let me more most my myself no nor not
    now of off on once only or other ought our ours ourselves out over own please same she should
    so some such than that the their theirs them themselves then there these they this those
    through to too under until up very was wasn we were what when where which while who whom why
    will with won would you your yours yourself yourselves e.g i.e etc""".split()
)
"""English function words: they occur everywhere, so they only add noise to BM25 (their idf is
near zero anyway, but dropping them keeps postings small). Code words such as ``self``,
``return`` or ``import`` are *not* stopwords: their low idf already discounts them."""

# One identifier part: an acronym before a capitalised word (HTTP|Response), a capitalised or
# lower-case word, an acronym, or a run of digits. "Lower-case" means any letter that is not
# ASCII upper-case, so accented words stay whole.
_PART = re.compile(r"[A-Z]+(?=[A-Z][^\W\d_A-Z])|[A-Z]?[^\W\d_A-Z]+|[A-Z]+|\d+")
# A token: identifiers joined by dots (``Ranking.breakdown``, ``graph.json``). Slashes, hyphens,
# spaces and other punctuation separate tokens.
_TOKEN = re.compile(r"\w+(?:\.\w+)*")


def split_identifier(word: str) -> list[str]:
    """Split an identifier into its lower-cased parts.

    Code names glue words together (``parseHTTPResponse``, ``graph_json``, ``max-items``,
    ``loom_nb/rank.py``); a query says them apart ("parse the http response"), so both sides
    are indexed by their parts. Splits happen at every non-alphanumeric character, at
    lower→upper case changes, before the last capital of an acronym that starts a word
    (``HTTPResponse`` → ``http``, ``response``), and between letters and digits. Digit runs are
    kept as parts of any length here; :func:`terms` later drops parts of one character, so
    ``LoomGraph2`` indexes ``loom`` and ``graph`` but ``Python311`` keeps ``311``.

    Parameters
    ----------
    word : str
        An identifier, or any text: everything that is not a letter or digit separates parts.

    Returns
    -------
    list of str
        The parts, lower-cased, in order; no filtering or stemming.

    Examples
    --------
    >>> split_identifier("parseHTTPResponse")
    ['parse', 'http', 'response']
    >>> split_identifier("graph_json")
    ['graph', 'json']
    >>> split_identifier("LoomGraph2")
    ['loom', 'graph', '2']
    >>> split_identifier("loom_nb/rank.py")
    ['loom', 'nb', 'rank', 'py']

    A letter alone beside digits stays with them (``S3``, ``k8s``, ``h2c``): split apart, each
    part has one character and would be dropped, so the query "S3 adapter" found no
    ``AwsS3V3Adapter``.

    >>> split_identifier("AwsS3V3Adapter"), split_identifier("k8s_client"), split_identifier("Int64")
    (['aws', 's3', 'v3', 'adapter'], ['k8s', 'client'], ['int', '64'])
    """
    parts = [part.lower() for part in _PART.findall(word)]
    merged: list[str] = []
    for k, part in enumerate(parts):
        last = merged[-1] if merged else ""
        letter = len(part) == 1 and part.isalpha()
        if part.isdigit() and len(last) == 1 and last.isalpha():
            merged[-1] = last + part  # s + 3
        elif (letter and len(last) > 1 and last[0].isalpha() and last[1:].isdigit()
              and not (k + 1 < len(parts) and parts[k + 1].isdigit())):
            merged[-1] = last + part  # k8 + s, but not s3 + v of s3v3
        else:
            merged.append(part)
    return merged


def _stem(word: str) -> str:
    """Strip an English plural so 'tokens' matches 'token' (light and predictable, not Porter).

    Only words longer than 3 letters ending in 's' change, and never those ending in 'ss', 'us'
    or 'is' (class, status, analysis). 'sses' → 'ss' (classes → class), 'ies' → 'y' (queries →
    query), 'xes'/'zzes'/'shes'/'ches' drop 'es' (indexes → index, matches → match) except
    'aches' (caches → cache), and otherwise the 's' goes (tokens → token, files → file).
    """
    if len(word) <= 3 or not word.endswith("s") or word.endswith(("ss", "us", "is")) or not word.isalpha():
        return word
    if word.endswith("sses"):
        return word[:-2]
    if word.endswith("ies") and len(word) > 4:
        return word[:-3] + "y"
    if word.endswith(("xes", "zzes", "shes")) or (word.endswith("ches") and not word.endswith("aches")):
        return word[:-2]
    return word[:-1]


def terms(text: str) -> list[str]:
    """The lower-cased terms of a text, used both to index fields and to analyse queries.

    Rules, in order:

    1. A *token* is a run of letters, digits and underscores, possibly joined by dots
       (``count_tokens``, ``Ranking.breakdown``, ``graph.json``). Spaces, slashes, hyphens
       and other punctuation separate tokens, so a path gives one token per segment.
    2. A dotted token is kept whole (``graph.json``, ``ranking.breakdown``) so naming a file
       or qualified symbol exactly beats naming its words apart.
    3. Each dot segment is split by :func:`split_identifier`; if it has more than one part,
       or its one part is not the segment as written, the whole segment is kept too
       (``count_tokens`` gives ``count_tokens``, ``count``, ``token``; ``__version__`` gives
       ``__version__``, ``version``), so the query ``count_tokens`` matches that identifier
       better than one that merely contains ``count``. Hyphenated and slashed words are not rejoined: hyphens are
       mostly prose ("well-known"), and whole paths are the job of :func:`path_mentions`.
    4. Parts of one character and English stopwords are dropped; whole tokens (rules 2–3) are
       kept as written, lower-cased, apart from stopwords such as ``e.g``.
    5. Parts are lightly stemmed: a plural 's' is stripped from words longer than 3 letters
       (``tokens`` → ``token``, ``classes`` → ``class``, ``queries`` → ``query``; see
       :func:`_stem`). Whole tokens are not stemmed: they are exact-match terms.

    Terms come out in text order (whole before parts), with repeats, so they also serve as
    term frequencies. Deterministic: no locale, no model.

    Examples
    --------
    >>> terms("How does count_tokens handle the graph.json files?")
    ['count_tokens', 'count', 'token', 'handle', 'graph.json', 'graph', 'json', 'file']
    >>> terms("parseHTTPResponse in loom_nb/rank.py")
    ['parsehttpresponse', 'parse', 'http', 'response', 'loom_nb', 'loom', 'nb', 'rank.py', 'rank', 'py']
    """
    out: list[str] = []
    for token in _TOKEN.findall(text):
        out.extend(_token_terms(token))
    return out


@lru_cache(maxsize=1 << 16)
def _token_terms(token: str) -> tuple[str, ...]:
    """The terms of one token (rules 2–5 of :func:`terms`).

    Cached: identifiers repeat across a codebase, and analysing each distinct token once
    makes indexing several times faster. The result depends only on the token, so the
    cache cannot change an answer.
    """
    out: list[str] = []
    segments = token.split(".")
    if len(segments) > 1:
        whole = token.lower()
        if whole not in STOPWORDS:
            out.append(whole)
    for segment in segments:
        parts = split_identifier(segment)
        if len(parts) > 1 or (parts and segment.lower() != parts[0] and segment.lower() not in STOPWORDS):
            out.append(segment.lower())  # the identifier as written: count_tokens, __version__
        out.extend(_stem(p) for p in parts if len(p) > 1 and p not in STOPWORDS)
    return tuple(out)


def _query_terms(query: str | list[str]) -> list[str]:
    """Unique query terms in first-seen order: a term repeated in the query counts once."""
    analysed = terms(query) if isinstance(query, str) else [str(t).lower() for t in query]
    return list(dict.fromkeys(analysed))
