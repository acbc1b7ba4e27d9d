"""Each ranking signal on a worked example, then the composite and the breakdown."""

import numpy as np
import pytest

from conftest import unit
from loom_nb import SIGNALS, LoomConfig, LoomGraph, Weights, rank
from loom_nb.core.rank import (
    composite,
    concept_hops,
    density_signal,
    file_signal,
    hop_signal,
    provenance_signal,
    semantic_signal,
    size_signal,
    staleness_signal,
)


def test_semantic_is_clipped_cosine():
    vecs = np.array([[1.0, 0.0], [0.6, 0.8], [-1.0, 0.0], [0.0, 1.0]])
    assert semantic_signal(vecs, np.array([1.0, 0.0])).tolist() == [1.0, 0.6, 0.0, 0.0]


def test_concept_hops_bfs_with_cutoff():
    # a chain 0-1-2-3 and an isolated 4
    src = np.array([0, 1, 1, 2, 2, 3])
    dst = np.array([1, 0, 2, 1, 3, 2])
    indptr = np.concatenate([[0], np.cumsum(np.bincount(src, minlength=5))])
    indices = dst[np.argsort(src, kind="stable")]
    assert concept_hops(indptr, indices, 0).tolist() == [0, 1, 2, 3, -1]
    assert concept_hops(indptr, indices, 0, max_hops=2).tolist() == [0, 1, 2, -1, -1]
    assert concept_hops(indptr, indices, 3).tolist() == [3, 2, 1, 0, -1]


def test_hop_signal_takes_the_nearest_linked_concept():
    # content 0 → concept 0 (anchor); content 1 → concepts 1 (dist 1) and 2 (dist 2);
    # content 2 → concept 3 (unreachable)
    dist = np.array([0, 1, 2, -1])
    s, hops = hop_signal(3, np.array([0, 1, 1, 2]), np.array([0, 1, 2, 3]), dist, 0.5)
    assert hops.tolist() == [1, 2, -1]
    assert s.tolist() == [1.0, 0.5, 0.0]


def test_staleness_halves_every_half_life():
    s = staleness_signal(np.array([20, 12, 4, 25]), 20, 8.0)
    assert s.tolist() == [1.0, 0.5, 0.25, 1.0]  # a future access counts as fresh


def test_size_is_half_at_the_reference():
    assert size_signal(np.array([0, 400, 1200, 3600]), 400).tolist() == [1.0, 0.5, 0.25, 0.1]


def test_provenance_table():
    from loom_nb.core.config import CONTENT_TYPES

    types = ("analysis", "output", "input", "summary", "file_reference")
    codes = np.array([CONTENT_TYPES.index(t) for t in types])
    table = LoomConfig().provenance  # the tuned values live in config.py, with their reason
    signal = provenance_signal(codes, table)
    assert signal.tolist() == [table[t] for t in types]
    # the seed's order (seed 000 §5): analysis is the densest, pasted input the least
    assert signal.argmax() == 0 and signal.argmin() == 2


def test_density_counts_relevant_concepts_only():
    # content 0 links to concepts 0, 1, 2 (two relevant); content 1 to concept 2 (not relevant)
    s, k = density_signal(2, np.array([0, 0, 0, 1]), np.array([0, 1, 2, 2]), np.array([True, True, False]))
    assert k.tolist() == [2, 0]
    assert s.tolist() == [0.75, 0.0]


def test_composite_is_the_normalised_weighted_sum():
    w = Weights().only("semantic", "hop", "staleness")
    w = Weights(**{**{n: 0 for n in SIGNALS}, "semantic": 2, "hop": 1, "staleness": 1})
    signals = np.array([[1.0, 0.5, 0.0] + [1.0] * (len(SIGNALS) - 3)])
    scores, contrib = composite(signals, w)
    # (2*1 + 1*0.5 + 1*0) / 4 = 0.625
    assert scores[0] == pytest.approx(0.625)
    assert contrib[0].tolist() == pytest.approx([0.5, 0.125, 0.0] + [0.0] * (len(SIGNALS) - 3))


def test_weights_validate():
    with pytest.raises(ValueError):
        Weights(semantic=-1)
    with pytest.raises(ValueError):
        Weights(**{n: 0 for n in SIGNALS})
    assert Weights().only("semantic").as_tuple() == (Weights().semantic,) + (0,) * (len(SIGNALS) - 1)
    assert Weights().without("semantic").semantic == 0


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), float("-inf")])
def test_weights_and_config_refuse_nan_and_infinity(bad):
    """NaN passes checks written as ``x < 0`` and scores every node nan; JSON stores it as
    null, and the saved session would not open again. Each field is named."""
    for name in SIGNALS:
        with pytest.raises(ValueError, match=name):
            Weights(**{name: bad})
    with pytest.raises(ValueError, match="semantic"):
        LoomConfig().with_(weights={"semantic": bad})
    for name in ("staleness_half_life", "max_whole_share", "relevance_margin", "lexical_anchor", "chunk_tokens",
                 "concept_threshold", "relevance_floor", "hop_decay", "output_reservation"):
        with pytest.raises(ValueError, match=name):
            LoomConfig(**{name: bad})
    with pytest.raises(ValueError, match="output_reservation_range"):
        LoomConfig(output_reservation_range=(0.2, bad))
    with pytest.raises(ValueError, match="provenance.*analysis"):
        LoomConfig(provenance={**LoomConfig().provenance, "analysis": bad})


def toy_graph():
    """Three concepts on a chain and four content nodes, at known angles."""
    g = LoomGraph(LoomConfig(concept_threshold=0.95, concept_edge_min=0.5), embedding_model="toy")
    g.add_content("auth tokens", np.array(unit(0)), type="analysis")        # n1 → c1 (0°)
    g.add_content("refresh flow", np.array(unit(45)))                       # n2 → c2 (45°), edge c1–c2 0.707
    g.add_content("token rotation", np.array(unit(90)), type="output")      # n3 → c3 (90°), edge c2–c3 0.707
    g.add_content("bananas", np.array(unit(180)))                           # n4 → c4, no edges
    return g


def test_rank_on_a_worked_example():
    g = toy_graph()
    g.advance_turn(8)
    g.mark_accessed(["n1"])  # n1 used at turn 8; the others last touched at turn 0
    ranking = rank(g, np.array(unit(10)), query="q")
    raw = {nid: ranking.raw(nid) for nid in ranking.node_ids}
    assert ranking.anchor == "c1"
    assert raw["n1"]["semantic"] == pytest.approx(np.cos(np.radians(10)), abs=1e-6)
    assert raw["n4"]["semantic"] == 0.0
    assert [raw[n]["hop"] for n in ("n1", "n2", "n3", "n4")] == [1.0, 0.5, 0.25, 0.0]
    assert raw["n1"]["staleness"] == 1.0  # used this turn
    assert raw["n4"]["staleness"] == 0.5  # 8 turns old, half-life 8
    assert raw["n1"]["provenance"] == 1.0 and raw["n3"]["provenance"] == 0.95
    # by default no concept counts toward density (concept_relevance 1): these nodes have no
    # structural neighbours, so none has a relevant connection
    assert ranking.relevant_concept_counts.tolist() == [0, 0, 0, 0]
    # at the seed's 0.3, relevant concepts: c1 (0.985), c2 (0.819), c3 (0.174 no)
    seeded = rank(g, np.array(unit(10)), query="q", config=LoomConfig(concept_relevance=0.3))
    assert seeded.relevant_concept_counts.tolist() == [1, 1, 0, 0]
    assert [seeded.raw(n)["density"] for n in ("n1", "n2", "n3", "n4")] == [0.5, 0.5, 0.0, 0.0]
    assert ranking.top(1)[0][0] == "n1"
    for nid in ranking.node_ids:
        assert sum(ranking.breakdown(nid).values()) == pytest.approx(ranking.score(nid))
    assert ranking.relevant.tolist() == [True, True, False, False]


def test_rank_empty_graph():
    g = LoomGraph(embedding_model="toy")
    ranking = rank(g, np.array([1.0, 0.0]))
    assert len(ranking) == 0 and ranking.anchor is None and ranking.top() == []


def lexical_graph():
    """Four nodes whose vectors are all orthogonal to the query: only lexical evidence can count."""
    g = LoomGraph(LoomConfig(concept_threshold=0.99), embedding_model="toy")
    g.add_content("def rank(graph): ...", np.array(unit(90)), type="file_reference", meta={"path": "loom_nb/core/rank.py"},
                  fields={"path": "loom_nb/core/rank.py", "symbol": "rank", "content": "def rank(graph): ..."})
    g.add_content("class LoomGraph: ...", np.array(unit(90)), type="file_reference", meta={"path": "loom_nb/core/graph.py"},
                  fields={"path": "loom_nb/core/graph.py", "symbol": "LoomGraph", "content": "class LoomGraph: ..."})
    g.add_content("def save_graph(graph, folder): ...", np.array(unit(90)), type="file_reference", meta={"path": "loom_nb/core/store.py"},
                  fields={"path": "loom_nb/core/store.py", "symbol": "save_graph", "content": "def save_graph(graph, folder): ..."})
    g.add_content("notes about bananas", np.array(unit(90)))
    return g


def raw_signal(ranking, node_id, name):
    return ranking.raw(node_id)[name]


def test_lexical_signals_make_named_files_relevant():
    g = lexical_graph()
    r = rank(g, np.array(unit(0)), query="how does save_graph write the session?")
    # "save_graph" also yields "graph", which n1 and n2 contain: a weak match, below 0.5
    assert raw_signal(r, "n3", "terms") == 1.0 and 0 < raw_signal(r, "n1", "terms") < 0.5
    assert raw_signal(r, "n4", "terms") == 0.0
    assert r.relevant.tolist() == [False, False, True, False]
    r = rank(g, np.array(unit(0)), query="what is in rank.py?")
    assert raw_signal(r, "n1", "path_mention") == 0.7 and raw_signal(r, "n2", "path_mention") == 0.0
    r = rank(g, np.array(unit(0)), query="look at @loom_nb/core/graph.py please")
    assert raw_signal(r, "n2", "tagged") == 1.0 and r.relevant.tolist() == [False, True, False, False]
    assert r.top(1)[0][0] == "n2"


def test_a_backticked_name_that_tags_no_file_still_counts_as_words():
    g = lexical_graph()
    # a bare basename in backticks names no workspace path: it is a mention, as when typed plainly
    plain, ticked = (rank(g, np.array(unit(0)), query=q) for q in ("what is in rank.py?", "what is in `rank.py`?"))
    assert raw_signal(ticked, "n1", "path_mention") == raw_signal(plain, "n1", "path_mention") == 0.7
    assert raw_signal(ticked, "n1", "tagged") == 0.0
    # a dotted API name looks like a file to tagged_paths; its words must still match
    r = rank(g, np.array(unit(0)), query="`graph.save_graph` drops the folder")
    assert raw_signal(r, "n3", "terms") == 1.0 and r.top(1)[0][0] == "n3"
    # a tag that names a file leaves the words, so its folder does not name the siblings
    r = rank(g, np.array(unit(0)), query="see `loom_nb/core/graph.py`")
    assert raw_signal(r, "n2", "tagged") == 1.0
    assert [raw_signal(r, n, "path_mention") for n in ("n1", "n2", "n3")] == [0.0, 0.0, 0.0]


def test_git_dirty_signal_reads_the_last_refresh():
    g = lexical_graph()
    g.metadata["workspace"] = {"root": "/x", "files": {}, "dirty": ["loom_nb/core/store.py"]}
    r = rank(g, np.array(unit(0)), query="anything")
    assert [raw_signal(r, n, "git_dirty") for n in ("n1", "n2", "n3", "n4")] == [0.0, 0.0, 1.0, 0.0]


def test_lexical_index_follows_removals():
    g = lexical_graph()
    g.remove("n1")  # n4 moves into row 0
    r = rank(g, np.array(unit(0)), query="save_graph bananas")
    assert raw_signal(r, "n3", "terms") > 0 and raw_signal(r, "n4", "terms") > 0
    assert r.node_ids == ["n4", "n2", "n3"]


def test_ranking_repr_is_short():
    from loom_nb import HashingEmbedder, Loom

    loom = Loom(embedder=HashingEmbedder())
    for i in range(50):
        loom.add(f"note {i} about tokens and refresh")
    ranking = loom.query("refresh tokens", budget=500).ranking
    text = repr(ranking)
    assert text.startswith("<Ranking 'refresh tokens': 50 nodes,") and len(text) < 120


def test_file_signal_is_the_best_relevant_score_of_the_file():
    base = np.array([0.2, 0.6, 0.4, 0.9, 0.7])
    relevant = np.array([True, True, True, False, True])
    files = np.array([0, 0, 1, 1, -1])
    # file 0: best relevant 0.6; file 1: 0.4 (its 0.9 row is not relevant); no file: 0
    assert file_signal(base, relevant, files).tolist() == [0.6, 0.6, 0.4, 0.4, 0.0]
    assert file_signal(base, np.zeros(5, dtype=bool), files).tolist() == [0.0] * 5


def file_graph():
    """Three units of a.py and one of b.py, all at 85° to the query (below the relevance
    floor); a.py:1 names the query's identifier, so it is the one relevant unit."""
    g = LoomGraph(LoomConfig(concept_threshold=0.99), embedding_model="toy")
    for k, (path, body) in enumerate([("a.py", "def parse_header(): ..."), ("a.py", "def helper(): ..."),
                                       ("b.py", "def other(): ..."), ("a.py", "def more(): ...")]):
        g.add_content(body, np.array(unit(85)), type="file_reference", meta={"path": path, "lines": [k * 10 + 1, k * 10 + 5]},
                      fields={"path": path, "content": body})
    return g


def test_file_weight_lifts_the_units_of_the_best_file():
    g = file_graph()
    off = LoomConfig(concept_threshold=0.99).with_(weights={"file": 0.0})
    plain = rank(g, np.array(unit(0)), query="parse_header breaks", config=off)
    assert [raw_signal(plain, n, "file") for n in ("n1", "n2", "n3", "n4")] == [0.0] * 4  # weight 0: not computed
    config = LoomConfig(concept_threshold=0.99).with_(weights={"file": 1.0})
    r = rank(g, np.array(unit(0)), query="parse_header breaks", config=config)
    files = [raw_signal(r, n, "file") for n in ("n1", "n2", "n3", "n4")]
    # a.py's best unit (n1) sets a.py's file signal; b.py has no relevant unit
    assert files[0] == files[1] == files[3] > 0 and files[2] == 0.0
    assert r.score("n2") > r.score("n3") and plain.score("n2") == pytest.approx(plain.score("n3"))
    for nid in r.node_ids:
        assert sum(r.breakdown(nid).values()) == pytest.approx(r.score(nid))
    # re-weighting recomputes the file signal from the new weights, as ranking again would
    again = plain.reweighted(config)
    assert again.signals[:, -1].tolist() == pytest.approx(r.signals[:, -1].tolist())
    assert again.scores.tolist() == pytest.approx(r.scores.tolist())


def test_a_traceback_frame_tags_the_unit_at_its_line(tmp_path):
    from loom_nb import HashingEmbedder, Loom
    from test_index import make_workspace

    make_workspace(tmp_path / "ws")
    loom = Loom(embedder=HashingEmbedder())
    loom.index(tmp_path / "ws", wait=True, progress=False)
    frame = 'Traceback (most recent call last):\n  File "/home/me/proj/app/tokens.py", line 10, in refresh\nTypeError: boom'
    result = loom.query(f"The dashboard crashes on login.\n\n```\n{frame}\n```", budget=400)
    tagged = [nid for nid in result.ranking.node_ids if result.ranking.raw(nid)["tagged"] == 1.0]
    assert [loom.graph.node(nid).title for nid in tagged] == ["app/tokens.py:8-11 refresh"]
    assert result.ranking.top(1)[0][0] == tagged[0]
    assert tagged[0] in result.loaded


def test_translation_catalogs_rank_below_the_code_that_reads_them(tmp_path):
    """Sphinx ships a generated ``sphinx.js`` per language under ``locale/<lang>/LC_MESSAGES``;
    a question about locales matched their words and filled the context with them."""
    from loom_nb import HashingEmbedder, Loom

    ws = tmp_path / "ws"
    (ws / "docgen").mkdir(parents=True)
    (ws / "docgen" / "i18n.py").write_text(
        "def locale_fallback(language):\n    \"\"\"Pick the catalog locale for a language tag.\"\"\"\n"
        "    return language.replace('-', '_')\n", encoding="utf-8")
    for lang in ("fr", "de", "zh_CN", "pt_BR", "sr_RS", "en_GB"):
        folder = ws / "docgen" / "locale" / lang / "LC_MESSAGES"
        folder.mkdir(parents=True)
        (folder / "docgen.js").write_text(
            f'Documentation.addTranslations({{"locale": "{lang}", "messages": {{"language": "locale language tag"}}}});\n',
            encoding="utf-8")
    loom = Loom(embedder=HashingEmbedder())
    loom.index(ws, wait=True, progress=False)
    result = loom.query("locale fallback for a language tag", budget=2000)
    top = result.ranking.top(1)[0][0]
    assert loom.graph.node(top).title.startswith("docgen/i18n.py")
    catalogs = [nid for nid in result.ranking.node_ids if "LC_MESSAGES" in (loom.graph.node(nid).reference.file or "")]
    assert len(catalogs) == 6
    code_provenance = result.ranking.raw(top)["provenance"]
    assert all(result.ranking.raw(nid)["provenance"] < code_provenance for nid in catalogs)



def test_benchmarks_rank_below_the_code_they_exercise(tmp_path):
    """xarray's ``asv_bench/benchmarks/rolling.py`` times the rolling code with the words a
    commit about it uses, and outranked the code itself. A benchmark folder is read as tests
    are; Rust's ``benches/``, which changes with the crate's API, stays program code."""
    from loom_nb import HashingEmbedder, Loom

    ws = tmp_path / "ws"
    (ws / "arrays").mkdir(parents=True)
    (ws / "arrays" / "rolling.py").write_text(
        "def rolling_mean(values, window):\n    \"\"\"Mean over a moving window.\"\"\"\n"
        "    return [sum(values[i:i + window]) / window for i in range(len(values) - window + 1)]\n", encoding="utf-8")
    for folder in ("asv_bench/benchmarks", "benchmarks", "benches"):
        (ws / folder).mkdir(parents=True)
        (ws / folder / "rolling.py").write_text(
            "from arrays.rolling import rolling_mean\n\n\ndef time_rolling_mean_window():\n"
            "    \"\"\"Time the rolling mean over a moving window.\"\"\"\n"
            "    rolling_mean(list(range(1000)), window=10)  # rolling mean moving window\n", encoding="utf-8")
    loom = Loom(embedder=HashingEmbedder())
    loom.index(ws, wait=True, progress=False)
    result = loom.query("rolling mean over a moving window", budget=2000)
    provenance = {loom.graph.node(nid).reference.file: result.ranking.raw(nid)["provenance"]
                  for nid in result.ranking.node_ids}
    assert provenance["asv_bench/benchmarks/rolling.py"] == provenance["benchmarks/rolling.py"] < provenance["arrays/rolling.py"]
    assert provenance["benches/rolling.py"] == provenance["arrays/rolling.py"]


def test_tests_named_as_phpunit_names_them_rank_below_the_code_beside_them(tmp_path):
    """flysystem keeps ``LocalFilesystemAdapterTest.php`` next to the adapter in ``src/``; ranked
    as code, 38 of the 53 items a commit loaded were such tests and its gold was left out."""
    adapter = ("<?php\nclass LocalAdapter\n{\n    public function makeDirectory(string $path): void\n"
               "    {\n        mkdir($path); // create the directory\n    }\n}\n")
    caller = ("<?php\nclass {name}\n{{\n    public function makeDirectory(): void\n    {{\n"
              "        $this->adapter->makeDirectory('dir'); // create the directory\n    }}\n}}\n")
    loom = _indexed(tmp_path, {"src/Local/LocalAdapter.php": adapter,
                               **{f"src/Local/{name}.php": caller.format(name=name)
                                  for name in ("LocalAdapterTest", "LocalAdapterTestCase", "Contest")}})
    result = loom.query("create the directory in makeDirectory", budget=2000)
    provenance = _provenance_by_file(loom, result.ranking)
    test, case, code = (provenance[f"src/Local/{n}.php"] for n in ("LocalAdapterTest", "LocalAdapterTestCase", "LocalAdapter"))
    assert test == case < code
    assert provenance["src/Local/Contest.php"] == code  # a name ending in "test", not "Test"


def _indexed(tmp_path, sources: dict[str, str]):
    """A Loom (hashing embedder) over a workspace of ``sources``: relative path -> text."""
    from loom_nb import HashingEmbedder, Loom

    ws = tmp_path / "ws"
    for rel, text in sources.items():
        (ws / rel).parent.mkdir(parents=True, exist_ok=True)
        (ws / rel).write_text(text, encoding="utf-8")
    loom = Loom(embedder=HashingEmbedder())
    loom.index(ws, wait=True, progress=False)
    return loom


def _provenance_by_file(loom, ranking) -> dict[str, float]:
    """The provenance signal of each file's first unit in ``ranking``."""
    out = {}
    for nid in ranking.node_ids:
        out.setdefault(loom.graph.node(nid).reference.file, ranking.raw(nid)["provenance"])
    return out


def test_translation_catalogs_rank_below_the_code_that_loads_them(tmp_path):
    """PHPMailer's 57 ``language/phpmailer.lang-*.php`` catalogs were code: 11 of them took 82 %
    of the context for a question about the language of error messages."""
    catalog = "<?php\n$PHPMAILER_LANG['authenticate'] = 'SMTP error: could not authenticate (language {code}).';\n"
    loader = ("<?php\nclass Mailer\n{\n    public function setLanguage($langcode = 'en')\n    {\n"
              "        // load the language file of error messages\n        include \"language/phpmailer.lang-$langcode.php\";\n    }\n}\n")
    loom = _indexed(tmp_path, {"src/Mailer.php": loader, "src/i18n/loader.php": loader.replace("Mailer", "Loader"),
                               **{f"language/phpmailer.lang-{code}.php": catalog.format(code=code) for code in ("ca", "pt_br", "zh_cn")}})
    result = loom.query("How do I change the language of error messages?", budget=2000)
    provenance = _provenance_by_file(loom, result.ranking)
    assert provenance["language/phpmailer.lang-ca.php"] == provenance["language/phpmailer.lang-pt_br.php"] < provenance["src/Mailer.php"]
    assert provenance["src/i18n/loader.php"] == provenance["src/Mailer.php"]  # a language folder's own code stays code


def test_vendored_code_ranks_below_the_program(tmp_path):
    """astropy ships expat's and cfitsio's C sources under ``cextern/`` and configobj under
    ``astropy/extern/``: a commit about parsing XML loaded the vendored parser before its own."""
    sources = {
        "skylib/io/xml_reader.py": "def parse_xml_table(text):\n    \"\"\"Parse an XML table document.\"\"\"\n    return text.split('<tr>')\n",
        "cextern/expat/lib/xmlparse.c": "/* parse an XML table document */\nint parse_xml_table(const char *text) { return 0; }\n",
        "skylib/extern/xmltool/parse.py": "def parse_xml_table(text):\n    \"\"\"Parse an XML table document.\"\"\"\n    return []\n",
        "src/pkg/_vendor/xmltool.py": "def parse_xml_table(text):\n    \"\"\"Parse an XML table document.\"\"\"\n    return []\n",
    }
    loom = _indexed(tmp_path, sources)
    result = loom.query("parse an XML table document", budget=2000)
    provenance = _provenance_by_file(loom, result.ranking)
    assert loom.graph.node(result.ranking.top(1)[0][0]).reference.file == "skylib/io/xml_reader.py"
    assert all(provenance[f] < provenance["skylib/io/xml_reader.py"] for f in sources if f != "skylib/io/xml_reader.py")


def test_a_change_log_ranks_below_the_code_and_the_docs(tmp_path):
    """fastapi's release notes are its commit messages, one entry per change: a commit about
    the docs script matched a dozen entries about other languages before the script itself.
    A change log (by its name, or a folder of entries) takes ``changelog_reference``; a
    configuration without that key treats it as any other prose."""
    sources = {
        "scripts/docs.py": "def new_lang(lang):\n    \"\"\"Initialize translations for a new language.\"\"\"\n    return lang\n",
        "docs/en/docs/release-notes.md": "# Release Notes\n\n## 0.1\n\n* Initialize translations for a new language: Korean.\n",
        "changelog.d/12.feature.md": "Initialize translations for a new language: Japanese.\n",
        "docs/en/docs/languages.md": "# Languages\n\nInitialize translations for a new language with the docs script.\n",
    }
    loom = _indexed(tmp_path, sources)
    table = LoomConfig().provenance
    result = loom.query("Initialize translations for a new language", budget=2000)
    order = list(dict.fromkeys(loom.graph.node(nid).reference.file for nid, _ in result.ranking.top(10)))
    assert order[:2] == ["scripts/docs.py", "docs/en/docs/languages.md"]
    provenance = _provenance_by_file(loom, result.ranking)
    assert provenance["scripts/docs.py"] == table["file_reference"]
    assert provenance["docs/en/docs/languages.md"] == table["other_reference"]
    assert provenance["docs/en/docs/release-notes.md"] == provenance["changelog.d/12.feature.md"] == table["changelog_reference"]
    assert table["changelog_reference"] < table["other_reference"]

    older = LoomConfig().with_(provenance={k: v for k, v in table.items() if k != "changelog_reference"})
    rows = _provenance_by_file(loom, rank(loom.graph, None, query="Initialize translations for a new language", config=older))
    assert rows["docs/en/docs/release-notes.md"] == rows["changelog.d/12.feature.md"] == table["other_reference"]


def test_a_basename_many_test_roots_share_names_none_of_them(tmp_path):
    """Every sphinx issue's template mentions conf.py, and sphinx's test roots hold a hundred:
    each took the basename mention and became relevant. The one program file named in the
    same message keeps its mention."""
    from loom_nb import HashingEmbedder, Loom

    ws = tmp_path / "ws"
    (ws / "docgen").mkdir(parents=True)
    (ws / "docgen" / "highlighting.py").write_text("def highlight(code, lexer):\n    return lexer(code)\n", encoding="utf-8")
    for k in range(6):
        root = ws / "tests" / "roots" / f"test-root{k}"
        root.mkdir(parents=True)
        (root / "conf.py").write_text(f"project = 'root{k}'\nextensions = []\n", encoding="utf-8")
    loom = Loom(embedder=HashingEmbedder())
    loom.index(ws, wait=True, progress=False)
    result = loom.query("With this conf.py, highlighting.py drops the lexer", budget=2000)
    mention = {loom.graph.node(nid).reference.file: result.ranking.raw(nid)["path_mention"] for nid in result.ranking.node_ids}
    assert mention["docgen/highlighting.py"] == 0.7
    assert [f for f, v in mention.items() if f.endswith("conf.py") and v > 0] == []


def test_the_line_a_long_message_leads_with_weighs_more():
    g = lexical_graph()
    report = "rank is slow\nIt happened while I called save_graph on a big folder."
    flat, titled = (rank(g, np.array(unit(0)), query=report, config=LoomConfig(concept_threshold=0.99, lead_line_weight=w))
                    for w in (0.0, 2.0))
    # the body names save_graph and its folder (n3); the title names rank (n1)
    assert flat.top(1)[0][0] == "n3" and titled.top(1)[0][0] == "n1"
    assert raw_signal(titled, "n1", "terms") == 1.0 > raw_signal(flat, "n1", "terms")
    # a message of one line is its own title: nothing counts twice
    one_line = [rank(g, np.array(unit(0)), query="rank or save_graph?", config=LoomConfig(concept_threshold=0.99, lead_line_weight=w))
                for w in (0.0, 2.0)]
    assert one_line[0].signals.tolist() == one_line[1].signals.tolist()


def test_a_file_the_previous_answer_named_counts_less_than_one_the_follow_up_names():
    from loom_nb.core.query import Query

    g = lexical_graph()
    history = [{"role": "user", "content": "How is a session written?"},
               {"role": "assistant", "content": "store.py writes it; rank.py is not involved."}]
    follow_up = Query("and what does graph.py keep?", history).retrieval_text()
    shares = {w: rank(g, np.array(unit(0)), query=follow_up, config=LoomConfig(concept_threshold=0.99, previous_mention_share=w))
              for w in (1.0, 0.5, 0.0)}
    # graph.py, named by the follow-up itself, scores whole at every share
    assert [raw_signal(shares[w], "n2", "path_mention") for w in shares] == [0.7, 0.7, 0.7]
    # store.py and rank.py, named only in the previous answer, score the share
    assert [raw_signal(shares[w], "n3", "path_mention") for w in shares] == [0.7, 0.35, 0.0]
    assert [raw_signal(shares[w], "n1", "path_mention") for w in shares] == [0.7, 0.35, 0.0]
    # a path the previous answer backticked is the model's formatting, not the user's tag
    answer = [{"role": "user", "content": "How is a session written?"},
              {"role": "assistant", "content": "`loom_nb/core/store.py` writes it."}]
    backticked = rank(g, np.array(unit(0)), query=Query("and `loom_nb/core/graph.py`?", answer).retrieval_text(),
                      config=LoomConfig(concept_threshold=0.99))
    assert raw_signal(backticked, "n3", "tagged") == 0.0 and raw_signal(backticked, "n3", "path_mention") == 0.5
    assert raw_signal(backticked, "n2", "tagged") == 1.0  # the follow-up's own tag still tags
    # a message on its own has no previous exchange: the share changes nothing
    alone = [rank(g, np.array(unit(0)), query="store.py or graph.py?", config=LoomConfig(concept_threshold=0.99, previous_mention_share=w))
             for w in (1.0, 0.0)]
    assert alone[0].signals.tolist() == alone[1].signals.tolist()
    for bad in (1.5, -0.1, True, "0.5"):
        with pytest.raises(ValueError, match="previous_mention_share"):
            LoomConfig(previous_mention_share=bad)


def test_lead_line_weight_must_be_a_number_at_least_zero():
    for bad in (-1.0, float("inf"), True, "2"):
        with pytest.raises(ValueError, match="lead_line_weight"):
            LoomConfig(lead_line_weight=bad)


def test_a_call_in_the_lead_line_names_the_file_that_defines_it():
    g = LoomGraph(LoomConfig(concept_threshold=0.99), embedding_model="toy")
    units = [  # (path, the names the unit defines, its text)
        ("utils/dateparse.py", ["parse_duration"], "def parse_duration(value): ..."),
        ("utils/dateparse.py", ["parse_date"], "def parse_date(value): ..."),
        ("views.py", ["show"], "def show(): return parse_duration(request.GET['d'])"),
    ] + [(f"store/{k}.py", ["get"], "def get(key): ...") for k in "abcd"]
    for k, (path, defines, body) in enumerate(units):
        g.add_content(body, np.array(unit(85)), type="file_reference",
                      meta={"path": path, "lines": [1, 5], "defines": defines},
                      fields={"path": path, "symbol": " ".join(defines), "content": body})

    def mention(query):
        r = rank(g, np.array(unit(0)), query=query)
        return [raw_signal(r, f"n{k + 1}", "path_mention") for k in range(len(units))]

    # the title calls parse_duration(): every unit of the file defining it is named, at a stem's
    # strength; views.py only calls it, and nothing else is named
    assert mention("Fix parse_duration() for some negative durations") == [0.4, 0.4, 0, 0, 0, 0, 0]
    assert mention("`parse_duration()` drops the sign") == [0.4, 0.4, 0, 0, 0, 0, 0]
    # get() is defined in four files: like a basename four files share, it names none of them
    assert mention("get() returns None after a restart") == [0.0] * 7
    # only the lead line: the code pasted under a title calls whatever its example needs
    assert mention("Durations come back wrong\n```python\nparse_duration('-1 00:00:01')\n```") == [0.0] * 7
    # a commit's fix(scope): prefix is not a call; a path written out stays the stronger mention
    assert mention("fix(parse_duration): negative values") == [0.0] * 7
    assert mention("dateparse.py: parse_duration() fails")[:2] == [0.7, 0.7]


def test_a_bare_call_names_the_function_not_the_methods_of_that_name():
    """sympy defines ``integrate`` once as a function and a dozen times as a method: a title
    that calls ``integrate(...)`` means the function, ``expr.integrate()`` a method."""
    g = LoomGraph(LoomConfig(concept_threshold=0.99), embedding_model="toy")
    units = [  # (path, its qualified name, the names it defines)
        ("integrals/integrals.py", "integrate", ["integrate"]),
        ("integrals/integrals.py", "Integral", ["Integral", "doit"]),
    ] + [(f"{k}/core.py", f"{k.title()}.integrate", ["integrate"]) for k in ("polys", "series", "stats", "matrices")]
    for path, name, defines in units:
        g.add_content(f"def {name}(): ...", np.array(unit(85)), type="file_reference",
                      meta={"path": path, "lines": [1, 5], "name": name, "defines": defines},
                      fields={"path": path, "symbol": " ".join([name, *defines]), "content": name})

    def mention(query):
        r = rank(g, np.array(unit(0)), query=query)
        return [raw_signal(r, f"n{k + 1}", "path_mention") for k in range(len(units))]

    # five files define integrate, one of them as a function: the bare call names that file
    assert mention("integrate(1/(2-cos(theta)),(theta,0,pi)) is NaN") == [0.4, 0.4, 0, 0, 0, 0]
    # written as a method it could be any of the five, and names none
    assert mention("Poly.integrate() drops the constant") == [0.0] * 6
    # a bare call of a name only methods define still names them, when few files do
    assert mention("doit() hangs") == [0.4, 0.4, 0, 0, 0, 0]


def test_a_qualified_name_past_its_module_names_the_definition_not_the_whole_file():
    """``astropy.wcs.utils.wcs_to_celestial_frame(w)`` in pasted code uses ``utils.py``; it names
    the function. The function keeps the full path score, the file's other units fall to a
    basename's; a module named on its own, or by its path, still names the whole file."""
    g = LoomGraph(LoomConfig(concept_threshold=0.99), embedding_model="toy")
    units = [  # (path, its name)
        ("astropy/wcs/utils.py", "wcs_to_celestial_frame"),
        ("astropy/wcs/utils.py", "celestial_frame_to_wcs"),
        ("astropy/wcs/utils.py", "_wcs_to_celestial_frame_builtin"),
        ("astropy/wcs/wcs.py", "WCS"),
        ("astropy/wcs/wcs.py", "WCS.world_to_pixel"),
        ("astropy/wcs/wcs.py", "find_all_wcs"),
    ]
    for path, name in units:
        g.add_content(f"def {name}(): ...", np.array(unit(85)), type="file_reference",
                      meta={"path": path, "lines": [1, 5], "name": name, "defines": [name.rsplit(".", 1)[-1]]},
                      fields={"path": path, "symbol": name, "content": name})

    def mention(query):
        r = rank(g, np.array(unit(0)), query=query)
        return [raw_signal(r, f"n{k + 1}", "path_mention") for k in range(len(units))]

    assert mention("astropy.wcs.utils.wcs_to_celestial_frame(w) fails") == [1.0, 0.7, 0.7, 0, 0, 0]
    # a class name past its module keeps the class and its methods
    assert mention("x = astropy.wcs.wcs.WCS(header)") == [0, 0, 0, 1.0, 1.0, 0.7]
    # a name the module does not define narrows nothing; the module alone names the whole file
    assert mention("astropy.wcs.utils.no_such_thing(w)") == [1.0, 1.0, 1.0, 0, 0, 0]
    assert mention("see astropy.wcs.utils for the frames") == [1.0, 1.0, 1.0, 0, 0, 0]
    # an object's repr in pasted output: the module still names the file, the class no member
    assert mention("ds.get() gives [<astropy.wcs.utils.wcs_to_celestial_frame at 0x7f105bf1df20>]") == [1.0, 1.0, 1.0, 0, 0, 0]
    assert mention("type(w) is <class 'astropy.wcs.wcs.WCS'>") == [0, 0, 0, 1.0, 1.0, 1.0]
    # the file linked by its path as well: the function is still what the message points at
    assert mention("see astropy/wcs/utils.py#L12: astropy.wcs.utils.wcs_to_celestial_frame fails") == [1.0, 0.7, 0.7, 0, 0, 0]
    assert mention("see astropy/wcs/utils.py#L12") == [1.0, 1.0, 1.0, 0, 0, 0]


def test_a_damaged_vector_scores_no_meaning_instead_of_nan(caplog):
    """A vectors file with bytes overwritten can hold NaN: that row scores 0 on meaning (with a
    warning), so the table never shows "semantic nan" and the row ranks on its other signals."""
    from loom_nb.core.rank import semantic_signal

    vectors = np.array([[1.0, 0.0], [np.nan, 0.0], [0.6, 0.8]], dtype=np.float32)
    with caplog.at_level("WARNING", logger="loom_nb.core.rank"):
        sims = semantic_signal(vectors, np.array([1.0, 0.0]))
    assert np.isfinite(sims).all() and sims.round(3).tolist() == [1.0, 0.0, 0.6]
    assert "1 content vector(s) are not finite" in caplog.text
