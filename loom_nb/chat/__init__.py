"""The chat layer: planning a turn (here), and the Session facade over Ollama (``loom_nb.session``,
moving here with the layered layout)."""

from .planner import Message, TurnPlan, plan_turn, window_history

__all__ = ["Message", "TurnPlan", "plan_turn", "window_history"]
