"""The decision graph: goals, decisions, options, actions and what came of them (seed 003).

A chat forgets *why*. The decision graph keeps the reasoning of a session as typed nodes and
typed edges, and :meth:`DecisionGraph.render` turns the part that matters now (active goals,
recent decisions, what was rejected and why, open revisits) into a block that fits the
decision zone of a turn's window. It is stored as ``decisions.json`` in the session folder.

Examples
--------
>>> d = DecisionGraph()
>>> goal = d.add("goal", "Fix the token refresh failure")
>>> jwt = d.add("option", "Rotate refresh tokens on every use")
>>> keep = d.add("option", "Keep long-lived refresh tokens")
>>> choice = d.add("decision", "Rotate refresh tokens", confidence=80)
>>> d.link(goal, choice, "leads_to")
>>> d.link(choice, jwt, "chosen", rationale="limits replay")
>>> d.link(choice, keep, "rejected", rationale="a leaked token lives for weeks")
>>> print(d.render(200))
## Active goals
- [d1] Fix the token refresh failure
  - led to: Rotate refresh tokens
## Recent decisions
- [d4] Rotate refresh tokens (confidence 80%)
  - chose: Rotate refresh tokens on every use (limits replay)
  - rejected: Keep long-lived refresh tokens (a leaked token lives for weeks)
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import networkx as nx

from ..core.display import TABLE_STYLE, Displayable, html_table
from ..core.errors import LoomError, SessionFormatError, UnknownNodeError
from ..core.secrets import mask_secrets
from ..core.store import atomic_write_text
from ..core.tokens import count_tokens

NODE_TYPES: tuple[str, ...] = ("goal", "decision", "option", "action", "outcome", "observation", "revisit")
EDGE_TYPES: tuple[str, ...] = ("leads_to", "chosen", "rejected", "requires", "blocks", "enables", "supersedes")
STATUSES: tuple[str, ...] = ("active", "completed", "rejected", "stale")
DECISIONS_FILE = "decisions.json"
SCHEMA = "loom-nb.decisions/1"


@dataclass
class Decision:
    """One node of the decision graph."""

    id: str
    type: str
    title: str
    description: str = ""
    status: str = "active"
    confidence: int | None = None
    turn: int = 0
    """The chat turn it was recorded in (0: outside a chat)."""
    by: str = "user"
    """Who recorded it: ``user``, or ``model:NAME`` for a model's ``record_decision`` call."""


@dataclass
class DecisionEdge:
    source: str
    target: str
    type: str
    rationale: str = ""
    turn: int = 0


@dataclass
class DecisionGraph(Displayable):
    """Typed nodes and edges over a ``networkx.DiGraph``; see the module docstring."""

    nodes: dict[str, Decision] = field(default_factory=dict)
    edges: list[DecisionEdge] = field(default_factory=list)
    turn: int = 0
    """The current chat turn, stamped on what is recorded (the session advances it)."""

    # -- recording ----------------------------------------------------------------------------
    def add(self, type: str, title: str, *, description: str = "", status: str = "active",  # noqa: A002 - a public keyword; builtin type() is not used here
            confidence: int | None = None, by: str = "user") -> str:
        """Record a node and return its id (``d1``, ``d2``, …)."""
        if type not in NODE_TYPES:
            raise LoomError(f"decision node type must be one of {', '.join(NODE_TYPES)}; got {type!r}")
        if status not in STATUSES:
            raise LoomError(f"status must be one of {', '.join(STATUSES)}; got {status!r}")
        if not isinstance(title, str) or not title.strip():
            raise LoomError("a decision node needs a title")
        if confidence is not None and not 0 <= int(confidence) <= 100:
            raise LoomError(f"confidence is a percentage, 0-100; got {confidence}")
        node_id = f"d{len(self.nodes) + 1}"
        while node_id in self.nodes:  # ids stay unique even if a file was edited by hand
            node_id = f"d{int(node_id[1:]) + 1}"
        title, description = (mask_secrets(t)[0] for t in (title, description))  # stored, rendered into prompts
        self.nodes[node_id] = Decision(node_id, type, " ".join(title.split()), description.strip(), status,
                                       None if confidence is None else int(confidence), self.turn, str(by))
        return node_id

    def reject(self, node_id: str) -> None:
        """Mark a node rejected (say, one the model recorded and the user disagrees with): it is
        never put in a prompt again, and the views show it as rejected."""
        self.set_status(node_id, "rejected")

    def link(self, source: str, target: str, type: str, *, rationale: str = "") -> None:  # noqa: A002 - a public keyword; builtin type() is not used here
        """Record a typed edge. ``supersedes`` marks the older decision stale."""
        if type not in EDGE_TYPES:
            raise LoomError(f"decision edge type must be one of {', '.join(EDGE_TYPES)}; got {type!r}")
        for node_id in (source, target):
            if node_id not in self.nodes:
                raise UnknownNodeError(f"no decision node {node_id!r}")
        if source == target:
            raise LoomError(f"a decision cannot {type} itself ({source})")
        self.edges.append(DecisionEdge(source, target, type, mask_secrets(rationale)[0].strip(), self.turn))
        if type == "supersedes":
            self.nodes[target].status = "stale"
        elif type == "rejected":
            self.nodes[target].status = "rejected"

    def set_status(self, node_id: str, status: str) -> None:
        if status not in STATUSES:
            raise LoomError(f"status must be one of {', '.join(STATUSES)}; got {status!r}")
        self.node(node_id).status = status

    def node(self, node_id: str) -> Decision:
        try:
            return self.nodes[node_id]
        except KeyError:
            raise UnknownNodeError(f"no decision node {node_id!r}") from None

    # -- reading ------------------------------------------------------------------------------
    @property
    def nx(self) -> nx.MultiDiGraph:
        """The graph as networkx (node attribute ``data``; edge attributes ``type``, ``rationale``)."""
        g = nx.MultiDiGraph()
        for node in self.nodes.values():
            g.add_node(node.id, data=node, type=node.type)
        for e in self.edges:
            g.add_edge(e.source, e.target, type=e.type, rationale=e.rationale, turn=e.turn)
        return g

    def of_type(self, type: str, status: str | None = None) -> list[Decision]:  # noqa: A002 - a public keyword; builtin type() is not used here
        return [n for n in self.nodes.values() if n.type == type and (status is None or n.status == status)]

    def out_edges(self, node_id: str, type: str | None = None) -> list[DecisionEdge]:  # noqa: A002 - a public keyword; builtin type() is not used here
        return [e for e in self.edges if e.source == node_id and (type is None or e.type == type)]

    def __len__(self) -> int:
        return len(self.nodes)

    def _line(self, node: Decision) -> list[str]:
        conf = f" (confidence {node.confidence}%)" if node.confidence is not None else ""
        by = f" (recorded by the model, turn {node.turn})" if node.by.startswith("model") else ""
        lines = [f"- [{node.id}] {node.title}{conf}{by}"]
        for edge in self.out_edges(node.id):
            if edge.type != "rejected" and self.nodes[edge.target].status == "rejected":
                continue  # a rejected node is never put in a prompt, not even as where a goal led
            verb = {"chosen": "chose", "rejected": "rejected", "requires": "requires", "blocks": "blocks",
                    "enables": "enables", "supersedes": "replaces", "leads_to": "led to"}[edge.type]
            why = f" ({edge.rationale})" if edge.rationale else ""
            lines.append(f"  - {verb}: {self.nodes[edge.target].title}{why}")
        return lines

    def sections(self) -> list[tuple[str, list[list[str]]]]:
        """The rendered sections, most important first, items newest first within each."""
        newest = lambda nodes: sorted(nodes, key=lambda n: (n.turn, int(n.id[1:])), reverse=True)  # noqa: E731
        decided = [n for n in self.nodes.values() if n.type == "decision" and n.status not in ("stale", "rejected")]
        return [
            ("Active goals", [self._line(n) for n in newest(self.of_type("goal", "active"))]),  # a rejected one is never shown
            ("Recent decisions", [self._line(n) for n in newest(decided)]),
            ("To revisit", [self._line(n) for n in newest(self.of_type("revisit", "active"))]),
            ("Observations and outcomes", [self._line(n) for n in newest(
                [n for n in self.of_type("observation") + self.of_type("outcome") + self.of_type("action")
                 if n.status != "rejected"])]),
        ]

    def render(self, max_tokens: int) -> str:
        """The decision context for a prompt, within ``max_tokens`` (cl100k).

        Whole items are kept, never cut mid-line: sections in order (goals, decisions,
        revisits, observations), newest items first, until the next item would not fit.
        """
        out: list[str] = []
        used = 0
        for heading, items in self.sections():
            if not items:
                continue
            head_cost = count_tokens(f"## {heading}\n")
            added_heading = False
            for item in items:
                text = "\n".join(item) + "\n"
                cost = count_tokens(text) + (0 if added_heading else head_cost)
                if used + cost > max_tokens:
                    break
                if not added_heading:
                    out.append(f"## {heading}")
                    added_heading = True
                out.extend(item)
                used += cost
        return "\n".join(out)

    # -- storage ------------------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        return {"schema": SCHEMA, "turn": self.turn, "nodes": [asdict(n) for n in self.nodes.values()],
                "edges": [asdict(e) for e in self.edges]}

    @classmethod
    def from_dict(cls, data: Any, where: str = DECISIONS_FILE) -> "DecisionGraph":
        if not isinstance(data, dict) or data.get("schema") != SCHEMA:
            raise SessionFormatError(where, f"not a loom-nb decision graph (expected schema {SCHEMA!r})")
        try:
            graph = cls(turn=int(data.get("turn", 0)))
            for n in data["nodes"]:
                node = Decision(**n)
                node.title, node.description = mask_secrets(node.title)[0], mask_secrets(node.description)[0]  # a file from before
                if node.type not in NODE_TYPES or node.status not in STATUSES:
                    raise ValueError(f"node {node.id}: type {node.type!r} / status {node.status!r}")
                graph.nodes[node.id] = node
            for e in data["edges"]:
                edge = DecisionEdge(**e)
                edge.rationale = mask_secrets(edge.rationale)[0]
                if edge.type not in EDGE_TYPES or edge.source not in graph.nodes or edge.target not in graph.nodes:
                    raise ValueError(f"edge {edge.source}->{edge.target}: type {edge.type!r} or unknown end")
                graph.edges.append(edge)
        except (KeyError, TypeError, ValueError) as exc:
            raise SessionFormatError(where, f"malformed decision graph: {exc}") from None
        return graph

    def restore(self, data: dict[str, Any]) -> None:
        """Put back, in place, the state :meth:`to_dict` returned (a failed chat turn's rollback:
        whoever holds this object keeps holding the restored graph)."""
        before = type(self).from_dict(data)
        self.nodes, self.edges, self.turn = before.nodes, before.edges, before.turn

    def save(self, folder: str | Path) -> Path:
        path = Path(folder) / DECISIONS_FILE
        atomic_write_text(path, json.dumps(self.to_dict(), indent=1))
        return path

    @classmethod
    def load(cls, folder: str | Path) -> "DecisionGraph":
        """The decision graph stored in ``folder``, or an empty one if there is none."""
        path = Path(folder) / DECISIONS_FILE
        if not path.exists():
            return cls()
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise SessionFormatError(path, f"not valid JSON ({exc})") from None
        return cls.from_dict(data, str(path))

    # -- display ------------------------------------------------------------------------------
    def __str__(self) -> str:
        if not self.nodes:
            return "DecisionGraph: empty"
        rows = [f"DecisionGraph: {len(self.nodes)} nodes, {len(self.edges)} edges"]
        for n in self.nodes.values():
            rows.append(f"  {n.id:<4} {n.type:<11} {n.status:<9} {n.title}" + (f"  [by {n.by}, turn {n.turn}]" if n.by != "user" else ""))
        for e in self.edges:
            rows.append(f"  {e.source} -{e.type}-> {e.target}" + (f"  ({e.rationale})" if e.rationale else ""))
        return "\n".join(rows)

    def __repr__(self) -> str:
        return f"<DecisionGraph: {len(self.nodes)} nodes, {len(self.edges)} edges>"

    def _repr_html_(self) -> str:
        nodes = html_table(["id", "type", "status", "title", "confidence", "turn", "recorded by"],
                           [[n.id, n.type, n.status, n.title, n.confidence, n.turn, n.by] for n in self.nodes.values()])
        edges = html_table(["from", "edge", "to", "rationale"], [[e.source, e.type, e.target, e.rationale] for e in self.edges])
        return (f"{TABLE_STYLE}<div class='loom-decisions'><b>Decision graph</b>: {len(self.nodes)} nodes, "
                f"{len(self.edges)} edges{nodes}{edges}</div>")

