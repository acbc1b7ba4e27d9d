"""Is a server there, with this model? One quick request, for notebooks and the CLI that run
live when Ollama answers and replay a recording when it does not."""

from __future__ import annotations

from .errors import explain_ollama_error


def probe_ollama(model: str, host: str | None = None, timeout: float = 2.0) -> tuple[bool, str]:
    """Whether an Ollama server answers at ``host`` and has ``model``, and if not, why.

    Quick (one ``/api/tags`` request with a short timeout), for notebooks that run live when
    a server is there and replay a recording when it is not.

    >>> probe_ollama("llama3.2", host="http://127.0.0.1:9", timeout=0.5)[0]
    False
    """
    import ollama

    try:
        listed = ollama.Client(host=host or None, timeout=timeout).list()
    except Exception as exc:
        return False, str(explain_ollama_error(exc, model, host))
    names = {m.model for m in listed.models} | {(m.model or "").split(":")[0] for m in listed.models}
    if model in names or model.split(":")[0] in names:
        return True, ""
    return False, str(explain_ollama_error(ollama.ResponseError(f"model {model!r} not found", 404), model, host))
