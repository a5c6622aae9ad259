"""The dashboard keeps serving while a scheduled ingest/compute writes the database.

gpufleet's writers publish a new file at the path instead of writing it in place, so
neither waits for the other. Only another program holding the file open for writing
can keep the app out: then it shows the last numbers it read and names that program.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import duckdb
import pytest
from streamlit.testing.v1 import AppTest

from gpufleet_app.data import Reader
from testkit.processes import holding, run_python
from tests.app_fixture import build_app_db

ROOT = Path(__file__).resolve().parent.parent
APP = ROOT / "app.py"
ENV = {**os.environ, "PYTHONPATH": str(ROOT)}

HOLD_WRITE_LOCK = """
import sys
from pipelines.store import open_store
con = open_store(sys.argv[1])  # another program writing the file in place
con.execute("CREATE OR REPLACE TABLE compute_in_progress AS SELECT 1 AS x")
print("locked", flush=True)
sys.stdin.readline()
con.close()
"""


@pytest.fixture
def db(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = build_app_db(tmp_path / "fleet.duckdb")
    monkeypatch.setenv("GPUFLEET_DB", str(path))
    return path


def availability_shown(at: AppTest) -> str:
    return next(m.value for m in at.metric if m.label == "Node availability")


def run_overview() -> AppTest:
    at = AppTest.from_file(str(APP), default_timeout=60)
    at.query_params["week"] = "2026-W48"
    at.run()
    assert not at.exception, [e.message for e in at.exception]
    return at


def node_availability_shown(node: str, week: str) -> str:
    at = AppTest.from_file(str(APP), default_timeout=60)
    at.run()
    at.switch_page("gpufleet_app/views/nodes.py")
    at.query_params.clear()
    at.query_params.update({"node": node, "week": week})
    at.run()
    assert not at.exception, [e.message for e in at.exception]
    return next(m.value for m in at.metric if m.label == "Availability")


def test_compute_runs_while_a_page_reads_and_the_app_shows_the_new_numbers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = build_app_db(tmp_path / "fleet.duckdb", fleet="simulated")
    monkeypatch.setenv("GPUFLEET_DB", str(db))
    con = duckdb.connect(str(db), read_only=True)
    con.execute("SET TimeZone = 'UTC'")
    # The node that lost the most time to unavailable/unknown, and its longest such interval.
    node, start, end, week = con.execute("""
        SELECT node, start_ts, end_ts, isoyear(start_ts) || '-W' || lpad(CAST(week(start_ts) AS VARCHAR), 2, '0')
        FROM node_state_intervals WHERE state IN ('unavailable', 'unknown')
        ORDER BY end_ts - start_ts DESC, node LIMIT 1""").fetchall()[0]
    con.close()
    before = node_availability_shown(node, week)

    # New data lands: that outage was declared maintenance (excluded from the denominator).
    landing = tmp_path / "landing"
    landing.mkdir()
    (landing / "maintenance.csv").write_text(
        f"node,start_ts,end_ts,reason\n{node},{start.isoformat()},{end.isoformat()},declared late\n"
    )
    ingest = run_python(
        ["-m", "pipelines", "--db", str(db), "ingest", "files", str(landing)], env=ENV, cwd=ROOT
    )
    assert ingest.returncode == 0, ingest.stderr

    # A page run in progress holds its read-only connection for the whole compute, and after.
    reader = Reader(db)
    reader.connection()
    try:
        compute = run_python(
            ["-m", "pipelines", "--db", str(db), "compute", "--force"], env=ENV, cwd=ROOT
        )
        assert compute.returncode == 0, compute.stderr
        after = node_availability_shown(node, week)  # a new page run, same process
    finally:
        reader.close()

    con = duckdb.connect(str(db), read_only=True)
    new = con.execute(
        "SELECT sum(available_s + degraded_s) / sum(in_fleet_s - maintenance_s) FROM node_availability_daily "
        "WHERE node = ? AND isoyear(day) || '-W' || lpad(CAST(week(day) AS VARCHAR), 2, '0') = ?",
        [node, week],
    ).fetchall()[0][0]
    con.close()
    assert after == f"{new * 100:.2f} %"
    assert after != before


def test_app_keeps_serving_the_last_numbers_while_another_program_holds_the_file_for_writing(
    db: Path,
) -> None:
    before = availability_shown(run_overview())
    with holding(HOLD_WRITE_LOCK, db, "locked", env=ENV, cwd=ROOT) as holder:
        at = run_overview()
        assert not at.error, [e.value for e in at.error]
        assert availability_shown(at) == before
        shown = [
            i.value.replace("\\", "") for i in at.info
        ]  # as rendered: Markdown escapes removed
        assert any(
            f"held open for writing by {sys.executable}" in i and f"(pid {holder.pid})" in i
            for i in shown
        ), shown
    assert holder.returncode == 0
    # Writer gone: a fresh run reads the file again and the notice disappears.
    at = run_overview()
    assert availability_shown(at) == before
    assert not any("held open for writing" in i.value for i in at.info)


def test_a_page_that_was_never_read_says_to_reload_while_locked(db: Path) -> None:
    with holding(HOLD_WRITE_LOCK, db, "locked", env=ENV, cwd=ROOT):
        at = AppTest.from_file(str(APP), default_timeout=60)
        at.query_params["week"] = "2026-W01"  # parameters never read before: nothing cached
        at.run()  # bounded: READ_RETRIES lock retries, then the message
        assert not at.exception
        assert any(f"held open for writing by {sys.executable}" in e.value for e in at.error)
        assert any("Reload the page once it is closed" in m.value for m in at.markdown)
