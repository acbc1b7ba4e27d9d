"""Sliders for the signal weights, the relevance floor and the concept threshold.

Moving a slider re-ranks and repacks the query with the call a user makes
(:meth:`Loom.query`, on a copy of the session's config holding the sliders' weights) and
redraws the rows it moved; nothing in the session changes until you keep the settings
(``loom.graph.config = tuner.config()``, or the code "copy as LoomConfig" shows). The concept threshold slider
previews the merges and splits re-linking at it would make
(:meth:`Loom.preview_threshold`); its "apply threshold" button re-links the session
(:meth:`Loom.apply_threshold`).
"""

from __future__ import annotations

from ..core.display import Displayable

from dataclasses import fields, replace

from ..core.classify import asks_question
from ..core.config import SIGNALS
from ..core.errors import LoomError
from ..core.modes import MODE_NAMES


def _widgets():
    try:
        import ipywidgets as widgets
    except ImportError as exc:  # pragma: no cover - ipywidgets is a dependency
        raise LoomError("the sliders need ipywidgets: pip install ipywidgets") from exc
    return widgets


_MODES = ("auto", *MODE_NAMES)
"""What the mode menu offers: ``auto`` (what loom.query runs) and each mode forced."""
TOP_ROWS = 12
"""Rows of the compact table kept in view under the sliders (the full table is folded below)."""
TRACKED_ROWS = 400
"""Rows whose rank is remembered between moves: a row that was further down shows as *new*."""
_CHANGED = "#fff3c4"


def _moves(rows, before: dict[str, tuple[int, float, str]] | None) -> list[tuple[str, str, bool]]:
    """Per row: the rank arrow, the score delta and whether the row changed since ``before``
    (node id -> rank, score, decision of the previous ranking); nothing marked on the first draw.

    >>> from types import SimpleNamespace as Row
    >>> rows = [Row(node_id="a", rank=1, score=0.5, decision="loaded"), Row(node_id="b", rank=2, score=0.4, decision="loaded")]
    >>> _moves(rows, {"b": (1, 0.6, "loaded"), "a": (2, 0.5, "manifest")})
    [('▲1', '+0.000', True), ('▼1', '−0.200', True)]
    >>> _moves(rows, {"a": (1, 0.5, "loaded")})
    [('', '+0.000', False), ('new', '', True)]
    """
    marks = []
    for row in rows:
        if before is None:
            marks.append(("", "", False))
            continue
        was = before.get(row.node_id)
        if was is None:
            marks.append(("new", "", True))
            continue
        rank, score, decision = was
        arrow = f"▲{rank - row.rank}" if row.rank < rank else f"▼{row.rank - rank}" if row.rank > rank else ""
        delta = row.score - score
        marks.append((arrow, f"{'+' if delta >= 0 else '−'}{abs(delta):.3f}",
                      bool(arrow) or decision != row.decision or abs(delta) >= 5e-4))
    return marks


def top_rows_html(result, before: dict[str, tuple[int, float, str]] | None = None, limit: int = TOP_ROWS) -> str:
    """The first ``limit`` rows of a result with what moved since ``before``: rank arrows,
    score deltas, changed rows highlighted. Everything shown is escaped."""
    from html import escape

    from .html import STYLE, _bar

    rows = result.rows(limit)
    cells = []
    for row, (arrow, delta, changed) in zip(rows, _moves(rows, before)):
        colour = "#2e7d32" if arrow.startswith("▲") else "#c62828" if arrow.startswith("▼") else "#1565c0"
        shade = f" style='background:{_CHANGED}'" if changed else ""
        cells.append(
            f"<tr class='{'changed' if changed else 'same'}'{shade}><td class='n'>{row.rank}</td>"
            f"<td class='n' style='color:{colour}'>{escape(arrow)}</td><td>{escape(row.node_id)}</td>"
            f"<td>{escape(row.title)}</td><td>{escape(row.decision)}</td><td class='n'>{row.score:.3f}</td>"
            f"<td class='n'>{escape(delta)}</td><td>{_bar(row.contributions)}</td></tr>")
    total = len(result.ranking.node_ids)
    head = ("<thead><tr><th class='n'>#</th><th class='n'>move</th><th>node</th><th>title</th><th>decision</th>"
            "<th class='n'>score</th><th class='n'>Δ score</th><th>contributions</th></tr></thead>")
    used = result.packed.context_tokens
    return (f"{STYLE}<div class='loom-tuner-top'><b>Top {len(rows)} of {total:,}</b> · {escape(result.mode.name.upper())} · "
            f"{used:,} context tokens · {sum(r.decision != 'excluded' for r in result.rows(TRACKED_ROWS)):,} rows kept"
            f"<table class='loom-t'>{head}<tbody>{''.join(cells)}</tbody></table></div>")


class WeightTuner:
    """A panel of sliders over one query, with the rows they move kept in view.

    The weights sit in a compact grid; the relevance floor, concept threshold, mode and
    budget beside them; under them the first rows of the table, with rank arrows, score
    deltas and the changed rows highlighted after each move. The full decision table, the
    threshold preview and the settings as code are folded below. ``panel`` is the ipywidgets
    box to display; ``result`` the latest QueryResult; :meth:`config` the settings as a
    :class:`~loom_nb.LoomConfig`.

    At its first draw the panel shows exactly what ``loom.query(query, budget=budget)``
    returns: the sliders start at the session's settings and a move changes a copy of its
    config, never the session's own.
    """

    def __init__(self, loom, query: str, *, budget: int | None = None, window: int | None = None, mode: str = "auto"):
        widgets = _widgets()
        self.loom = loom
        self.query_text = query
        self.window = window
        mode = mode.lower() if isinstance(mode, str) else mode
        if mode not in _MODES:
            raise LoomError(f"mode must be one of {', '.join(_MODES)}; got {mode!r}")
        # the first draw is loom.query's: with a window (and no budget) the window is split as
        # loom.query splits it, until the budget slider is moved
        self._by_window = self._start_by_window = window is not None and budget is None
        if self._by_window:
            budget = self.loom.query(query, window=window, mode=mode).packed.budget.context
        self._start = {"budget": 4000 if budget is None else int(budget), "mode": mode}
        self._build(widgets)
        self.result = None
        self._before: dict[str, tuple[int, float, str]] | None = None
        self._quiet = False
        self._rerank()
        self._preview()

    def _build(self, widgets) -> None:
        config = self.loom.graph.config
        self._question = asks_question(self.query_text)
        wide = widgets.Layout(width="auto")
        slider = {"description_width": "96px"}
        setting = {"description_width": "118px"}
        self.sliders = {
            name: widgets.FloatSlider(value=self._start_weight(name), min=0.0, max=1.0, step=0.05, description=name,
                                      continuous_update=False, style=slider, layout=wide)
            for name in SIGNALS
        }
        if self._question:
            self.sliders["density"].tooltip = "a question on its own weighs density question_density; this slider sets it"
        self.floor = widgets.FloatSlider(value=config.relevance_floor, min=0.0, max=0.8, step=0.02, description="relevance floor",
                                         continuous_update=False, style=setting, layout=wide)
        # from 0.3, or from a lower threshold the session has: above 0 either way (LoomConfig and
        # apply_threshold take a cosine in (0, 1]; at 0 the preview could not start)
        self.threshold = widgets.FloatSlider(value=self.loom.graph.concept_threshold, min=min(0.3, self.loom.graph.concept_threshold),
                                             max=1.0, step=0.01,
                                             description="concept threshold", continuous_update=False, style=setting, layout=wide)
        self.mode = widgets.Dropdown(options=list(_MODES), value=self._start["mode"], description="mode",
                                     style=setting, layout=wide)
        start = self._start["budget"]
        self.budget = widgets.IntSlider(value=start, min=min(200, start), max=max(32000, start), step=200, description="budget",
                                        continuous_update=False, style=setting, layout=wide)
        button = widgets.Layout(width="auto", margin="2px 8px 2px 0")
        self.apply = widgets.Button(description="apply threshold", tooltip="re-link the session's concepts at this threshold",
                                    disabled=True, layout=button)
        self.reset_button = widgets.Button(description="reset to defaults", icon="undo", layout=button,
                                           tooltip="the weights, floor, mode and budget a plain loom.query uses")
        self.copy_button = widgets.Button(description="copy as LoomConfig(…)", icon="copy", layout=button,
                                          tooltip="show these settings as code to paste into a cell")
        self.code = widgets.Textarea(layout=widgets.Layout(width="100%", height="5em", display="none"))
        self.top = widgets.HTML()
        self.table = widgets.HTML()
        self.preview = widgets.HTML()
        for control in (*self.sliders.values(), self.floor, self.mode, self.budget):
            control.observe(self._rerank, names="value")
        self.threshold.observe(self._preview, names="value")
        self.apply.on_click(self.apply_threshold)
        self.reset_button.on_click(self.reset)
        self.copy_button.on_click(self._show_code)
        grid = widgets.GridBox(
            [*self.sliders.values(), self.floor, self.threshold, self.mode, self.budget],
            layout=widgets.Layout(grid_template_columns="repeat(3, minmax(250px, 1fr))", grid_gap="0 16px"))
        self.details = widgets.Accordion(children=[self.table, self.preview], titles=("decision table, manifest and budget",
                                                                                       "concept threshold preview"))
        self.details.selected_index = None
        from html import escape

        self.panel = widgets.VBox([
            widgets.HTML(f"<b>Query:</b> {escape(self.query_text)}"), grid,
            widgets.HBox([self.reset_button, self.copy_button, self.apply]),
            self.code, self.top, self.details,
        ], layout=widgets.Layout(max_width="1100px"))

    def _start_weight(self, name: str) -> float:
        """A slider's value at the start: the session's weight, and for density the one this
        message gets (a question on its own weighs ``question_density`` when that is higher)."""
        config = self.loom.graph.config
        weight = getattr(config.weights, name)
        return max(weight, config.question_density) if name == "density" and self._question else weight

    def weights(self):
        """The weights this message ranks with: the sliders' values."""
        values = {n: s.value for n, s in self.sliders.items()}
        if sum(values.values()) <= 0:
            raise LoomError("every weight slider is at zero: raise one")
        return replace(self.loom.graph.config.weights, **values)

    def config(self):
        """The session's config with the sliders' weights and relevance floor: what to keep
        (``loom.graph.config = tuner.config()``) when the table looks right. For a question
        on its own the density slider is ``question_density``: the weight that message gets,
        leaving ``weights.density`` (commits, issues, requests) at most as high; a follow-up
        weighs ``question_density`` too."""
        weights, extra = self.weights(), {}
        if self._question:
            extra["question_density"] = weights.density
            weights = replace(weights, density=min(weights.density, self.loom.graph.config.weights.density))
        return replace(self.loom.graph.config, weights=weights, relevance_floor=self.floor.value, **extra)

    def config_code(self) -> str:
        """:meth:`config` as Python: ``LoomConfig(...)`` naming every field that differs from
        the package defaults, and every weight. ``eval`` of it (with ``LoomConfig`` and
        ``Weights`` in scope) gives :meth:`config` back."""
        from ..core.config import LoomConfig

        config, default = self.config(), LoomConfig()
        weights = ", ".join(f"{n}={getattr(config.weights, n)!r}" for n in SIGNALS)
        other = "".join(f",\n    {f.name}={getattr(config, f.name)!r}" for f in fields(config)
                        if f.name != "weights" and getattr(config, f.name) != getattr(default, f.name))
        return f"LoomConfig(\n    weights=Weights({weights}){other},\n)"

    def _show_code(self, button=None) -> None:
        self.code.value = self.config_code()
        self.code.layout.display = None

    def reset(self, button=None) -> None:
        """Every control back to what a plain ``loom.query`` uses (the session's config), one
        re-rank at the end."""
        config = self.loom.graph.config
        self._quiet = True
        try:
            for name, control in self.sliders.items():
                control.value = self._start_weight(name)
            self.floor.value = config.relevance_floor
            self.mode.value = self._start["mode"]
            self.budget.value = self._start["budget"]
            self._by_window = self.window is not None and self._start_by_window
        finally:
            self._quiet = False
        self._rerank()

    def _rerank(self, change=None) -> None:
        from .html import result_html

        if self._quiet:
            return
        if change is not None and change.get("owner") is self.budget:
            self._by_window = False  # the user chose a budget: it replaces the window's split
        if sum(s.value for s in self.sliders.values()) <= 0:
            self.result = None
            self.top.value = self.table.value = "<i>Every weight is zero: raise one.</i>"
            return
        graph = self.loom.graph
        saved = graph.config
        graph.config = self.config()  # the query reads its weights as loom.query does (message_weights applies)
        size = {"window": self.window} if self._by_window else {"budget": self.budget.value}
        try:
            self.result = self.loom.query(self.query_text, mode=self.mode.value, **size)
        finally:
            graph.config = saved
        self.top.value = top_rows_html(self.result, self._before)
        self.table.value = result_html(self.result)
        self._before = {r.node_id: (r.rank, r.score, r.decision) for r in self.result.rows(TRACKED_ROWS)}
        if self.code.layout.display is None:
            self.code.value = self.config_code()

    def _preview(self, change=None) -> None:
        self.plan = self.loom.preview_threshold(self.threshold.value)
        self.preview.value = self.plan._repr_html_()
        self.apply.disabled = self.threshold.value == self.loom.graph.concept_threshold
        if change is not None:
            self.details.selected_index = 1  # a moved threshold opens its preview

    def apply_threshold(self, button=None):
        """Re-link the session's concepts at the slider's threshold (the button does this),
        then redraw the preview and the table. Returns the new layer's quality."""
        quality = self.loom.apply_threshold(self.threshold.value)
        self._preview()
        self._rerank()
        from html import escape

        self.preview.value = f"<div><b>Applied:</b> {escape(str(quality))}</div>" + self.preview.value
        return quality

    def settings(self) -> dict:
        """What the controls show now: every weight, the floor, the threshold, mode, budget."""
        return {**{n: s.value for n, s in self.sliders.items()}, "relevance floor": self.floor.value,
                "concept threshold": self.threshold.value, "mode": self.mode.value, "budget": self.budget.value}

    def snapshot(self) -> "TunerSnapshot":
        """The sliders' values and the decision table as they are now, as a static view.

        A live panel needs a kernel (JupyterLab) or a widget renderer; the snapshot is plain
        text and escaped HTML, so it reads the same in a terminal and in an exported page.
        """
        return TunerSnapshot(self.query_text, self.settings(), self.result)

    def __str__(self) -> str:
        return str(self.snapshot())

    def __repr__(self) -> str:
        return f"WeightTuner(query={self.query_text!r}, mode={self.mode.value!r}, budget={self.budget.value})"

    def _repr_mimebundle_(self, include=None, exclude=None):
        bundle = {**(self.panel._repr_mimebundle_(include=include, exclude=exclude) or {}), "text/plain": str(self)}
        return {k: v for k, v in bundle.items() if (not include or k in include) and not (exclude and k in exclude)}


class TunerSnapshot(Displayable):
    """The weight tuner frozen: control values and the table they produced."""

    def __init__(self, query: str, settings: dict, result):
        self.query = query
        self.settings = settings
        self.result = result

    def _settings_line(self) -> str:
        return ", ".join(f"{k} {v:.2f}" if isinstance(v, float) else f"{k} {v}" for k, v in self.settings.items())

    def __str__(self) -> str:
        head = f"Weight tuner: {self.query}\n  {self._settings_line()}"
        if self.result is None:
            return head + "\n  (every weight is zero: no ranking)"
        from .text import table_text

        return f"{head}\n\n{self.result.manifest}\n\n{table_text(self.result)}"

    def __repr__(self) -> str:
        return f"TunerSnapshot(query={self.query!r})"

    def _repr_html_(self) -> str:
        from html import escape

        from .html import result_html

        table = result_html(self.result) if self.result is not None else "<i>Every weight is zero: no ranking.</i>"
        return (f"<div class='loom-tuner-snapshot'><b>Weight tuner</b> (snapshot) — "
                f"{escape(self._settings_line())}{table}</div>")



def weight_sliders(loom, query: str, **options) -> WeightTuner:
    """Sliders for every signal weight, the relevance floor, the concept threshold, the mode
    and the budget over one query; the table redraws as they move."""
    return WeightTuner(loom, query, **options)
