"""The evaluation harness: grading arithmetic by hand, the baselines, the cases file and the CLI."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from loom_nb.cli import main
from loom_nb.embed import HashingEmbedder
from loom_nb.core.errors import LoomError
from loom_nb.evaluation.run import (
    STRATEGIES,
    WINDOW_LINES,
    Case,
    Gold,
    Loaded,
    char_span_lines,
    evaluate,
    evaluate_budgets,
    grade,
    load_cases,
)
from loom_nb.core.config import LoomConfig
from loom_nb.core.tokens import count_tokens

# -- grading, by hand --------------------------------------------------------------------------


def test_grade_files_and_lines_by_hand():
    items = [Loaded("a.py", 1, 10, 100, 2.0), Loaded("a.py", 31, 40, 90, 1.5), Loaded("b.py", 1, 10, 80, 1.0)]
    gold = Gold(files=frozenset({"a.py", "c.py"}), ranges={"a.py": ((5, 14),), "c.py": ((1, 5),)})
    m = grade(items, gold, budget=1000, workspace_tokens=2700, seconds=0.5)
    assert m.precision == pytest.approx(2 / 3)  # two of three items are in a gold file
    assert m.recall == 0.5 and m.file_recall == 0.5  # a.py loaded, c.py not
    assert m.file_precision == 0.5  # files a.py, b.py; one is gold
    assert m.line_recall == pytest.approx(6 / 15)  # a.py lines 5..10 of 5..14, none of c.py 1..5
    assert (m.tokens, m.budget_use, m.token_efficiency, m.items, m.seconds) == (270, 0.27, 0.1, 3, 0.5)


def test_grade_nodes_by_id_and_by_overlap():
    gold = Gold(nodes=frozenset({"n1", "n2", "n9"}), node_spans={"n1": ("a.py", 1, 5), "n2": ("b.py", 20, 30)})
    # a loom-like load: n1 by id, plus an unrelated node
    m = grade([Loaded("a.py", 1, 5, 10, 1.0, "n1"), Loaded("c.py", 1, 3, 10, 0.5, "n4")], gold, budget=100)
    assert m.precision == 0.5 and m.recall == pytest.approx(1 / 3)
    assert m.file_recall == 0.5 and m.line_recall is None and m.token_efficiency is None
    # a baseline window overlapping n2's lines counts for n2; n9 (chat text) can never be loaded
    m = grade([Loaded("b.py", 1, 21, 50, 3.0)], gold, budget=100)
    assert m.precision == 1.0 and m.recall == pytest.approx(1 / 3)


def test_grade_nothing_loaded_scores_zero():
    m = grade([], Gold(files=frozenset({"a.py"}), ranges={"a.py": ((1, 2),)}), budget=100)
    assert (m.precision, m.recall, m.file_precision, m.line_recall, m.tokens) == (0.0, 0.0, 0.0, 0.0, 0)


def test_char_span_lines():
    text = "l1\nl2\nl3\nl4\n"
    assert char_span_lines(text, 10, 0, len(text)) == (10, 13)
    assert char_span_lines(text, 10, 3, 6) == (11, 11)  # "l2\n" ends on its own line
    assert char_span_lines(text, 1, 6, 8) == (3, 3)


# -- a tiny workspace -----------------------------------------------------------------------------


def _workspace(root: Path) -> Path:
    ws = root / "ws"
    (ws / "pkg").mkdir(parents=True)
    (ws / "pkg" / "auth.py").write_text(
        '"""Token refresh for the OAuth client."""\n\n\n'
        "def refresh_token(session):\n"
        '    """Exchange the refresh token for a new access token."""\n'
        "    return session.post('/oauth/refresh')\n\n\n"
        "def logout(session):\n"
        "    session.clear()\n"
    )
    (ws / "pkg" / "theme.py").write_text("".join(f"P{i} = {i}  # palette colour\n" for i in range(120)))  # 400 tokens per window
    (ws / "pkg" / "billing.py").write_text(
        "def invoice_total(lines):\n    return sum(l.amount for l in lines)\n\n\n"
        "def apply_discount(total, percent):\n    return total * (1 - percent / 100)\n"
    )
    (ws / "README.md").write_text("# Demo app\n\n## Authentication\n\nTokens are refreshed by `pkg/auth.py`.\n\n## Billing\n\nInvoices add up line amounts.\n")
    return ws


CASES = [
    {"id": "refresh", "query": "How is the OAuth refresh token exchanged?", "workspace": "ws",
     "gold_files": ["pkg/auth.py"], "gold_ranges": {"pkg/auth.py": [[4, 6]]}},
    {"id": "discount", "query": "How is a discount applied to an invoice total?", "workspace": "ws",
     "gold_files": ["pkg/billing.py"], "budget": 300},
    {"id": "palette", "query": "Which colours are in the theme palette?", "workspace": "ws", "gold_files": ["pkg/theme.py"], "budget": 450},
]


@pytest.fixture(scope="module")
def cases_file(tmp_path_factory):
    root = tmp_path_factory.mktemp("eval")
    _workspace(root)
    lines = [json.dumps(CASES[0]), "{not json", json.dumps(CASES[1]), json.dumps({"id": "x", "query": "q", "workspace": "ws"}),
             "", json.dumps({**CASES[2], "extra": "ignored"}), json.dumps({**CASES[0], "query": "again"})]
    path = root / "cases.jsonl"
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.fixture(scope="module")
def report(cases_file):
    cases, _ = load_cases(cases_file)
    return evaluate(cases, budget=500, embedder=HashingEmbedder())


def test_load_cases_reports_bad_lines_and_keeps_the_rest(cases_file):
    cases, errors = load_cases(cases_file)
    assert [c.id for c in cases] == ["refresh", "discount", "palette"]
    assert len(errors) == 3
    assert ":2: not valid JSON" in errors[0]
    assert ":4: give 'gold_files' or 'gold_nodes'" in errors[1]
    assert ":7: id 'refresh' is already used" in errors[2]
    assert cases[0].workspace == (cases_file.parent / "ws").resolve()  # relative to the cases file
    assert cases[0].gold_ranges == {"pkg/auth.py": ((4, 6),)} and cases[1].budget == 300 and cases[0].line == 1


@pytest.mark.parametrize("bad, message", [
    ({"query": "q", "workspace": ".", "gold_files": ["a"]}, "'id'"),
    ({"id": "a", "query": "q", "workspace": ".", "session": ".", "gold_files": ["a"]}, "exactly one"),
    ({"id": "a", "query": "q", "workspace": ".", "gold_files": ["a"], "gold_ranges": {"a": [[5, 2]]}}, "1 <= start <= end"),
    ({"id": "a", "query": "q", "workspace": ".", "gold_files": ["a"], "budget": 0}, "positive integer"),
    ([1, 2], "JSON object"),
    ({"id": "a", "query": "q", "workspace": ".", "gold_files": ["../../etc/passwd"]}, "inside the workspace"),
    ({"id": "a", "query": "q", "workspace": ".", "gold_files": ["/etc/passwd"]}, "inside the workspace"),
    ({"id": "a", "query": "q", "workspace": ".", "gold_files": ["a.py"], "gold_ranges": {"../a.py": [[1, 1]]}}, "inside the workspace"),
    ({"id": "a", "query": "q", "workspace": ".", "gold_files": ["a.py"], "gold_ranges": {"b.py": [[1, 1]]}}, "not in gold_files"),
])
def test_malformed_cases(tmp_path, bad, message):
    path = tmp_path / "c.jsonl"
    path.write_text(json.dumps(bad) + "\n")
    cases, errors = load_cases(path)
    assert cases == [] and len(errors) == 1 and message in errors[0] and ":1:" in errors[0]


def test_every_strategy_runs_and_stays_in_budget(report):
    assert {r.strategy for r in report.results} == set(STRATEGIES)
    for r in report.results:
        assert r.error == "" and r.metrics is not None
        budget = {"refresh": 500, "discount": 300, "palette": 450}[r.case_id]
        assert r.metrics.budget == budget
        assert r.metrics.tokens <= budget, (r.case_id, r.strategy)
        assert sum(i.tokens for i in r.items) <= budget


def test_baselines_load_what_they_say(report, cases_file):
    ws = cases_file.parent / "ws"
    # bm25: the top file, whole, with its exact token count
    items = report.result("refresh", "bm25").items
    assert items[0].path == "pkg/auth.py" and items[0].start == 1 and items[0].end == 10
    assert items[0].tokens == count_tokens((ws / "pkg" / "auth.py").read_text())
    # theme.py (1200 tokens) is too big for 450: bm25 stops, whole-file skips it
    theme = count_tokens((ws / "pkg" / "theme.py").read_text())
    assert theme > 450 and report.result("palette", "bm25").items == []
    assert all(i.path != "pkg/theme.py" for i in report.result("palette", "whole-file").items)
    # bm25-chunks loads 40-line windows of theme.py instead
    windows = report.result("palette", "bm25-chunks").items
    assert windows and all(i.path == "pkg/theme.py" and i.end - i.start + 1 <= WINDOW_LINES for i in windows)
    assert (windows[0].start - 1) % WINDOW_LINES == 0
    # the engine finds the refresh function, and its lines
    assert report.result("refresh", "loom").metrics.line_recall == 1.0
    assert report.result("refresh", "loom").metrics.seconds > 0


def test_table_and_text(report):
    rows = report.table()
    assert [r["strategy"] for r in rows] == list(STRATEGIES)
    loom = rows[0]
    per_case = [report.result(c, "loom").metrics.precision for c in ("refresh", "discount", "palette")]
    assert loom["cases"] == 3 and loom["precision"] == pytest.approx(sum(per_case) / 3)
    assert loom["line_recall"] == report.result("refresh", "loom").metrics.line_recall  # the only case with ranges
    text = str(report)
    assert "3 cases, budget 500 tokens" in text and "bm25-chunks" in text and "lineR" in text


def test_json_holds_every_loaded_item(report):
    data = json.loads(json.dumps(report.to_json()))
    assert data["budget"] == 500 and data["strategies"] == list(STRATEGIES) and len(data["cases"]) == 3
    refresh = data["cases"][0]
    assert refresh["gold_ranges"] == {"pkg/auth.py": [[4, 6]]}
    for name in STRATEGIES:
        entry = refresh["strategies"][name]
        assert len(entry["items"]) == entry["metrics"]["items"] == len(report.result("refresh", name).items)
        for item in entry["items"]:
            assert set(item) == {"path", "start", "end", "tokens", "score", "node"}


def test_gold_nodes_and_session_cases(tmp_path):
    from loom_nb import Loom

    ws = _workspace(tmp_path)
    loom = Loom(tmp_path / "session", embedder=HashingEmbedder())
    loom.index(ws, progress=False)
    note = loom.add("Invoices are emailed on the first day of each month.", type="analysis").nodes[0]
    loom.save()
    case = Case("note", "When are invoices emailed?", session=tmp_path / "session", gold_nodes=(note.id,))
    rep = evaluate([case], budget=400, strategies=("loom", "bm25-chunks"), embedder=HashingEmbedder())
    assert rep.result("note", "loom").metrics.recall == 1.0  # the chat note is loaded by id
    assert rep.result("note", "bm25-chunks").metrics.recall == 0.0  # a file baseline can never load it
    assert rep.result("note", "bm25-chunks").metrics.file_recall is None


def test_cache_dir_reuses_the_session(tmp_path):
    ws = _workspace(tmp_path)
    case = Case("c", "refresh token", workspace=ws.resolve(), gold_files=("pkg/auth.py",))
    first = evaluate([case], budget=300, strategies=("loom",), embedder=HashingEmbedder(), cache_dir=tmp_path / "cache")
    folders = [f for f in (tmp_path / "cache").iterdir() if f.is_dir()]
    assert len(folders) == 1 and (folders[0] / "graph.json").exists()
    assert (tmp_path / "cache" / "embeddings-hashing-256.npz").exists()  # shared by every workspace
    second = evaluate([case], budget=300, strategies=("loom",), embedder=HashingEmbedder(), cache_dir=tmp_path / "cache")
    assert [i.to_dict() for i in first.results[0].items] == [i.to_dict() for i in second.results[0].items]


def test_a_cache_inside_the_workspace_is_not_graded_as_workspace_files(tmp_path):
    ws = _workspace(tmp_path)
    case = Case("c", "refresh token graph", workspace=ws.resolve(), gold_files=("pkg/auth.py",))
    for _ in range(2):
        rep = evaluate([case], budget=100_000, strategies=("loom", "whole-file"), embedder=HashingEmbedder(), cache_dir=ws / ".eval-cache")
    loaded = {i.path for r in rep.results for i in r.items}
    assert loaded and not any(p.startswith(".eval-cache") for p in loaded), loaded


def test_gold_labels_the_workspace_cannot_hold_are_warned_about_once_per_case(tmp_path, caplog):
    ws = _workspace(tmp_path)
    cases = [Case("past-eof", "refresh token", workspace=ws.resolve(), gold_files=("pkg/auth.py",), gold_ranges={"pkg/auth.py": ((900, 1000),)}),
             Case("gone", "refresh token", workspace=ws.resolve(), gold_files=("pkg/auths.py",)),
             Case("fine", "refresh token", workspace=ws.resolve(), gold_files=("pkg/auth.py",), gold_ranges={"pkg/auth.py": ((4, 6),)})]
    with caplog.at_level("WARNING", logger="loom_nb.evaluation.run"):
        evaluate_budgets(cases, [300, 600], strategies=("loom", "bm25"), embedder=HashingEmbedder())
    warned = [r.getMessage() for r in caplog.records if r.name == "loom_nb.evaluation.run"]
    assert warned == ["case past-eof: gold_ranges 'pkg/auth.py' [900, 1000] runs past the file's end (10 lines)",
                      "case gone: gold file 'pkg/auths.py' is not in the workspace"]


def test_cli_eval_runs_each_strategy_once_and_refuses_none(cases_file, capsys):
    assert main(["eval", str(cases_file), "--budget", "400", "--strategy", "loom,bm25,loom", "--embedder", "hashing"]) == 0
    table = capsys.readouterr().out.split("prec/recall")[0]
    assert [line.split()[:2] for line in table.splitlines()[2:]] == [["loom", "3"], ["bm25", "3"]]
    for empty in (",", " , ", ""):
        assert main(["eval", str(cases_file), "--strategy", empty, "--embedder", "hashing"]) == 2
        err = capsys.readouterr().err
        assert "give one or more strategies" in err and "reasons above" not in err
    with pytest.raises(LoomError, match="at least one strategy"):
        evaluate([], strategies=())


def test_bad_inputs(tmp_path):
    with pytest.raises(LoomError, match="unknown strategy 'grep'"):
        evaluate([], strategies=("grep",))
    case = Case("gone", "q", workspace=tmp_path / "missing", gold_files=("a.py",))
    rep = evaluate([case], strategies=("loom", "bm25"), embedder=HashingEmbedder())
    assert all(r.metrics is None and "not a folder" in r.error for r in rep.results)
    assert rep.table()[0]["failed"] == 1 and "(1 failed)" in str(rep)


def test_cli_eval_end_to_end(cases_file, tmp_path, capsys):
    out = tmp_path / "out.json"
    code = main(["eval", str(cases_file), "--budget", "400", "--strategy", "loom,bm25", "--embedder", "hashing", "--json", str(out)])
    captured = capsys.readouterr()
    assert code == 0
    assert "3 cases, budget 400 tokens; 3 case line(s) rejected" in captured.out
    assert "loom" in captured.out and "bm25" in captured.out and "dense" not in captured.out.split("\n", 2)[2].split("prec/recall")[0]
    assert captured.err.count("warning") == 3 and ":2: not valid JSON" in captured.err
    data = json.loads(out.read_text())
    assert data["strategies"] == ["loom", "bm25"] and data["errors"] and data["cases"][0]["strategies"]["loom"]["items"]
    code = main(["eval", str(cases_file), "--strategy", "loom,grep", "--embedder", "hashing"])
    assert code == 2 and "unknown strategy 'grep'" in capsys.readouterr().err


def test_a_sibling_tree_starts_from_its_siblings_session(tmp_path, caplog):
    import logging
    import shutil

    from loom_nb.evaluation.run import Workbench

    first = _workspace(tmp_path / "trees" / "a")
    second = tmp_path / "trees" / "b" / "ws"
    shutil.copytree(first, second)
    (second / "pkg" / "billing.py").write_text("def invoice_total(lines):\n    return 0\n")
    cases = [Case(n, "invoice total", workspace=w.resolve(), gold_files=("pkg/billing.py",), gold_ranges={"pkg/billing.py": ((1, 2),)})
             for n, w in (("a", first), ("b", second))]
    bench = Workbench(HashingEmbedder(), tmp_path / "cache")
    bench.loom(cases[0])
    # the trees are ws folders under a/ and b/: not siblings, so b is indexed from scratch
    assert len([f for f in (tmp_path / "cache").iterdir() if f.is_dir()]) == 1
    bench._siblings[second.resolve().parent] = bench._siblings.pop(first.resolve().parent)  # make them siblings
    with caplog.at_level(logging.WARNING, logger="loom_nb"):
        loom = bench.loom(cases[1])
    assert loom.graph.metadata["workspace"]["root"] == str(second.resolve())
    assert not [r for r in caplog.records if "never confirmed" in r.getMessage()]  # the harness indexed the sibling itself
    assert "return 0" in loom.text(next(n for n in loom.graph.metadata["workspace"]["files"]["pkg/billing.py"]["nodes"]))
    fresh = evaluate([cases[1]], budget=300, strategies=("loom",), embedder=HashingEmbedder())
    seeded = evaluate_budgets([cases[1]], [300], ("loom",), bench=bench)[300]
    def where(report):
        return [(i.path, i.start, i.end, i.tokens) for i in report.results[0].items]

    assert where(fresh) == where(seeded)  # node ids differ; what is loaded does not


def test_ablations_switch_one_signal_off_and_report_what_it_earns(cases_file):
    from loom_nb.core.config import SIGNALS, LoomConfig
    from loom_nb.evaluation.run import ablations

    weighted = [s for s in SIGNALS if getattr(LoomConfig().weights, s) > 0 or s == "density"]  # a question weighs density
    assert ablations() == tuple(f"loom-no-{s}" for s in weighted)
    assert "loom-no-file" not in ablations(LoomConfig().with_(weights={"file": 0}))
    assert "loom-no-density" not in ablations(LoomConfig(question_density=0.0))

    cases, _ = load_cases(cases_file)
    rep = evaluate(cases, budget=500, strategies=("loom", "loom-no-terms", "loom-no-semantic"), embedder=HashingEmbedder())
    full = {r.case_id: r for r in rep.results if r.strategy == "loom"}
    no_terms = {r.case_id: r for r in rep.results if r.strategy == "loom-no-terms"}
    # the same query and budget under other weights: the scores of what is loaded change
    assert any([i.score for i in full[c].items] != [i.score for i in no_terms[c].items] for c in full)
    assert all(sum(i.tokens for i in r.items) <= 500 for r in rep.results)
    rows = {row["signal"]: row for row in rep.ablation_table()}
    table = {row["strategy"]: row for row in rep.table()}
    assert set(rows) == {"terms", "semantic"}
    for signal in rows:
        assert rows[signal]["line_recall_change"] == pytest.approx(table[f"loom-no-{signal}"]["line_recall"] - table["loom"]["line_recall"])
        assert rows[signal]["file_recall_change"] == pytest.approx(table[f"loom-no-{signal}"]["file_recall"] - table["loom"]["file_recall"])
    assert "signal off" in str(rep) and "terms" in str(rep).split("signal off", 1)[1]
    only = evaluate(cases[:1], budget=500, strategies=("loom-no-terms",), embedder=HashingEmbedder())
    with pytest.raises(LoomError, match="run the 'loom' strategy too"):
        only.ablation_table()
    with pytest.raises(LoomError, match="unknown strategy 'loom-no-vibes'"):
        evaluate(cases, strategies=("loom", "loom-no-vibes"))


def test_cli_eval_ablations(cases_file, capsys):
    code = main(["eval", str(cases_file), "--budget", "400", "--strategy", "bm25-chunks", "--ablations", "--embedder", "hashing"])
    out = capsys.readouterr().out
    assert code == 0
    assert "bm25-chunks" in out and "\nloom " in out and "loom-no-terms" in out and "loom-no-file" in out
    assert "signal off" in out


# -- the default path, forced modes and follow-up turns (issue 12) --------------------------


def test_loom_is_the_default_path_and_each_mode_row_forces_its_mode(report, cases_file):
    from loom_nb.evaluation.run import MODE_STRATEGIES

    assert MODE_STRATEGIES == ("loom-bare", "loom-fast", "loom-fused")
    for case in ("refresh", "discount", "palette"):  # auto runs FUSED with the defaults
        assert report.result(case, "loom").items == report.result(case, "loom-fused").items
    cases, _ = load_cases(cases_file)
    from loom_nb import LoomConfig

    bare_auto = evaluate(cases, budget=500, strategies=("loom", "loom-bare", "loom-fused"), embedder=HashingEmbedder(),
                         config=LoomConfig(bare_below=1.0))
    for case in ("refresh", "discount", "palette"):  # a config that maps every query to BARE: loom follows it
        assert bare_auto.result(case, "loom").items == bare_auto.result(case, "loom-bare").items
    row = {r["strategy"]: r for r in report.table()}["loom"]
    assert 0 < row["relevant_share"] <= 1 and 0 <= row["relevant_precision"] <= 1


def test_follow_up_cases_run_through_the_turn_planner(tmp_path):
    ws = _workspace(tmp_path)
    history = [{"role": "user", "content": "How is the OAuth refresh token exchanged?"},
               {"role": "assistant", "content": "The client posts it to the refresh endpoint."}]
    line = {"id": "fu", "query": "and where does that live?", "workspace": str(ws), "history": history,
            "gold_files": ["pkg/auth.py"], "gold_ranges": {"pkg/auth.py": [[4, 6]]}}
    path = tmp_path / "fu.jsonl"
    path.write_text(json.dumps(line) + "\n" + json.dumps({**line, "id": "bad", "history": [{"role": "bot"}]}) + "\n")
    cases, errors = load_cases(path)
    assert len(cases) == 1 and "history[0]" in errors[0]
    assert cases[0].history == (("user", history[0]["content"]), ("assistant", history[1]["content"]))
    followed = evaluate(cases, budget=300, strategies=("loom", "loom-fused"), embedder=HashingEmbedder())
    alone = evaluate([Case("alone", "and where does that live?", workspace=ws, gold_files=("pkg/auth.py",),
                           gold_ranges={"pkg/auth.py": ((4, 6),)})], budget=300, strategies=("loom",), embedder=HashingEmbedder())
    assert followed.result("fu", "loom").metrics.line_recall == 1.0  # the history names what the message does not
    assert alone.result("alone", "loom").metrics.line_recall < 1.0



def test_an_ablation_removes_one_signal_from_the_weights_the_message_gets(tmp_path):
    """A question on its own ranks with question_density, a message naming code with its semantic
    weight scaled; an ablation takes one signal from those weights, once, for a chat turn too."""
    from loom_nb import Loom
    from loom_nb.evaluation.run import run_engine

    loom = Loom(embedder=HashingEmbedder(), config=LoomConfig(named_code_semantic=0.5))
    loom.index(_workspace(tmp_path), progress=False, wait=True)
    config = loom.graph.config
    question = Case("q", "how is the refresh token exchanged?", workspace=tmp_path / "ws", gold_files=("pkg/auth.py",))
    no_terms = run_engine(loom, question, "loom-no-terms", 300).ranking.weights
    assert no_terms.terms == 0 and no_terms.density == config.question_density
    assert run_engine(loom, question, "loom-no-density", 300).ranking.weights.density == 0
    turn = Case("t", "and who calls refresh_token?", workspace=tmp_path / "ws", gold_files=("pkg/auth.py",),
                history=(("user", "How is the OAuth refresh token exchanged?"), ("assistant", "It is posted.")))
    weights = run_engine(loom, turn, "loom-no-terms", 300).ranking.weights
    assert weights.terms == 0 and weights.semantic == pytest.approx(config.weights.semantic * 0.5)  # scaled once
    assert loom.graph.config == config  # the session's config is put back

# -- telling two rows apart: the paired bootstrap ---------------------------------------------


def test_compare_pairs_the_cases_and_says_when_a_difference_could_be_chance(report):
    from loom_nb.evaluation.metrics import paired_bootstrap

    c = report.compare("loom", "whole-file", "file_recall")
    loom = {r.case_id: r.metrics.file_recall for r in report.results if r.strategy == "loom"}
    whole = {r.case_id: r.metrics.file_recall for r in report.results if r.strategy == "whole-file"}
    assert c.cases == len(loom) == 3
    assert c.difference == pytest.approx(sum(loom[k] - whole[k] for k in loom) / 3)
    assert c.low <= c.difference <= c.high
    assert c.better == sum(loom[k] > whole[k] for k in loom) and c.worse == sum(loom[k] < whole[k] for k in loom)
    same = report.compare("loom", "loom-fused")  # auto runs FUSED: the same items, no difference at all
    assert (same.difference, same.low, same.high, same.better, same.worse) == (0.0, 0.0, 0.0, 0, 0)
    assert same.could_be_chance
    # line recall: only the case with gold ranges counts
    assert report.compare("loom", "bm25").cases == 1
    # a known answer: one case up by 1, one down by 1, eight tied
    even = paired_bootstrap([1.0, 0.0] + [0.5] * 8, [0.0, 1.0] + [0.5] * 8)
    assert even.difference == 0.0 and even.low < 0 < even.high and (even.better, even.worse) == (1, 1)
    # fixed seed: the same figures give the same interval
    assert paired_bootstrap([0.2, 0.9, 0.4], [0.1, 0.3, 0.4]) == paired_bootstrap([0.2, 0.9, 0.4], [0.1, 0.3, 0.4])


def test_compare_refuses_what_it_cannot_compare(report):
    from loom_nb.evaluation.metrics import paired_bootstrap

    with pytest.raises(LoomError, match="not in this report"):
        report.compare("loom", "nonsense")
    with pytest.raises(LoomError, match="unknown metric"):
        report.compare("loom", "bm25", "wit")
    with pytest.raises(ValueError, match="no case"):
        paired_bootstrap([None], [0.5])
    with pytest.raises(ValueError, match="level"):
        paired_bootstrap([0.5], [0.5], level=95)
    with pytest.raises(ValueError, match="pairs each case"):
        paired_bootstrap([0.5, 0.1], [0.5])


def test_the_report_prints_the_default_against_each_forced_mode(report):
    text = str(report)
    for mode in ("loom-bare", "loom-fast", "loom-fused"):
        assert f"loom − {mode}: " in text
    assert "paired bootstrap over 1 case;" in text  # line recall: one case has gold ranges
    assert "cannot tell the two apart" in text


def test_a_session_case_never_borrows_the_index_of_a_workspace_case_on_the_same_folder(tmp_path):
    ws = _workspace(tmp_path)
    cases = [Case("w", "refresh token", workspace=ws.resolve(), gold_files=("pkg/auth.py",)),
             Case("s", "refresh token", session=ws.resolve(), gold_nodes=("n1",))]
    rep = evaluate(cases, budget=300, strategies=("loom",), embedder=HashingEmbedder())
    assert rep.result("w", "loom").metrics is not None
    s = rep.result("s", "loom")
    assert s.metrics is None and "no session here" in s.error
