"""The workshop notebook runs top to bottom, so it never rots (about half a minute)."""
from __future__ import annotations

from pathlib import Path

import pytest

nbformat = pytest.importorskip("nbformat", reason="the notebook test needs nbformat (pip install -e '.[dev]')")
nbclient = pytest.importorskip("nbclient", reason="the notebook test needs nbclient (pip install -e '.[dev]')")
pytest.importorskip("ipykernel", reason="the notebook test needs ipykernel (pip install -e '.[dev]')")
pytest.importorskip("matplotlib", reason="the notebook draws with matplotlib")
pytest.importorskip("line_profiler", reason="the notebook uses line_profiler")

NOTEBOOK = Path(__file__).resolve().parent.parent / "notebooks" / "profiling_workshop.ipynb"


def test_profiling_workshop_notebook_runs():
    nb = nbformat.read(NOTEBOOK, as_version=4)
    client = nbclient.NotebookClient(nb, timeout=120, kernel_name="python3",
                                     resources={"metadata": {"path": str(NOTEBOOK.parent)}})
    client.execute()  # raises CellExecutionError, with the cell and traceback, on any error
    outputs = [o for cell in nb.cells if cell.cell_type == "code" for o in cell.get("outputs", [])]
    assert not [o for o in outputs if o.output_type == "error"]
    assert any("image/png" in o.get("data", {}) for o in outputs), "the chart was not shown inline"
    text = "".join(o.get("text", "") for o in outputs)
    assert "slowest to fastest:" in text and "Line #" in text
