"""A chat turn as a transaction: a turn that fails leaves the graph as it found it.

Before issue 13 a turn that failed after planning (a stalled server, a broken stream, an
exception in ``on_token``) removed its input node and nothing else: the graph clock had
moved on, the nodes it loaded were marked accessed, and a summary node written while
planning stayed; the next save kept all of it. :class:`GraphCheckpoint` notes what a turn
can change before it starts and puts it back when the turn fails:

- content nodes added since (the message, its split parts, summary nodes), and with
  them the concepts only they linked to;
- the last access turn of every node that was there before (loading marks it);
- the graph clock, the id counters and the engine's last query (saved as its scores).

It only reads and writes what a turn writes, so taking one costs a copy of one integer
column (0.4 MB for 50k nodes), not a copy of the graph.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np


@dataclass
class GraphCheckpoint:
    """What a chat turn may change in a :class:`~loom_nb.core.engine.Loom`, as it was before."""

    loom: Any
    rows: int
    """Content nodes before the turn: the turn only appends after them."""
    clock: int
    next_ids: dict[str, int]
    access: np.ndarray
    """The last access turn of each of those ``rows`` content nodes."""
    last_query: Any

    @classmethod
    def take(cls, loom) -> "GraphCheckpoint":
        graph = loom.graph
        return cls(loom, len(graph.content_vectors), graph.turn, graph.next_ids,
                   graph.access_turns(), getattr(loom, "_last_query", None))

    def rollback(self) -> None:
        """Put the graph back as it was when the checkpoint was taken."""
        graph = self.loom.graph
        added = list(graph.content_vectors.ids[self.rows:])
        if added:  # newest first: each is the last row, so no kept row moves
            graph.remove_many(added[::-1])
        graph.rewind(self.clock, self.next_ids, self.access[: self.rows])
        self.loom._last_query = self.last_query
