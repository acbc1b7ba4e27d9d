"""Chunks of a large node: where they are cut, and which of them a query loads.

A node over ``large_node_tokens`` that would take more than ``max_whole_share`` of the
budget, and has no summary, is loaded as its most relevant chunks (seed 000 §6.2). What a
chunk costs and which terms it holds depend only on its text, so they are worked out once
per node and text (:func:`chunk_facts`) and kept for every later query: choosing chunks is
then a dot product, set intersections and a greedy fill, with no tokenising and no regular
expressions once a node's facts are known (issue 16).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .analysis import terms
from .lru import BoundedLRU
from .tokens import _encoding, count_tokens_many

SEPARATOR_TOKENS = 3
"""What the ``"\\n…\\n"`` between two loaded chunks costs."""


def chunk_spans(text: str, chunk_tokens: int) -> list[tuple[int, int]]:
    """Character spans of consecutive line groups of about ``chunk_tokens`` tokens each.

    Lines are never cut, except a single line longer than a chunk, which is cut into
    pieces of at most ``chunk_tokens`` tokens (:func:`cut_by_tokens`).

    >>> chunk_spans("a\\nb\\nc", 1000)
    [(0, 5)]
    """
    spans: list[tuple[int, int]] = []
    start = pos = size = 0
    encode = _encoding().encode_ordinary  # what count_tokens counts; the ids serve a line that must be cut
    for line in text.splitlines(keepends=True):
        ids = encode(line)
        cost = len(ids)
        if size and size + cost > chunk_tokens:
            spans.append((start, pos))
            start, size = pos, 0
        if cost > chunk_tokens:
            spans.extend((pos + a, pos + b) for a, b in cut_by_tokens(line, chunk_tokens, ids))
            pos += len(line)
            start, size = pos, 0
            continue
        size += cost
        pos += len(line)
    if pos > start:
        spans.append((start, pos))
    return [(s, e) for s, e in spans if text[s:e].strip()]


def cut_by_tokens(line: str, limit: int, ids: list[int] | None = None) -> list[tuple[int, int]]:
    """Character spans, in order and covering ``line``, of at most ``limit`` tokens each.

    A line of CJK text or emoji runs to one token per character or more, so a cut every
    ``4 * limit`` characters made chunks of 1,400 and 3,000 tokens at a limit of 300. Here the
    line is encoded once (``ids``, when the caller has them) and cut every ``limit`` tokens,
    at the character the cut falls in; a piece whose own count comes out higher (BPE merges
    differ at a cut) is cut again. Only lines over a chunk come here, so ordinary text costs
    nothing more; a line of 1M characters takes about a second.

    >>> from loom_nb.core.tokens import count_tokens
    >>> line = "令牌刷新失败" * 200
    >>> spans = cut_by_tokens(line, 300)
    >>> max(count_tokens(line[a:b]) for a, b in spans) <= 300, spans[0][0], spans[-1][1] == len(line)
    (True, 0, True)
    """
    if not line:
        return []
    encoding = _encoding()  # the count_tokens encoding: cut where it counts
    data = line.encode("utf-8", "surrogatepass")
    ids = encoding.encode_ordinary(line) if ids is None else ids
    cuts, end = [0], 0
    for k in range(0, len(ids), max(limit, 1)):
        end += len(encoding.decode_bytes(ids[k:k + limit]))
        cut = min(end, len(data))
        while 0 < cut < len(data) and data[cut] & 0xC0 == 0x80:  # back to the start of the character it splits
            cut -= 1
        if cut > cuts[-1]:
            cuts.append(cut)
    if cuts[-1] < len(data):
        cuts.append(len(data))
    chars = [0]
    for a, b in zip(cuts, cuts[1:]):
        chars.append(chars[-1] + len(data[a:b].decode("utf-8", "surrogatepass")))
    spans = []
    for a, b in zip(chars, chars[1:]):
        if len(encoding.encode_ordinary(line[a:b])) > limit and b - a > 1:  # one thread: a pool costs more on short pieces
            spans.extend((a + x, a + y) for x, y in cut_by_tokens(line[a:b], limit))
        else:
            spans.append((a, b))
    return spans


@dataclass(frozen=True)
class ChunkFacts:
    """What each chunk of one text costs in context (its tokens plus the separator) and the
    terms it holds (:func:`~loom_nb.core.analysis.terms`)."""

    costs: np.ndarray
    terms: tuple[frozenset[str], ...]


_FACTS: BoundedLRU[tuple, ChunkFacts] = BoundedLRU(4096)
"""Chunk facts of the last 4,096 node texts."""


def chunk_facts(text: str, spans: list[tuple[int, int]], key: object = None) -> ChunkFacts:
    """The :class:`ChunkFacts` of ``text`` cut at ``spans``, computed once per ``key``.

    ``key`` names the text (a node's sha256): the same key and spans give the cached facts
    back without reading the text. Without a key nothing is cached.

    >>> facts = chunk_facts("alpha beta\\ngamma", [(0, 11), (11, 16)])
    >>> facts.costs.tolist(), sorted(facts.terms[0])
    ([6, 4], ['alpha', 'beta'])
    """
    cache_key = (key, tuple(map(tuple, spans))) if key is not None else None
    facts = _FACTS.get(cache_key) if cache_key is not None else None
    if facts is None:
        pieces = [text[s:e] for s, e in spans]
        costs = np.asarray(count_tokens_many(pieces), dtype=np.int64) + SEPARATOR_TOKENS
        facts = ChunkFacts(costs, tuple(frozenset(terms(p)) for p in pieces))
        if cache_key is not None:
            _FACTS.put(cache_key, facts)
    return facts


def query_terms(query: str) -> frozenset[str]:
    """The terms of ``query`` that :func:`best_chunks` looks for in each chunk.

    >>> sorted(query_terms("Where is the refresh token?"))
    ['refresh', 'token']
    """
    return frozenset(terms(query)) if query else frozenset()


def best_chunks(
    spans: list[tuple[int, int]],
    vectors: np.ndarray,
    query_vector: np.ndarray | None,
    text: str,
    allowance: int,
    query: str = "",
    facts: ChunkFacts | None = None,
    wanted: frozenset[str] | None = None,
) -> tuple[list[tuple[int, int]], int]:
    """The most relevant chunks that fit ``allowance`` tokens, in document order, and the
    tokens they cost.

    A chunk's relevance is its cosine to the query plus the share of the query's terms it
    contains (seed 004's "snippets around matching lines": a chunk holding the identifier
    asked about wins even when its vector is unremarkable). Chunks are taken best first;
    one that does not fit is skipped and the next tried. ``facts`` (from
    :func:`chunk_facts`) saves counting and analysing the chunks again, and ``wanted`` (the
    query's terms) analysing the query again.
    """
    facts = facts or chunk_facts(text, spans)
    sims = vectors @ np.asarray(query_vector, dtype=vectors.dtype) if query_vector is not None else np.zeros(len(spans))
    if wanted is None:
        wanted = query_terms(query)
    if wanted:
        sims = sims + np.array([len(wanted & held) for held in facts.terms]) / len(wanted)
    chosen, used = [], 0
    for i in np.argsort(-sims, kind="stable"):
        cost = int(facts.costs[i])
        if used + cost <= allowance:
            start, end = spans[int(i)]  # a loaded session's spans may be lists
            chosen.append((int(start), int(end)))
            used += cost
    return sorted(chosen), used
