"""Mutations of a valid graph.json, shared by the loader fuzz test and the reliability benchmark."""

from __future__ import annotations

import copy
import random
from typing import Any

ODD_VALUES: list[Any] = [
    None, "x", "", -1, 0, 1, 2**63, -(2**63), 1e308, float("-0.0"), True, [], {}, [None], ["x"], [[1, 2]],
    {"file": "../../etc/passwd", "rows": 1}, "n1", "../x", "embeddings/content.g9.npy", [0, -1], "\ud800",
]


def _paths(value: Any, prefix: tuple = ()) -> list[tuple]:
    found = [prefix]
    if isinstance(value, dict):
        for key, item in value.items():
            found += _paths(item, prefix + (key,))
    elif isinstance(value, list):
        for index, item in enumerate(value[:4]):
            found += _paths(item, prefix + (index,))
    return found


def mutate_document(doc: dict[str, Any], rng: random.Random, mutations: int | None = None) -> dict[str, Any]:
    """A copy of ``doc`` with 1-3 random changes: a value replaced by an odd one, a key
    dropped, a list shortened or lengthened. JSON-serialisable except for lone surrogates,
    which ``json.dumps`` escapes as ``\\ud800`` (what a broken writer would produce)."""
    doc = copy.deepcopy(doc)
    for _ in range(mutations or rng.randint(1, 3)):
        paths = [p for p in _paths(doc) if p]
        path = rng.choice(paths)
        parent = doc
        for key in path[:-1]:
            parent = parent[key]
        key = path[-1]
        action = rng.random()
        if action < 0.6:
            parent[key] = copy.deepcopy(rng.choice(ODD_VALUES))
        elif action < 0.75 and isinstance(parent, dict):
            del parent[key]
        elif isinstance(parent[key], list) and parent[key]:
            if rng.random() < 0.5:
                parent[key].pop()
            else:
                parent[key].append(copy.deepcopy(parent[key][0]))
        else:
            parent[key] = copy.deepcopy(rng.choice(ODD_VALUES))
    return doc


def retarget_as_reference(folder, root: str, file: str, sha256: str, lines: int = 1) -> None:
    """Rewrite a one-node session's graph.json as an attacker would ship it: the node made a
    file reference to ``file`` under the workspace ``root``. Shared by the escape tests and
    the reliability benchmark."""
    import json
    from pathlib import Path

    path = Path(folder) / "graph.json"
    doc = json.loads(path.read_text())
    doc["content"]["reference"] = [{"file": file, "lines": [1, lines], "signature": "", "sha256": sha256}]
    doc["content"]["type"] = ["file_reference"]
    doc["metadata"] = {"workspace": {"root": root, "commit": None, "files": {}}}
    path.write_text(json.dumps(doc))
