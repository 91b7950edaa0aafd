"""The notebooks in examples/notebooks/ run top to bottom (nbclient, a fresh kernel each, in
their own folder), so they never rot. Plots use matplotlib's non-interactive backend."""

import pathlib

import nbformat
import pytest
from nbclient import NotebookClient

NOTEBOOKS = sorted((pathlib.Path(__file__).resolve().parents[2] / "examples/notebooks").glob("*.ipynb"))


def test_the_notebooks_are_found():
    assert [p.name for p in NOTEBOOKS] == ["placements.ipynb", "quickstart.ipynb", "training.ipynb"]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_notebook_runs(path, monkeypatch):
    monkeypatch.setenv("MPLBACKEND", "Agg")
    nb = nbformat.read(path, as_version=4)
    NotebookClient(nb, timeout=600, kernel_name="python3",
                   resources={"metadata": {"path": str(path.parent)}}).execute()
    errors = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])
              if o.get("output_type") == "error"]
    assert errors == []
    # Every code cell ran, and the plotting cells drew a figure.
    assert all(c.get("execution_count") for c in nb.cells if c.cell_type == "code")
