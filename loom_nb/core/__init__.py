"""The engine's bottom layer: what a query is, how the window is split, which mode ranks it.

Everything above (chat, evaluation, the CLI, the views) asks these modules; they import
nothing from the layers above. The older flat modules (graph, rank, pack, store, engine)
move here as the layered layout lands; new core code starts here.
"""
