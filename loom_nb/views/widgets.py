"""Sliders for the signal weights, the relevance floor and the concept threshold.

Moving a slider re-ranks and repacks the query with the same engine calls the CLI makes
(:meth:`Loom.query` with ``weights=``) and redraws the decision table; nothing in the
session changes until you copy the weights into its config. The concept threshold slider
previews the merges and splits re-linking at it would make
(:meth:`Loom.preview_threshold`); its "apply threshold" button re-links the session
(:meth:`Loom.apply_threshold`).
"""

from __future__ import annotations

from ..core.display import Displayable

from dataclasses import replace

from ..core.config import SIGNALS


def _widgets():
    try:
        import ipywidgets as widgets
    except ImportError as exc:  # pragma: no cover - ipywidgets is a dependency
        from ..core.errors import LoomError

        raise LoomError("the sliders need ipywidgets: pip install ipywidgets") from exc
    return widgets


class WeightTuner:
    """A panel of sliders over one query: weights, relevance floor, concept threshold,
    mode and budget. ``panel`` is the ipywidgets box to display; ``result`` the latest
    QueryResult; ``weights()`` the weights the sliders show."""

    def __init__(self, loom, query: str, *, budget: int | None = None, window: int | None = None, mode: str = "auto"):
        widgets = _widgets()
        self.loom = loom
        self.query_text = query
        self.window = window
        config = loom.graph.config
        style = {"description_width": "110px"}
        self.sliders = {
            name: widgets.FloatSlider(value=getattr(config.weights, name), min=0.0, max=1.0, step=0.05,
                                      description=name, continuous_update=False, style=style)
            for name in SIGNALS
        }
        self.floor = widgets.FloatSlider(value=config.relevance_floor, min=0.0, max=0.8, step=0.02,
                                         description="relevance floor", continuous_update=False, style=style)
        self.threshold = widgets.FloatSlider(value=loom.graph.concept_threshold, min=0.3, max=1.0, step=0.01,
                                             description="concept threshold", continuous_update=False, style=style)
        self.mode = widgets.Dropdown(options=["auto", "bare", "fast", "fused"], value=mode, description="mode", style=style)
        self.budget = widgets.IntSlider(value=budget or 4000, min=200, max=32000, step=200, description="budget",
                                        continuous_update=False, style=style)
        self.table = widgets.HTML()
        self.preview = widgets.HTML()
        self.apply = widgets.Button(description="apply threshold", tooltip="re-link the session's concepts at this threshold",
                                    disabled=True)
        for control in (*self.sliders.values(), self.floor, self.mode, self.budget):
            control.observe(self._rerank, names="value")
        self.threshold.observe(self._preview, names="value")
        self.apply.on_click(self.apply_threshold)
        self.panel = widgets.VBox([
            widgets.HTML(f"<b>Query:</b> {__import__('html').escape(query)}"),
            widgets.HBox([widgets.VBox(list(self.sliders.values())),
                          widgets.VBox([self.floor, self.threshold, self.apply, self.mode, self.budget])]),
            self.preview,
            self.table,
        ])
        self.result = None
        self._rerank()
        self._preview()

    def weights(self):
        return replace(self.loom.graph.config.weights, **{n: s.value for n, s in self.sliders.items()})

    def _rerank(self, change=None) -> None:
        from .html import result_html

        weights = self.weights()
        if sum(weights.as_tuple()) <= 0:
            self.table.value = "<i>Every weight is zero: raise one.</i>"
            return
        graph = self.loom.graph
        saved = graph.config
        graph.config = replace(saved, relevance_floor=self.floor.value)
        try:
            self.result = self.loom.query(self.query_text, budget=self.budget.value, mode=self.mode.value, weights=weights)
        finally:
            graph.config = saved
        self.table.value = result_html(self.result)

    def _preview(self, change=None) -> None:
        self.plan = self.loom.preview_threshold(self.threshold.value)
        self.preview.value = self.plan._repr_html_()
        self.apply.disabled = self.threshold.value == self.loom.graph.concept_threshold

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
        bundle = self.panel._repr_mimebundle_(include=include, exclude=exclude) or {}
        bundle["text/plain"] = str(self)
        return bundle


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
