"""What the tutorial builders share: the kernel metadata and the write."""

import nbformat
from nbformat.v4 import new_notebook

KERNEL = {"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}}


def write(cells: list, path: str) -> None:
    """Write ``cells`` as a notebook at ``path`` (execute it with tools/execute_notebooks.py)."""
    nbformat.write(new_notebook(cells=cells, metadata=KERNEL), path)
    print(f"wrote {path}")
