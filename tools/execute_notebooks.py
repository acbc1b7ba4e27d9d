"""Execute the tutorial notebooks in place, so they are saved with their outputs.

    .venv/bin/python tools/execute_notebooks.py [notebooks/01_quickstart.ipynb ...]

Widget state is stored in each notebook's metadata (``store_widget_state``), so an HTML
export (``jupyter nbconvert --to html``) still carries the sliders' last values.
"""

import sys
import time
from pathlib import Path

import nbformat
from nbclient import NotebookClient

paths = [Path(p) for p in sys.argv[1:]] or sorted(Path("notebooks").glob("*.ipynb"))
total = time.perf_counter()
for path in paths:
    started = time.perf_counter()
    nb = nbformat.read(path, as_version=4)
    NotebookClient(nb, timeout=600, kernel_name="python3", store_widget_state=True,
                   resources={"metadata": {"path": str(path.parent)}}).execute()
    nbformat.write(nb, path)
    print(f"executed {path} in {time.perf_counter() - started:.1f} s")
print(f"all in {time.perf_counter() - total:.1f} s")
