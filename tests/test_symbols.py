"""Outlines on small hand-written files whose symbols, lines, docs and imports can be checked by eye."""

from __future__ import annotations


import pytest

from loom_nb.index.symbols import SUPPORTED, Outline, Symbol, grammar, outline, skeleton, text_windows

PY = '''\
import os.path
from .graph import LoomGraph

# Refreshes tokens.
@retry(3)
def refresh(store, client_id) -> Store:
    """Refresh the token for one client."""
    token = fetch_token(client_id)
    return store.save(token)


class TokenStore:
    """Keeps tokens."""

    def expired(self, now: float) -> bool:
        return check(now)
'''

JS = '''\
import { api } from "./api";
const fs = require("fs");

/**
 * Log a user in.
 */
export async function login(user, password) {
  const token = await api.post(user, password);
  return normalize(token);
}

class Session {
  // Closes the session.
  close(reason) {
    this.emit("close", reason);
  }
}
'''

TS = '''\
import type { Creds } from "./types";

/** Authenticate a user. */
export async function authenticateUser(credentials: Creds): Promise<Result> {
  return verify(credentials);
}

export class AuthService {
  async login(name: string): Promise<void> {
    await this.client.send(new Request(name));
  }
}

interface Result {
  ok: boolean;
}
'''

GO = '''\
package server

import (
	"context"
	"fmt"
)

// Server serves requests.
type Server struct {
	addr string
}

// Start starts the server.
func (s *Server) Start(ctx context.Context) error {
	fmt.Println(s.addr)
	return nil
}

// New makes a server.
func New(addr string) *Server {
	return &Server{addr: addr}
}
'''

RUST = '''\
use crate::store::Store;

/// A token with an expiry.
#[derive(Debug)]
pub struct Token {
    expires: u64,
}

impl Token {
    /// True when the token is past its expiry.
    pub fn expired(&self, now: u64) -> bool {
        check(now, self.expires)
    }
}

/// Refresh a token.
pub fn refresh(store: &Store) -> Token {
    Token::new(store.next())
}
'''

JAVA = '''\
package app;

import java.util.List;

/** Keeps tokens. */
public class TokenStore {
    /** Whether the token expired. */
    public boolean expired(long now) {
        return Clock.check(now);
    }
}

/** Refreshing. */
interface Refresher {
    List<String> refresh(String id);
}
'''

PHP = '''\
<?php
namespace App;

use App\\Models\\User;

/**
 * Refresh the token.
 */
function refresh(Store $store): Token {
    return fetch_token($store);
}

class TokenStore {
    /** Whether it expired. */
    public function expired(int $now): bool {
        return $this->check($now);
    }
}
'''

CASES = {
    "python": (PY, {
        ("function", "refresh", 4, 9),
        ("class", "TokenStore", 12, 16),
        ("method", "TokenStore.expired", 15, 16),
    }, ("os.path", ".graph"), "refresh", "def refresh(store, client_id) -> Store:",
        "Refresh the token for one client.", "fetch_token"),
    "javascript": (JS, {
        ("function", "login", 4, 10),
        ("class", "Session", 12, 17),
        ("method", "Session.close", 13, 16),
    }, ("./api", "fs"), "login", "export async function login(user, password)",
        "Log a user in.", "normalize"),
    "typescript": (TS, {
        ("function", "authenticateUser", 3, 6),
        ("class", "AuthService", 8, 12),
        ("method", "AuthService.login", 9, 11),
        ("interface", "Result", 14, 16),
    }, ("./types",), "authenticateUser",
        "export async function authenticateUser(credentials: Creds): Promise<Result>",
        "Authenticate a user.", "verify"),
    "go": (GO, {
        ("struct", "Server", 8, 11),
        ("method", "Server.Start", 13, 17),
        ("function", "New", 19, 22),
    }, ("context", "fmt"), "Start", "func (s *Server) Start(ctx context.Context) error",
        "Start starts the server.", "Println"),
    "rust": (RUST, {
        ("struct", "Token", 3, 7),
        ("impl", "Token", 9, 14),
        ("method", "Token.expired", 10, 13),
        ("function", "refresh", 16, 19),
    }, ("crate::store::Store",), "refresh", "pub fn refresh(store: &Store) -> Token",
        "Refresh a token.", "next"),
    "java": (JAVA, {
        ("class", "TokenStore", 5, 11),
        ("method", "TokenStore.expired", 7, 10),
        ("interface", "Refresher", 13, 16),
        ("method", "Refresher.refresh", 15, 15),
    }, ("java.util.List",), "expired", "public boolean expired(long now)",
        "Whether the token expired.", "check"),
    "php": (PHP, {
        ("function", "refresh", 6, 11),
        ("class", "TokenStore", 13, 18),
        ("method", "TokenStore.expired", 14, 17),
    }, ("App\\Models\\User",), "refresh", "function refresh(Store $store): Token",
        "Refresh the token.", "fetch_token"),
}


def _by_name(o: Outline, name: str) -> Symbol:
    return next(s for s in o.symbols if s.name == name and s.kind in ("function", "method"))


@pytest.mark.parametrize("language", sorted(CASES))
def test_symbols_lines_and_imports(language):
    text, expected, imports, *_ = CASES[language]
    o = outline(f"src/sample.{language}", text, language)
    assert o.parsed and o.error is None
    assert {(s.kind, s.qualname, s.start_line, s.end_line) for s in o.symbols} == expected
    assert o.imports == imports
    starts = [s.start_line for s in o.symbols]
    assert starts == sorted(starts)  # source order, members after their class


@pytest.mark.parametrize("language", sorted(CASES))
def test_signature_doc_and_references(language):
    text, _, _, name, signature, doc, callee = CASES[language]
    sym = _by_name(outline("f", text, language), name)
    assert sym.signature == signature
    assert "{" not in sym.signature and "return" not in sym.signature
    assert sym.doc == doc
    assert callee in sym.references
    assert list(sym.references) == sorted(set(sym.references))


def test_methods_have_parent_and_class_refs_exclude_method_calls():
    o = outline("a.py", PY, "python")
    method = next(s for s in o.symbols if s.kind == "method")
    assert method.parent == "TokenStore" and method.name == "expired"
    assert method.references == ("check",)
    cls = next(s for s in o.symbols if s.kind == "class")
    assert cls.doc == "Keeps tokens." and cls.references == ()
    refresh = next(s for s in o.symbols if s.name == "refresh")
    assert refresh.references == ("fetch_token", "retry", "save")  # decorator call included


def test_typescript_kinds_and_tsx():
    text = ('type Id = string;\nenum Color { Red }\nabstract class Shape { abstract area(): number; }\n'
            'export const area = (s: Shape): number => s.area();\n')
    o = outline("t.ts", text, "typescript")
    assert [(s.kind, s.qualname) for s in o.symbols] == [
        ("type", "Id"), ("enum", "Color"), ("class", "Shape"), ("method", "Shape.area"),
        ("function", "area")]
    assert o.symbols[0].signature == "type Id = string"
    tsx = outline("c.tsx", "export function App(): JSX.Element {\n  return <div>{render()}</div>;\n}\n", "tsx")
    assert [(s.kind, s.name, s.start_line, s.end_line) for s in tsx.symbols] == [("function", "App", 1, 3)]
    assert "render" in tsx.symbols[0].references


def test_rust_impl_trait_for_type_and_php_includes():
    o = outline("r.rs", "trait Shape { fn area(&self) -> f64; }\nimpl fmt::Display for Foo<T> {\n"
                        "    fn fmt(&self) {}\n}\n", "rust")
    assert [(s.kind, s.qualname) for s in o.symbols] == [
        ("trait", "Shape"), ("method", "Shape.area"), ("impl", "Foo"), ("method", "Foo.fmt")]
    assert o.symbols[2].signature == "impl fmt::Display for Foo<T>"
    php = outline("p.php", "<?php\nrequire_once 'vendor/autoload.php';\ninclude \"lib.php\";\n"
                           "use App\\{A, B as C};\n", "php")
    assert php.imports == ("vendor/autoload.php", "lib.php", "App\\A", "App\\B")


def test_python_imports_relative_and_aliased():
    o = outline("m.py", "import os, sys as s\nfrom ..pkg.mod import X\nfrom . import y\n"
                        "def f():\n    import json\n", "python")
    assert o.imports == ("os", "sys", "..pkg.mod", ".", "json")


def test_broken_python_keeps_valid_functions():
    text = ("def good():\n    return 1\n\nx = foo(1, 2\n\n"
            "def also_good(a):\n    \"\"\"Still found.\"\"\"\n    return 2\n\n"
            "class C:\n    def m(self):\n        pass\n")
    o = outline("broken.py", text, "python")
    assert o.parsed and "syntax error" in o.error
    assert {(s.kind, s.qualname, s.start_line, s.end_line) for s in o.symbols} == {
        ("function", "good", 1, 2), ("function", "also_good", 6, 8),
        ("class", "C", 10, 12), ("method", "C.m", 11, 12)}
    assert next(s for s in o.symbols if s.name == "also_good").doc == "Still found."


def test_garbage_in_supported_language_falls_back_to_windows():
    text = "\n".join(")(*&^ %$ ]]] {{{ <<<" for _ in range(100)) + "\n"
    o = outline("junk.java", text, "java")
    assert not o.parsed and o.error
    assert {s.kind for s in o.symbols} == {"window"}
    assert o.symbols[0].start_line == 1 and o.symbols[-1].end_line == 100


def test_script_without_definitions_is_windowed_but_parsed():
    o = outline("run.py", "import sys\nprint(sys.argv)\n", "python")
    assert o.parsed and o.imports == ("sys",)
    assert [(s.kind, s.start_line, s.end_line) for s in o.symbols] == [("window", 1, 2)]


MD = """\
Intro text before any heading.

# Guide

Welcome.

## Install

pip install loom

```bash
# not a heading
```

## Use
Run it.

# Appendix
Setext
------
last line
"""


def test_markdown_sections():
    o = outline("docs/guide.md", MD, "markdown")
    assert o.parsed and o.language == "markdown"
    rows = [(s.kind, s.name, s.qualname, s.start_line, s.end_line, s.parent) for s in o.symbols]
    assert rows == [
        ("heading", "guide.md", "guide.md", 1, 1, None),
        ("heading", "Guide", "Guide", 3, 16, None),
        ("heading", "Install", "Guide > Install", 7, 13, "Guide"),
        ("heading", "Use", "Guide > Use", 15, 16, "Guide"),
        ("heading", "Appendix", "Appendix", 18, 21, None),
        ("heading", "Setext", "Appendix > Setext", 19, 21, "Appendix"),
    ]
    assert o.symbols[1].signature == "# Guide" and o.symbols[1].doc == "Welcome."
    sk = skeleton(MD, o)
    assert "L3: # Guide" in sk and "  L7: ## Install" in sk


def test_unknown_language_windows_cover_every_line_once():
    text = "".join(f"line {i}\n" + ("\n" if i % 17 == 0 else "") for i in range(1, 300))
    o = outline("notes.cob", text, "cobol")
    assert not o.parsed and o.error is None and o.imports == ()
    ranges = [(s.start_line, s.end_line) for s in o.symbols]
    n_lines = text.count("\n")
    assert ranges[0][0] == 1 and ranges[-1][1] == n_lines
    assert all(b[0] == a[1] + 1 for a, b in zip(ranges, ranges[1:]))
    assert all(1 <= e - s + 1 <= 60 for s, e in ranges)
    assert all(s.kind == "window" for s in o.symbols)


def test_text_windows_prefers_blank_lines_and_char_limit():
    assert text_windows("a\nb\n\nc\nd\n", max_lines=3) == [(1, 3), (4, 5)]
    assert text_windows("x" * 10 + "\n" + "y" * 10, max_chars=15) == [(1, 1), (2, 2)]
    assert text_windows("no newline") == [(1, 1)]
    assert text_windows("") == []


@pytest.mark.parametrize("language", [*SUPPORTED, "markdown", "text"])
def test_empty_and_odd_text_never_raise(language):
    assert outline("e", "", language).symbols == ()
    for odd in ("\x00\xff\ud800", "(((((((((((" * 500, "\n" * 50, "}" * 1000):
        o = outline("odd", odd, language)
        assert isinstance(o, Outline)
        skeleton(odd, o)


def test_a_five_thousand_line_file_outlines_every_symbol():
    # its speed is a benchmark's business (benchmarks/bench_index.py), not a unit test's
    parts = [f"def f{i}(a, b):\n    '''Doc {i}.'''\n    x = g{i}(a)\n    return h(x, b)\n\n"
             for i in range(1000)]
    text = "".join(parts)
    assert text.count("\n") == 5000
    o = outline("big.py", text, "python")
    assert len(o.symbols) == 1000 and o.symbols[-1].end_line == 4999
    assert o.symbols[10].references == ("g10", "h")


def test_skeleton_lists_signatures_not_bodies():
    o = outline("auth.py", PY, "python")
    sk = skeleton(PY, o)
    assert sk.splitlines()[0] == "auth.py (python, 16 lines)"
    assert "imports: os.path, .graph" in sk
    assert "L4: def refresh(store, client_id) -> Store: — Refresh the token for one client." in sk
    assert "  L15: def expired(self, now: float) -> bool:" in sk
    assert "fetch_token" not in sk and "return" not in sk


def test_grammar():
    assert grammar("cobol") is None
    assert all(grammar(lang) is not None for lang in SUPPORTED)
    assert grammar("python") is grammar("py")


def test_broken_javascript_keeps_later_definitions():
    text = "function a() {\n  foo(1, \n}\n\nfunction b() { return 2; }\nclass C { m() {} }\n"
    o = outline("broken.js", text, "javascript")
    assert o.parsed and "partial" in o.error
    assert [(s.kind, s.qualname, s.start_line) for s in o.symbols] == [
        ("function", "b", 5), ("class", "C", 6), ("method", "C.m", 6)]
