"""Outlines for the languages of issue 18 and data files split by top-level key.

Each test writes a small realistic file into a workspace, walks it (so the file is indexed at all,
under the expected language), outlines it and cuts it into units, and checks names, kinds and line
ranges that can be read off the file by eye.
"""

from __future__ import annotations

import pytest

from loom_nb.index import datafiles, languages
from loom_nb.index.symbols import SUPPORTED, grammar, outline, skeleton
from loom_nb.index.units import file_units
from loom_nb.index.walk import walk_workspace


def index_file(tmp_path, name: str, text: str, language: str):
    """Walk a workspace holding one file; outline it and cut it into units."""
    path = tmp_path / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    entry = next((f for f in walk_workspace(tmp_path).files if f.path == name), None)
    assert entry is not None, f"{name} is not indexed at all"
    assert entry.language == language
    o = outline(name, text, entry.language)
    return o, file_units(name, entry.language, text, o)


def spans(o):
    return [(s.kind, s.qualname, s.start_line, s.end_line) for s in o.symbols]


def unit_spans(units):
    return [(u.kind, u.name, u.start, u.end) for u in units]


def by_name(o, qualname):
    return next(s for s in o.symbols if s.qualname == qualname)


# --------------------------------------------------------------------------------------------
# grammars


def test_every_new_language_is_supported_and_its_grammar_loads_offline():
    added = ("c", "cpp", "csharp", "ruby", "kotlin", "swift", "bash", "lua", "scala", "sql")
    assert tuple(spec.language for spec in languages.SPECS) == added
    assert set(added) <= set(SUPPORTED)
    assert all(grammar(lang) is not None for lang in added)
    assert grammar("shell") is grammar("bash") and grammar("c#") is grammar("csharp")


@pytest.mark.parametrize("spec", languages.SPECS, ids=lambda s: s.language)
def test_every_query_pattern_compiles(spec):
    """symbols._query drops a pattern the grammar does not know, silently: catch that here."""
    from tree_sitter import Query

    for pattern in (*spec.calls, *spec.imports):
        Query(grammar(spec.language), pattern)  # raises on an unknown node or field name


# --------------------------------------------------------------------------------------------
# one test per language

C = """\
#include <stdio.h>
#include "store.h"

#define MAX_TOKENS 64

/* A token and its expiry. */
struct token {
    char value[MAX_TOKENS];
    long expires;
};

typedef struct {
    int count;
} stats_t;

enum color { RED, GREEN };

int token_expired(const struct token *t, long now);

/* Refresh one token. */
static int refresh(struct token *t, long now)
{
    if (token_expired(t, now)) {
        fetch_token(t);
    }
    return save(t);
}
"""


def test_c(tmp_path):
    o, units = index_file(tmp_path, "src/token.c", C, "c")
    assert o.parsed and o.error is None
    assert spans(o) == [("struct", "token", 6, 10), ("struct", "stats_t", 12, 14), ("enum", "color", 16, 16),
                        ("function", "token_expired", 18, 18), ("function", "refresh", 20, 27)]
    assert o.imports == ("stdio.h", "store.h")
    refresh = by_name(o, "refresh")
    assert refresh.signature == "static int refresh(struct token *t, long now)"
    assert refresh.doc == "Refresh one token." and refresh.references == ("fetch_token", "save", "token_expired")
    assert by_name(o, "token_expired").signature == "int token_expired(const struct token *t, long now)"
    assert unit_spans(units)[0] == ("preamble", "src/token.c", 1, 5)
    assert unit_spans(units)[1:] == spans(o)


CPP = """\
#include <vector>
#include "store.hpp"

namespace auth {

// Keeps tokens in memory.
class TokenStore : public Store {
public:
    TokenStore() = default;
    bool expired(long now) const;
    void put(const std::string &key) {
        items_.push_back(key);
    }
private:
    std::vector<std::string> items_;
};

bool TokenStore::expired(long now) const {
    return check(now);
}

template <typename T>
T clamp(T v, T lo, T hi) {
    return std::max(lo, std::min(v, hi));
}

}  // namespace auth
"""


def test_cpp(tmp_path):
    o, units = index_file(tmp_path, "src/store.cc", CPP, "cpp")
    assert o.parsed and o.error is None
    assert spans(o) == [
        ("module", "auth", 4, 27), ("class", "auth.TokenStore", 6, 16),
        ("method", "auth.TokenStore.TokenStore", 9, 9), ("method", "auth.TokenStore.expired", 10, 10),
        ("method", "auth.TokenStore.put", 11, 13),
        ("method", "auth.TokenStore.expired", 18, 20),  # defined outside the class: TokenStore::expired
        ("function", "auth.clamp", 22, 25)]
    assert by_name(o, "auth.clamp").signature == "template <typename T> T clamp(T v, T lo, T hi)"
    assert by_name(o, "auth.clamp").references == ("max", "min")
    assert o.symbols[5].parent == "TokenStore" and o.symbols[5].references == ("check",)
    assert o.symbols[1].doc == "Keeps tokens in memory."
    assert o.imports == ("vector", "store.hpp")
    assert unit_spans(units) == [("preamble", "src/store.cc", 1, 3), ("module", "auth", 4, 27)]


def test_a_cpp_header_is_parsed_as_cpp_and_a_c_header_as_c(tmp_path):
    """``.h`` is both languages' extension; the text decides (matplotlib's Anti-Grain headers)."""
    o, _ = index_file(tmp_path, "include/agg_rect.h", "namespace agg\n{\n    template<class T> struct rect_base\n"
                      "    {\n        T x1, y1;\n        bool valid() const { return x1 <= y1; }\n    };\n}\n", "c")
    assert o.parsed and o.error is None
    assert ("module", "agg", 1, 8) in spans(o) and any(name.endswith("rect_base") for _, name, _, _ in spans(o))
    # a C header whose comment says "namespace" stays C (expat.h: "   namespace processing")
    o, _ = index_file(tmp_path, "lib/expat.h", "/* Turn on\n   namespace processing. */\nstruct parser { int depth; };\n"
                      "int parse(struct parser *p);\n", "c")
    assert o.error is None and o.language == "c" and spans(o)[-1] == ("function", "parse", 4, 4)


CSHARP = """\
using System;
using Json = Newtonsoft.Json;

namespace Auth.Tokens
{
    /// <summary>Keeps tokens.</summary>
    [Serializable]
    public class TokenStore : IStore
    {
        private readonly List<string> items = new List<string>();

        public TokenStore(int capacity)
        {
            Reserve(capacity);
        }

        public bool Expired(long now) => Check(now);
    }

    public interface IStore
    {
        bool Expired(long now);
    }

    public record Point(int X, int Y);

    public enum Color { Red, Green }
}
"""


def test_csharp(tmp_path):
    o, units = index_file(tmp_path, "Auth/TokenStore.cs", CSHARP, "csharp")
    assert o.parsed and o.error is None
    assert spans(o) == [
        ("module", "Auth.Tokens", 4, 28), ("class", "Auth.Tokens.TokenStore", 6, 18),
        ("method", "Auth.Tokens.TokenStore.TokenStore", 12, 15), ("method", "Auth.Tokens.TokenStore.Expired", 17, 17),
        ("interface", "Auth.Tokens.IStore", 20, 23), ("method", "Auth.Tokens.IStore.Expired", 22, 22),
        ("class", "Auth.Tokens.Point", 25, 25), ("enum", "Auth.Tokens.Color", 27, 27)]
    assert by_name(o, "Auth.Tokens.TokenStore.Expired").signature == "public bool Expired(long now)"
    assert by_name(o, "Auth.Tokens.TokenStore.Expired").references == ("Check",)
    assert by_name(o, "Auth.Tokens.TokenStore").doc == "<summary>Keeps tokens.</summary>"
    assert o.imports == ("System", "Newtonsoft.Json")
    assert unit_spans(units) == [("preamble", "Auth/TokenStore.cs", 1, 3), ("module", "Auth.Tokens", 4, 28)]


def test_a_large_namespace_is_cut_by_its_members_as_top_level_code_is(tmp_path):
    """A C# file is one namespace block: past max_unit_tokens it is cut into its classes, and a
    large class into its methods, as a large top-level class is; not into 40-line parts."""
    methods = "\n".join(f"        public int Step{k}(int value)\n        {{\n            return Scale(value, {k}) + Offset(value * {k});\n        }}\n"
                        for k in range(40))
    text = f"namespace Big\n{{\n    public class Steps\n    {{\n{methods}    }}\n}}\n"
    o, units = index_file(tmp_path, "Big.cs", text, "csharp")
    names = [(u.kind, u.name) for u in units]
    assert names[:3] == [("module", "Big"), ("class", "Big.Steps"), ("method", "Big.Steps.Step0")]
    assert len(units) == 42 and names[-1] == ("method", "Big.Steps.Step39")
    step1 = next(u for u in units if u.name == "Big.Steps.Step1")
    assert (step1.start, step1.end) == (10, 13) and step1.text.strip().startswith("public int Step1(int value)")


RUBY = """\
require "json"
require_relative "store"

module Auth
  # Keeps tokens.
  class TokenStore < Store
    def initialize(capacity)
      @items = []
      reserve(capacity)
    end

    # Whether the token has expired.
    def expired?(now)
      check(now)
    end

    class << self
      def build
        new(10)
      end
    end
  end
end

def refresh(store, id)
  store.save(fetch_token(id))
end
"""


def test_ruby(tmp_path):
    o, units = index_file(tmp_path, "lib/auth.rb", RUBY, "ruby")
    assert o.parsed and o.error is None
    assert spans(o) == [
        ("module", "Auth", 4, 23), ("class", "Auth.TokenStore", 5, 22),
        ("method", "Auth.TokenStore.initialize", 7, 10), ("method", "Auth.TokenStore.expired?", 12, 15),
        ("method", "Auth.TokenStore.build", 18, 20),  # inside `class << self`
        ("function", "refresh", 25, 27)]
    cls = by_name(o, "Auth.TokenStore")
    assert cls.doc == "Keeps tokens."  # the grammar puts this comment beside the module's body
    assert by_name(o, "Auth.TokenStore.expired?").signature == "def expired?(now)"
    assert by_name(o, "refresh").references == ("fetch_token", "save")
    assert o.imports == ("json", "store")
    assert unit_spans(units) == [("preamble", "lib/auth.rb", 1, 3), ("module", "Auth", 4, 23), ("function", "refresh", 25, 27)]


KOTLIN = """\
package auth.tokens

import kotlin.math.max
import auth.store.Store as BaseStore

/** Keeps tokens. */
class TokenStore(private val capacity: Int) : BaseStore() {
    fun expired(now: Long): Boolean {
        return check(now)
    }

    companion object {
        fun create(): TokenStore = TokenStore(10)
    }
}

interface Store {
    fun save(token: String)
}

enum class Color { RED, GREEN }

fun refresh(store: TokenStore, id: String): String {
    return store.save(fetchToken(id))
}
"""


def test_kotlin(tmp_path):
    o, units = index_file(tmp_path, "src/TokenStore.kt", KOTLIN, "kotlin")
    assert o.parsed and o.error is None
    assert spans(o) == [
        ("class", "TokenStore", 6, 15), ("method", "TokenStore.expired", 8, 10),
        ("class", "TokenStore.Companion", 12, 14), ("method", "TokenStore.Companion.create", 13, 13),
        ("interface", "Store", 17, 19), ("method", "Store.save", 18, 18),
        ("enum", "Color", 21, 21), ("function", "refresh", 23, 25)]
    assert by_name(o, "TokenStore").doc == "Keeps tokens."
    assert by_name(o, "refresh").signature == "fun refresh(store: TokenStore, id: String): String"
    assert by_name(o, "refresh").references == ("fetchToken", "save")
    assert o.imports == ("kotlin.math.max", "auth.store.Store")
    assert unit_spans(units) == [("preamble", "src/TokenStore.kt", 1, 5), ("class", "TokenStore", 6, 15),
                                 ("interface", "Store", 17, 19), ("enum", "Color", 21, 21), ("function", "refresh", 23, 25)]


def test_kotlin_one_line_class_body_is_a_partial_outline_not_a_failure():
    """The Kotlin grammar wants a newline between members: a one-line body has a MISSING node."""
    o = outline("a.kt", "class A { fun f(): Int = 1 }\n", "kotlin")
    assert o.parsed and "syntax errors" in o.error
    assert spans(o) == [("class", "A", 1, 1), ("method", "A.f", 1, 1)]


SWIFT = """\
import Foundation

/// Keeps tokens.
public class TokenStore: Store {
    init(capacity: Int) {
        reserve(capacity)
    }

    func expired(now: Double) -> Bool {
        return check(now)
    }
}

protocol Store {
    func save(_ token: String)
}

struct Point {
    var x: Int
}

extension TokenStore {
    func clear() { items.removeAll() }
}
"""


def test_swift(tmp_path):
    o, units = index_file(tmp_path, "Sources/TokenStore.swift", SWIFT, "swift")
    assert o.parsed and o.error is None
    assert spans(o) == [
        ("class", "TokenStore", 3, 12), ("method", "TokenStore.init", 5, 7), ("method", "TokenStore.expired", 9, 11),
        ("interface", "Store", 14, 16), ("method", "Store.save", 15, 15), ("struct", "Point", 18, 20),
        ("impl", "TokenStore", 22, 24), ("method", "TokenStore.clear", 23, 23)]
    assert by_name(o, "TokenStore.expired").signature == "func expired(now: Double) -> Bool"
    assert by_name(o, "TokenStore").doc == "Keeps tokens."
    assert by_name(o, "TokenStore.clear").references == ("removeAll",)
    assert o.imports == ("Foundation",)
    assert unit_spans(units) == [("preamble", "Sources/TokenStore.swift", 1, 2), ("class", "TokenStore", 3, 12),
                                 ("interface", "Store", 14, 16), ("struct", "Point", 18, 20), ("impl", "TokenStore", 22, 24)]


BASH = """\
#!/usr/bin/env bash
set -euo pipefail
source ./lib.sh

# Print usage and exit.
usage() {
  echo "usage: $0 [-v]"
  exit 1
}

function build {
  make -C src all || usage
}

build "$@"
"""


def test_bash(tmp_path):
    o, units = index_file(tmp_path, "scripts/build.sh", BASH, "shell")
    assert o.parsed and o.error is None and o.language == "bash"
    assert spans(o) == [("function", "usage", 5, 9), ("function", "build", 11, 13)]
    assert by_name(o, "usage").doc == "Print usage and exit."
    assert by_name(o, "build").signature == "function build" and by_name(o, "build").references == ("make", "usage")
    assert o.imports == ("./lib.sh",)
    assert unit_spans(units) == [("preamble", "scripts/build.sh", 1, 4), ("function", "usage", 5, 9),
                                 ("function", "build", 11, 13), ("module", 'build "$@"', 15, 15)]


LUA = """\
local json = require("json")

local M = {}

-- Refresh one token.
local function refresh(id)
  return json.decode(fetch_token(id))
end

function M.expired(token, now)
  return check(token, now)
end

function M:close()
  self.items = {}
end

M.helper = function(x)
  return x * 2
end

return M
"""


def test_lua(tmp_path):
    o, units = index_file(tmp_path, "lua/store.lua", LUA, "lua")
    assert o.parsed and o.error is None
    assert spans(o) == [("function", "refresh", 5, 8), ("function", "M.expired", 10, 12),
                        ("method", "M.close", 14, 16), ("function", "M.helper", 18, 20)]
    assert by_name(o, "refresh").doc == "Refresh one token."
    assert by_name(o, "refresh").signature == "local function refresh(id)"
    assert by_name(o, "refresh").references == ("decode", "fetch_token")
    assert by_name(o, "M.close").parent == "M"
    assert o.imports == ("json",)
    assert unit_spans(units) == [("preamble", "lua/store.lua", 1, 4), *spans(o), ("module", "return M", 22, 22)]


SCALA = """\
package auth.tokens

import scala.collection.mutable

/** Keeps tokens. */
class TokenStore(capacity: Int) extends Store {
  def expired(now: Long): Boolean = {
    check(now)
  }
}

object TokenStore {
  def apply(): TokenStore = new TokenStore(10)
}

trait Store {
  def save(token: String): Unit
}

def refresh(store: TokenStore, id: String): String =
  store.save(fetchToken(id))
"""


def test_scala(tmp_path):
    o, units = index_file(tmp_path, "src/main/scala/TokenStore.scala", SCALA, "scala")
    assert o.parsed and o.error is None
    assert spans(o) == [
        ("class", "TokenStore", 5, 10), ("method", "TokenStore.expired", 7, 9),
        ("class", "TokenStore", 12, 14), ("method", "TokenStore.apply", 13, 13),
        ("trait", "Store", 16, 18), ("method", "Store.save", 17, 17), ("function", "refresh", 20, 21)]
    assert by_name(o, "Store.save").signature == "def save(token: String): Unit"
    assert o.symbols[3].references == ("TokenStore",)  # new TokenStore(10)
    assert by_name(o, "refresh").references == ("fetchToken", "save")
    assert o.imports == ("scala.collection.mutable",)
    assert unit_spans(units) == [("preamble", "src/main/scala/TokenStore.scala", 1, 4), ("class", "TokenStore", 5, 10),
                                 ("class", "TokenStore", 12, 14), ("trait", "Store", 16, 18), ("function", "refresh", 20, 21)]


SQL = """\
-- Users and their tokens.
CREATE TABLE users (
    id INTEGER PRIMARY KEY,
    name TEXT NOT NULL
);

CREATE TABLE tokens (
    id INTEGER PRIMARY KEY,
    user_id INTEGER REFERENCES users(id)
);

CREATE INDEX idx_tokens_user ON tokens (user_id);

-- Tokens still valid.
CREATE VIEW live_tokens AS
SELECT t.id, u.name
FROM tokens t JOIN users u ON u.id = t.user_id;

SELECT * FROM live_tokens;
"""


def test_sql(tmp_path):
    o, units = index_file(tmp_path, "db/schema.sql", SQL, "sql")
    assert o.parsed and o.error is None
    assert spans(o) == [("table", "users", 1, 5), ("table", "tokens", 7, 10),
                        ("index", "idx_tokens_user", 12, 12), ("view", "live_tokens", 14, 17)]
    assert by_name(o, "users").doc == "Users and their tokens."
    assert by_name(o, "live_tokens").signature == "CREATE VIEW live_tokens AS"
    assert by_name(o, "live_tokens").references == ("tokens", "users")  # a view links to its tables
    assert by_name(o, "tokens").references == ("users",)  # REFERENCES users(id)
    assert by_name(o, "idx_tokens_user").references == ("tokens",)
    assert unit_spans(units) == [*spans(o), ("module", "SELECT * FROM live_tokens;", 19, 19)]


# --------------------------------------------------------------------------------------------
# every line in some unit

PYTHON_CLASS = """\
class Router:
    \"\"\"Routes requests.\"\"\"

    def get(self, request):
        return self.routes[request.path](request)

    # registered after the handlers
    ROUTES = {"/a": "get"}

    def post(self, request):
        return self.get(request)

    LIMIT = 5
"""

JAVA_CLASS = """\
package auth;

public class Store {
    private int size;

    public int size() {
        return size;
    }

    private static final int LIMIT = 10;

    public boolean full() {
        return size >= LIMIT;
    }
}
"""

RUST_MOD = """\
mod store {
    const LIMIT: usize = 10;

    pub fn put(items: &mut Vec<u8>, item: u8) {
        if items.len() < LIMIT { items.push(item); }
    }

    static NAME: &str = "store";

    pub fn name() -> &'static str {
        NAME
    }
}
"""

GO_FILE = """\
package gen

func Init() {}

const (
\tA = 1
\tB = 2
)

var Default = 3

type (
\tID int
\tName string
)

func Run() {}
"""

COVERAGE_CASES = {"c": C, "cpp": CPP, "csharp": CSHARP, "ruby": RUBY, "kotlin": KOTLIN, "swift": SWIFT, "bash": BASH,
                  "lua": LUA, "scala": SCALA, "sql": SQL, "python": PYTHON_CLASS, "java": JAVA_CLASS, "rust": RUST_MOD,
                  "go": GO_FILE}


@pytest.mark.parametrize("max_unit_tokens", [10, 30, 60, 800])
@pytest.mark.parametrize("language", COVERAGE_CASES)
def test_every_non_blank_line_is_in_some_unit(language, max_unit_tokens):
    """Whatever the size limit, and however a class or namespace is split, no line is lost:
    a line in no unit can never be found or loaded."""
    text = COVERAGE_CASES[language]
    units = file_units("f", language, text, outline("f", text, language), max_unit_tokens=max_unit_tokens)
    covered = {k for u in units for k in range(u.start, u.end + 1)}
    lines = text.split("\n")
    assert [(k, line) for k, line in enumerate(lines, 1) if line.strip() and k not in covered] == []
    assert all(u.text == "\n".join(lines[u.start - 1:u.end]) for u in units)


def test_a_split_class_and_namespace_keep_their_fields_and_closing_lines():
    """C++: the ``private:`` fields after a split class's methods are a unit named after the
    class; a namespace's closing line stays with its last member instead of making a unit of ``}``."""
    units = file_units("store.cc", "cpp", CPP, outline("store.cc", CPP, "cpp"), max_unit_tokens=40)
    assert unit_spans(units) == [
        ("preamble", "store.cc", 1, 3), ("module", "auth", 4, 5), ("class", "auth.TokenStore", 6, 8),
        ("method", "auth.TokenStore.TokenStore", 9, 9), ("method", "auth.TokenStore.expired", 10, 10),
        ("method", "auth.TokenStore.put", 11, 13),
        ("module", "auth.TokenStore: private:", 14, 16),  # private: / items_ / };
        ("method", "auth.TokenStore.expired", 18, 20),
        ("function", "auth.clamp", 22, 27)]  # with `}  // namespace auth`
    # Ruby: `class << self` between methods, and the `end`s after the last one
    units = file_units("auth.rb", "ruby", RUBY, outline("auth.rb", RUBY, "ruby"), max_unit_tokens=30)
    assert unit_spans(units)[5:7] == [("module", "Auth.TokenStore: class << self", 17, 17),
                                      ("method", "Auth.TokenStore.build", 18, 23)]


@pytest.mark.parametrize("spec", languages.SPECS, ids=lambda s: s.language)
def test_a_syntax_error_keeps_the_definitions_around_it(spec):
    """Each language on a broken file: outline never raises and skeleton still works."""
    text = "}}}} ((( ;; \"unclosed\n" + "\n".join(f"x{k} = {k}" for k in range(5)) + "\n"
    o = outline("broken", text, spec.language)
    assert o.symbols and skeleton(text, o).startswith("broken (")


def test_the_new_extensions_are_walked_and_indexed_end_to_end(tmp_path):
    from loom_nb import HashingEmbedder, Loom

    ws = tmp_path / "ws"
    for name, text in (("lua/store.lua", LUA), ("TokenStore.scala", SCALA), ("build.kts", KOTLIN),
                       ("Gemfile", 'source "https://rubygems.org"\ngem "rails"\n'), ("config.yml", YAML)):
        (ws / name).parent.mkdir(parents=True, exist_ok=True)
        (ws / name).write_text(text)
    loom = Loom(embedder=HashingEmbedder())
    report = loom.index(ws, progress=False)
    assert report.files_indexed == 5 and report.parse_errors == 0
    titles = {n.title for n in loom.graph.content_nodes()}
    assert {"lua/store.lua:10-12 M.expired", "TokenStore.scala:16-18 Store", "build.kts:23-25 refresh",
            "config.yml:8-15 jobs"} <= titles


# --------------------------------------------------------------------------------------------
# data files

YAML = """\
# CI for the project.
name: ci

# When it runs.
on:
  push:
    branches: [main]
jobs:
  test:
    runs-on: ubuntu-latest
    steps:
      - uses: actions/checkout@v4
# a comment at column 0 inside a value stays with it
      - run: |
          make test
"""


def test_yaml_is_split_by_top_level_key(tmp_path):
    o, units = index_file(tmp_path, ".github/ci.yml", YAML, "yaml")
    assert o.parsed and o.error is None
    assert [(s.kind, s.name, s.start_line, s.end_line, s.doc) for s in o.symbols] == [
        ("key", "name", 1, 2, "CI for the project."), ("key", "on", 4, 7, "When it runs."), ("key", "jobs", 8, 15, "")]
    assert by_name(o, "on").signature == "on:"
    assert unit_spans(units) == [("key", "name", 1, 2), ("key", "on", 4, 7), ("key", "jobs", 8, 15)]
    assert units[2].fields()["symbol"] == "jobs jobs"  # the key is a symbol for lexical search


def test_a_yaml_list_under_a_key_may_start_at_the_key_s_column(tmp_path):
    """``stages:`` then ``- stage: Check`` at column 0 is one key's list (matplotlib's azure-pipelines.yml)."""
    text = "trigger:\n- main\nstages:\n- stage: Check\n  jobs:\n  - job: Skip\n-\n  stage: Build\nvariables:\n  x: 1\n"
    o, _ = index_file(tmp_path, "azure-pipelines.yml", text, "yaml")
    assert o.parsed and o.error is None
    assert [(s.name, s.start_line, s.end_line) for s in o.symbols] == [("trigger", 1, 2), ("stages", 3, 8), ("variables", 9, 10)]


TOML = """\
# Project settings.
title = "loom"
owners = [
    "ann",
    ["nested", "array"]
]

[build]
notes = \"\"\"
[not.a.table]
\"\"\"
jobs = 2

# Lint rules.
[tool.ruff.lint]
select = ["F"]

[[bin]]
name = "loom-nb"
"""


def test_toml_is_split_by_top_level_key_and_table(tmp_path):
    o, units = index_file(tmp_path, "pyproject.toml", TOML, "toml")
    assert o.parsed and o.error is None
    assert [(s.kind, s.name, s.start_line, s.end_line) for s in o.symbols] == [
        ("key", "title", 1, 2), ("key", "owners", 3, 6), ("section", "build", 8, 12),
        ("section", "tool.ruff.lint", 14, 16), ("section", "bin", 18, 19)]
    assert by_name(o, "title").doc == "Project settings." and by_name(o, "tool.ruff.lint").doc == "Lint rules."
    assert unit_spans(units) == [(s.kind, s.name, s.start_line, s.end_line) for s in o.symbols]


def test_toml_multi_line_strings_end_where_tomllib_ends_them():
    """Inside a \"\"\" string a backslash escapes the quote after it, and a closing \"\"\" may follow
    one or two quotes of the string's own; a literal \'\'\' string has no escapes. A string read as
    closed too early made a line inside it a phantom table."""
    import tomllib

    text = ('[a]\nx = """\nsay \\"""\n[fake]\n"""\n'  # 1-5: an escaped quote does not close it
            'y = """quoted""""\n'                    # 6: closes after the string's own quote
            "z = \'\'\'\nback\\\'\'\'\n"           # 7-8: a literal string: the backslash is text
            "[b]\nw = 1\n")                         # 9-10
    assert list(tomllib.loads(text)) == ["a", "b"] and tomllib.loads(text)["a"]["y"] == 'quoted"'
    entries, error = datafiles.split(text, "toml")
    assert error is None and [(e.name, e.start, e.end) for e in entries] == [("a", 1, 8), ("b", 9, 10)]


JSON = """\
{
  "name": "loom",
  "scripts": {
    "test": "pytest",
    "lint": "ruff check"
  },
  "files": ["a",
            "b"]
}
"""


def test_json_is_split_by_top_level_key(tmp_path):
    o, units = index_file(tmp_path, "package.json", JSON, "json")
    assert o.parsed and o.error is None
    # the opening brace joins the first key and the closing one the last: no unit of a brace
    assert spans(o) == [("key", "name", 1, 2), ("key", "scripts", 3, 6), ("key", "files", 7, 9)]
    assert by_name(o, "scripts").signature == '"scripts": {'
    assert unit_spans(units) == spans(o)


INI = """\
; Tool settings.
[metadata]
name = loom
description = a long
    description on two lines

# Linting.
[flake8]
max-line-length = 100
"""


def test_ini_is_split_by_section(tmp_path):
    o, units = index_file(tmp_path, "setup.cfg", INI, "config")
    assert o.parsed and o.error is None and o.language == "ini"
    assert [(s.kind, s.name, s.start_line, s.end_line, s.doc) for s in o.symbols] == [
        ("section", "metadata", 1, 5, "Tool settings."), ("section", "flake8", 7, 9, "Linting.")]
    assert unit_spans(units) == spans(o)


def test_ini_keys_before_the_first_section_are_top_level_keys():
    o = outline("php.ini", "engine = On\nshort_open_tag = Off\n\n[Date]\ndate.timezone = UTC\n", "ini")
    assert spans(o) == [("key", "engine", 1, 1), ("key", "short_open_tag", 2, 2), ("section", "Date", 4, 5)]


MALFORMED = {
    "json": '{\n  "name": "loom",\n  "scripts": {\n    "test": "pytest"\n}\n',  # an unclosed object
    "yaml": "name: ci\non:\n  push: {}\nthis line is not a key\njobs: {}\n",
    "toml": '[build]\njobs = 2\n\n[build]\njobs = 3\n',  # a table defined twice
    "ini": "[metadata]\nname = loom\nthis line has no equals sign\n",
}


@pytest.mark.parametrize("fmt", sorted(MALFORMED))
def test_malformed_data_files_fall_back_to_windows(tmp_path, fmt):
    name = {"ini": "setup.ini"}.get(fmt, f"data.{fmt}")
    o, units = index_file(tmp_path, name, MALFORMED[fmt], {"ini": "config"}.get(fmt, fmt))
    assert not o.parsed and o.error.startswith(f"malformed {fmt}: ")
    n_lines = MALFORMED[fmt].count("\n")
    assert spans(o) == [("window", f"lines 1-{n_lines}", 1, n_lines)]
    assert unit_spans(units) == [("window", f"lines 1-{n_lines}", 1, n_lines)]


@pytest.mark.parametrize("fmt", datafiles.FORMATS)
def test_odd_data_files_never_raise(fmt):
    for odd in ("", "\x00\xff\ud800", "[[[[[[" * 500, "\n" * 50, "}" * 1000, ":" * 30, '"""', "\t- x\n"):
        o = outline(f"odd.{fmt}", odd, fmt)
        assert all(s.kind == "window" for s in o.symbols) or o.parsed
        skeleton(odd, o)


def test_a_data_file_with_nothing_to_split_by_is_windowed_without_error():
    for name, text, fmt in (("list.json", "[1,\n 2]\n", "json"), ("list.yaml", "- a\n- b\n", "yaml"),
                            ("min.json", '{"a": 1, "b": 2}\n', "json")):  # two keys on one line
        o = outline(name, text, fmt)
        assert o.parsed and o.error is None and [s.kind for s in o.symbols] == ["window"]
    many = "".join(f"k{i}: {i}\n" for i in range(datafiles.MAX_ENTRIES + 1))
    assert {s.kind for s in outline("flat.yaml", many, "yaml").symbols} == {"window"}
    fewer = "".join(f"k{i}: {i}\n" for i in range(datafiles.MAX_ENTRIES))
    assert {s.kind for s in outline("flat.yaml", fewer, "yaml").symbols} == {"key"}


# --------------------------------------------------------------------------------------------
# imports become edges between files


IMPORTING = {  # importer: (its text, the file its import names)
    "src/io/buf.c": ('#include <stdio.h>\n#include "buf.h"\n\nint buf_len(struct buf *b) { return b->len; }\n', "src/io/buf.h"),
    "src/app.cpp": ('#include "io/buf.h"\n\nint main() { return buf_len(0); }\n', "src/io/buf.h"),
    "lib/acme/client.rb": ('require "json"\nrequire_relative "store"\n\nclass Client\n  def get; Store.new; end\nend\n',
                           "lib/acme/store.rb"),
    "scripts/deploy.sh": ('#!/bin/bash\nsource "$(dirname "$0")/lib.sh"\n\ndeploy() {\n  log "deploying"\n}\n',
                          "scripts/lib.sh"),
    "lua/acme/main.lua": ('local util = require("acme.util")\n\nfunction start()\n  return util.go()\nend\n',
                          "lua/acme/util.lua"),
    "src/main/kotlin/com/acme/App.kt": ("package com.acme\n\nimport com.acme.data.Repo\n\nfun main() {\n    Repo()\n}\n",
                                        "src/main/kotlin/com/acme/data/Repo.kt"),
    "src/main/scala/com/acme/App.scala": ("package com.acme\n\nimport com.acme.data.{Store, Other}\n\nobject App {\n  def run(): Unit = Store()\n}\n",
                                          "src/main/scala/com/acme/data/Store.scala"),
}
IMPORTED = {
    "src/io/buf.h": "struct buf { int len; };\nint buf_len(struct buf *b);\n",
    "lib/acme/store.rb": "class Store\n  def initialize; end\nend\n",
    "scripts/lib.sh": 'log() {\n  echo "$1"\n}\n',
    "lua/acme/util.lua": "local M = {}\nfunction M.go()\n  return 1\nend\nreturn M\n",
    "src/main/kotlin/com/acme/data/Repo.kt": "package com.acme.data\n\nclass Repo {\n    fun all() = listOf(1)\n}\n",
    "src/main/scala/com/acme/data/Store.scala": "package com.acme.data\n\ncase class Store()\n",
}


def test_imports_in_the_new_languages_become_edges_to_the_files_they_name(tmp_path):
    from loom_nb import HashingEmbedder, Loom

    for name, text in {**{k: v[0] for k, v in IMPORTING.items()}, **IMPORTED}.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text, encoding="utf-8")
    loom = Loom(embedder=HashingEmbedder())
    loom.index(tmp_path, progress=False, wait=True)
    file_of = {n.id: n.reference.file for n in loom.graph.content_nodes()}
    imported = {}
    for node in loom.graph.content_nodes():
        for neighbour, kind in loom.graph.structure_of(node.id):
            if kind == "imports" and file_of[neighbour] != node.reference.file:
                imported.setdefault(node.reference.file, set()).add(file_of[neighbour])
    for importer, (_, target) in IMPORTING.items():
        assert target in imported.get(importer, set()), f"{importer} should import {target}; edges: {imported.get(importer)}"


@pytest.mark.parametrize("language, spec", [("csharp", "Acme.Data"), ("swift", "Foundation"), ("sql", "orders")])
def test_namespace_imports_draw_no_file_edges(language, spec):
    from loom_nb.index.structure import resolve_import

    assert resolve_import("src/App.x", spec, language, {"Acme/Data.cs", "Foundation.swift", "orders.sql"}) is None
