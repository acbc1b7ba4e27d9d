import pytest

from loom_nb.core.tokens import (
    UNKNOWN_MODEL_CONTEXT,
    context_window,
    count_tokens,
    count_tokens_many,
    parse_show,
    table_context,
    truncate_to_tokens,
)


def test_counts_are_exact_cl100k():
    # cl100k_base: "hello" and " world" are one token each
    assert count_tokens("hello world") == 2
    assert count_tokens("") == 0
    assert count_tokens_many(["hello world", "", "hello"]) == [2, 0, 1]


def test_special_token_text_is_counted_not_rejected():
    assert count_tokens("<|endoftext|>") > 1


def test_truncate_to_tokens():
    text = "one two three four five six"
    cut = truncate_to_tokens(text, 3)
    assert cut == "one two three"
    assert truncate_to_tokens(text, 100) == text
    assert truncate_to_tokens(text, 0) == ""


def test_table_matches_longest_prefix():
    assert table_context("qwen2.5-coder:7b") == 32768
    assert table_context("llama3.1:8b-instruct") == 131072
    assert table_context("llama3:8b") == 8192
    assert table_context("library/mistral:latest") == 32768
    assert table_context("no-such-model") is None


def test_context_window_uses_ollama_default_num_ctx(monkeypatch):
    monkeypatch.delenv("OLLAMA_CONTEXT_LENGTH", raising=False)
    win = context_window("llama3.1:8b")
    assert (win.num_ctx, win.max_context, win.source) == (4096, 131072, "table")
    monkeypatch.setenv("OLLAMA_CONTEXT_LENGTH", "16384")
    assert context_window("llama3.1:8b").num_ctx == 16384
    # the window in use never exceeds what the model supports
    assert context_window("llama2").num_ctx == 4096


def test_unknown_model_gets_the_stated_default():
    with pytest.warns(UserWarning, match="no window known"):
        win = context_window("my-finetune")
    assert (win.num_ctx, win.max_context, win.source) == (UNKNOWN_MODEL_CONTEXT,) * 2 + ("default",)
    with pytest.raises(ValueError):
        context_window("")


def test_parse_show_reads_context_length_and_num_ctx(monkeypatch):
    monkeypatch.delenv("OLLAMA_CONTEXT_LENGTH", raising=False)
    show = {"model_info": {"llama.context_length": 131072}, "parameters": "stop \"<|eot_id|>\"\nnum_ctx 8192"}
    win = parse_show("llama3.1", show)
    assert (win.num_ctx, win.max_context, win.source) == (8192, 131072, "ollama")
    win = parse_show("llama3.1", {"model_info": {"llama.context_length": 131072}, "parameters": ""})
    assert win.num_ctx == 4096


class _FailingClient:
    def show(self, model):
        raise ConnectionError("refused")


def test_unreachable_ollama_falls_back_to_the_table():
    win = context_window("qwen2.5:7b", client=_FailingClient())
    assert win.source == "table" and win.max_context == 32768


def test_context_window_from_a_stand_in_ollama(monkeypatch):
    import ollama
    from ollama_standin import StandIn

    monkeypatch.delenv("OLLAMA_CONTEXT_LENGTH", raising=False)
    show = {"model_info": {"qwen2.context_length": 32768}, "parameters": "num_ctx 12288\ntemperature 0.2"}
    with StandIn(models=["qwen2.5"], show=show) as server:
        win = context_window("qwen2.5:7b", client=ollama.Client(host=server.host))
        assert (win.num_ctx, win.max_context, win.source) == (12288, 32768, "ollama")
        # a model the server does not have: fall back to the table, never crash
        win = context_window("llama3.1", client=ollama.Client(host=server.host))
        assert win.source == "table"


# -- hosted models (issue 19, seed 001) -------------------------------------------------------

def test_hosted_models_get_their_documented_window_with_its_source():
    from loom_nb import context_window
    from loom_nb.core.tokens import REMOTE_CHECKED

    for model, window in [("claude-sonnet-4-5", 200_000), ("claude-sonnet-4-5-20250929", 200_000), ("gpt-4o", 128_000),
                          ("gpt-4o-mini", 128_000), ("openai/gpt-4.1", 1_047_576), ("gpt-4", 8_192),
                          ("gemini-1.5-pro-latest", 2_097_152), ("claude-sonnet-5", 1_000_000)]:
        found = context_window(model)
        assert (found.num_ctx, found.max_context) == (window, window), model  # the whole window: no Ollama num_ctx
        assert found.source.startswith("table of hosted models (") and REMOTE_CHECKED in found.source


def test_local_models_keep_ollamas_window_in_use():
    from loom_nb import context_window

    found = context_window("llama3.1:8b")
    assert found.source == "table" and found.num_ctx < found.max_context == 131072


def test_an_unknown_model_warns_and_gets_a_conservative_window():
    from loom_nb import UnknownModelWarning, context_window
    from loom_nb.core.tokens import UNKNOWN_MODEL_CONTEXT

    with pytest.warns(UnknownModelWarning, match="no window known for model 'my-fine-tune'"):
        found = context_window("my-fine-tune")
    assert found.num_ctx == UNKNOWN_MODEL_CONTEXT and found.source == "default"


def test_a_warning_points_at_the_users_line_not_the_library_line_that_noticed():
    """The warning named ``loom_nb/core/engine.py`` (through ``Loom.query``) or
    ``loom_nb/ollama/context_window.py``: a fixed stacklevel is right for one call path only."""
    from loom_nb import HashingEmbedder, Loom, UnknownModelWarning, context_window
    from loom_nb.core.budget import BudgetOverWindowWarning

    loom = Loom(embedder=HashingEmbedder())
    loom.add("oauth refresh tokens rotate")
    calls = [(UnknownModelWarning, lambda: context_window("my-fine-tune")),
             (UnknownModelWarning, lambda: loom.query("refresh", model="my-fine-tune")),
             (BudgetOverWindowWarning, lambda: loom.query("refresh", budget=9000, window=4096))]
    for category, call in calls:
        with pytest.warns(category) as caught:
            call()
        assert [w.filename for w in caught if w.category is category] == [__file__]


def test_a_server_that_cannot_be_asked_is_named_in_a_warning_and_the_table_answers(caplog):
    """The user asked the server (ask_ollama=True or a client): when it does not answer, the
    window still comes from the table, and a warning says which server failed, not an INFO line."""
    from types import SimpleNamespace

    from loom_nb.core.tokens import context_window

    class Unreachable:
        _client = SimpleNamespace(base_url="http://127.0.0.1:9")

        def show(self, model):
            raise ConnectionError("Failed to connect to Ollama")

    with caplog.at_level("WARNING", logger="loom_nb.core.tokens"):
        window = context_window("llama3.1:8b", client=Unreachable())
    assert window.source == "table"
    assert [r.levelname for r in caplog.records] == ["WARNING"]
    assert "http://127.0.0.1:9" in caplog.text and "llama3.1:8b" in caplog.text and "from the table" in caplog.text
