"""Secrets stay out of prompts (issue 18): credentials in workspace files are masked at their
own length wherever node text is read, so they never reach result.prompt, a chat request or an
exported report; credentials files are indexed by name only; the manifest says what was masked."""

from __future__ import annotations

import re

import ollama
import pytest

from loom_nb import HashingEmbedder, Loom
from loom_nb.chat.replay import OllamaStandIn, default_show
from loom_nb.chat.session import Session
from loom_nb.cli import main
from loom_nb.core.secrets import find_secrets, is_secret_file, mask_secrets

AWS = "AKIAIOSFODNN7" + "QWERTYZ"  # split so that no scanner flags this test file itself
GITHUB = "ghp_" + "Zx9" * 12
PEM_BODY = "MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7" + "q" * 20
PEM = f"-----BEGIN RSA PRIVATE KEY-----\n{PEM_BODY}\n{PEM_BODY[::-1]}\n-----END RSA PRIVATE KEY-----"
DB_PASSWORD = "s3cr3t-Hunter-22"

FILES = {
    "deploy/settings.py": f'''"""Deployment settings for the billing worker."""

AWS_ACCESS_KEY_ID = "{AWS}"
GITHUB_TOKEN = "{GITHUB}"
DATABASE_PASSWORD = "{DB_PASSWORD}"


def billing_worker_settings():
    """The billing worker reads its credentials from these settings."""
    return {{"key": AWS_ACCESS_KEY_ID, "token": GITHUB_TOKEN}}
''',
    "deploy/signing.md": f"# Signing the billing worker releases\n\nThe release key:\n\n{PEM}\n\nRotate it yearly.\n",
    ".env": f"BILLING_API_KEY=live-{AWS[::-1]}\nDEBUG=1\n",
}
RAW = [AWS, GITHUB, PEM_BODY, DB_PASSWORD, f"live-{AWS[::-1]}"]


@pytest.fixture
def indexed(tmp_path):
    ws = tmp_path / "ws"
    for rel, text in FILES.items():
        (ws / rel).parent.mkdir(parents=True, exist_ok=True)
        (ws / rel).write_text(text)
    loom = Loom(tmp_path / "session", embedder=HashingEmbedder())
    report = loom.index(ws, progress=False, wait=True)
    return loom, ws, report


def leaked(text: str) -> list[str]:
    return [value for value in RAW if value in text]


def test_the_rules_find_each_kind_and_leave_ordinary_code_alone():
    text = (f'key = "{AWS}"\ntoken: "{GITHUB}"\npassword = get_password()\nPASSWORD = "changeme"\n'
            'digest = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"\n'
            'client_secret = "Q2x1ZXNzIHRoaXMgaXMgYSBsb25nIHNlY3JldA9x"\n')
    assert [(f.kind, f.line) for f in find_secrets(text)] == [
        ("aws-access-key", 1), ("github-token", 2), ("password-like", 6)]
    masked, found = mask_secrets(text)
    assert len(masked) == len(text) and masked.count("\n") == text.count("\n")  # line numbers and spans hold
    assert AWS not in masked and GITHUB not in masked and "get_password()" in masked and "changeme" in masked
    assert "[aws-access-key]" in masked and len(found) == 3


def test_a_pem_block_keeps_its_lines_and_loses_its_body():
    masked, found = mask_secrets(f"before\n{PEM}\nafter")
    assert [f.kind for f in found] == ["private-key"] and PEM_BODY not in masked
    assert masked.split("\n")[0] == "before" and masked.split("\n")[-1] == "after"
    assert masked.count("\n") == PEM.count("\n") + 2


def test_credentials_files_are_indexed_by_name_only(indexed):
    loom, _, report = indexed
    (env,) = [n for n in loom.graph.content_nodes() if n.reference.file == ".env"]
    assert loom.graph.text(env.id).startswith("(.env: a credentials file, indexed by name only")
    assert is_secret_file("keys/id_rsa") and is_secret_file("prod.env") and not is_secret_file("environment.py")
    assert (".env", 0, "credentials file (name only)") in report.secrets
    assert sorted((p, k) for p, _, k in report.secrets if p != ".env") == [
        ("deploy/settings.py", "aws-access-key"), ("deploy/settings.py", "github-token"),
        ("deploy/settings.py", "password-like"), ("deploy/signing.md", "private-key")]


def test_no_secret_reaches_the_prompt_and_the_manifest_says_so(indexed):
    loom, _, _ = indexed
    result = loom.query("billing worker settings credentials and the release signing key", budget=3000)
    assert {n.reference.file for n in map(loom.graph.node, result.loaded)} >= {"deploy/settings.py", "deploy/signing.md"}
    assert leaked(result.prompt) == [] and leaked(result.pack().to_json()) == []
    assert "[aws-access-key]" in result.prompt and "[github-token]" in result.prompt
    assert any("secrets masked |" not in line and "3 secrets masked" in line for line in result.manifest.split("\n"))


def test_no_secret_reaches_a_chat_request(indexed):
    loom, _, _ = indexed
    with OllamaStandIn(answers=["It uses the settings [n1]."], show=default_show(num_ctx=8192)) as server:
        Session(loom, model="llama3.2", client=ollama.Client(host=server.host), background=False).send(
            "what credentials does the billing worker use, and where is the release signing key?")
        sent = str(server.chat_requests)
    assert "billing_worker_settings" in sent and leaked(sent) == []


def test_no_secret_reaches_an_exported_report_or_a_view(indexed, tmp_path):
    loom, _, _ = indexed
    result = loom.query("billing worker settings credentials and the release signing key", budget=3000)
    page = loom.export_report(result, tmp_path / "report.html").read_text()
    assert "billing_worker_settings" in page and leaked(page) == []
    views = "".join(str(loom.view(n.id)) + loom.view(n.id)._repr_html_() for n in loom.graph.content_nodes())
    assert leaked(views) == []


def test_nothing_derived_from_a_file_holds_a_secret(indexed):
    """Titles, concepts (names, descriptions, views) and the lexical index are made from the
    masked text, so a credential is not in graph.json, a concept view or a term the index holds."""
    loom, _, _ = indexed
    loom.save()
    on_disk = "".join(p.read_text(errors="replace") for p in loom.folder.rglob("*.json"))
    concepts = "".join(str(loom.view(c.id)) + loom.view(c.id)._repr_html_() for c in loom.graph.concept_nodes())
    terms = " ".join(loom.graph.lexical.vocabulary)
    assert leaked(on_disk) == [] and leaked(concepts) == [] and leaked(terms.upper()) == [] and "[aws-access-key]" not in terms


def test_pasted_text_is_stored_masked_and_served_after_a_reopen(tmp_path):
    """A question pasted with a log that holds a token: the session stores the masked text
    under the masked text's hash, so the log is served (masked) after a save and a reopen."""
    folder = tmp_path / "pasted"
    loom = Loom(folder, embedder=HashingEmbedder())
    (node,) = loom.add(f"deploy log: the billing worker failed to authenticate\nAWS_ACCESS_KEY_ID={AWS}\n"
                    f'DATABASE_PASSWORD = "{DB_PASSWORD}"\n').nodes
    assert leaked(node.title) == [] and leaked(loom.graph.text(node.id)) == []
    loom.save()
    stored = "".join(p.read_text() for p in (folder / "content").iterdir())
    assert "billing worker" in stored and leaked(stored) == []
    again = Loom.open(folder, embedder=HashingEmbedder())
    result = again.query("why did the billing worker fail to authenticate?", budget=1000)
    assert node.id in result.loaded and leaked(result.prompt) == []
    assert "2 secrets masked" in result.manifest


def test_index_report_secrets_lists_path_and_line_never_the_value(indexed, tmp_path, capsys):
    _, ws, _ = indexed
    assert main(["index", str(tmp_path / "cli-session"), str(ws), "--report-secrets", "--embedder", "hashing"]) == 0
    out = capsys.readouterr().out
    assert "deploy/settings.py:3  aws-access-key" in out and "deploy/signing.md:5  private-key" in out
    assert ".env  credentials file (name only)" in out and leaked(out) == []


def test_masking_is_remembered_per_text_and_bounded(monkeypatch):
    import loom_nb.core.secrets as secrets
    from loom_nb.core.lru import BoundedLRU

    calls = []
    real = secrets.find_secrets
    monkeypatch.setattr(secrets, "find_secrets", lambda text: calls.append(text) or real(text))
    monkeypatch.setattr(secrets, "_MASKED", BoundedLRU(1000, 800, size=lambda v: len(v[0])))
    text = 'api_key = "' + "Zx9" * 12 + '"\n'
    first, found = secrets.mask_secrets(text)
    found.clear()  # the caller's list is its own
    again, found_again = secrets.mask_secrets(text)
    assert first == again and "Zx9Zx9" not in again and len(found_again) == 1 and len(calls) == 1
    for k in range(40):  # 40 other texts push it out: the kept characters stay under the bound
        secrets.mask_secrets(f"note {k} " * 4)
    assert secrets._MASKED.total <= 800
    secrets.mask_secrets(text)
    assert len(calls) == 42


@pytest.mark.parametrize("line", [
    'HeaderXCSRFToken = "X-CSRF-Token"',              # echo: a header's name, not a token
    'TokenLookup: "header:X-CSRF-Token,form:csrf"',   # a setting whose name starts with "token"
    '"token_type": "Bearer"',
    'token_endpoint = "http://localhost:8080/token/refresh"',
    'token_file_path = "~/.config/release-token"',
    '"color-api-keyword": "#000000bd"',               # sympy's docs theme
    '"secret": "{env.CADDY_VARS_TEST_SECRET}"',       # a template, filled in elsewhere
    'docs = "https://user:pass@example.com"',         # the docs' placeholder credentials
    'proxy = "https://${PROXY_USER}:${PROXY_PASSWORD}@proxy:3128"',
    # Django: alphabets and a chain of names have a key's entropy and none of its randomness
    'RANDOM_STRING_CHARS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"',
    'BASE56_ALPHABET = "23456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnpqrstuvwxyz"',
    '<label for="id_generic_relations-taggeditem-content_type-object_id-0-DELETE">',
    'token = "%HOMEPATH%\\" + token[2:]',                # a Windows variable, not a value
])
def test_names_and_settings_that_only_look_like_credentials_are_left_alone(line):
    assert find_secrets(line) == [] and mask_secrets(line)[0] == line


@pytest.mark.parametrize("line, kind, value", [
    ('refresh_token = "demo_refresh_token_12345"', "password-like", "demo_refresh_token_12345"),
    ('cookieHashPolicy := CookieHashSelection{Secret: "hunter2"}', "password-like", "hunter2"),
    ("model = Model(password='IAmSensitive')", "password-like", "IAmSensitive"),  # a password may be letters alone
    ('api_key_prod = "k9Xq2LmW"', "password-like", "k9Xq2LmW"),
    ('DATABASE_URL = "postgres://app:S3cret-pw@db:5432/prod"', "url-password", "S3cret-pw"),
    ("REDIS_URL=redis://:Sup3rS3cret@cache:6379/0", "url-password", "Sup3rS3cret"),
    ('<meta content="Vbmuc30dLLFdm7POIe3xfTa4nODYc/la/wLrI1OLEOI=" name="csrf-token" />', "high-entropy",
     "Vbmuc30dLLFdm7POIe3xfTa4nODYc/la/wLrI1OLEOI="),
    # hex under a credential's name (secrets.token_hex(), openssl rand -hex): FastAPI's and
    # Flask's docs put their signing keys so, and all of them reached the prompt
    ('SECRET_KEY = "09d25e094faa6ca2556c818166b7a9563b93f7099f6f0f4caa6cf63b88e8d3e7"', "password-like",
     "09d25e094faa6ca2556c818166b7a9563b93f7099f6f0f4caa6cf63b88e8d3e7"),
    ("app.secret_key = '192b9bdd22ab9ed4d12e236c78afcb9a393ec15f71bbf5dc987d54727823bcbf'", "password-like",
     "192b9bdd22ab9ed4d12e236c78afcb9a393ec15f71bbf5dc987d54727823bcbf"),
    ("API_KEY=4f9a0c1d2e3f4a5b6c7d8e9f0a1b2c3d", "password-like", "4f9a0c1d2e3f4a5b6c7d8e9f0a1b2c3d"),
    ("  api_key: 4f9a0c1d2e3f4a5b6c7d8e9f0a1b2c3d", "password-like", "4f9a0c1d2e3f4a5b6c7d8e9f0a1b2c3d"),
    ('github_token = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b"', "password-like", "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b"),
])
def test_credentials_in_assignments_and_urls_are_masked(line, kind, value):
    masked, found = mask_secrets(line)
    assert [f.kind for f in found] == [kind] and value not in masked and len(masked) == len(line)


def _long_pem(label: str = "RSA PRIVATE KEY", lines: int = 50) -> tuple[str, list[str]]:
    """A key long enough that its unit is cut into parts (over max_unit_tokens)."""
    body = [("MIIJ" if k == 0 else "") + "".join(chr(65 + (k * 7 + j * 13) % 26) + str((k + j) % 10) for j in range(30))[:60]
            for k in range(lines)]
    return f"-----BEGIN {label}-----\n" + "\n".join(body) + f"\n-----END {label}-----", body


class RecordingEmbedder(HashingEmbedder):
    """HashingEmbedder that keeps every text it was asked to embed."""

    def __init__(self):
        super().__init__()
        self.seen: list[str] = []

    def embed(self, texts):
        self.seen.extend(texts)
        return super().embed(texts)


def test_a_long_key_cut_across_units_is_masked_in_every_unit(tmp_path):
    """Masking ran per unit and the key pattern needs its BEGIN line: the second and later parts
    of a key cut into several units were raw. Each file is masked whole before it is cut."""
    import nbformat
    from nbformat.v4 import new_code_cell, new_notebook, new_output

    pem, body = _long_pem()
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "keys.py").write_text(f'"""Release signing."""\n\n\ndef sign(data):\n    return data\n\n\nSIGNING_KEY = """{pem}"""\n'
                                '\n\ndef verify(data):\n    return data\n')
    (ws / "notes.txt").write_text("Release notes\n\n" + "\n".join(f"line {i} about the release" for i in range(70))
                                  + f"\n{pem}\nafter the key\n")
    nb = new_notebook(metadata={"kernelspec": {"name": "python3", "language": "python", "display_name": "Python 3"}})
    out = 'conn = connect(host="warehouse.internal.example.com", user="analytics", dbname="events", password="'
    out = " " * (390 - len(out)) + out + DB_PASSWORD + '")'  # outputs are cut at 400 characters: inside the password
    nb.cells = [new_code_cell(f'KEY = """{pem}"""\n\ndef sign(data):\n    return data\n'),
                new_code_cell("print(conn)", outputs=[new_output("stream", name="stdout", text=out)])]
    for k, cell in enumerate(nb.cells):
        cell.id = f"c{k}"
    nbformat.write(nb, ws / "keys.ipynb")
    embedder = RecordingEmbedder()
    loom = Loom(tmp_path / "session", embedder=embedder)
    loom.index(ws, progress=False, wait=True)
    nodes = list(loom.graph.content_nodes())
    notes = sorted(n.reference.lines for n in nodes if n.reference.file == "notes.txt")
    assert any(73 < first <= 124 for first, _ in notes)  # a window starts inside the key (lines 73-124)
    raw = [line for line in body if line]

    def leaks(text: str) -> list[str]:
        return [line for line in raw if line in text] + ([DB_PASSWORD] if DB_PASSWORD[:10] in text else [])

    texts = "".join(loom.graph.text(n.id) for n in nodes)  # read from the files: none of them is stale
    assert leaks(texts) == [] and texts.count("[private-key]") == 3
    assert leaks("".join(n.title + n.reference.signature for n in nodes)) == []
    assert leaks(" ".join(embedder.seen)) == []
    result = loom.query("release signing key SIGNING_KEY keys.py notes", budget=20000)
    assert not [r for r in result.table if r.reason.startswith("stale")]
    assert leaks(result.prompt) == [] and leaks(result.pack().to_json()) == []
    views = "".join(str(loom.view(n.id)) + loom.view(n.id)._repr_html_() for n in nodes)
    assert leaks(views) == []
    loom.save()
    assert leaks("".join(p.read_text(errors="replace") for p in loom.folder.rglob("*") if p.is_file())) == []
    # the masked units are fresh: a re-index finds nothing changed, and a line added above moves them
    assert loom.index(ws, progress=False, wait=True).files_indexed == 0
    (key,) = [n for n in nodes if n.reference.file == "keys.py" and "SIGNING_KEY" in n.title]
    first_line = key.reference.lines[0]
    (ws / "keys.py").write_text((ws / "keys.py").read_text().replace("    return data\n\n\nSIGNING", "    data = bytes(data)\n    return data\n\n\nSIGNING"))
    report = loom.index(ws, progress=False, wait=True)
    assert report.files_indexed == 1 and report.nodes_kept == 3  # the docstring, SIGNING_KEY and verify
    assert loom.graph.node(key.id).reference.lines[0] == first_line + 1
    assert leaks(loom.graph.text(key.id)) == [] and loom.graph.masked(key.id) == 1
    assert leaks("".join(loom.graph.text(n.id) for n in loom.graph.content_nodes())) == []


def test_a_session_indexed_before_whole_file_masking_is_recut():
    from loom_nb.index.indexer import UNITS_VERSION

    assert UNITS_VERSION >= 10  # 10: units are cut from each file's text with its credentials masked


def test_a_moved_unit_gets_its_new_title_masked(tmp_path):
    """relocate() set a kept unit's title as given: masked where it was made, not where it was set."""
    ws = tmp_path / "ws"
    ws.mkdir()
    line = f'db = psycopg2.connect(host="wh.corp", password="{DB_PASSWORD}")'  # its first 60 characters end in the password
    (ws / "m.py").write_text(f"def a():\n    return 1\n\n\n{line}\n\n\ndef b():\n    return 2\n")
    loom = Loom(tmp_path / "session", embedder=HashingEmbedder())
    loom.index(ws, progress=False, wait=True)
    (node,) = [n for n in loom.graph.content_nodes() if "psycopg2" in n.title]
    assert DB_PASSWORD[:8] not in node.title
    ref = node.reference
    loom.graph.relocate(node.id, type(ref)(ref.file, (7, 7), ref.signature, ref.sha256, ref.cell), f"m.py:7-7 {line}")
    assert DB_PASSWORD not in loom.graph.node(node.id).title and "psycopg2.connect" in loom.graph.node(node.id).title
    loom.save()
    assert DB_PASSWORD not in (loom.folder / "graph.json").read_text()


def test_signature_reason_and_metadata_are_masked_as_a_node_is_added(tmp_path):
    """add_content masked the text and title but passed a reference's signature, the provenance
    reason and meta strings (the unit's name) through as given: they reach graph.json, views and,
    as the manifest's label, the prompt."""
    import numpy as np

    from loom_nb.core.graph import Provenance, Reference

    loom = Loom(tmp_path / "session", embedder=HashingEmbedder())
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "db.py").write_text("def connect():\n    return 1\n")
    loom.index(ws, progress=False, wait=True)
    (unit,) = loom.graph.content_nodes()
    raw = f'connect(password="{DB_PASSWORD}")'
    node, _ = loom.graph.add_content(
        "the connection settings", np.ones(loom.embedder.dim, dtype=np.float32), type="file_reference",
        reference=Reference("db.py", (1, 2), f"def {raw}:", unit.reference.sha256),
        provenance=Provenance("indexer", f"function {raw}", "input"), meta={"name": raw, "path": "db.py"})
    assert DB_PASSWORD not in node.reference.signature + node.provenance.reason + node.meta["name"]
    assert node.reference.signature.startswith("def connect(password=") and node.meta["path"] == "db.py"
    ref = node.reference
    loom.graph.relocate(node.id, Reference(ref.file, ref.lines, f"def {raw}:", ref.sha256), "db.py:1-2 connect")
    assert DB_PASSWORD not in loom.graph.node(node.id).reference.signature
    views = str(loom.view(node.id)) + loom.view(node.id)._repr_html_()
    loom.save()
    assert DB_PASSWORD not in views + (loom.folder / "graph.json").read_text()
    added = loom.add("notes on the warehouse connection", reason=f"pasted from {raw}").nodes[0]
    assert DB_PASSWORD not in added.provenance.reason


def test_a_skeleton_masks_credentials_and_shows_a_credentials_file_by_name(tmp_path):
    """loom.skeleton() outlined the raw file: a default argument, a doc line or a key's line
    came out raw, and a .env was outlined like any text file."""
    import nbformat
    from nbformat.v4 import new_code_cell, new_notebook

    pem, body = _long_pem()
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "settings.py").write_text(f'def connect(host="db", password="{DB_PASSWORD}"):\n    """Connect."""\n\n\n'
                                    f'def fetch():\n    """Fetch with the CI token {GITHUB} as fallback."""\n')
    (ws / "notes.txt").write_text("\n".join(f"line {i}" for i in range(58)) + f"\n{pem}\nafter\n")
    nb = new_notebook(metadata={"kernelspec": {"name": "python3", "language": "python", "display_name": "Python 3"}})
    nb.cells = [new_code_cell(f'def load(password="{DB_PASSWORD}"):\n    return 1\n')]
    nb.cells[0].id = "c0"
    nbformat.write(nb, ws / "explore.ipynb")
    (ws / ".env").write_text(f"DB_PASSWORD={DB_PASSWORD}\n")
    loom = Loom(tmp_path / "session", embedder=HashingEmbedder())
    loom.index(ws, progress=False, wait=True)
    views = {name: loom.skeleton(name) for name in ("settings.py", "notes.txt", "explore.ipynb", ".env")}
    assert "def connect(" in views["settings.py"] and "def load(" in views["explore.ipynb"]
    for name, view in views.items():
        assert DB_PASSWORD not in view and GITHUB not in view and not [line for line in body if line in view], name
    assert views[".env"] == "(.env: a credentials file, indexed by name only; its content is never read)"


@pytest.mark.parametrize("name", [".env", "id_rsa", "prod.pem", ".npmrc"])
def test_add_file_refuses_a_credentials_file(tmp_path, name):
    """add_file read a .env like any text file and stored it; index() reads such files by name only."""
    from loom_nb import LoomError

    (tmp_path / name).write_text(f"db_password={DB_PASSWORD}\nAWS_KEY={AWS}\n")
    loom = Loom(tmp_path / "session", embedder=HashingEmbedder())
    with pytest.raises(LoomError, match=rf"{re.escape(name)} is a credentials file.*never read"):
        loom.add_file(tmp_path / name)
    loom.save()
    assert loom.graph.counts()["content"] == 0
    assert leaked("".join(p.read_text(errors="replace") for p in loom.folder.rglob("*") if p.is_file())) == []


USER_PASSWORD = "UsrPw5512zz"
ANSWER_TOKEN = "ghp_" + "An5" * 12
ANSWER_PASSWORD = "AnsPw7781qq"
CHAT_RAW = [AWS, USER_PASSWORD, ANSWER_TOKEN, ANSWER_PASSWORD]


def chat_leaks(text: str) -> list[str]:
    return [value for value in CHAT_RAW if value in text]


def test_a_secret_in_the_question_reaches_no_prompt_report_or_embedder(tmp_path):
    """The question went into result.prompt, the pack's JSON, the exported report and the
    embedder as typed: masking ran on node text only."""
    embedder = RecordingEmbedder()
    loom = Loom(tmp_path / "session", embedder=embedder)
    loom.add("The deploy uses the billing worker settings.")
    question = f'why does boto fail with AWS_ACCESS_KEY_ID={AWS} and password = "{USER_PASSWORD}" in the deploy?'
    result = loom.query(question, budget=2000)
    assert "why does boto fail with AWS_ACCESS_KEY_ID=" in result.prompt and "[aws-access-key]" in result.prompt
    page = loom.export_report(result, tmp_path / "report.html").read_text()
    sent = result.prompt + result.query + str(result.messages) + result.pack().to_json() + page + " ".join(embedder.seen)
    assert chat_leaks(sent) == []


def test_pasted_text_reaches_the_embedder_masked_and_the_manifest_counts_it(tmp_path):
    """add() embedded the text as pasted: an Ollama embedder sent the key to the server."""
    embedder = RecordingEmbedder()
    loom = Loom(tmp_path / "session", embedder=embedder)
    short = loom.add(f'deploy fails: AWS_ACCESS_KEY_ID={AWS}\npassword = "{USER_PASSWORD}"').nodes[0]
    prose = "The worker retries the upload and logs the bucket name before it gives up. " * 300
    long = loom.add(f"The reports are written to postgres://app:{ANSWER_PASSWORD}@db/prod by the nightly job. " + prose).nodes[0]
    assert embedder.seen and chat_leaks(" ".join(embedder.seen)) == []
    assert long.chunks  # embedded chunk by chunk, every chunk masked
    assert loom.graph.masked(short.id) == 2 and loom.graph.masked(long.id) == 1


def test_a_chat_masks_the_users_message_and_the_models_answers_before_they_are_sent_or_stored(tmp_path):
    """The user's message and the model's answers went raw into later chat requests (history,
    the summary request's transcript), chat.json and the session's views."""
    folder = tmp_path / "chat"
    Loom(folder, embedder=HashingEmbedder()).save()
    answers = [f'Use this token: {ANSWER_TOKEN} and DB_PASSWORD = "{ANSWER_PASSWORD}" in settings.',
               "Second answer.", "Third answer.", "Fourth answer.", "Fifth answer."]
    with OllamaStandIn(answers=answers, show=default_show(num_ctx=2048)) as server:
        session = Session.open(folder, model="llama3.2", embedder=HashingEmbedder(), client=ollama.Client(host=server.host),
                               background=False, summarize="model")
        first = session.send(f'my deploy fails, log:\nAWS_ACCESS_KEY_ID={AWS}\npassword = "{USER_PASSWORD}"\nwhy?')
        for text in ["and what next?", "anything else?", "ok thanks", "one more"]:
            session.send(text + " " + "filler words " * 200)  # pushes the first turn out into a (model) summary
        session.save()
        requests = str(server.chat_requests)
    assert session.summaries and "[aws-access-key]" in requests  # the first message was sent again, masked
    assert chat_leaks(requests) == []
    assert chat_leaks(first.answer + first.query) == [] and "Use this token" in first.answer
    files = "".join(p.read_text(errors="replace") for p in folder.rglob("*") if p.is_file())
    views = str(session) + session._repr_html_() + "".join(str(t) + t._repr_html_() for t in session.turns)
    assert chat_leaks(files) == [] and chat_leaks(views) == []


def test_decisions_and_project_rules_are_masked_before_a_prompt_holds_them(tmp_path):
    """A decision recorded with a credential was stored and rendered raw into the decision zone,
    and LOOM.md's rules went raw into the system message."""
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "LOOM.md").write_text(f"# Rules\n\nAlways deploy with GITHUB_TOKEN={ANSWER_TOKEN} on the staging box.\n")
    (ws / "app.py").write_text("def main():\n    return 1\n")
    loom = Loom(tmp_path / "session", embedder=HashingEmbedder())
    loom.index(ws, progress=False, wait=True)
    with OllamaStandIn(answers=["ok", "ok again"], show=default_show(num_ctx=8192)) as server:
        session = Session(loom, model="llama3.2", client=ollama.Client(host=server.host), background=False)
        node = session.decisions.add("decision", f'rotate the key AKIA{AWS[4:]} now',
                                     description=f'the old password = "{USER_PASSWORD}" is revoked')
        session.send("how do I deploy?")
        session.save()
        requests = str(server.chat_requests)
    assert "Always deploy with GITHUB_TOKEN=" in requests and "rotate the key" in requests
    decision = session.decisions.node(node)
    assert chat_leaks(requests) == [] and chat_leaks(decision.title + decision.description) == []
    assert chat_leaks((loom.folder / "decisions.json").read_text()) == []


@pytest.mark.parametrize("line", [
    "TOKEN_ENDPOINT=https://auth.example.com/token",
    "OAUTH_TOKEN_URL=https://auth.example.com/oauth/token",
    "DB_PASSWORD_FILE=/run/secrets/db_password",
    "AUTH_TOKEN_HEADER=X-Auth-Token",
    "TOKEN_TYPE=Bearer",
    "PRIVATE_KEY_PATH=./certs/server.key",
    "SECRET_STORE=vault",
    "API_KEY_LOCATION=HeaderOnly",
    "SECRET_NAME=prod-db-credentials",
    "export SECRET_TEMPLATE={env.SECRET}",
    '<script src="https://cdn.example.com/bootstrap.min.js" integrity="sha384-' + "Q6E9RHvbIyZFJoft+2mJbHaEWldlvI9IOYy5n3zV9zzTtmI3UksdQRVvoxMfooAo" + '" crossorigin="anonymous">',
    '      "integrity": "sha512-' + "v2kDEe57lecTulaDIuNTPy3Ry4gLGJ6Z1O3vE1krgXZNrsQ+LFTGHVxVjcXPs17LhbZVGedAJv8XZ1tvj5FvSg==" + '",',
    '      "integrity": "sha1-' + "C0gkb8eJRp2nR2Yb1xcHGQTnQTE=" + '",',
    'commit_sha = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b"',  # hex under a name that is no credential's
    'expected_digest = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"',
])
def test_env_lines_and_digests_that_only_look_like_credentials_are_left_alone(line):
    """The env-line rule took any name holding a secret word (TOKEN_ENDPOINT, DB_PASSWORD_FILE) and
    any value (a URL, a path, a header name); the high-entropy rule took SRI digests for keys."""
    assert find_secrets(line) == [] and mask_secrets(line)[0] == line


@pytest.mark.parametrize("line, value", [
    ("DB_PASSWORD=Hunter22pass", "Hunter22pass"),
    ("export API_TOKEN=k9Xq2LmW8vT4pR7z", "k9Xq2LmW8vT4pR7z"),
    ("GITHUB_TOKEN_PROD=k9Xq2LmW8vT4pR7z", "k9Xq2LmW8vT4pR7z"),
    ("DB_PASSWORD=SuperSecret", "SuperSecret"),  # a password may be letters alone
    ('signature = "sha384Q6E9RHvbIyZFJoft2mJbHaEWldlvI9IOYy5n3zV9zzTtmI3Uksd"', "Q6E9RHvbIyZFJoft2mJbHaEWldlvI9IOYy5n3"),
])
def test_env_lines_and_random_literals_are_still_masked(line, value):
    masked, found = mask_secrets(line)
    assert found and value not in masked and len(masked) == len(line)


def test_an_indexed_lock_file_and_page_report_no_secret(tmp_path):
    import base64
    import hashlib
    import json

    ws = tmp_path / "ws"
    ws.mkdir()
    packages = {f"node_modules/pkg{i}": {"version": "1.0.0", "integrity": "sha512-" + base64.b64encode(
        hashlib.sha512(f"pkg{i}".encode()).digest()).decode()} for i in range(3)}
    (ws / "package-lock.json").write_text(json.dumps({"name": "app", "lockfileVersion": 3, "packages": packages}, indent=2))
    sri = "sha384-" + base64.b64encode(hashlib.sha384(b"bootstrap").digest()).decode()
    (ws / "index.html").write_text(f'<html><head>\n<script src="https://cdn.example.com/b.js" integrity="{sri}"></script>\n</head></html>\n')
    (ws / "deploy.sh").write_text("export TOKEN_ENDPOINT=https://auth.example.com/token\nexport DB_PASSWORD_FILE=/run/secrets/db\n")
    loom = Loom(tmp_path / "session", embedder=HashingEmbedder())
    assert loom.index(ws, progress=False, wait=True).secrets == []
    assert sri in "".join(loom.graph.text(n.id) for n in loom.graph.content_nodes())


PGP = ("-----BEGIN PGP PRIVATE KEY BLOCK-----\n\nlQOYBF2Xx1sBCADXq9Gm1Xx1sBCADXq9Gm1Xx1sBCADXq9GmPgpSecretLine99\n=ab12\n"
       "-----END PGP PRIVATE KEY BLOCK-----")


@pytest.mark.parametrize("text, value", [
    (PGP, "PgpSecretLine99"),
    ('conn = "DefaultEndpointsProtocol=https;AccountName=myacct;AccountKey=Zm9vYmFyYmF6cXV4cXV1eHF1ZXhx9A==;'
     'EndpointSuffix=core.windows.net"', "Zm9vYmFyYmF6cXV4cXV1ZXhx9A=="),
    ("Endpoint=sb://ns.servicebus.windows.net/;SharedAccessKeyName=Root;SharedAccessKey=k3Yq9Zx8Lm2Pq7Rt5Vw1Xy4=", "k3Yq9Zx8Lm2Pq7Rt5Vw1Xy4="),
    ('CONN = "Server=db.corp;Database=app;User Id=sa;Password=Hunter22pass;"', "Hunter22pass"),
    ('SECRET_KEY = "k9Xq2LmW8vT4pR7z"', "k9Xq2LmW8vT4pR7z"),
    ('signing_key = "k9Xq2LmW8vT4pR7z"', "k9Xq2LmW8vT4pR7z"),
    ('ENCRYPTION_KEY = "k9Xq2LmW8vT4pR7z"', "k9Xq2LmW8vT4pR7z"),
    ('SECRET_KEY = "django-insecure-8x$k2!q@z#w9&v^r*3m(u)p_l=o+n-j7h6g5f4d"', "8x$k2!q@z#w9"),
    ('password: str = "Hunter22pass"', "Hunter22pass"),
    ('api_key: Optional[str] = "k9Xq2LmW8vT4pR7z"', "k9Xq2LmW8vT4pR7z"),
    ('password := "Hunter22pass"', "Hunter22pass"),
    ('apiToken := "k9Xq2LmW8vT4pR7z"', "k9Xq2LmW8vT4pR7z"),
    ("$config = ['password' => 'Hunter22pass'];", "Hunter22pass"),
    ("{ :password => 'Hunter22pass' }", "Hunter22pass"),
    ('password = b"Hunter22pass"', "Hunter22pass"),
    ('api_key = f"k9Xq2LmW8vT4pR7z"', "k9Xq2LmW8vT4pR7z"),
    ('password = """Hunter22pass"""', "Hunter22pass"),
    ("database:\n  password: hunter2pass\n", "hunter2pass"),
    ("[db]\npassword = Hunter22pass\n", "Hunter22pass"),
    ("db_password=Hunter22pass", "Hunter22pass"),
    ("environment:\n  - POSTGRES_PASSWORD=Hunter22pass\n", "Hunter22pass"),
    ("environment:\n  POSTGRES_PASSWORD: Hunter22pass\n", "Hunter22pass"),
    ("ENV DB_PASSWORD=Hunter22pass", "Hunter22pass"),
    ("ENV DB_PASSWORD Hunter22pass", "Hunter22pass"),
    ("[default]\naws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYzzzzKEY9\n", "wJalrXUtnFEMI/K7MDENG"),
    ("spring.datasource.password=Hunter22pass", "Hunter22pass"),
    ("        env:\n          API_TOKEN: k9Xq2LmW8vT4pR7z", "k9Xq2LmW8vT4pR7z"),
    ("//registry.npmjs.org/:_authToken=npm_" + "Ab1Cd2Ef3Gh4Ij5Kl6Mn7Op8Qr9St0Uv1W", "Ab1Cd2Ef3Gh4Ij5Kl6Mn7Op8Qr9St0Uv1W"),
    ("npm token: npm_" + "Ab1Cd2Ef3Gh4Ij5Kl6Mn7Op8Qr9St0Uv1W", "Ab1Cd2Ef3Gh4Ij5Kl6Mn7Op8Qr9St0Uv1W"),
    ("GITLAB_CI=glpat-" + "Ab1Cd2Ef3Gh4Ij5Kl6Mn", "Ab1Cd2Ef3Gh4Ij5Kl6Mn"),
    ("login(hf_" + "Ab1Cd2Ef3Gh4Ij5Kl6Mn7Op8Qr9St0Uv1)", "Ab1Cd2Ef3Gh4Ij5Kl6Mn7Op8Qr9St0Uv1"),
    ("twine upload -p pypi-AgEIcHlwaS5vcmc" + "CJDAwMDAwMDAwLTAwMDAtMDAwMC0wMDAwLTAwMDAwMDAw", "CJDAwMDAwMDAwLTAwMDAtMDAw"),
    ("sg = SendGridAPIClient(SG." + "Ab1Cd2Ef3Gh4Ij5Kl6Mn7O.Ab1Cd2Ef3Gh4Ij5Kl6Mn7Op8Qr9St0Uv1Wx2Yz3Ab4C)", "Ab1Cd2Ef3Gh4Ij5Kl6Mn7O"),
    ("curl -u admin:Hunter22pass https://api.example.com", "Hunter22pass"),
    ("curl --user 'admin:Hunter22pass' https://api.example.com", "Hunter22pass"),
    ("mysql -uroot -pHunter22pass shop < dump.sql", "Hunter22pass"),
    ("mysqldump --password=Hunter22pass shop", "Hunter22pass"),
    ("psql --password 'Hunter22pass'", "Hunter22pass"),
    ("gh release upload --token k9Xq2LmW8vT4pR7z v1", "k9Xq2LmW8vT4pR7z"),
    ("sshpass -p Hunter22pass ssh deploy@host", "Hunter22pass"),
    ("docker login -u bot -p Hunter22pass registry.example.com", "Hunter22pass"),
])
def test_more_credential_shapes_and_assignment_syntaxes_are_masked(text, value):
    masked, found = mask_secrets(text)
    assert found and value not in masked, masked
    assert len(masked) == len(text) and masked.count("\n") == text.count("\n")


@pytest.mark.parametrize("line", [
    'primary_key = "id"',
    'sort_key="name"',
    'cache_key = f"user:{user_id}:profile"',
    'foreign_key = "orders.customer_id"',
    'partition_key: str = "tenant_id"',
    'SESSION_KEY = "_auth_user_id"',
    "password: SecretStr",
    "password: Optional[str] = None",
    "    password=DB_PASSWORD",
    "password = None",
    "token: ${{ secrets.GITHUB_TOKEN }}",
    "password: ${DB_PASSWORD}",
    "api_key = os.environ['API_KEY']",
    "secret_key = settings.SECRET_KEY",
    'Password = "Password"',
    "User Id=sa;Password=${DB_PASSWORD};",
    "token = _SEND_MESSAGE_TOKEN",                         # grpc: a constant
    "_OpenProcessToken = windll.advapi32.OpenProcessToken",  # a dotted name
    "password = password1",                                # a variable
    "jsonnet_token = r'[^\\W\\d]\\w*'",                      # a raw string is a pattern
    'mask_token: Union[str, AddedToken] = "[MASK]"',       # a tokenizer's special token
    "TOKEN_QUERY = 0x0008",
    'elif token == "#bygroup":',
    'conn.execute(sql, key="abc123")',
    'PASSWORD="$DB_PASS"',                                # a shell variable
    "echo $PW | docker login -u bot --password-stdin reg",
    'mysql --password="$MYSQL_PWD" shop',
    "curl -u $USER:$PASS https://api.example.com",
    "gh api --token ${{ secrets.GITHUB_TOKEN }}",
    "docker run -p 8080:80 nginx",
    "mysql -p shop",
    "git push --token none",
    "tool --secret-file /run/secrets/key",
    "glob.glob(pattern)",
    # composer: a literal that ends in 'token: ' or 'token=' joined to code; the quote after
    # the colon closes the literal, so what follows it is no value
    "$headers[] = 'PRIVATE-TOKEN: '.$auth['username'];",
    "$fileUrl .= (false === strpos($fileUrl, '?') ? '?' : '&') . 'access_token='.$options['gitlab-token'];",
    # composer's patterns for a URL with a password, sphinx's lock file, a test's made-up name
    "if (Preg::isMatchStrictGroups('{^(?:composer|origin)\\s+https?://(.+):(.+)@([^/]+)}im', $output, $match)) {",
    "Preg::isMatch('{^(?P<proto>ssh|https?)://(?:(?P<user>[^:@]+)(?::(?P<pass>[^:@]+))?@)?(?P<host>[^/]+)}mi', $url, $m)",
    '"minipass": "^7.1.2",',
    'pattern="NonExistentPatternThatShouldNotBeFound12345",',
    # nvm's tests, Alamofire's tests and docs, a composer test: a command's output, a Swift
    # interpolation, an anchor's path and a relative path
    'ORIG_PWD="$(pwd)"',
    'TestCredential(accessToken: "a\\(refreshCount)",',
    '<a name="//apple_ref/swift/Element/secondsSince1970" class="dashAnchor"></a>',
    '"PoP\\\\Base36Definitions\\\\": "layers/SiteBuilder/packages/definitions-base36/src",',
])
def test_new_assignment_rules_leave_names_types_and_references_alone(line):
    assert find_secrets(line) == [] and mask_secrets(line)[0] == line


def test_a_literal_closed_before_a_credential_name_does_not_hide_the_next_value():
    line = "log('it\\'s set'); $password = 'Hunter22secret'; $t = \"a \\\" b\"; $token = \"k9Xq2LmW1\";"
    assert [line[f.start:f.end] for f in find_secrets(line)] == ["Hunter22secret", "k9Xq2LmW1"]


def test_a_session_cut_under_other_masking_rules_is_recut_by_the_next_index(tmp_path, monkeypatch):
    """A unit's hash follows its masked text. Cut under rules that masked more, it read as
    changed on every query after the rules changed, and an index of the unchanged file kept it
    so: re-indexing, the remedy the manifest names, did nothing until the rules' version is
    recorded and compared."""
    from loom_nb.index import indexer

    php = "<?php\nfunction headers(array $auth): array\n{\n    return ['PRIVATE-TOKEN: '.$auth['username']];\n}\n"
    (tmp_path / "ws").mkdir()
    (tmp_path / "ws" / "auth.php").write_text(php)
    monkeypatch.setattr(indexer, "mask_file", lambda path, language, text: (text.replace(".$auth[", "*******"), []))
    monkeypatch.setattr(indexer, "SECRETS_VERSION", indexer.SECRETS_VERSION - 1)
    loom = Loom(tmp_path / "session", embedder=HashingEmbedder())
    loom.index(tmp_path / "ws", progress=False, wait=True)
    assert loom.query("PRIVATE-TOKEN header", budget=2000).packed.stale_files() == ["auth.php"]
    monkeypatch.undo()  # today's rules, and their version
    again = loom.index(tmp_path / "ws", progress=False, wait=True)
    assert again.files_indexed == 1 and loom.graph.metadata["workspace"]["secrets_version"] == indexer.SECRETS_VERSION
    result = loom.query("PRIVATE-TOKEN header", budget=2000)
    assert result.packed.stale_files() == [] and "'PRIVATE-TOKEN: '.$auth['username']" in result.prompt
    assert loom.index(tmp_path / "ws", progress=False, wait=True).files_indexed == 0  # recorded: no second re-cut


def test_code_joined_to_a_token_literal_is_indexed_unmasked_and_parses(tmp_path):
    """Masking what only looked like a value broke the PHP around it: the outline then reported
    a parse error and cut the file's units from a partial tree."""
    php = ("<?php\nclass AuthHelper\n{\n    public function headers(array $auth): array\n    {\n"
           "        $headers = [];\n        $headers[] = 'PRIVATE-TOKEN: '.$auth['username'];\n"
           "        return $headers;\n    }\n\n    public function other(): int\n    {\n        return 1;\n    }\n}\n")
    (tmp_path / "ws").mkdir()
    (tmp_path / "ws" / "AuthHelper.php").write_text(php)
    loom = Loom(tmp_path / "session", embedder=HashingEmbedder())
    report = loom.index(tmp_path / "ws", progress=False, wait=True)
    assert report.parse_errors == 0 and report.secrets == []
    (text,) = [loom.text(n.id) for n in loom.graph.content_nodes() if n.title == "AuthHelper.php:2-15 AuthHelper"]
    assert "'PRIVATE-TOKEN: '.$auth['username'];" in text
