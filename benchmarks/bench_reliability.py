"""Issue 13's probe, rerun: crashes, concurrent writers, hostile folders, forged evidence, hangs.

    .venv/bin/python benchmarks/bench_reliability.py [--kills 200] [--rounds 10] [--mutations 2500]
                                                    [--json benchmarks/last_reliability_run.json]

Every row counts failures; the bar is 0 in each.

1. kill -9 during save, add and index (a forked writer killed at a random moment, then the
   folder is opened and every node's text is checked against its sha256);
2. two writers at once, ten rounds: through ``Loom.editing`` (what the CLI does) nothing may
   be lost; through plain open/add/save each save either lands or is refused with
   ``SessionConflictError`` — an acknowledged save may never vanish;
3. mutated graph.json files (values swapped for odd ones, keys dropped, lists cut): open
   and query may raise ``LoomError`` and nothing else;
4. crafted session folders that try to read a file outside their workspace;
5. node bodies that try to forge prompt structure (parsed back from the prompt);
6. Ollama faults against the stand-in server: no call may outlive its configured timeout;
7. refreshes of a workspace while another thread queries it (a chat's background indexer):
   no exception on either thread, and the last refresh's units are found by their names.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

from _report import table  # noqa: E402
from loom_nb import HashingEmbedder, Loom, LoomError  # noqa: E402
from loom_nb.core.errors import SessionConflictError  # noqa: E402
from loom_nb.core.graph import sha256_text  # noqa: E402
from loom_nb.core.store import GRAPH_FILE  # noqa: E402


def open_session(folder) -> Loom:
    return Loom.open(folder, embedder=HashingEmbedder())


def check_folder(folder) -> tuple[bool, int]:
    """(opens, nodes serving text that differs from their sha256)."""
    try:
        loom = Loom.open(folder, embedder=HashingEmbedder(), create=False)
    except LoomError:
        return False, 0
    wrong = 0
    for node in loom.graph.content_nodes():
        try:
            text = loom.graph.text(node.id)
        except LoomError:
            continue
        wrong += sha256_text(text) != node.sha256
    return True, wrong


# -- 1. kill -9 ------------------------------------------------------------------------------


def kills(count: int, seed: int) -> dict:
    rng = random.Random(seed)
    tmp = Path(tempfile.mkdtemp(prefix="loom-kills-"))
    folder, work = tmp / "s", tmp / "work"
    work.mkdir()
    for i in range(8):
        (work / f"m{i}.py").write_text(f"def f{i}():\n    return {i}\n")
    first = open_session(folder)
    first.add("the first committed note", split=False)
    first.save()
    warm = open_session(tmp / "warm-up")  # parse grammars and readability tables once, before forking
    warm.index(work, progress=False, wait=True)
    warm.add("warm up the classifier")
    unopenable = wrong = 0
    started = time.perf_counter()
    for round_ in range(count):
        pid = os.fork()
        if pid == 0:  # the child writes until it is killed
            try:
                for i in range(10_000):
                    with Loom.editing(folder, embedder=HashingEmbedder()) as loom:
                        loom.add(f"round {round_} note {i} password=p{i} " + "words " * rng.randrange(1, 80), split=False)
                        if i % 3 == 0:
                            (work / f"m{i % 8}.py").write_text(f"def g{i}():\n    return {round_}\n")
                            loom.index(work, progress=False, wait=True)
            finally:
                os._exit(0)
        time.sleep(rng.uniform(0.01, 0.3))
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        opens, bad = check_folder(folder)
        unopenable += not opens
        wrong += bad
    nodes = len(open_session(folder).graph.content_vectors)
    return {"kills": count, "unopenable": unopenable, "wrong_texts": wrong, "nodes_at_end": nodes,
            "seconds": time.perf_counter() - started}


# -- 2. two writers --------------------------------------------------------------------------


def _writer(folder: Path, round_: int, writer: int, adds: int, locked: bool, pipe: int) -> None:
    """A forked writer: add ``adds`` notes (each under the session lock, or as open-add-save
    when ``locked`` is false), report the acknowledged ones on ``pipe``, and exit."""
    acked, code = [], 0
    try:
        for i in range(adds):
            text = f"round {round_} writer {writer} note {i}"
            try:
                if locked:
                    with Loom.editing(folder, embedder=HashingEmbedder()) as loom:
                        loom.add(text, split=False)
                else:
                    loom = open_session(folder)
                    loom.add(text, split=False)
                    loom.save()
                acked.append(text)
            except SessionConflictError:
                pass
    except BaseException:
        code = 1
    os.write(pipe, (json.dumps({"acked": acked, "code": code}) + "\n").encode())
    os._exit(0)


def _reap(children: list[int], seconds: float = 120) -> None:
    """Wait for each child; a stuck one is killed after ``seconds`` (and counts as died, since
    it sent no report)."""
    for pid in children:
        deadline = time.monotonic() + seconds
        while not os.waitpid(pid, os.WNOHANG)[0]:
            if time.monotonic() > deadline:
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
                break
            time.sleep(0.02)


def two_writers(rounds: int, adds: int = 8) -> dict:
    lost = unopenable = wrong = refused = died = 0
    for round_ in range(rounds):
        for locked in (True, False):
            folder = Path(tempfile.mkdtemp(prefix="loom-writers-")) / "s"
            open_session(folder).save()
            read, write = os.pipe()
            children = []
            for writer in range(2):
                pid = os.fork()
                if pid == 0:
                    os.close(read)
                    _writer(folder, round_, writer, adds, locked, write)
                children.append(pid)
            os.close(write)
            _reap(children)
            with os.fdopen(read) as pipe:
                reports = [json.loads(line) for line in pipe if line.strip()]
            died += sum(r["code"] for r in reports) + (2 - len(reports))
            acked = [t for r in reports for t in r["acked"]]
            refused += 2 * adds - len(acked)
            opens, bad = check_folder(folder)
            unopenable += not opens
            wrong += bad
            if opens:
                loom = open_session(folder)
                present = {loom.text(n.id) for n in loom.graph.content_nodes()}
                lost += sum(t not in present for t in acked)
                if locked:
                    lost += 2 * adds - len(present)  # with the lock every add must land
    return {"rounds": rounds, "lost_updates": lost, "unopenable": unopenable, "wrong_texts": wrong,
            "writers_died": died, "refused_unlocked_saves": refused}


# -- 3. mutated graph.json ---------------------------------------------------------------------


def mutations(count: int, seed: int) -> dict:
    from fuzzing import mutate_document

    rng = random.Random(seed)
    folder = Path(tempfile.mkdtemp(prefix="loom-mutate-")) / "s"
    loom = open_session(folder)
    for text in ("OAuth tokens expire hourly", "the refresh token is rotated", "a log line: 500 at /login",
                 "def refresh(token):\n    return token.renew()\n"):
        loom.add(text, split=False)
    loom.save()
    base = json.loads((folder / GRAPH_FILE).read_text())
    outside, loom_errors, examples = 0, 0, {}
    started = time.perf_counter()
    for _ in range(count):
        doc = mutate_document(base, rng)
        (folder / GRAPH_FILE).write_text(json.dumps(doc))
        try:
            opened = Loom.open(folder, embedder=HashingEmbedder(), create=False)
            opened.query("token expiry", budget=500)
        except LoomError:
            loom_errors += 1
        except Exception as exc:  # noqa: BLE001 - this is what the row counts
            outside += 1
            examples.setdefault(type(exc).__name__, str(exc)[:160])
    return {"files": count, "outside_loom_error": outside, "loom_errors": loom_errors, "examples": examples,
            "seconds": time.perf_counter() - started}


# -- 4. outside bytes ------------------------------------------------------------------------


def outside_bytes() -> dict:
    """Four crafted folders: root "/", root "..", an absolute reference, a symlink swapped in."""
    from fuzzing import retarget_as_reference

    tmp = Path(tempfile.mkdtemp(prefix="loom-escape-"))
    secret = tmp / "secret.txt"
    secret.write_text("root:x:0:0:service configuration\n")
    text = secret.read_text().rstrip("\n")
    leaks = variants = 0
    for root, file in (("/", str(secret).lstrip("/")), ("..", "secret.txt"), ("work", str(secret)), ("work", "link.txt")):
        variants += 1
        folder = tmp / f"s{variants}"
        work = folder / "work"
        work.mkdir(parents=True)
        (work / "link.txt").symlink_to(secret)
        loom = open_session(folder)
        loom.add("notes about the service configuration", split=False)
        loom.save()
        retarget_as_reference(folder, root, file, sha256_text(text))
        try:
            prompt = open_session(folder).query("service configuration", budget=4000).prompt
        except LoomError:
            continue
        leaks += "root:x:0:0" in prompt
    return {"variants": variants, "prompts_with_outside_bytes": leaks}


# -- 5. forged structure ----------------------------------------------------------------------


def probe_forgery() -> dict:
    """Each payload of the issue (and variants) as a whole body, a summary and a chunk; the
    prompt is parsed back by the strict parser of tests/test_prompt_forgery.py."""
    import test_prompt_forgery as forgery

    forged = payloads = 0
    for payload in forgery.PAYLOADS.values():
        for graph in (forgery.whole_graph(payload), forgery.large_graph(payload, summary=True), forgery.large_graph(payload, summary=False)):
            payloads += 1
            packed = forgery.run(graph, 2000)
            parsed = forgery.parse_prompt(forgery.prompt_of(packed))
            forged += len(parsed.stray) + sum(len(forgery.unescaped_structure(body)) for _, body in parsed.blocks)
            forged += abs(len(parsed.manifest) - len(packed.manifest.splitlines()))
            forged += abs(len(parsed.blocks) - len(packed.blocks)) + (parsed.question != forgery.QUERY)
    return {"payloads": payloads, "forged_lines": forged}


# -- 6. hangs ---------------------------------------------------------------------------------


def probe_hangs() -> dict:
    """Every fault of tests/ollama_standin.FaultyOllama, through a chat turn with short limits
    (connect 0.5 s, first token 0.6 s, between tokens 0.3 s); a call "hangs" when its error
    comes later than the limit that applies plus 1 s, or never (the stand-in stalls 5 s)."""
    from ollama_standin import FAULTS, FaultyOllama

    from loom_nb import LoomConfig
    from loom_nb.chat.session import Session

    limits = dict(ollama_connect_timeout=0.5, ollama_first_token_timeout=0.6, ollama_idle_timeout=0.3)
    over = faults = 0
    slowest = 0.0
    cases = [{"faults": {0: kind}} for kind in FAULTS if kind != "slow_first"] + [{"stall_show": True}]
    for fault in cases:
        faults += 1
        with FaultyOllama(answers=["An answer in a few words."], stall_seconds=5, **fault) as server:
            loom = Loom(embedder=HashingEmbedder(), config=LoomConfig(**limits))
            loom.add("OAuth refresh tokens rotate on every use.")
            session = Session(loom, model="llama3.2", host=server.host, background=False)
            started = time.perf_counter()
            try:
                session.send("Why does the refresh fail?")
            except LoomError:
                pass
            took = time.perf_counter() - started
        slowest = max(slowest, took)
        over += took > limits["ollama_first_token_timeout"] + limits["ollama_connect_timeout"] + 1.0
    return {"faults": faults, "over_timeout": over, "slowest_seconds": slowest}


# -- 7. refreshes beside queries ----------------------------------------------------------------


def probe_refresh_beside_queries(refreshes: int = 40) -> dict:
    """A refresh once compacted the lexical index outside the graph's lock; a query on another
    thread compacting it at the same moment left its tables of different sizes (IndexError on
    either thread, about once in a dozen refreshes of this workspace)."""
    import threading

    ws = Path(tempfile.mkdtemp(prefix="loom-refresh-")) / "ws"
    ws.mkdir()
    for i in range(60):
        (ws / f"m{i}.py").write_text("\n\n".join(f"def f{i}_{j}(x):\n    return x + {j}  # word{i} thing{j}" for j in range(20)))
    loom = Loom(embedder=HashingEmbedder(64))
    loom.index(ws, progress=False, wait=True)
    stop, query_errors, index_errors, queries = threading.Event(), [], [], [0]

    def ask():
        while not stop.is_set():
            try:
                loom.query("word3 thing7 return", budget=500)
                queries[0] += 1
            except Exception as exc:  # counted, not raised: the thread must go on asking
                query_errors.append(repr(exc))

    asker = threading.Thread(target=ask, daemon=True)
    asker.start()
    last = 0
    for last in range(refreshes):
        for i in range(0, 60, 3):
            (ws / f"m{i}.py").write_text("\n\n".join(
                f"def g{last}_{i}_{j}(y):\n    return y * {j}  # word{i} other{last}" for j in range(20 + last % 5)))
        try:
            loom.index(ws, progress=False, wait=True)
        except Exception as exc:
            index_errors.append(repr(exc))
            break
    stop.set()
    asker.join(30)
    found = f"g{last}_3_7" in loom.query(f"g{last}_3_7", budget=500).prompt
    return {"refreshes": last + 1, "queries": queries[0], "index_errors": len(index_errors),
            "query_errors": len(query_errors), "not_found": int(not found), "examples": (index_errors + query_errors)[:2]}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kills", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--mutations", type=int, default=2500)
    parser.add_argument("--seed", type=int, default=13)
    parser.add_argument("--json", help="write the figures here")
    args = parser.parse_args()
    os.environ.setdefault("LOOM_NB_CONFIG_DIR", tempfile.mkdtemp(prefix="loom-nb-config-"))
    results = {
        "kills": kills(args.kills, args.seed),
        "writers": two_writers(args.rounds),
        "mutations": mutations(args.mutations, args.seed),
        "escape": outside_bytes(),
    }
    for extra in ("forgery", "hangs", "refresh_beside_queries"):
        probe = globals().get(f"probe_{extra}")
        if probe is not None:
            results[extra] = probe()
    k, w, m, e = results["kills"], results["writers"], results["mutations"], results["escape"]
    rows = [
        [f"kill -9 during save/add/index ({k['kills']})", "sessions serving wrong text", k["wrong_texts"]],
        ["", "unopenable after a kill", k["unopenable"]],
        [f"two writers, {w['rounds']} rounds (locked and not)", "lost updates", w["lost_updates"]],
        ["", "unopenable sessions", w["unopenable"]],
        ["", "writers that died", w["writers_died"]],
        [f"mutated graph.json ({m['files']})", "exceptions outside LoomError", m["outside_loom_error"]],
        [f"crafted folders ({e['variants']})", "prompts with outside bytes", e["prompts_with_outside_bytes"]],
    ]
    if "forgery" in results:
        rows.append([f"forging bodies ({results['forgery']['payloads']})", "forged structure lines", results["forgery"]["forged_lines"]])
    if "hangs" in results:
        rows.append([f"Ollama faults ({results['hangs']['faults']})", "calls over their timeout", results["hangs"]["over_timeout"]])
    if "refresh_beside_queries" in results:
        r = results["refresh_beside_queries"]
        rows.append([f"refreshes beside queries ({r['refreshes']}, {r['queries']} queries)", "exceptions on either thread",
                     r["index_errors"] + r["query_errors"]])
        rows.append(["", "last refresh's units not found", r["not_found"]])
    table("Issue 13: failures per probe (the bar is 0 everywhere)", ["probe", "what is counted", "count"], rows,
          note=f"unlocked writers: {w['refused_unlocked_saves']} saves refused with SessionConflictError (not lost: never acknowledged); "
               f"mutations: {m['loom_errors']} LoomError, {m['seconds']:.0f} s; kills: {k['nodes_at_end']} nodes at the end, {k['seconds']:.0f} s")
    if m["examples"]:
        print("outside LoomError:", m["examples"])
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1) + "\n")
    failures = k["wrong_texts"] + k["unopenable"] + w["lost_updates"] + w["unopenable"] + m["outside_loom_error"] + e["prompts_with_outside_bytes"]
    failures += results.get("forgery", {}).get("forged_lines", 0) + results.get("hangs", {}).get("over_timeout", 0)
    r = results.get("refresh_beside_queries", {})
    failures += r.get("index_errors", 0) + r.get("query_errors", 0) + r.get("not_found", 0)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
