"""The notebooks run top to bottom against a small computed database (a broken view breaks them)."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import nbformat
import pytest
from jupyter_client.manager import KernelManager
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError

from pipelines.store import connect
from tests.report_fixture import simulated_fleet

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))


@pytest.fixture(scope="module")
def fleet_db(tmp_path_factory) -> Path:
    return simulated_fleet(tmp_path_factory.mktemp("nb") / "fleet.duckdb")


def run_notebook(path: Path, db: Path, monkeypatch, sockets: Path) -> nbformat.NotebookNode:
    # The kernel is a child process: it inherits the database path and the checkout on its path.
    monkeypatch.setenv("GPUFLEET_DB", str(db))
    monkeypatch.setenv("PYTHONPATH", str(ROOT))
    nb = nbformat.read(path, as_version=4)
    assert nb.metadata.kernelspec.name == "python3"
    # "python3" resolves to this interpreter's ipykernel; IPC transport (Unix sockets under
    # `sockets`) needs no TCP port.
    km = KernelManager(kernel_name="python3", transport="ipc", ip=str(sockets / "kernel"))
    client = NotebookClient(nb, km=km, timeout=120, resources={"metadata": {"path": str(ROOT)}})
    client.execute()
    return nb


def outputs_text(nb: nbformat.NotebookNode) -> str:
    parts = []
    for cell in nb.cells:
        for out in cell.get("outputs", []):
            parts.append(out.get("text", ""))
            parts.append(str(out.get("data", {}).get("text/plain", "")))
    return "\n".join(parts)


def test_both_notebooks_exist():
    assert [p.name for p in NOTEBOOKS] == ["adhoc_sql.ipynb", "weekly_review.ipynb"]


@pytest.mark.parametrize("name", ["weekly_review", "adhoc_sql"])
def test_notebook_runs_top_to_bottom(name, fleet_db, tmp_path, monkeypatch):
    nb = run_notebook(ROOT / "notebooks" / f"{name}.ipynb", fleet_db, monkeypatch, tmp_path)
    text = outputs_text(nb)
    assert f"Database: {fleet_db}" in text
    if name == "weekly_review":
        assert "Week 2026-W48" in text and "Node availability" in text
    else:
        assert "failures_per_1k_gpu_days" in text


def test_a_broken_view_breaks_the_notebook(fleet_db, tmp_path, monkeypatch):
    broken = tmp_path / "broken.duckdb"
    shutil.copyfile(fleet_db, broken)
    con = connect(broken)
    con.execute("ALTER TABLE weekly_summary DROP COLUMN goodput")
    con.close()
    with pytest.raises(CellExecutionError, match="goodput"):
        run_notebook(ROOT / "notebooks" / "weekly_review.ipynb", broken, monkeypatch, tmp_path)


DOC_REFERENCE = re.compile(r"(?:docs/[\w.-]+\.md|README\.md)")


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_every_document_a_notebook_cites_exists(path):
    cited = set(DOC_REFERENCE.findall(path.read_text()))
    assert cited, "the notebook points at no documentation"
    missing = sorted(c for c in cited if not (ROOT / c).is_file())
    assert not missing, f"{path.name} cites missing files: {missing}"


def test_the_documented_headless_run_keeps_the_output():
    # `jupyter execute NOTEBOOK` alone runs it and prints nothing: the README must save the output.
    readme = (ROOT / "README.md").read_text()
    commands = [
        line
        for line in readme.splitlines()
        if "jupyter execute" in line and not line.startswith("`")
    ]
    assert commands and all("--output" in c or "--inplace" in c for c in commands), commands
    assert "pip install -e '.[dev]'" in readme and "pip install 'gpufleet[dev]'" not in readme
