"""Per-turn token accounting: what loom-nb estimated for each prompt against what Ollama
reported, the output, and the reserve, as a table and a plotly figure."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..core.display import TABLE_STYLE, Displayable, html_table
from ..core.errors import LoomError


@dataclass
class AccountingTable(Displayable):
    """Per-turn token accounting rows, with text and HTML views."""

    rows: list[dict[str, Any]]

    def __str__(self) -> str:
        if not self.rows:
            return "no turns yet"
        head = list(self.rows[0])
        cells = [[("-" if r[k] is None else f"{r[k]:,}" if isinstance(r[k], int) else str(r[k])) for k in head]
                 for r in self.rows]
        widths = [max(len(h), *(len(c[i]) for c in cells)) for i, h in enumerate(head)]
        lines = ["  ".join(h.rjust(w) for h, w in zip(head, widths))]
        lines += ["  ".join(c.rjust(w) for c, w in zip(row, widths)) for row in cells]
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        if not self.rows:
            return "<i>no turns yet</i>"
        return TABLE_STYLE + html_table(list(self.rows[0]), [["-" if v is None else v for v in r.values()] for r in self.rows])

    def to_frame(self):
        """The rows as a pandas DataFrame indexed by turn (needs pandas)."""
        try:
            import pandas as pd
        except ImportError as exc:
            raise LoomError("to_frame() needs pandas: pip install pandas") from exc
        return pd.DataFrame(self.rows).set_index("turn")


def accounting_figure(rows: list[dict[str, Any]]):
    """plotly: per turn, estimated and reported prompt tokens, output and reserved output."""
    import plotly.graph_objects as go

    turns = [f"turn {r['turn']}" for r in rows]
    fig = go.Figure()
    fig.add_bar(name="prompt, estimated (cl100k)", x=turns, y=[r["estimated prompt"] for r in rows])
    fig.add_bar(name="prompt, reported by Ollama", x=turns, y=[r["reported prompt"] or 0 for r in rows])
    fig.add_bar(name="output", x=turns, y=[r["output"] for r in rows])
    fig.add_scatter(name="reserved output", x=turns, y=[r["reserved output"] for r in rows], mode="markers+lines")
    if rows:
        fig.add_scatter(name="window (num_ctx)", x=turns, y=[r["window"] for r in rows], mode="lines",
                        line={"dash": "dot"})
    fig.update_layout(barmode="group", title="Token accounting per turn", yaxis_title="tokens",
                      height=380, margin={"t": 50, "b": 40, "l": 60, "r": 20})
    return fig
