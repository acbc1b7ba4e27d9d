"""Another concept threshold, previewed and applied (issue 15): merges of concepts whose
members mostly reach each other, splits of concepts too loose for it, on vectors around
known centres so the right answer is known."""

import numpy as np
import pytest

from conftest import unit
from loom_nb import LoomConfig, LoomGraph
from loom_nb.core.concepts import concept_terms, rebuild_concepts
from loom_nb.core.errors import LoomError
from loom_nb.core.relink import apply_threshold, threshold_plan
from loom_nb.core.store import load_graph, save_graph

from test_concepts import TOPICS, clustered, topic_graph


def topic_of(g, concept_id):
    """The topics of a concept's strongest members (titles start with the topic)."""
    return {g.node(c).title.split()[0] for c, _ in g.content_of(concept_id)}


@pytest.fixture
def halves():
    """Three topics of 10 units, rebuilt into about six concepts: each topic cut in two."""
    g = topic_graph(10, LoomConfig(concept_threshold=0.99))
    rebuild_concepts(g, target_size=5)
    assert len(g.concept_vectors) > 3
    return g


def test_a_low_threshold_merges_the_halves_of_each_topic_and_nothing_across(halves):
    plan = threshold_plan(halves, 0.9)
    assert plan.merges and not plan.splits
    for group, share in plan.merges:
        assert len({t for c in group for t in topic_of(halves, c)}) == 1  # never two topics
        assert share >= 0.5
    quality = apply_threshold(halves, 0.9)
    assert quality.concepts == 3
    assert sorted(len(topic_of(halves, c)) for c in halves.concept_vectors.ids) == [1, 1, 1]
    assert halves.concept_threshold == 0.9


def test_a_preview_changes_nothing(halves):
    ids, threshold = list(halves.concept_vectors.ids), halves.concept_threshold
    plan = threshold_plan(halves, 0.5)
    assert plan.concepts_then < plan.concepts
    assert list(halves.concept_vectors.ids) == ids and halves.concept_threshold == threshold
    assert "merge" in str(plan) and "<b>" in plan._repr_html_()


def two_subtopics() -> LoomGraph:
    """One concept of 12 units in two groups of 6, the groups 60 degrees apart: each unit is
    about cos 30 = 0.87 from the concept's mean, so a threshold of 0.95 is too strict for it."""
    g = LoomGraph(LoomConfig(concept_threshold=0.99), embedding_model="toy")
    rng = np.random.default_rng(3)
    for k in range(12):
        v = np.array(unit(0 if k < 6 else 60, dim=8)) + 0.01 * rng.normal(size=8)
        g.add_content(f"unit {k}", v, title=f"{'left' if k < 6 else 'right'} {k}")
    rebuild_concepts(g, target_size=12)
    assert len(g.concept_vectors) == 1
    return g


def test_a_threshold_too_strict_for_a_concept_splits_it_along_its_groups():
    g = two_subtopics()
    (only,) = g.concept_vectors.ids
    assert threshold_plan(g, 0.8).splits == ()  # loose enough
    plan = threshold_plan(g, 0.95)
    ((cid, size, below, parts),) = plan.splits
    assert (cid, size, parts) == (only, 12, 2) and below == 1.0
    assert plan.concepts_then == 2
    quality = apply_threshold(g, 0.95)
    assert quality.concepts == 2
    assert sorted(len(topic_of(g, c)) for c in g.concept_vectors.ids) == [1, 1]


def test_members_that_form_one_community_stay_one_concept():
    g = topic_graph(10, LoomConfig(concept_threshold=0.99))
    rebuild_concepts(g, target_size=10)
    assert threshold_plan(g, 0.99999).splits == ()


def test_the_threshold_is_kept_by_a_save(halves, tmp_path):
    apply_threshold(halves, 0.9)
    save_graph(halves, tmp_path)
    assert load_graph(tmp_path)[0].concept_threshold == 0.9


@pytest.mark.parametrize("bad", [0, -0.2, 1.5, float("nan"), float("inf"), 1e-5, True, "0.6", None, [0.5]])
def test_a_threshold_that_is_not_a_cosine_is_refused(halves, bad):
    with pytest.raises(LoomError, match="cosine"):
        threshold_plan(halves, bad)
    with pytest.raises(LoomError, match="cosine"):
        apply_threshold(halves, bad)
    assert halves.concept_threshold == 0.99  # nothing stored


def test_a_threshold_is_checked_as_it_is_stored_and_loomconfig_agrees(halves):
    """1e-5 was checked, then stored as 0.0, which no preview or tuner would take again."""
    with pytest.raises(LoomError, match=r"got 1e-05, 0.0 at four decimals"):
        apply_threshold(halves, 1e-5)
    assert apply_threshold(halves, 0.99999) and halves.concept_threshold == 1.0
    assert threshold_plan(halves, halves.concept_threshold).threshold == 1.0
    for bad in (0.0, 0, -0.1, 1.01, True, "0.7"):
        with pytest.raises(ValueError, match=r"concept_threshold must be None or a cosine in \(0, 1\]"):
            LoomConfig(concept_threshold=bad)
    assert LoomConfig(concept_threshold=np.float32(0.5)).concept_threshold == 0.5
    from loom_nb.core.store import _config_from

    # a session this user saved with 0.0 before (graph.json sealed, so no schema check) opens at the calibrated threshold
    assert _config_from({"concept_threshold": 0.0}).concept_threshold is None


def test_a_concept_is_named_by_its_own_topics_words(halves):
    for cid in halves.concept_vectors.ids:
        (topic,) = topic_of(halves, cid)
        terms = [t for t, _ in concept_terms(halves, cid, top=4)]
        assert terms and set(terms) <= set(TOPICS[topic].split()) | {"note"}
    with pytest.raises(LoomError):
        concept_terms(halves, "n1")


def test_content_with_no_concept_is_previewed_and_applied_as_a_new_layer():
    """Content added with link=False has no concept: a preview says so, applying builds the
    layer as communities (one per topic here), and the quality counts every content node."""
    vectors, labels = clustered(6)
    g = LoomGraph(LoomConfig(concept_threshold=0.99), embedding_model="toy")
    for k, (vector, label) in enumerate(zip(vectors, labels)):
        g.add_content(f"{list(TOPICS)[label]} note {k}", vector, link=False)
    from loom_nb.core.concepts import concept_quality

    assert (concept_quality(g).content, concept_quality(g).concepts) == (18, 0)
    plan = threshold_plan(g, 0.9)
    assert (plan.concepts, plan.merges, plan.splits, plan.unlinked, plan.changes) == (0, (), (), 18, True)
    assert "18 content node(s) linked to no concept" in str(plan)
    quality = apply_threshold(g, 0.9)
    assert (quality.content, quality.concepts, g.concept_threshold) == (18, 3, 0.9)
    assert threshold_plan(g, 0.9).unlinked == 0
