"""One path from question to prompt: the Query object, the window's zones, the modes, the planner."""

from __future__ import annotations

import json

import numpy as np
import pytest

from loom_nb import HashingEmbedder, Loom, LoomConfig
from loom_nb.chat.planner import Message, plan_turn, window_history
from loom_nb.core.budget import ZONE_NAMES, Zones, plan_window
from loom_nb.core.modes import choose_mode
from loom_nb.core.query import Query
from loom_nb.core.errors import LoomError
from loom_nb.core.pack import MESSAGE_OVERHEAD, compute_budget
from loom_nb.core.tokens import count_tokens

NOTES = [
    "OAuth refresh tokens rotate on every use; presenting a used refresh token revokes the whole family.",
    "The auth service logs invalid_grant when a refresh token is reused after rotation.",
    "Deployment notes: the gateway retries failed requests twice with the same body.",
    "Sourdough starter wants feeding twice a day at room temperature.",
]


@pytest.fixture
def loom():
    loom = Loom(embedder=HashingEmbedder())
    for note in NOTES:
        loom.add(note)
    return loom


# -- the Query object ---------------------------------------------------------------------


def test_a_query_keeps_the_message_and_the_history_apart():
    q = Query("and where is it called?", [{"role": "user", "content": "What does rotate() do?"},
                                           {"role": "assistant", "content": "It swaps the refresh token."}])
    assert q.message == "and where is it called?"
    assert q.previous_exchange == ("What does rotate() do?", "It swaps the refresh token.")
    text = q.retrieval_text()
    assert text.startswith("and where is it called?\n\n") and "rotate()" in text and "swaps" in text
    assert Query("alone").retrieval_text() == "alone"
    assert Query.of("x") == Query("x") and Query.of(q) is q


def test_the_previous_exchange_is_clipped_so_the_message_leads():
    long = " ".join(f"w{i}" for i in range(500))
    q = Query("short?", [{"role": "user", "content": long}, {"role": "assistant", "content": long}])
    assert len(q.retrieval_text(previous_tokens=40).split()) < 40


def test_a_bad_history_message_is_refused():
    with pytest.raises(ValueError, match="role"):
        Query("q", [{"role": "robot", "content": "x"}])
    with pytest.raises(ValueError, match="role, content"):
        Query("q", ["just a string"])


def test_the_classifier_grades_the_message_alone(loom):
    history = [{"role": "user", "content": "Here is a long log:\n" + "\n".join(f"2024-01-01 12:00:{i:02d} ERROR boom {i}" for i in range(40))},
               {"role": "assistant", "content": "The log shows repeated errors."}]
    result = loom.query(Query("why?", history), budget=400)
    assert result.classification == loom.classify("why?")
    assert result.query == "why?" and result.request.history[0].role == "user"
    assert result.messages[-1]["content"].endswith("Question: why?")  # the history is not pasted into the question


def test_a_follow_up_ranks_with_the_previous_exchange(loom):
    alone = loom.query("what happens then?", budget=200)
    follow = loom.query(Query("what happens then?", [{"role": "user", "content": "Why is a reused refresh token rejected?"},
                                                     {"role": "assistant", "content": "Rotation revokes the family."}]), budget=200)
    top = follow.ranking.top(2)
    assert {node for node, _ in top} == {"n1", "n2"}
    assert follow.ranking.scores.max() > alone.ranking.scores.max()


# -- the window's zones -------------------------------------------------------------------


def test_plan_window_names_every_zone_and_the_zones_add_up():
    plan = plan_window(8192, config=LoomConfig(), complexity=0.5, system_tokens=50, query_tokens=20,
                       decision_tokens=100, workspace_tokens=300, tool_tokens=80, history=True, callbacks=True)
    assert tuple(plan.zones) == ZONE_NAMES
    assert plan.zones["reserved output"] == int(8192 * 0.3)
    rest = 8192 - 50 - 20 - 100 - 300 - 80 - int(8192 * 0.3)
    assert plan.rest == rest and plan.history_cap == int(rest * Zones().history_share)
    assert plan.available_reserve == min(200, rest // 10)
    closed = plan.with_history(500)
    assert closed.context == rest - 500 - plan.available_reserve
    spent = closed.used(context=1000, available=50)
    assert sum(spent.values()) == 8192 and spent["unused"] == closed.context - 1000 + plan.available_reserve - 50
    with pytest.raises(ValueError, match="over its cap"):
        plan.with_history(plan.history_cap + 1)


def test_a_window_too_small_for_the_fixed_zones_is_refused():
    with pytest.raises(ValueError, match="larger num_ctx"):
        plan_window(100, config=LoomConfig(), complexity=None, system_tokens=90, query_tokens=20)


def test_query_with_a_window_and_a_chat_turn_split_it_the_same_way(loom):
    """Loom.query(window=…) and the turn planner get the context zone from the same module."""
    config = loom.graph.config
    budget = compute_budget(4096, system_prompt=config.system_prompt, query="why rotate?", complexity=loom.classify("why rotate?").complexity, config=config)
    plan = plan_turn(loom, Query("why rotate?"), window=4096, system_prompt=config.system_prompt)
    assert plan.zones["context"] <= budget.context
    assert plan.result.budget.context == budget.context  # no history, no tools: the same context zone
    assert budget.window_zones["reserved output"] == plan.zones["reserved output"]


# -- modes ----------------------------------------------------------------------------------


class CountingEmbedder(HashingEmbedder):
    def __init__(self):
        super().__init__()
        self.texts = []

    def embed(self, texts):
        self.texts.extend(texts)
        return super().embed(texts)


def test_bare_skips_the_query_vector_and_every_mode_fills_the_budget():
    inner = CountingEmbedder()
    loom = Loom(embedder=inner)
    for i in range(30):
        loom.add(f"refresh token rotation note {i}: " + " ".join(f"word{i * 7 + k}" for k in range(40)))
    before = len(inner.texts)
    bare = loom.query("refresh token rotation", budget=1500, mode="bare")
    assert len(inner.texts) == before and bare.mode.name == "bare"
    assert np.all(bare.ranking.signals[:, 0] == 0)  # no semantic signal without a vector
    crowded = []
    for mode in ("bare", "fast", "fused", None):
        result = loom.query("refresh token rotation", budget=1500, mode=mode)
        left_out = [r for r in result.table if r.relevant and r.decision == "manifest_only"]
        if left_out:  # while relevant nodes remain, no more than 10 % of the budget is unused
            crowded.append(mode)
            assert result.packed.context_tokens >= 0.9 * 1500, mode
    assert crowded == ["bare", "fused", None]  # FAST: hashing vectors make nothing relevant here


def test_auto_follows_the_configured_mapping(loom):
    assert loom.query("why rotate?", budget=300).mode.name == "fused"
    loom.graph.config = LoomConfig(bare_below=1.0)
    assert loom.query("why rotate?", budget=300).mode.name == "bare"
    assert choose_mode(0.5, LoomConfig(fast_below=0.6)).name == "fast"


# -- the turn planner -------------------------------------------------------------------------


def test_window_history_keeps_the_newest_messages_that_fit():
    msgs = [Message.of("user", "one " * 10), Message.of("assistant", "two " * 10), Message.of("user", "three " * 3)]
    kept = window_history(msgs, msgs[1].cost() + msgs[2].cost())
    assert [m.content for m in kept] == [msgs[1].content, msgs[2].content]
    assert window_history(msgs, 0) == []


def test_plan_turn_from_a_budget_excludes_history_nodes_and_keeps_the_message_as_the_question(loom):
    history = [Message.of("user", NOTES[0], node_ids=["n1"]), Message.of("assistant", "Rotation revokes the family.")]
    plan = plan_turn(loom, Query("and the log line?", [{"role": m.role, "content": m.content} for m in history]),
                     budget=600, history=history)
    assert plan.result.decision("n1").decision == "excluded"
    assert "already in this turn's messages" in plan.result.decision("n1").reason
    assert "n2" in plan.result.loaded
    assert [m["role"] for m in plan.messages] == ["system", "user", "assistant", "user"]
    assert plan.messages[-1]["content"].endswith("Question: and the log line?")
    assert plan.zones["history"] == sum(m.cost() for m in history)


def test_plan_turn_needs_exactly_one_of_window_and_budget(loom):
    with pytest.raises(ValueError, match="exactly one"):
        plan_turn(loom, Query("q"))
    with pytest.raises(ValueError, match="exactly one"):
        plan_turn(loom, Query("q"), window=4096, budget=100)


def test_plan_turn_with_a_window_sums_to_it_and_lists_what_was_left_out(loom):
    plan = plan_turn(loom, Query("refresh token rotation"), window=2048, system_prompt="Be brief.",
                     decision_text="Goal: fix the logouts", tools=[{"type": "function"}], callbacks=True)
    assert sum(plan.zones.values()) == 2048
    assert plan.zones["decision context"] == count_tokens("\n\nGoal: fix the logouts")
    assert plan.zones["tool definitions"] == count_tokens(json.dumps([{"type": "function"}]))
    assert plan.zones["system prompt"] == count_tokens("Be brief.") + MESSAGE_OVERHEAD


def test_loom_query_refuses_an_empty_query_object(loom):
    with pytest.raises(LoomError, match="empty"):
        loom.query(Query("   "))


def test_a_capped_mode_is_caught_leaving_budget_idle_and_the_defaults_are_not(loom):
    from loom_nb.core.modes import modes

    for i in range(12):
        loom.add(f"refresh token rotation detail {i}: " + " ".join(f"w{i}x{k}" for k in range(60)))
    capped = modes(LoomConfig(bare_item_limit=2))["bare"]
    assert loom.query("refresh token rotation", budget=2000, mode=capped).packed.unused_with_room()
    for mode in ("bare", "fused", None):
        assert not loom.query("refresh token rotation", budget=2000, mode=mode).packed.unused_with_room()


# -- the history in the messages -------------------------------------------------------------

HISTORY = [{"role": "user", "content": "Why is a reused refresh token rejected?"},
           {"role": "assistant", "content": "Rotation revokes the whole family."},
           {"role": "user", "content": "Which service logs it?"},
           {"role": "assistant", "content": "The auth service, as invalid_grant."}]


@pytest.mark.parametrize("limits", [{"budget": 600}, {"window": 8192}, {"window": 8192, "budget": 600}],
                         ids=["budget", "window", "both"])
def test_a_follow_up_sends_its_history_between_the_system_prompt_and_the_question(loom, limits):
    """result.messages can go to a model as they are: the follow-up keeps what it refers to."""
    result = loom.query(Query("and what does the gateway do then?", HISTORY), **limits)
    assert result.messages[0] == {"role": "system", "content": loom.graph.config.system_prompt}
    assert result.messages[1:-1] == HISTORY  # every turn, oldest first, as it was said
    assert result.messages[-1] == {"role": "user", "content": f"{result.context}\n\nQuestion: and what does the gateway do then?"}
    assert result.prompt.startswith("### system\n") and "\n\n### assistant\nRotation revokes the whole family.\n\n" in result.prompt


@pytest.mark.parametrize("limits", [{"budget": 600}, {"window": 4096}, {"window": 2048, "budget": 500}, {}])
def test_a_query_without_history_sends_the_two_messages_it_always_sent(loom, limits):
    """A guard, not a fix: the messages of a query without history are byte for byte the
    system prompt and the context with the question, as before the history was sent."""
    config = loom.graph.config
    for request in ("why is a reused refresh token rejected?", Query("why is a reused refresh token rejected?")):
        result = loom.query(request, **limits)
        user = f"{result.context}\n\nQuestion: why is a reused refresh token rejected?"
        assert result.messages == [{"role": "system", "content": config.system_prompt}, {"role": "user", "content": user}]
        assert result.prompt == f"### system\n{config.system_prompt}\n\n### user\n{user}"
        assert "history" not in result.budget_split()


def test_a_small_window_keeps_the_newest_turns_that_fit_and_counts_them(loom):
    turns = [{"role": role, "content": f"turn {k}: " + "refresh token rotation detail " * 30}
             for k, role in enumerate(["user", "assistant"] * 4)]
    cost = [count_tokens(t["content"]) + MESSAGE_OVERHEAD for t in turns]
    result = loom.query(Query("and then?", turns), window=2048)
    sent = result.messages[1:-1]
    assert 0 < len(sent) < len(turns) and sent == turns[-len(sent):]  # the oldest dropped, the newest kept in order
    split = result.budget_split()
    assert split["history"] == sum(cost[-len(sent):])
    rest = 2048 - split["system prompt"] - split["query"] - split["output reserved"]
    cap = int(rest * Zones().history_share)  # the chat's history zone, filled by the same rule
    assert split["history"] <= cap < split["history"] + cost[-len(sent) - 1]
    assert sum(split.values()) == 2048  # system, query, output, history and context fill the window, no more
    alone = loom.query("and then?", window=2048)  # the same message, no history: the context had that room
    assert alone.budget.context - result.budget.context == split["history"]


def test_with_a_budget_alone_the_history_goes_whole_beside_the_context(loom):
    """A budget without a window is the context's: the caller chose the history and counts it."""
    long = [{"role": "user", "content": "Why does rotation fail? " + "refresh token rotation detail " * 600},
            {"role": "assistant", "content": "The family is revoked."}]
    result = loom.query(Query("and then?", long), budget=300)
    assert result.messages[1:-1] == long
    assert result.budget.context == 300 and "history" not in result.budget_split()
