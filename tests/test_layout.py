"""The lists that say what runs and what is read agree with the files and with each other.

A detector file under queries/detect/ that no list names would never run; a reader asking for a
table `gpufleet compute` does not build would fail only when a user opens it.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from gpufleet_app.ui import REQUIRED_VIEWS
from pipelines import detectors
from pipelines.compute import DERIVED_TABLES, compute, derived
from pipelines.config import Settings
from pipelines.errors import GpufleetError
from pipelines.export import EXPORT_TABLES
from pipelines.report import REPORT_TABLES
from pipelines.sql import queries_dir


def test_every_detect_file_is_run_and_every_name_has_a_file():
    detectors.check_detect_files()  # raises on a mismatch
    files = {p.stem for p in (queries_dir() / "detect").glob("*.sql")}
    assert set(detectors.registered_detect_files()) == files


def test_a_detector_file_no_list_names_is_an_error(monkeypatch, tmp_path: Path):
    copy = tmp_path / "queries"
    shutil.copytree(queries_dir(), copy)
    (copy / "detect" / "new_detector.sql").write_text("SELECT 1\n")
    monkeypatch.setattr(detectors, "queries_dir", lambda: copy)
    with pytest.raises(GpufleetError, match=r"queries/detect/new_detector\.sql` is not run"):
        detectors.check_detect_files()


def test_a_registered_detector_without_a_file_is_an_error(monkeypatch):
    monkeypatch.setattr(detectors, "SQL_DETECTORS", (*detectors.SQL_DETECTORS, "gone"))
    with pytest.raises(
        GpufleetError, match=r"`gone` is registered but `queries/detect/gone\.sql` does not"
    ):
        detectors.check_detect_files()


def test_compute_stops_at_its_start_when_a_detector_would_not_run(monkeypatch, con):
    # `peers` left out of the list: its file is then not run.
    monkeypatch.setattr(
        detectors, "SQL_DETECTORS", tuple(n for n in detectors.SQL_DETECTORS if n != "peers")
    )
    with pytest.raises(GpufleetError, match=r"queries/detect/peers\.sql` is not run"):
        compute(con, Settings(), force=True)
    # Nothing was built or logged.
    assert con.execute("SELECT count(*) FROM compute_log").fetchall() == [(0,)]
    tables = {
        r[0] for r in con.execute("SELECT table_name FROM information_schema.tables").fetchall()
    }
    assert "weekly_summary" not in tables


@pytest.mark.parametrize(
    "reader, tables",
    [("report", REPORT_TABLES), ("dashboard", REQUIRED_VIEWS), ("exports", tuple(EXPORT_TABLES))],
)
def test_readers_ask_only_for_tables_compute_builds(reader, tables):
    assert tables, reader
    assert set(tables) <= set(DERIVED_TABLES), reader


def test_derived_refuses_a_table_compute_does_not_build():
    assert derived("weekly_summary", "anomalies") == ("weekly_summary", "anomalies")
    with pytest.raises(ValueError, match="not built by `gpufleet compute`: weekly_sumary"):
        derived("weekly_summary", "weekly_sumary")


def test_derived_tables_are_the_compute_steps_that_build_a_table():
    # anomaly_follow_up updates `anomalies` and builds no table of its own.
    assert "anomaly_follow_up" not in DERIVED_TABLES
    # The kept per-scrape table first (the detectors read it), the weekly summary last.
    assert DERIVED_TABLES[:2] == ("gpu_scrapes", "xid_catalogue")
    assert DERIVED_TABLES[-1] == "weekly_summary"
    sql_steps = set(DERIVED_TABLES) - {"rank_slowdown", "anomalies"}
    missing = [
        name for name in sql_steps if not (queries_dir() / "derived" / f"{name}.sql").is_file()
    ]
    assert missing == []
