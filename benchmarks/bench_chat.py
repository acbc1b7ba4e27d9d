"""What a chat turn costs beyond the model: loom-nb's orchestration overhead per turn.

    .venv/bin/python benchmarks/bench_chat.py [--sizes 1000,10000,50000] [--turns 8]

Each turn runs through the real ``ollama`` client against the stand-in server
(``loom_nb.chat.replay.OllamaStandIn``), so the model costs nothing and what is measured is
loom-nb's own work: adding the message, splitting the window into zones, windowing and
summarising history, ranking and packing, serving callbacks, and writing the chat.

Part 1, synthetic graphs (the engine benchmark's generator, a hashing embedder for the
messages): per-turn overhead at 1k/10k/50k nodes. Part 2, the auth-debugging sample with
the default MiniLM embedder: overhead per turn, and the post-processing indexer's time per
answer (done on a background thread while the user reads).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import ollama  # noqa: E402

from _report import machine, peak_rss_mb, table  # noqa: E402
from bench_engine import DIM, build_graph  # noqa: E402
from loom_nb import Loom  # noqa: E402
from loom_nb.embed import HashingEmbedder  # noqa: E402
from loom_nb.chat.replay import OllamaStandIn, default_show  # noqa: E402
from loom_nb.chat.session import Session  # noqa: E402

QUESTIONS = [
    "Why does the retry after a timeout repeat work the worker already finished?",
    "Which handler switches to batch mode when the queue grows?",
    "What happened to the latency after the schema migration?",
    "Show the function that collects items with retries.",
    "How is the token cache invalidated after a lock timeout?",
    "Which config option controls the stream buffer size?",
    "Summarise what we found about the database index.",
    "What should we change first, and why?",
]
ANSWER = ("The worker keeps a request id so that a retry after a timeout does not repeat finished work; "
          "the handler switches to batch mode past the queue limit, trading latency for throughput. ") * 4


class SyntheticEmbedder(HashingEmbedder):
    """Hashing vectors in the synthetic graph's space (same id and dimension)."""

    def __init__(self):
        super().__init__(DIM)
        self.model_id = f"synthetic-{DIM}"


def run_turns(session: Session, turns: int) -> dict[str, float]:
    overhead, model, index = [], [], []
    original = session._index_answer

    def timed_index(turn, message):
        started = time.perf_counter()
        original(turn, message)
        index.append(time.perf_counter() - started)

    session._index_answer = timed_index
    for i in range(turns):
        turn = session.send(QUESTIONS[i % len(QUESTIONS)])
        in_model = sum(c.seconds for c in turn.calls)
        model.append(in_model)
        overhead.append(turn.seconds - in_model)
    session.wait()
    warm = overhead[1:] or overhead  # the first turn also loads the embedder
    return {
        "first_ms": overhead[0] * 1000, "median_ms": statistics.median(warm) * 1000, "max_ms": max(warm) * 1000,
        "stand_in_ms": statistics.median(model) * 1000, "index_ms": statistics.median(index) * 1000 if index else 0.0,
        "summaries": len(session.summaries),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000,10000,50000")
    parser.add_argument("--turns", type=int, default=8)
    parser.add_argument("--skip-minilm", action="store_true")
    args = parser.parse_args()
    print(machine())
    rows = []
    for n in (int(s) for s in args.sizes.split(",")):
        graph, _, _ = build_graph(n, seed=7)
        loom = Loom(embedder=SyntheticEmbedder(), graph=graph)
        with OllamaStandIn(answers=[ANSWER] * (4 * args.turns), show=default_show(num_ctx=8192)) as server:
            session = Session(loom, model="llama3.2", client=ollama.Client(host=server.host))
            r = run_turns(session, args.turns)
            session.close()
        rows.append([f"{n:,} nodes", r["first_ms"], r["median_ms"], r["max_ms"], r["index_ms"], r["stand_in_ms"], r["summaries"]])
    table("Orchestration overhead per chat turn (synthetic graphs, hashing embedder for messages)",
          ["graph", "turn 1 ms", "median ms", "max ms", "index answer ms", "stand-in model ms", "summaries"], rows,
          f"{args.turns} turns at num_ctx 8192; overhead = turn time - time inside ollama.chat; "
          "'index answer' runs on the background thread")

    if not args.skip_minilm:
        from loom_nb.demo import open_sample

        loom = open_sample("auth-debugging")
        with OllamaStandIn(answers=[ANSWER] * (4 * args.turns), show=default_show(num_ctx=4096)) as server:
            session = Session(loom, model="llama3.2", client=ollama.Client(host=server.host))
            r = run_turns(session, args.turns)
            session.close()
        table("Per chat turn on the auth-debugging sample, default MiniLM embedder",
              ["session", "turn 1 ms", "median ms", "max ms", "index answer ms", "stand-in model ms", "summaries"],
              [[f"auth-debugging ({loom.graph.counts()['content']} nodes after)", r["first_ms"], r["median_ms"],
                r["max_ms"], r["index_ms"], r["stand_in_ms"], r["summaries"]]],
              "turn 1 includes loading MiniLM; 'index answer' embeds the ~170-token answer and saves the session")
    print(f"\npeak RSS {peak_rss_mb():.0f} MB")


if __name__ == "__main__":
    main()
