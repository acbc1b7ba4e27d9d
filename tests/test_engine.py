"""The public API end to end: add, query, save, reopen."""

import json

import numpy as np
import pytest

from loom_nb import HashingEmbedder, Loom, LoomConfig, LoomError, SIGNALS
from loom_nb.demo import SAMPLE, build_session

QUESTION = "Why does the token refresh fail after an hour, and what should we change?"
LOG = "\n".join(
    f"2026-11-20 10:00:{i:02d},301 ERROR auth.refresh refresh failed: invalid_grant (refresh token already used) user={4400 + i}"
    for i in range(20)
)


@pytest.fixture
def loom():
    return Loom(embedder=HashingEmbedder())


def test_a_question_followed_by_a_log_becomes_two_nodes(loom):
    result = loom.add(QUESTION + "\n\n" + LOG)
    assert result.classification.kind == "mixed" and result.classification.should_split
    assert len(result.nodes) == 2
    question, log = (loom.text(i) for i in result.ids)
    assert question == QUESTION and log == LOG
    assert result.nodes[1].provenance.reason == "logs part 2 of 2 split from one input"
    assert result.nodes[1].meta["segment_kind"] == "logs"


def test_short_inputs_are_never_split(loom):
    result = loom.add("Why this?\n2026-11-20 10:00:01 ERROR x failed")
    assert len(result.nodes) == 1


def test_bad_inputs(loom):
    with pytest.raises(LoomError, match="empty"):
        loom.add("   ")
    with pytest.raises(TypeError):
        loom.add(b"bytes")
    with pytest.raises(LoomError, match="query is empty"):
        loom.query("")


def test_query_result_holds_prompt_and_table(loom):
    loom.add("OAuth refresh tokens are single use; store the rotated refresh token after each refresh.", type="analysis")
    loom.add("The dark theme palette lives in theme.css custom properties.")
    result = loom.query("How should the rotated refresh token be stored?", budget=400, mode="fused")
    assert result.loaded == ["n1"]
    assert [r.node_id for r in result.table] == ["n1", "n2"]
    row = result.decision("n1")
    assert row.decision == "loaded" and set(row.signals) == set(SIGNALS)
    assert sum(row.contributions.values()) == pytest.approx(row.score)
    assert result.decision("n2").decision == "excluded"
    assert result.messages[0]["role"] == "system" and result.messages[1]["role"] == "user"
    user = result.messages[1]["content"]
    assert user.startswith("[Context loaded: 1 of 1 relevant nodes]")
    assert "--- [n1]" in user and user.endswith("Question: How should the rotated refresh token be stored?")
    assert result.prompt.startswith("### system")
    data = json.loads(json.dumps(result.to_dict()))
    assert data["table"][0]["decision"] == "loaded" and data["mode"]["name"] == "fused"
    assert result.budget_split()["context used"] == result.packed.context_tokens
    # a budget with no window is the context's alone: no zone of 0 tokens for the system prompt
    assert result.budget_split() == {"context used": result.packed.context_tokens,
                                     "context unused": 400 - result.packed.context_tokens}
    assert str(result.budget) == "explicit context budget: context (manifest + evidence) 400"


def test_budget_from_a_model_window(loom, monkeypatch):
    monkeypatch.delenv("OLLAMA_CONTEXT_LENGTH", raising=False)
    loom.add("some text about tokens")
    result = loom.query("tokens?", model="llama3.1:8b")
    assert result.window.num_ctx == 4096 and result.budget.window == 4096
    result = loom.query("tokens?", window=2000, mode="fused")
    assert result.budget.window == 2000
    assert sum(result.budget.zones().values()) == 2000


def test_a_budget_given_with_a_window_or_a_model_is_used_within_the_window(loom, monkeypatch):
    from loom_nb.core.budget import BudgetOverWindowWarning
    from loom_nb.core.tokens import UnknownModelWarning, count_tokens

    monkeypatch.delenv("OLLAMA_CONTEXT_LENGTH", raising=False)
    for k in range(8):
        loom.add(f"refresh token rotation note {k}: " + "the gateway retries the refresh call " * 30)
    # more than a 1,024-token window leaves for context: cut to what it leaves, with a warning
    with pytest.warns(BudgetOverWindowWarning, match="more than a 1,024-token window leaves"):
        result = loom.query("refresh token rotation", budget=3000, window=1024)
    assert result.budget.window == 1024 and result.budget.source == "explicit"
    assert result.budget.context < 1024
    assert sum(count_tokens(m["content"]) + 4 for m in result.messages) <= 1024 - result.budget.output_reserved
    # within what the window leaves: the budget as asked, the window's zones around it
    smaller = loom.query("refresh token rotation", budget=500, model="llama2")
    assert (smaller.budget.context, smaller.budget.window, smaller.window.num_ctx) == (500, 4096, 4096)
    with pytest.warns(UnknownModelWarning):  # the model is looked up, not ignored
        loom.query("refresh token rotation", budget=500, model="no-such-model")


def test_record_advances_the_clock_and_refreshes_loaded_nodes(loom):
    loom.add("refresh tokens rotate")
    loom.add("bananas are yellow")
    loom.graph.advance_turn(5)
    result = loom.query("refresh tokens", budget=300, mode="fused", record=True)
    assert loom.graph.turn == 6
    assert loom.node("n1").last_access_turn == 6 and loom.node("n2").last_access_turn == 0
    assert result.loaded == ["n1"]


def test_large_input_is_chunked_and_can_be_summarised(loom):
    config = LoomConfig(large_node_tokens=100, chunk_tokens=40)
    loom = Loom(embedder=HashingEmbedder(), config=config)
    big = "\n".join(f"line {i}: the gateway answered request {i} with status 200" for i in range(60))
    node = loom.add(big, split=False).nodes[0]
    assert node.tokens > 100 and len(node.chunks) > 3
    assert loom.graph.chunk_vectors[node.id].shape == (len(node.chunks), 256)
    summary = loom.add_summary(node.id, "The gateway log is all status 200.")
    assert summary.type == "summary" and loom.graph.summary_of(node.id) == summary.id


def test_views_print_and_escape(loom):
    loom.add("<script>alert(1)</script> <img src=x onerror=alert(2)> refresh tokens")
    result = loom.query("refresh tokens", budget=300, mode="fused")
    bundle = result._repr_mimebundle_()
    assert "<script>alert" not in bundle["text/html"] and "&lt;script&gt;" in bundle["text/html"]
    assert "<img" not in bundle["text/html"] and "&lt;img src=x onerror=alert(2)&gt;" in bundle["text/html"]
    assert "[Context loaded" in bundle["text/plain"] and "0x" not in bundle["text/plain"]
    assert "Loom session" in str(loom) and "0x" not in repr(loom)


def test_save_and_reopen(tmp_path):
    loom = Loom(tmp_path / "s", embedder=HashingEmbedder())
    loom.add("refresh tokens rotate")
    loom.query("refresh tokens", budget=200)
    loom.save()
    again = Loom.open(tmp_path / "s", embedder=HashingEmbedder())
    assert again.graph == loom.graph
    assert again.last_scores["query"] == "refresh tokens"
    with pytest.raises(LoomError, match="no session here"):
        Loom.open(tmp_path / "empty", embedder=HashingEmbedder(), create=False)
    (tmp_path / "file").write_text("x")
    with pytest.raises(LoomError, match="is a file"):
        Loom.open(tmp_path / "file", embedder=HashingEmbedder())
    with pytest.raises(LoomError, match="no folder"):
        Loom(embedder=HashingEmbedder()).save()


# -- the sample session with the real default embedder ----------------------------------------

@pytest.fixture(scope="module")
def sample(tmp_path_factory, minilm):
    return build_session(SAMPLE, tmp_path_factory.mktemp("sample"), minilm)


def _source_id(loom, prefix):
    return next(n.id for n in loom.graph.content_nodes() if loom.text(n.id).startswith(prefix))


@pytest.mark.slow
def test_sample_session_simple_query_finds_the_api_docs(sample):
    result = sample.query("What does POST /oauth/token return?", window=4096)
    assert result.classification.complexity < 0.3  # the seed's BARE query; auto now runs FUSED for it
    assert result.mode.name == "fused"
    assert result.loaded[0] == _source_id(sample, "# Auth API")
    css = _source_id(sample, "# Dashboard theme")
    assert result.decision(css).decision == "excluded"


@pytest.mark.slow
def test_sample_session_complex_query_uses_fused_mode_and_skips_unrelated_notes(sample):
    query = json.loads((SAMPLE / "session.json").read_text())["queries"][2]  # with a traceback
    result = sample.query(query, window=4096)
    assert result.mode.name == "fused"
    loaded = set(result.loaded)
    assert _source_id(sample, "# Analysis") in loaded
    assert _source_id(sample, '"""Refreshing OAuth') in loaded
    for unrelated in ("# Dashboard theme", "# Deploy runbook", "Planning meeting"):
        assert _source_id(sample, unrelated) not in loaded
    assert result.packed.context_tokens <= result.budget.context


@pytest.mark.slow
def test_sample_session_large_log_has_a_summary(sample):
    log_id = max(sample.graph.content_nodes(), key=lambda n: n.tokens).id
    assert "gateway" in sample.text(log_id)
    assert sample.node(log_id).tokens > sample.graph.config.large_node_tokens
    assert sample.graph.summary_of(log_id) is not None


def test_every_result_object_prints_and_draws_escaped(loom, tmp_path):
    added = loom.add("<b>bold</b> claims about refresh tokens")
    for obj in (added, added.classification, loom.view("n1"), loom):
        bundle = obj._repr_mimebundle_()
        assert set(bundle) == {"text/plain", "text/html"}
        assert "<b>bold" not in bundle["text/html"] and "0x" not in bundle["text/plain"]
    assert "Content n1" in str(loom.view("n1")) and "provenance: user" in str(loom.view("n1"))
    assert str(loom.view("c1")).startswith("Concept c1")
    from loom_nb import UnknownNodeError

    with pytest.raises(UnknownNodeError):
        loom.view("n404")
    (tmp_path / "a.py").write_text("def f():\n    return 1\n")
    report = loom.index(tmp_path, progress=False)
    assert "Indexed" in report._repr_mimebundle_()["text/plain"]


def test_budget_from_the_num_ctx_ollama_reports(loom, monkeypatch):
    from ollama_standin import StandIn

    monkeypatch.delenv("OLLAMA_CONTEXT_LENGTH", raising=False)
    loom.add("some text about tokens")
    show = {"model_info": {"llama.context_length": 131072}, "parameters": "num_ctx 16384"}
    with StandIn(models=["llama3.1"], show=show) as server:
        monkeypatch.setenv("OLLAMA_HOST", server.host)
        result = loom.query("tokens?", model="llama3.1:8b", ask_ollama=True)
        assert (result.window.source, result.window.num_ctx, result.budget.window) == ("ollama", 16384, 16384)
    result = loom.query("tokens?", model="llama3.1:8b", ask_ollama=True)  # the server is gone
    assert result.window.source == "table" and result.budget.window == 4096


def test_open_resolves_a_relative_workspace_root_against_the_session_folder(tmp_path):
    from loom_nb import HashingEmbedder, Loom

    folder = tmp_path / "s"
    loom = Loom.open(folder, embedder=HashingEmbedder())
    loom.graph.metadata["workspace"] = {"root": "workspace", "commit": None, "files": {}}
    loom.add("a note")
    loom.save()
    assert Loom.open(folder).graph.workspace == folder / "workspace"
    # an absolute root graph.json names is read only once the user confirms it
    loom.graph.metadata["workspace"]["root"] = str(tmp_path / "elsewhere")
    loom.save()
    unconfirmed = Loom.open(folder).graph
    assert unconfirmed.workspace is None and unconfirmed.unconfirmed_root == tmp_path / "elsewhere"
    assert Loom.open(folder, workspace=tmp_path / "elsewhere").graph.workspace == tmp_path / "elsewhere"
    assert Loom.open(folder).graph.workspace == tmp_path / "elsewhere"  # remembered on this machine


def test_excluded_nodes_stay_out_even_when_leftover_budget_is_filled():
    from loom_nb import HashingEmbedder, Loom, LoomConfig

    loom = Loom(embedder=HashingEmbedder(), config=LoomConfig().with_(fill_leftover=True))
    ids = [loom.add(f"note {i} about refresh tokens").ids[0] for i in range(4)]
    result = loom.query("refresh tokens", budget=5000, mode="fused", exclude=ids[:2], exclude_reason="in the history")
    assert set(result.loaded) == set(ids[2:])
    assert [result.decision(n).reason for n in ids[:2]] == ["in the history", "in the history"]


def test_adding_a_non_string_says_what_it_got():
    # Loom.add's `type=` parameter shadows the builtin: the message once called type(text)
    # and raised "'str' object is not callable" instead of saying what was wrong
    from loom_nb import HashingEmbedder, Loom

    with pytest.raises(TypeError, match="text must be str, got int"):
        Loom(embedder=HashingEmbedder()).add(123)


def test_a_message_that_names_code_leans_on_exact_names_when_configured():
    from loom_nb import LoomConfig

    config = LoomConfig(named_code_semantic=0.5)
    loom = Loom(embedder=HashingEmbedder(), config=config)
    loom.add("save_graph writes graph.json atomically under the folder lock.")
    named = loom.query("what calls save_graph?", budget=500)
    prose = loom.query("how is the session written to disk?", budget=500)
    mine = loom.query("what calls save_graph?", budget=500, weights={"semantic": 0.9})
    assert named.ranking.weights.semantic == pytest.approx(config.weights.semantic * 0.5)
    assert prose.ranking.weights.semantic == pytest.approx(config.weights.semantic)
    assert mine.ranking.weights.semantic == pytest.approx(0.9)  # weights a caller passes are used as given
    assert Loom(embedder=HashingEmbedder()).graph.config.named_code_semantic == 1.0  # off unless configured


def test_a_question_or_a_follow_up_weighs_the_neighbourhood_and_a_change_does_not():
    from loom_nb import Query

    loom = Loom(embedder=HashingEmbedder())
    loom.add("save_graph writes graph.json atomically under the folder lock.")
    loom.add("load_graph reads graph.json back and checks its schema version.")
    question = loom.query("how is graph.json written and read back?", budget=500)
    subject = loom.query("Write graph.json atomically under the folder lock", budget=500)
    issue = loom.query("Why is graph.json not written?\nTraceback (most recent call last): save_graph", budget=500)
    follow_up = loom.query(Query("and where is it read?", [{"role": "user", "content": "how is graph.json written?"},
                                                          {"role": "assistant", "content": "save_graph writes it."}]), budget=500)
    density = SIGNALS.index("density")
    for asked in (question, follow_up):
        assert asked.ranking.weights.density == LoomConfig().question_density > 0
    for other in (subject, issue):
        assert other.ranking.weights.density == LoomConfig().weights.density == 0
        assert other.ranking.contributions[:, density].max() == 0
    # notes have no code structure, and a topic near the question is not a neighbour
    # (concept_relevance 1): nothing here has a relevant connection
    assert question.ranking.contributions[:, density].max() == 0
    loom.graph.config = LoomConfig(concept_relevance=0.3)  # the seed's reading: relevant topics count
    assert loom.query("how is graph.json written and read back?", budget=500).ranking.contributions[:, density].max() > 0
    loom.graph.config = LoomConfig()
    mine = loom.query("how is graph.json written and read back?", budget=500, weights={"density": 0.05})
    assert mine.ranking.weights.density == 0.05  # weights a caller passes are used as given


def test_the_query_vector_is_made_from_the_prose_of_a_message_that_pastes_code():
    """A sentence model's vector of pasted code follows the code's surface; the prose says what
    is wrong. The lexical signals still read the whole message, identifiers in the code included."""

    class Recording(HashingEmbedder):
        def __init__(self):
            super().__init__(64)
            self.seen = []

        def embed(self, texts):
            self.seen.extend(texts)
            return super().embed(texts)

    embedder = Recording()
    loom = Loom(embedder=embedder)
    loom.add("def map_header(ptr): copies one request header into a struct field", type="analysis")
    loom.add("Notes on the release schedule for the spring.", type="analysis")
    prose = "Binding fails when a request header is empty."
    message = prose + "\n\n```python\nresult = map_header(target)\nprint(result)\n```"
    result = loom.query(message, budget=500)
    assert embedder.seen[-1] == prose  # the vector: the prose alone
    row = next(r for r in result.table if "map_header" in loom.text(r.node_id))
    assert row.signals["terms"] > 0  # the code still speaks to the lexical signals
    loom.query("How are headers bound?", budget=500)
    assert embedder.seen[-1] == "How are headers bound?"  # prose only: the message as it is


def test_a_budget_that_is_not_a_number_and_a_report_path_that_is_a_folder_are_clear_errors(tmp_path):
    loom = Loom(embedder=HashingEmbedder())
    loom.add("Refresh tokens rotate on every use.")
    for bad in (float("nan"), float("inf"), "800"):
        with pytest.raises(LoomError, match="budget must be a whole number of tokens"):
            loom.query("refresh tokens", budget=bad)
    assert loom.query("refresh tokens", budget=np.int64(800)).packed.budget.context == 800
    result = loom.query("refresh tokens", budget=800)
    with pytest.raises(LoomError, match="is a folder; give the report a file name"):
        loom.export_report(result, tmp_path)


def test_a_workspace_whose_path_is_not_utf8_is_refused_before_indexing(tmp_path):
    """graph.json stores the workspace root as UTF-8 text: a folder named in Latin-1 used to
    index in full and then fail every save. It is refused first, and the session goes on."""
    import os

    workspace = os.fsencode(tmp_path) + b"/caf\xe9"
    os.makedirs(workspace)
    with open(workspace + b"/a.py", "w") as f:
        f.write("def refresh_token():\n    return 1\n")
    loom = Loom(tmp_path / "session", embedder=HashingEmbedder())
    with pytest.raises(LoomError, match=r"caf\\xe9.*not valid UTF-8.*rename"):
        loom.index(os.fsdecode(workspace), wait=True, progress=False)
    assert len(loom.graph.content_vectors) == 0 and "workspace" not in loom.graph.metadata
    loom.add("a note about token refresh", split=False)
    loom.save()
    assert Loom.open(tmp_path / "session").query("token refresh", budget=500).loaded


def test_exclude_takes_one_id_as_a_string_and_refuses_unknown_ids(loom):
    from loom_nb.core.errors import UnknownNodeError

    loom.add("Refresh tokens rotate on every use.")
    loom.add("The refresh token is stored after each rotation.")
    result = loom.query("refresh token rotation", budget=800, exclude="n1")  # one id, not the characters 'n' and '1'
    assert result.decision("n1").decision == "excluded" and result.loaded == ["n2"]
    with pytest.raises(UnknownNodeError, match="'n99'"):
        loom.query("refresh token rotation", budget=800, exclude=["n2", "n99"])
    with pytest.raises(TypeError, match="node ids"):
        loom.query("refresh token rotation", budget=800, exclude=[2])


@pytest.mark.parametrize("arguments", [
    {"budget": -0.5}, {"budget": 0.99}, {"budget": True}, {"window": 1.9}, {"window": True},
    {"budget": -1}, {"window": 0}, {"model": 123}, {"model": ""},
])
def test_a_budget_window_or_model_that_is_not_one_is_refused_not_truncated(arguments):
    """``int()`` made 0.99 and True a budget of 0 and 1, and a model of 123 failed inside a lookup."""
    loom = Loom(embedder=HashingEmbedder())
    loom.add("The refresh token is reused after an hour, so the refresh fails.")
    with pytest.raises(LoomError, match="budget|window|model"):
        loom.query("why does the refresh fail?", **arguments)


@pytest.mark.parametrize("message", ["\u200b\u200b", "\x00", " \ufeff\t"])
def test_a_query_of_only_invisible_characters_is_empty(message):
    loom = Loom(embedder=HashingEmbedder())
    loom.add("The refresh token is reused after an hour.")
    with pytest.raises(LoomError, match="empty"):
        loom.query(message, budget=500)


def test_a_query_with_a_lone_surrogate_or_no_history_is_taken_as_text():
    """A lone surrogate (bytes decoded with surrogateescape) crashed MiniLM's tokenizer; a
    history of None failed as 'NoneType is not iterable'."""
    from loom_nb import Query

    assert Query("caf\udce9 token", None) == Query("caf\ufffd token")
    loom = Loom(embedder=HashingEmbedder())
    node = loom.add("The cafe token refresh fails.").nodes[0]
    assert loom.query("caf\udce9 token refresh", budget=500).loaded == [node.id]


def test_a_question_no_window_can_hold_beside_its_fixed_zones_is_refused_not_sent_whole():
    """At a 60-token window the system prompt and the answer's reservation fill it: the
    question went out whole, 2,700 tokens over, with only a log warning."""
    loom = Loom(embedder=HashingEmbedder())
    loom.add("The refresh token is reused after an hour.")
    with pytest.raises(LoomError, match="60-token window holds nothing beyond the system prompt"):
        loom.query("why " * 2700, window=60)
    assert loom.query("why does the refresh fail?", window=200).packed.budget.window == 200
