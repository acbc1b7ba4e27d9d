"""The chat layer: the ``Session`` facade over Ollama (``session``), the turn planner,
decisions, the turn transaction and the recorded-chat replay.

It sits above ``core``, ``embed``, ``ollama`` and ``index``; only ``evaluation`` (follow-up
cases run through the planner), the CLI and the package namespace import it.
"""

from .planner import Message, TurnPlan, plan_turn, window_history

__all__ = ["Message", "TurnPlan", "plan_turn", "window_history"]
