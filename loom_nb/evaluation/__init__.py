"""The evaluation layer: labelled cases, the metrics that grade them, the baselines, the
runner behind ``loom-nb eval``, the weight tuner and the commit miner.

It sits above ``core``, ``embed`` and ``index`` (it builds and queries Looms) and beside
``chat`` (a follow-up case runs through the chat's turn planner); nothing below imports it.
"""

from .run import STRATEGIES, Case, EvalReport, Workbench, ablations, evaluate, evaluate_budgets, load_cases

__all__ = ["STRATEGIES", "Case", "EvalReport", "Workbench", "ablations", "evaluate", "evaluate_budgets", "load_cases"]
