"""Execute the tutorial notebooks in place, so they are saved with their outputs.

    .venv/bin/python tools/execute_notebooks.py [notebooks/01_quickstart.ipynb ...]
"""

import sys
from pathlib import Path

import nbformat
from nbclient import NotebookClient

paths = [Path(p) for p in sys.argv[1:]] or sorted(Path("notebooks").glob("*.ipynb"))
for path in paths:
    nb = nbformat.read(path, as_version=4)
    NotebookClient(nb, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(path.parent)}}).execute()
    nbformat.write(nb, path)
    print(f"executed {path}")
