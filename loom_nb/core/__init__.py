"""The engine's bottom layer: the graph, its signals and ranking, packing, the session
folder, and the ``Loom`` facade that ties them together.

Everything above (``embed``, ``ollama``, ``index``, then ``chat`` and ``evaluation``, then the
CLI) asks these modules; at module level they import nothing from the layers above.
``tests/test_layers.py`` checks it.
"""
