"""Tuning: re-weighting stored signals, coordinate ascent, held-out folds, the figure and the CLI."""

from __future__ import annotations

import json

import numpy as np
import pytest

from loom_nb.cli import main
from loom_nb.core.errors import LoomError
from loom_nb.core.config import LoomConfig, Weights
from loom_nb.embed import HashingEmbedder
from loom_nb.evaluation.run import Case, Workbench
from loom_nb.core.rank import rank
from loom_nb.evaluation.tuning import coordinate_ascent, cross_validate, evaluate_config, folds_of, prepare, set_params, tuning_figure

FILES = {
    # each file defines one function the query describes; the notes say every query's
    # words in prose, so the semantic signal alone prefers them
    "pkg/alpha.py": "def rotate_keys(ring):\n    return ring[1:] + ring[:1]\n",
    "pkg/beta.py": "def parse_header(line):\n    return line.split(':', 1)\n",
    "pkg/gamma.py": "def merge_config(a, b):\n    return {**a, **b}\n",
    "pkg/delta.py": "def close_stream(s):\n    s.close()\n",
}
NOISE = "The keys rotate, the header parses, the config merges and the stream closes. " * 1


@pytest.fixture
def cases(tmp_path):
    ws = tmp_path / "ws"
    for path, text in FILES.items():
        (ws / path).parent.mkdir(parents=True, exist_ok=True)
        (ws / path).write_text(text)
    for k in range(4):
        (ws / "notes" / f"n{k}.md").parent.mkdir(parents=True, exist_ok=True)
        (ws / "notes" / f"n{k}.md").write_text(f"# Notes {k}\n\n{NOISE}\n")
    queries = {"pkg/alpha.py": "the keys rotate", "pkg/beta.py": "the header parses", "pkg/gamma.py": "the config merges", "pkg/delta.py": "the stream closes"}
    return [Case(f"c{k}", q, workspace=ws.resolve(), gold_files=(p,), gold_ranges={p: ((1, 2),)})
            for k, (p, q) in enumerate(queries.items())]


def test_reweighted_ranking_equals_a_fresh_rank(cases):
    bench = Workbench(HashingEmbedder())
    (p,) = prepare(cases[:1], bench)
    config = set_params(LoomConfig(), {"weights.terms": 1.2, "weights.semantic": 0.1, "lexical_relevance": 0.3})
    fresh = rank(p.loom.graph, p.query_vector, query=p.case.query, config=config)
    again = p.ranking(config)
    assert np.allclose(fresh.scores, again.scores) and (fresh.relevant == again.relevant).all()
    assert fresh.order.tolist() == again.order.tolist()


def test_coordinate_ascent_finds_the_lexical_weight(cases):
    prepared = prepare(cases, Workbench(HashingEmbedder()))
    # a start where only the semantic signal counts and the budget fits two blocks
    blind = LoomConfig(weights=Weights(**{n: 0.0 for n in ("hop", "staleness", "size", "provenance", "density", "terms",
                                                           "path_mention", "tagged", "git_dirty")}), fill_leftover=False)
    space = {"weights.terms": (0.0, 1.0)}
    start = evaluate_config(prepared, blind, [250]).mean()
    best, score, steps = coordinate_ascent(prepared, blind, [250], space=space)
    assert best.weights.terms == 1.0 and score == 1.0 > start
    # round 1 takes 1.0; round 2 tries 0.0 again, keeps 1.0, and stops (nothing changed)
    assert [(s.param, s.value, s.accepted) for s in steps] == [("weights.terms", 1.0, True), ("weights.terms", 0.0, False)]


def test_cross_validation_reports_held_out_gain(cases):
    prepared = prepare(cases, Workbench(HashingEmbedder()))
    blind = LoomConfig(weights=Weights(semantic=1.0, hop=0, staleness=0, size=0, provenance=0, density=0, terms=0,
                                       path_mention=0, tagged=0, git_dirty=0), fill_leftover=False)
    report = cross_validate(prepared, [250], base=blind, k=2, space={"weights.terms": (0.0, 1.0)})
    assert len(report.folds) == 2 and sorted(i for f in report.folds for i in f.test_ids) == ["c0", "c1", "c2", "c3"]
    assert all(f.chosen == {"weights.terms": 1.0} and f.test_tuned == 1.0 for f in report.folds)
    assert report.held_out_gain == pytest.approx(np.mean([1.0 - f.test_default for f in report.folds]))
    assert report.final == {"weights.terms": 1.0}
    fig = tuning_figure(report)
    assert [t.name for t in fig.data] == ["defaults", "tuned on the other folds"] and len(fig.data[0].x) == 3
    assert "held-out gain" in str(report)


def test_folds_balance_groups():
    cases = [Case(f"{g}{i}", "q") for g in "ab" for i in range(4)]
    folds = folds_of(cases, 2, group=lambda c: c.id[0])
    assert [sorted(c[0] for c in (cases[i].id for i in f)) for f in folds] == [["a", "a", "b", "b"]] * 2


def test_cli_tune(cases, tmp_path, capsys):
    path = tmp_path / "cases.jsonl"
    path.write_text("".join(json.dumps({"id": c.id, "query": c.query, "workspace": str(c.workspace),
                                        "gold_files": list(c.gold_files), "gold_ranges": {k: [list(s) for s in v] for k, v in c.gold_ranges.items()}}) + "\n"
                            for c in cases))
    code = main(["tune", str(path), "--budgets", "250", "--folds", "2", "--rounds", "1", "--embedder", "hashing",
                 "--json", str(tmp_path / "t.json"), "--figure", str(tmp_path / "t.html")])
    assert code == 0 and "held-out gain" in capsys.readouterr().out
    data = json.loads((tmp_path / "t.json").read_text())
    assert len(data["folds"]) == 2 and (tmp_path / "t.html").stat().st_size > 100_000


@pytest.mark.parametrize("config", [LoomConfig(), LoomConfig(bare_below=1.0), LoomConfig(fast_below=1.0, fast_item_limit=1)],
                         ids=["defaults", "all-bare", "all-fast-capped"])
def test_tuning_grades_the_default_path_exactly_as_the_evaluation_does(cases, config):
    """A tuned mode mapping is measured as a user gets it: Prepared.run == the eval's loom row."""
    from loom_nb.evaluation.run import evaluate

    prepared = prepare(cases, Workbench(HashingEmbedder()))
    report = evaluate(cases, budget=250, strategies=("loom",), embedder=HashingEmbedder(), config=config)
    for p in prepared:
        tuned = p.run(config, 250)
        graded = report.result(p.case.id, "loom").metrics
        assert (tuned.line_recall, tuned.tokens, tuned.items) == (graded.line_recall, graded.tokens, graded.items)


def test_the_search_space_holds_the_modes():
    from loom_nb.evaluation.tuning import DEFAULT_SPACE

    for name in ("bare_below", "fast_below", "bare_item_limit", "bare_token_cap", "fast_item_limit", "fast_token_cap"):
        assert name in DEFAULT_SPACE and LoomConfig().__getattribute__(name) in DEFAULT_SPACE[name]
    assert set_params(LoomConfig(), {"bare_below": 0.3, "bare_token_cap": 1500}).bare_token_cap == 1500


def test_cli_tune_searches_only_the_named_parameters(cases, tmp_path, capsys):
    path = tmp_path / "cases.jsonl"
    path.write_text("\n".join(json.dumps({"id": c.id, "query": c.query, "workspace": str(c.workspace),
                                          "gold_files": list(c.gold_files), "gold_ranges": {k: [list(r) for r in v] for k, v in c.gold_ranges.items()}})
                              for c in cases) + "\n")
    out = tmp_path / "tune.json"
    assert main(["tune", str(path), "--budgets", "250", "--folds", "2", "--rounds", "1", "--embedder", "hashing",
                 "--params", "bare_below,weights.terms", "--json", str(out)]) == 0
    data = json.loads(out.read_text())
    assert set(data["final"]) <= {"bare_below", "weights.terms"}
    assert main(["tune", str(path), "--params", "nonsense", "--embedder", "hashing"]) == 2
    assert "unknown parameter 'nonsense'" in capsys.readouterr().err


def test_a_case_without_gold_ranges_is_left_out_of_line_recall_as_eval_leaves_it_out(cases, caplog):
    """loom-nb eval's mean skips a case line recall cannot grade; tuning counted it 0, so the two
    disagreed on the same cases. It is left out, with a warning naming it."""
    from dataclasses import replace

    unranged = replace(cases[0], id="no-ranges", gold_ranges={})
    prepared = prepare([*cases, unranged], Workbench(HashingEmbedder()))
    with caplog.at_level("WARNING", logger="loom_nb.evaluation.tuning"):
        report = cross_validate(prepared, [250], k=2, space={"weights.terms": (0.25,)}, final=False)
    graded = evaluate_config(prepared[:-1], LoomConfig(), [250])
    assert report.cases == 4 and report.default_score == pytest.approx(graded.mean())
    assert sorted(i for f in report.folds for i in f.test_ids) == ["c0", "c1", "c2", "c3"]
    assert "1 case(s) have nothing line_recall grades and are left out: no-ranges" in caplog.text


def _cases_file(cases, path):
    path.write_text("".join(json.dumps({"id": c.id, "query": c.query, "workspace": str(c.workspace), "gold_files": list(c.gold_files),
                                        "gold_ranges": {k: [list(r) for r in v] for k, v in c.gold_ranges.items()}}) + "\n"
                            for c in cases))
    return path


@pytest.mark.parametrize("flags, message", [
    (["--folds", "0"], "at least 2 folds, got 0"),
    (["--folds", "1"], "at least 2 folds, got 1"),
    (["--folds", "9"], "--folds 9 is more than the 4 case(s)"),
    (["--budgets", "abc"], "--budgets: 'abc' is not a whole number"),
    (["--budgets", "-100"], "positive number of tokens, got -100"),
    (["--budgets", "0"], "positive number of tokens, got 0"),
    (["--budgets", ","], "give one or more token budgets"),
    (["--metric", "bogus"], "invalid choice: 'bogus'"),
    (["--metric", "tokens"], "invalid choice: 'tokens'"),
])
def test_cli_tune_refuses_what_it_cannot_run_in_one_line(cases, tmp_path, capsys, flags, message):
    path = _cases_file(cases, tmp_path / "cases.jsonl")
    argv = ["tune", str(path), "--budgets", "250", "--folds", "2", "--rounds", "1", "--embedder", "hashing", *flags]
    try:
        code = main(argv)
    except SystemExit as exc:  # argparse's own refusal (choices)
        code = exc.code
    err = capsys.readouterr().err
    assert code == 2 and message in err and "Traceback" not in err and err.strip().splitlines()[-1].count("error") == 1


def test_cli_metric_choices_are_what_tuning_maximises():
    from loom_nb.cli import build_parser
    from loom_nb.evaluation.tuning import METRICS

    tune = build_parser()._subparsers._group_actions[0].choices["tune"]
    assert tuple(next(a for a in tune._actions if a.dest == "metric").choices) == METRICS


def test_cross_validate_leaves_empty_folds_out(cases):
    prepared = prepare(cases, Workbench(HashingEmbedder()))
    report = cross_validate(prepared, [250], k=6, space={"weights.terms": (0.0, 1.0)}, rounds=1, final=False)
    assert len(report.folds) == 4 and all(len(f.test_ids) == 1 for f in report.folds)
    assert not np.isnan(report.held_out_gain)
    for k, metric, budgets in ((1, "line_recall", [250]), (2, "tokens", [250]), (2, "line_recall", []), (2, "line_recall", [0])):
        with pytest.raises(LoomError):
            cross_validate(prepared, budgets, k=k, metric=metric)


def test_cli_tune_refuses_an_id_repeated_across_files(cases, tmp_path, capsys):
    """tune c.jsonl c.jsonl kept both copies, so a held-out case's twin trained the search."""
    path = _cases_file(cases, tmp_path / "cases.jsonl")
    other = _cases_file(cases[2:], tmp_path / "other.jsonl")
    for files in ([path, path], [path, other]):
        code = main(["tune", *map(str, files), "--budgets", "250", "--folds", "2", "--rounds", "1", "--embedder", "hashing",
                     "--params", "weights.terms"])
        err = capsys.readouterr().err
        assert code == 2 and "is already used in" in err and "unique across the cases files" in err


def test_cli_tune_checks_the_figure_path_before_the_run(cases, tmp_path, capsys, monkeypatch):
    import loom_nb.evaluation.tuning as tuning

    monkeypatch.setattr(tuning, "prepare", lambda *a, **k: pytest.fail("the cases were indexed before the refusal"))
    path = _cases_file(cases, tmp_path / "cases.jsonl")
    for flag, value, message in (("--figure", tmp_path / "none" / "f.html", "does not exist"), ("--figure", tmp_path, "is a folder"),
                                 ("--json", tmp_path, "is a folder")):
        code = main(["tune", str(path), "--budgets", "250", "--folds", "2", "--embedder", "hashing", flag, str(value)])
        err = capsys.readouterr().err
        assert code == 2 and f"{flag} {value}" in err and message in err
