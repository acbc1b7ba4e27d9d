"""Lexical signals (seed 004): term analysis, BM25F on a hand-checked example, index upkeep,
path mentions and tags."""

import io
import math
import random

import numpy as np
import pytest

from loom_nb import Query

from loom_nb.core.lexical import (
    DEFAULT_FIELD_WEIGHTS,
    FIELDS,
    LexicalIndex,
    normalise_scores,
    path_mentions,
    split_identifier,
    tagged_mask,
    tagged_paths,
    terms,
)
from loom_nb.core.paths import line_mention_rows, line_mentions

# -- analysis ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "word, parts",
    [
        ("parseHTTPResponse", ["parse", "http", "response"]),
        ("graph_json", ["graph", "json"]),
        ("LoomGraph2", ["loom", "graph", "2"]),
        ("Python311", ["python", "311"]),
        ("max-items", ["max", "items"]),
        ("Ranking.breakdown", ["ranking", "breakdown"]),
        ("loom_nb/index/walk.py", ["loom", "nb", "index", "walk", "py"]),
        ("__init__", ["init"]),
        ("café", ["café"]),
        ("", []),
        ("AwsS3V3Adapter", ["aws", "s3", "v3", "adapter"]),  # a letter alone stays with its digits
        ("k8s_client", ["k8s", "client"]),
        ("h2cHandler", ["h2c", "handler"]),
        ("HTTP2Connection", ["http", "2", "connection"]),
    ],
)
def test_split_identifier(word, parts):
    assert split_identifier(word) == parts


def test_a_query_naming_s3_finds_the_s3_adapter(tmp_path):
    """flysystem: "How does the S3 adapter list directory contents?" ranked the local adapter's
    listContents first and the S3 adapters' 26th and 32nd: ``AwsS3V3Adapter`` gave no ``s3``."""
    from loom_nb import HashingEmbedder, Loom

    ws = tmp_path / "ws"
    for name in ("AwsS3V3Adapter", "LocalFilesystemAdapter", "FtpAdapter"):
        (ws / "src").mkdir(parents=True, exist_ok=True)
        (ws / "src" / f"{name}.php").write_text(
            f"<?php\nclass {name}\n{{\n    public function listContents(string $path): iterable\n    {{\n"
            "        // list the directory contents of the adapter\n        return $this->list($path);\n    }\n}\n", encoding="utf-8")
    loom = Loom(embedder=HashingEmbedder())
    loom.index(ws, wait=True, progress=False)
    result = loom.query("How does the S3 adapter list directory contents?", budget=2000)
    terms_by_file = {}
    for nid in result.ranking.node_ids:
        path = loom.graph.node(nid).reference.file
        terms_by_file[path] = max(terms_by_file.get(path, 0.0), result.ranking.raw(nid)["terms"])
    assert terms_by_file["src/AwsS3V3Adapter.php"] > max(terms_by_file["src/LocalFilesystemAdapter.php"], terms_by_file["src/FtpAdapter.php"])
    top = loom.graph.node(result.ranking.node_ids[result.ranking.order[0]]).reference.file
    assert top == "src/AwsS3V3Adapter.php"


def test_terms_keep_joined_identifiers_and_their_parts():
    assert terms("count_tokens") == ["count_tokens", "count", "token"]
    assert terms("parseHTTPResponse") == ["parsehttpresponse", "parse", "http", "response"]
    # dotted names are kept whole, then each segment as above
    assert terms("graph.json") == ["graph.json", "graph", "json"]
    assert terms("self.count_tokens") == ["self.count_tokens", "self", "count_tokens", "count", "token"]
    # slashes and hyphens only separate
    assert terms("loom_nb/rank.py") == ["loom_nb", "loom", "nb", "rank.py", "rank", "py"]
    assert terms("max-items") == ["max", "item"]


def test_terms_drop_stopwords_short_tokens_and_strip_plurals():
    assert terms("How does the ranking of the nodes work?") == ["ranking", "node", "work"]
    assert terms("a b x 7 io") == ["io"]
    assert terms("tokens classes queries indexes matches caches status analysis gas") == [
        "token", "class", "query", "index", "match", "cache", "status", "analysis", "gas"
    ]
    # whole identifiers are exact-match terms: not stemmed
    assert terms("count_tokens")[0] == "count_tokens"


def test_query_count_tokens_prefers_the_identifier_over_a_bare_word():
    index = LexicalIndex()
    index.add(0, {"symbol": "count_tokens"})
    index.add(1, {"symbol": "count"})
    index.add(2, {"symbol": "other"})
    s = index.score("count_tokens", 3)
    assert s[0] > s[1] > 0 == s[2]


# -- BM25F -----------------------------------------------------------------------------------


def _example() -> LexicalIndex:
    index = LexicalIndex()
    index.add(0, {"symbol": "rank score", "content": "graph"})
    index.add(1, {"content": "rank graph nodes"})
    index.add(2, {"content": "graph"})
    return index


def test_bm25f_worked_example_by_hand():
    # N = 3; symbol lengths (2, 0, 0) mean 2/3; content lengths (1, 3, 1) mean 5/3.
    # k1 = 1.2, b = 0.75, w_symbol = 3, w_content = 1.
    k1, b = 1.2, 0.75
    idf_rank = math.log(1 + (3 - 2 + 0.5) / (2 + 0.5))  # df = 2 → ln 1.6
    tf0 = 3 * 1 / (1 - b + b * 2 / (2 / 3))  # = 1.2
    tf1 = 1 / (1 - b + b * 3 / (5 / 3))  # = 0.625
    assert tf0 == pytest.approx(1.2) and tf1 == pytest.approx(0.625)
    expected_rank = [idf_rank * tf0 / (k1 + tf0), idf_rank * tf1 / (k1 + tf1), 0.0]
    got = _example().score("rank", 3)
    assert got.dtype == np.float64
    np.testing.assert_allclose(got, expected_rank, rtol=0, atol=1e-9)
    assert got[0] == pytest.approx(0.5 * math.log(1.6), abs=1e-12)

    # a second term, "graph", in every row: df = 3, idf = ln(1 + 0.5/3.5) = ln(8/7)
    idf_graph = math.log(8 / 7)
    g = [1 / (1 - b + b * 1 / (5 / 3)), 1 / (1 - b + b * 3 / (5 / 3)), 1 / (1 - b + b * 1 / (5 / 3))]
    expected_both = [r + idf_graph * t / (k1 + t) for r, t in zip(expected_rank, g)]
    np.testing.assert_allclose(_example().score("rank graph", 3), expected_both, rtol=0, atol=1e-9)
    # each query term counts once; a pre-analysed term list gives the same answer
    np.testing.assert_allclose(_example().score("rank rank graph ranks", 3), expected_both, rtol=0, atol=1e-9)
    np.testing.assert_allclose(_example().score(["rank", "graph"], 3), expected_both, rtol=0, atol=1e-9)


def test_a_boosted_query_term_counts_as_that_many_passes():
    index = _example()
    plain, rank_only = index.score("rank graph", 3), index.score("rank", 3)
    boosted = index.score("rank graph", 3, boost={"rank": 3.0})
    # BM25 sums over query terms: weight 3 on "rank" is the plain score plus "rank" twice more
    assert boosted == pytest.approx(plain + 2 * rank_only)
    assert index.score("rank graph", 3, boost={}) == pytest.approx(plain)
    # row 2 holds only "graph": no boost reaches it
    assert boosted[2] == pytest.approx(plain[2]) and boosted[0] > plain[0]


def test_score_pads_and_truncates_to_n_rows():
    index = _example()
    assert index.score("rank", 5)[3:].tolist() == [0.0, 0.0]
    assert index.score("rank", 1).shape == (1,)
    assert index.score("unknownword", 3).tolist() == [0.0, 0.0, 0.0]


def test_field_weight_path_beats_content():
    index = LexicalIndex()
    index.add(0, {"path": "docs/rank.md"})
    index.add(1, {"content": "docs rank md"})
    s = index.score("rank", 2)
    assert s[0] > s[1] > 0
    # with equal weights and equal lengths the two rows tie
    flat = LexicalIndex(field_weights={f: 1.0 for f in FIELDS})
    flat.add(0, {"path": "rank"})
    flat.add(1, {"content": "rank"})
    s = flat.score("rank", 2)
    assert s[0] == pytest.approx(s[1])


def test_field_weights_validation_and_defaults():
    index = LexicalIndex(field_weights={"content": 2.0})
    assert index.field_weights == {**DEFAULT_FIELD_WEIGHTS, "content": 2.0}
    with pytest.raises(ValueError):
        LexicalIndex(field_weights={"body": 1.0})
    with pytest.raises(ValueError):
        LexicalIndex(b=1.5)
    with pytest.raises(ValueError):
        LexicalIndex().add(0, {"body": "text"})


def test_idf_rare_term_outranks_common():
    index = LexicalIndex()
    index.add(0, {"content": "common rare"})
    index.add(1, {"content": "common other"})
    for row in range(2, 10):
        index.add(row, {"content": "common filler"})
    s = index.score("common rare", 10)
    assert s.argmax() == 0
    # 'rare' alone (df 1) is worth far more than 'common' alone (df 10)
    only_common = index.score("common", 10)
    assert s[0] - only_common[0] > only_common[0]


def test_k1_zero_counts_a_match_once():
    index = LexicalIndex(k1=0.0)
    index.add(0, {"content": "rank rank rank"})
    index.add(1, {"content": "rank"})
    index.add(2, {"content": "other"})
    s = index.score("rank", 3)
    assert s[0] == pytest.approx(s[1]) and s[2] == 0


def test_empty_index_scores_zeros():
    index = LexicalIndex()
    assert len(index) == 0
    assert index.score("anything", 4).tolist() == [0.0] * 4
    assert index.score("", 0).shape == (0,)
    assert index.explain("anything", 0) == {}
    rebuilt = LexicalIndex.from_arrays(index.to_arrays())
    assert len(rebuilt) == 0 and rebuilt.score("anything", 2).tolist() == [0.0, 0.0]


# -- upkeep: re-add, remove, move ---------------------------------------------------------------


def test_readding_a_row_replaces_it():
    index = _example()
    index.add(1, {"content": "something else"})
    assert len(index) == 3
    fresh = LexicalIndex()
    fresh.add(0, {"symbol": "rank score", "content": "graph"})
    fresh.add(1, {"content": "something else"})
    fresh.add(2, {"content": "graph"})
    for q in ("rank", "graph", "something rank"):
        np.testing.assert_allclose(index.score(q, 3), fresh.score(q, 3), rtol=0, atol=1e-12)
    assert index.score("rank", 3)[1] == 0


def test_move_semantics_mirror_array_assignment():
    index = _example()
    index.move(2, 0)  # a[0] = a[2]; del a[2]
    assert len(index) == 2 and 2 not in index
    assert index.explain("graph rank", 0) == {"content": ["graph"]}
    index.move(7, 1)  # moving an absent row empties the target
    assert len(index) == 1 and 1 not in index
    index.remove(42)  # removing an absent row is a no-op
    assert len(index) == 1


_WORDS = "rank graph token budget pack node concept edge weight score path symbol walk index chunk".split()


def _random_fields(rng: random.Random) -> dict[str, str]:
    words = lambda k: " ".join(rng.choice(_WORDS) for _ in range(k))  # noqa: E731
    if rng.random() < 0.3:  # a chat note: content only
        return {"content": words(rng.randint(0, 12))}
    return {
        "path": f"loom_nb/{rng.choice(_WORDS)}_{rng.choice(_WORDS)}.py",
        "symbol": words(rng.randint(0, 4)),
        "heading": words(rng.randint(0, 2)),
        "import": words(rng.randint(0, 2)),
        "content": words(rng.randint(1, 20)),
    }


@pytest.mark.parametrize("seed", range(6))
def test_remove_and_move_match_a_fresh_index(seed):
    """Mimic the content table: add rows, delete by moving the last row into the hole, re-add."""
    rng = random.Random(seed)
    index = LexicalIndex()
    table: list[dict[str, str]] = []
    for step in range(rng.randint(20, 120)):
        action = rng.random()
        if action < 0.6 or not table:
            table.append(_random_fields(rng))
            index.add(len(table) - 1, table[-1])
        elif action < 0.85:
            hole, last = rng.randrange(len(table)), len(table) - 1
            index.remove(hole)
            index.move(last, hole)
            table[hole] = table[last]
            table.pop()
        else:
            row = rng.randrange(len(table))
            table[row] = _random_fields(rng)
            index.add(row, table[row])
        if step % 17 == 0:  # interleave queries so both delta and compacted states are checked
            index.score("rank graph", len(table))
    fresh = LexicalIndex()
    for row in rng.sample(range(len(table)), len(table)):  # rows in any order
        fresh.add(row, table[row])
    assert len(index) == len(fresh) == len(table)
    for q in ("rank graph", "token budget weights", "loom_nb walk_index", "nothing"):
        np.testing.assert_allclose(index.score(q, len(table)), fresh.score(q, len(table)), rtol=0, atol=1e-12)
        for row in range(len(table)):
            assert index.explain(q, row) == fresh.explain(q, row)


def test_compaction_keeps_scores():
    rng = random.Random(9)
    index = LexicalIndex()
    table = [_random_fields(rng) for _ in range(60)]
    for row, fields in enumerate(table):
        index.add(row, fields)
    before = index.score("rank edge", 60)
    index._compact()  # force the merge path directly
    np.testing.assert_allclose(index.score("rank edge", 60), before, rtol=0, atol=1e-12)


# -- persistence --------------------------------------------------------------------------------


def test_to_arrays_from_arrays_round_trip_through_npz():
    rng = random.Random(3)
    index = LexicalIndex()
    table = [_random_fields(rng) for _ in range(80)]
    for row, fields in enumerate(table):
        index.add(row, fields)
    index.remove(5)
    index.move(79, 5)
    arrays = index.to_arrays()
    assert all(isinstance(a, np.ndarray) and a.dtype != object for a in arrays.values())
    buffer = io.BytesIO()
    np.savez(buffer, **arrays)
    buffer.seek(0)
    with np.load(buffer, allow_pickle=False) as loaded:
        rebuilt = LexicalIndex.from_arrays(dict(loaded))
    assert len(rebuilt) == len(index) == 79
    for q in ("rank graph", "symbol chunk", "loom_nb"):
        assert np.array_equal(rebuilt.score(q, 80), index.score(q, 80))
    assert rebuilt.explain("rank graph", 5) == index.explain("rank graph", 5)
    # weights are configuration, not data: a rebuild may use others
    heavy = LexicalIndex.from_arrays(arrays, field_weights={"content": 5.0})
    assert not np.allclose(heavy.score("rank", 80), index.score("rank", 80))


def test_from_arrays_rejects_inconsistent_arrays():
    arrays = _example().to_arrays()
    with pytest.raises(ValueError):
        LexicalIndex.from_arrays({**arrays, "rows": np.array([0, 0, 1])})
    with pytest.raises(ValueError):
        LexicalIndex.from_arrays({**arrays, "fields": np.array(["path", "content"])})


# -- explain and normalisation --------------------------------------------------------------------


def test_explain_lists_matches_per_field():
    index = LexicalIndex()
    index.add(0, {"path": "loom_nb/rank.py", "symbol": "Ranking.breakdown rank semantic_signal", "content": "the rank of a node"})
    assert index.explain("rank the semantic node", 0) == {
        "path": ["rank"],
        "symbol": ["rank", "semantic"],
        "content": ["rank", "node"],
    }
    assert index.explain("absent", 0) == {}
    assert index.explain("rank", 1) == {}


def test_normalise_scores():
    assert normalise_scores(np.array([0.0, 2.0, 1.0])).tolist() == [0.0, 1.0, 0.5]
    assert normalise_scores(np.zeros(3)).tolist() == [0.0, 0.0, 0.0]
    assert normalise_scores(np.zeros(0)).shape == (0,)


# -- tags and path mentions ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "query, expected",
    [
        ("look at @loom_nb/rank.py please", ["loom_nb/rank.py"]),
        ("see `loom_nb/rank.py` and `./loom_nb/pack.py`", ["loom_nb/rank.py", "loom_nb/pack.py"]),
        ("@loom_nb/index/ then @README.md.", ["loom_nb/index", "README.md"]),
        ("`loom_nb\\tokens.py` and @loom_nb/tokens.py", ["loom_nb/tokens.py"]),
        ("use @dataclass, mail bob@example.com, call `count_tokens` or `rank all`", []),
        ("`.gitignore` matters", [".gitignore"]),
        ("", []),
    ],
)
def test_tagged_paths(query, expected):
    assert tagged_paths(query) == expected


def test_path_mentions_levels():
    paths = [
        "loom_nb/rank.py",  # full path named            -> 1.0
        "tests/rank.py",  # same basename                  -> 0.7
        "loom_nb/tokens.py",  # stem 'tokens' as a word    -> 0.4
        "loom_nb/cli.py",  # stem 'cli' too short; folder  -> 0.25
        "loom_nb/pack.py",  # only its folder loom_nb      -> 0.25
        None,  # a chat note                               -> 0
        "loom_nb/rank.py",  # repeated path: same value
        "tools/Makefile",  # extensionless basename: a stem -> 0.4
    ]
    query = "Why does Loom_NB/Rank.py call tokens from the cli? see the makefile"
    assert path_mentions(query, paths).tolist() == [1.0, 0.7, 0.4, 0.25, 0.25, 0.0, 1.0, 0.4]
    # a conventional-commit scope names a package folder; 'src' is too short to count
    assert path_mentions("fix(binding): empty value", ["binding/form.go", "render/json.go", "src/a.py"]).tolist() == [0.25, 0.0, 0.0]
    # a whole word, or the message's gerund of it: 'ranking' names rank.py, 'rankle', 'ran' and
    # 'ranks' do not, and neither does a gerund in the previous exchange of a follow-up
    assert path_mentions("ranking things", ["loom_nb/rank.py"]).tolist() == [0.4]
    assert path_mentions("it may rankle, we ran, it ranks", ["loom_nb/rank.py"]).tolist() == [0.0]
    assert path_mentions("parsing headers", ["parse.go", "parser.go"]).tolist() == [0.4, 0.0]
    history = [{"role": "user", "content": "How does ranking work?"}, {"role": "assistant", "content": "It scores."}]
    follow_up = Query("and where is it called?", history)
    assert path_mentions(follow_up.retrieval_text(), ["loom_nb/rank.py"]).tolist() == [0.0]
    assert path_mentions("open /work/main/loom_nb/rank.py:12", ["loom_nb/rank.py"]).tolist() == [1.0]
    assert path_mentions("anything", []).shape == (0,)


def test_path_mentions_read_qualified_names_as_module_paths():
    paths = [
        "sphinx/ext/autodoc/__init__.py",
        "sphinx/util/inspect.py",
        "src/Monolog/Handler/StreamHandler.php",  # a namespace, 'src' left out
        "axum/src/extract/rejection.rs",  # a Rust path leaves out the crate's src
        "src/_pytest/fixtures.py",
        "flask/app.py",
        "flask/config.py",
        "docs/conf.py",
    ]

    def named(query):
        return [p for p, v in zip(paths, path_mentions(query, paths).tolist()) if v == 1.0]

    # a module, a module then its symbol, a namespace and a Rust path each name their file
    assert named("sphinx.util.inspect.object_description drops defaults") == ["sphinx/util/inspect.py"]
    assert named(r"Monolog\Handler\StreamHandler::write fails") == ["src/Monolog/Handler/StreamHandler.php"]
    assert named("axum::extract::rejection::JsonRejection is private") == ["axum/src/extract/rejection.rs"]
    assert named("_pytest.fixtures.FixtureDef leaks") == ["src/_pytest/fixtures.py"]
    # a package names its folder (the folder mention's 0.25), not its __init__.py: a conf.py's
    # extensions list names half a dozen of them
    assert named("extensions = ['sphinx.ext.autodoc']") == []
    assert path_mentions("extensions = ['sphinx.ext.autodoc']", paths)[0] == 0.25
    # one part is not a module path; a path or URL with '/' is read as a path, not as modules;
    # and parts that do not run along a path name nothing (app.config is the app's attribute)
    assert named("inspect fails on app.config and self.width") == []
    assert named("see https://example.org/sphinx/util/inspect") == []
    assert named("pytest.approx of a dict") == []
    # a module path many files end with names none of them, as a shared basename does
    roots = [f"tests/roots/test-{k}/conf/settings.py" for k in range(4)]
    assert path_mentions("conf.settings is read twice", roots).max() < 1.0
    assert path_mentions("conf.settings is read twice", roots[:3]).tolist() == [1.0] * 3


def test_a_module_a_pasted_script_imports_is_not_where_the_fault_is():
    """``import matplotlib.pyplot as plt`` opens most matplotlib reproductions; the file it
    names was never the gold one in the SWE-bench issues measured. Such a line names no file
    as a path does; its words still name the stem. ``from a.b import c`` still names a.b."""
    paths = ["lib/matplotlib/pyplot.py", "lib/matplotlib/colors.py", "lib/matplotlib/axes/_axes.py"]
    script = "hist of float16 is wrong\n```python\nimport matplotlib.pyplot as plt\n>>> import numpy, matplotlib.widgets\n"
    script += "from matplotlib.colors import LogNorm\nplt.hist(values)\n```"
    assert path_mentions(script, paths).tolist() == [0.4, 1.0, 0.0]
    # in prose, or imported with its names, the module still names its file
    assert path_mentions("why does import matplotlib.pyplot take 2 s?", paths)[0] == 1.0
    assert path_mentions("from matplotlib.pyplot import hist", paths)[0] == 1.0


def mentions_over(paths):
    """``query -> {path: its path mention}`` over ``paths``, for reading a test's expectations."""
    return lambda query: dict(zip(paths, path_mentions(query, paths).tolist()))


def test_path_mentions_read_a_commit_scope_as_the_section_it_names():
    paths = [
        "gin.go",
        "tree.go",
        "tree_test.go",
        "ginS/gins.go",
        "middleware/static.go",
        "middleware/cors.go",
        "axum-extra/src/response/attachment.rs",
        "pkg/a/util.go", "pkg/b/util.go", "pkg/c/util.go", "pkg/d/util.go",
    ]

    mentions = mentions_over(paths)

    # a scope that is a file's stem names it as its basename would, even a short one ('gin' is
    # under MIN_STEM_CHARS, so in prose it names nothing); its test file is another stem
    m = mentions("feat(gin): add option to use escaped path")
    assert m["gin.go"] == 0.7 and m["ginS/gins.go"] == 0.0
    assert mentions("add gin option")["gin.go"] == 0.0
    m = mentions("perf(tree)!: optimize path parsing")
    assert m["tree.go"] == 0.7 and m["tree_test.go"] == 0.0
    # in prose the same word is a stem's mention only
    assert mentions("optimize the tree")["tree.go"] == 0.4
    # a scope with '/' names the file it ends; any folder along a path is named as a folder
    m = mentions("fix(middleware/static, axum-extra): serve index.html")
    assert m["middleware/static.go"] == 0.7 and m["middleware/cors.go"] == 0.25
    assert m["axum-extra/src/response/attachment.rs"] == 0.25 and m["gin.go"] == 0.0
    # a stem more than MAX_FILES_PER_NAME files share names none of them, as in prose
    m = mentions("refactor(util): one helper")
    assert [m[p] for p in paths[7:]] == [0.0] * 4
    # only the subject's prefix is a scope: not a later line, not a call in prose
    assert mentions("Refactor\n\nfeat(gin): add option")["gin.go"] == 0.0
    assert mentions("why does print(gin) fail?")["gin.go"] == 0.0


def test_a_rust_path_names_a_mod_rs_as_its_module():
    paths = ["axum/src/serve/mod.rs", "axum/src/serve/listener.rs", "axum/src/routing/mod.rs", "src/serve.rs"]
    # serve/mod.rs is the module axum::serve, as src/serve.rs would be; the folder's other files are named by their folder
    assert path_mentions("axum::serve::Serve drops the connection", paths).tolist() == [1.0, 0.25, 0.0, 0.4]
    # a word is not a module path: it names serve.rs by its stem, serve/mod.rs only by its folder
    # (measured: the folder's name as mod.rs's stem cost pydantic-core's serializers/mod.rs a commit)
    assert path_mentions("graceful shutdown in serve hangs", paths).tolist() == [0.25, 0.25, 0.0, 0.4]


def test_a_camel_case_name_names_the_snake_case_file_of_its_words():
    paths = ["axum-macros/src/typed_path.rs", "axum-extra/src/typed_header.rs", "gin/response_writer.go",
             "src/typed.rs", "web/typed-path.ts", "gin/routergroup.go"]

    mentions = mentions_over(paths)

    # axum-98aea470f9: TypedPath's file is typed_path.rs (measured: its units ranked 50th and 59th, unnamed)
    assert mentions("feat(macros): add compile-time validations to TypedPath macro") == {
        "axum-macros/src/typed_path.rs": 0.4, "axum-extra/src/typed_header.rs": 0.0, "gin/response_writer.go": 0.0,
        "src/typed.rs": 0.0, "web/typed-path.ts": 0.4, "gin/routergroup.go": 0.0}
    assert mentions("ResponseWriter.Flush panics")["gin/response_writer.go"] == 0.4
    assert mentions("RouterGroup.Use")["gin/routergroup.go"] == 0.4  # a lower-case word, as before
    # the same words apart, lower case or in one word are not the name: only a CamelCase name reads so
    assert mentions("the typed path macro")["axum-macros/src/typed_path.rs"] == 0.0
    assert mentions("typedpath macro")["axum-macros/src/typed_path.rs"] == 0.0
    assert mentions("Typedpath macro")["axum-macros/src/typed_path.rs"] == 0.0
    # a name in the exchange a follow-up is ranked with is not the message's
    follow_up = Query("and where is it called?", [{"role": "user", "content": "what does TypedPath do?"},
                                                  {"role": "assistant", "content": "It derives TypedPath."}])
    assert mentions(follow_up.retrieval_text())["axum-macros/src/typed_path.rs"] == 0.0


def test_a_camel_case_name_written_as_a_files_stem_names_it_as_its_basename_would():
    paths = ["src/Util/RegexHelper.php", "src/Util/LinkParserHelper.php", "tests/unit/Util/RegexHelperTest.php",
             "src/regex_helper.py", "src/Handler/CurlMultiHandler.php", "a/CurlMultiHandler.php",
             "b/CurlMultiHandler.php", "c/CurlMultiHandler.php"]

    mentions = mentions_over(paths)

    # commonmark-e14f15fdb5: RegexHelper is the class, and a PHP class's file is named after it
    m = mentions("Publish Cursor::matchInPlace() and deprecate the anchored RegexHelper constants")
    assert m["src/Util/RegexHelper.php"] == 0.7
    # the snake_case file of the same words keeps a stem's 0.4; another class's file, a test's, nothing
    assert m["src/regex_helper.py"] == 0.4
    assert m["src/Util/LinkParserHelper.php"] == m["tests/unit/Util/RegexHelperTest.php"] == 0.0
    # written otherwise it is a word, as before: the stem's 0.4
    assert mentions("the regexhelper constants")["src/Util/RegexHelper.php"] == 0.4
    assert mentions("the REGEXHELPER constants")["src/Util/RegexHelper.php"] == 0.4
    # a class name more than MAX_FILES_PER_NAME files have names none of them
    assert mentions("CurlMultiHandler leaks handles")["src/Handler/CurlMultiHandler.php"] == 0.0
    # only the message names: not the exchange a follow-up is ranked with
    follow_up = Query("and who calls it?", [{"role": "user", "content": "what is RegexHelper for?"},
                                            {"role": "assistant", "content": "RegexHelper holds the patterns."}])
    assert mentions(follow_up.retrieval_text())["src/Util/RegexHelper.php"] == 0.4


def test_tagged_mask_folder_and_file():
    paths = ["loom_nb/index/walk.py", "loom_nb/indexer.py", "loom_nb/rank.py", None, "README.md"]
    assert tagged_mask(["loom_nb/index"], paths).tolist() == [1.0, 0.0, 0.0, 0.0, 0.0]
    assert tagged_mask(["./loom_nb/rank.py", "readme.md"], paths).tolist() == [0.0, 0.0, 1.0, 0.0, 1.0]
    assert tagged_mask([], paths).tolist() == [0.0] * 5
    assert tagged_mask(tagged_paths("check @loom_nb/index/"), paths).tolist() == [1.0, 0.0, 0.0, 0.0, 0.0]


# -- places a traceback points at -------------------------------------------------------------------

TRACEBACK = """Traceback (most recent call last):
  File ".../sympy_bug.py", line 5, in <module>
  File "...\\lib\\site-packages\\sympy\\core\\function.py", line 1307, in __new__
    v = _sympify(v)
  File "/usr/lib/site-packages/sympy/core/sympify.py", line 449, in sympify
  File "/usr/lib/site-packages/sympy/core/sympify.py", line 449, in sympify
sympy.core.sympify.SympifyError: SympifyError: 'x'"""


def test_line_mentions_read_frames_and_file_line_forms():
    assert line_mentions(TRACEBACK) == [
        (".../sympy_bug.py", 5, None),  # <module> names no function
        ("...\\lib\\site-packages\\sympy\\core\\function.py", 1307, "__new__"),
        ("/usr/lib/site-packages/sympy/core/sympify.py", 449, "sympify"),  # once, though printed twice
    ]
    assert line_mentions("goroutine 1:\n\t/go/src/gin/context.go:174 +0x1d\nsrc/_pytest/main.py:88: in wrap") == [
        ("/go/src/gin/context.go", 174, None), ("src/_pytest/main.py", 88, "wrap")]
    assert line_mentions("#0 /app/src/Logger.php(45): x\nin /app/src/Handler.php on line 12") == [
        ("/app/src/Logger.php", 45, None), ("/app/src/Handler.php", 12, None)]
    # no line, a line 0, a non-code file or a version number: nothing
    assert line_mentions("see rank.py, at line 0: x.py:0, notes.txt:12, python3.11:4") == []
    many = "\n".join(f'  File "a/m{i}.py", line {i + 1}, in f' for i in range(100))
    assert len(line_mentions(many)) == 40 and line_mentions(many)[-1] == ("a/m99.py", 100, "f")  # the deepest


def test_every_outlined_code_language_is_code_and_data_files_are_not():
    """Files in the languages the README's outline table lists rank as code (file_reference
    provenance) and their file:line places are read; data, configuration and prose are not code.
    The code extensions come from the language map, so a new extension cannot be forgotten."""
    from loom_nb.core.files import CODE_LANGUAGES, LANGUAGES
    from loom_nb.core.paths import file_role

    code = ["src/engine.cpp", "src/engine.cxx", "include/engine.hh", "include/engine.hxx", "build.gradle.kts",
            "src/App.sc", "lua/plugin/init.lua", "scripts/deploy.sh", "scripts/run.bash", "db/schema.sql",
            "lib/tasks/db.rake", "app.gemspec", "Gemfile", "Rakefile", "types.pyi", "src/Auth.cs"]
    assert {p: file_role(p) for p in code} == dict.fromkeys(code, "code")
    other = ["config.yaml", "ci.yml", "pyproject.toml", "package.json", "setup.cfg", "tox.ini", "guide.md",
             "notes.txt", "page.html", "site.css", "pom.xml", "rows.csv", "explore.ipynb", "Makefile", "Dockerfile"]
    assert {p: file_role(p) for p in other} == dict.fromkeys(other, "other")
    assert set(LANGUAGES.values()) - CODE_LANGUAGES == {
        "markdown", "notebook", "text", "json", "toml", "yaml", "config", "html", "css", "xml", "csv", "tsv"}
    assert line_mentions("lua: lua/plugin/init.lua:12: attempt to index a nil value") == [("lua/plugin/init.lua", 12, None)]
    assert line_mentions("Segfault in src/engine.cxx:42 (called from include/engine.hxx:7), see db/schema.sql:3") == [
        ("src/engine.cxx", 42, None), ("include/engine.hxx", 7, None), ("db/schema.sql", 3, None)]
    assert line_mentions("deploy.sh:9: command not found; site.css:4; conf.yaml:2") == [("deploy.sh", 9, None)]


def test_line_mentions_stay_linear_on_any_paste():
    """A first version read "a path, then .py:12" with one pattern, which retries every start
    of a run of path characters: 32,000 'a' took it 8 s, quadratic. Each shape here takes
    milliseconds now (benchmarks/bench_boilerplate.py times 1 MB of each)."""
    for text in ("a" * 200_000, "a." * 100_000, "/" * 200_000, 'File "a' * 30_000, "x" * 200_000 + ".py:1"):
        assert line_mentions(text) == ([("x" * 400 + ".py", 1, None)] if text.endswith(":1") else [])  # a path is read back 400 characters at most
    assert line_mentions("a.py:1" * 30_000) == [("a.py", 1, None), ("1a.py", 1, None)]


def test_line_mention_rows_pick_the_unit_at_the_line():
    paths = ["sympy/core/function.py"] * 3 + ["sympy/core/sympify.py", "docs/function.py", None]
    spans = {0: (1, 40, "function.py (module)"), 1: (41, 1400, "function.py:41-1400 Derivative"),
             2: (1290, 1330, "function.py:1290-1330 Derivative.__new__"), 3: (400, 470, "sympify.py:400-470 sympify"),
             4: (1, 9, "function.py:1-9 doc")}
    rows = line_mention_rows(TRACEBACK, paths, spans.get)
    assert rows.tolist() == [0, 0, 1, 1, 0, 0]  # the narrowest unit holding line 1307; sympify.py:449
    # the code moved since the traceback: the frame's function, nearest its line, is taken
    moved = {**spans, 2: (1500, 1540, "function.py:1500-1540 Derivative.__new__")}
    assert line_mention_rows(TRACEBACK, paths, moved.get).tolist() == [0, 0, 1, 1, 0, 0]
    # a bare basename two files share names neither; a path outside the workspace names nothing
    assert line_mention_rows("function.py:1307 and /elsewhere/other.py:3", paths, spans.get).tolist() == [0] * 6
    assert line_mention_rows("sympify.py:449", paths, spans.get).tolist() == [0, 0, 0, 1, 0, 0]
    assert line_mention_rows("/venv/site-packages/numpy/sympify.py:449", paths, spans.get).tolist() == [0] * 6
    assert line_mention_rows("", paths, spans.get).tolist() == [0] * 6


# -- scale -----------------------------------------------------------------------------------------


def test_fifty_thousand_rows_score_after_the_delta_postings_merge():
    # the time this takes is benchmarks/bench_engine.py's (lexical signals run in its 50k query)
    rng = np.random.default_rng(0)
    vocab = [f"w{i}x" for i in range(5000)]
    n = 50_000
    words = rng.zipf(1.3, size=(n, 24)) % len(vocab)
    index = LexicalIndex()
    for row in range(n):
        w = words[row]
        index.add(
            row,
            {
                "path": f"pkg/{vocab[w[0]]}/{vocab[w[1]]}.py",
                "symbol": f"{vocab[w[2]]} {vocab[w[3]]}",
                "content": " ".join(vocab[i] for i in w[4:]),
            },
        )
    first = index.score(vocab[3], n)  # the first query merges the delta postings
    query = " ".join(vocab[i] for i in (1, 2, 17, 250, 4000))  # common to rare terms
    scores = index.score(query, n)
    assert first.shape == scores.shape == (n,)
    assert (scores > 0).any() and (first > 0).any()
    assert index.score(query, n).tolist() == scores.tolist()  # merged once; the same answer again


def test_rows_with_follows_removed_and_moved_rows_and_refuses_unknown_fields():
    index = LexicalIndex()
    index.add(0, {"symbol": "late_fee"})
    index.add(1, {"symbol": "late_fee total"})
    index.add(2, {"content": "late_fee"})
    assert index.rows_with("late_fee", "symbol").tolist() == [0, 1]
    assert index.rows_with("LATE_FEE", "symbol").tolist() == [0, 1]  # terms are compared in lower case
    index.remove(0)
    index.move(2, 0)  # the graph fills a removed row's hole with its last row
    assert index.rows_with("late_fee", "symbol").tolist() == [1]
    assert index.rows_with("late_fee", "content").tolist() == [0]
    assert index.rows_with("unknown", "symbol").size == 0
    with pytest.raises(ValueError, match="unknown lexical field"):
        index.rows_with("late_fee", "symbols")
