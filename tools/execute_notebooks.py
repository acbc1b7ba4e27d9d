"""Execute the tutorial notebooks in place, so they are saved with their outputs.

    .venv/bin/python tools/execute_notebooks.py [notebooks/01_quickstart.ipynb ...]

Widget state is stored in each notebook's metadata (``store_widget_state``), so an HTML
export (``jupyter nbconvert --to html``) still carries the sliders' last values.

``LOOM_CHAT_REPLAY`` is set to 1 unless given (``LOOM_CHAT_REPLAY= python ...`` runs the chat
tutorial live): the saved outputs are then the ones ``make test`` replays and compares, on any
machine, whether or not an Ollama server runs there.
"""

import os
import sys
import time
from pathlib import Path

import nbformat
from nbclient import NotebookClient

os.environ.setdefault("LOOM_CHAT_REPLAY", "1")  # the kernels inherit it


def coalesce_streams(nb) -> None:
    """Merge consecutive stream outputs of a cell: a streamed chat answer arrives as hundreds of
    pieces, which Jupyter shows as one text but the file would keep one by one."""
    for cell in nb.cells:
        merged = []
        for out in cell.get("outputs", []):
            if out.output_type == "stream" and merged and merged[-1].output_type == "stream" and merged[-1].name == out.name:
                merged[-1].text += out.text
            else:
                merged.append(out)
        if cell.cell_type == "code":
            cell.outputs = merged


paths = [Path(p) for p in sys.argv[1:]] or sorted(Path("notebooks").glob("*.ipynb"))
total = time.perf_counter()
for path in paths:
    started = time.perf_counter()
    nb = nbformat.read(path, as_version=4)
    NotebookClient(nb, timeout=600, kernel_name="python3", store_widget_state=True,
                   resources={"metadata": {"path": str(path.parent)}}).execute()
    coalesce_streams(nb)
    nbformat.write(nb, path)
    print(f"executed {path} in {time.perf_counter() - started:.1f} s")
print(f"all in {time.perf_counter() - total:.1f} s")
