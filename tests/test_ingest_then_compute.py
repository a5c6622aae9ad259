"""`gpufleet ingest ... --compute`: the load and the compute in one write (one private copy,
one publication), through the real CLI on a real database file."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from pipelines.simulate import SimulationConfig, simulate_to_dir
from pipelines.simulator.deliveries import deliver
from pipelines.store import open_store
from testkit.cli import run_gpufleet
from testkit.equivalence import table_differences

START = datetime(2026, 11, 23, tzinfo=UTC)
DAY = timedelta(days=1)


@pytest.fixture(scope="module")
def days(tmp_path_factory) -> tuple[Path, Path]:
    """Two hourly-style deliveries of a simulated 2-node fleet: its first day, then its second."""
    root = tmp_path_factory.mktemp("deliveries")
    simulate_to_dir(
        SimulationConfig.create(nodes=2, days=2, seed=4, start=START.isoformat()), root / "fleet"
    )
    for n in (1, 2):
        deliver(root / "fleet", root / f"day{n}", START + (n - 1) * DAY, START + n * DAY)
    return root / "day1", root / "day2"


def _derived(db: Path) -> list[str]:
    con = open_store(db)
    try:
        return [
            r[0]
            for r in con.execute(
                "SELECT table_name FROM duckdb_tables() WHERE NOT temporary "
                "AND table_name IN ('weekly_summary', 'anomalies', 'node_state_intervals', "
                "'job_outcomes', 'goodput_stack', 'gpu_utilisation_daily')"
            ).fetchall()
        ]
    finally:
        con.close()


def test_ingest_with_compute_equals_ingest_then_compute(tmp_path, days):
    day1, day2 = days
    together, apart = tmp_path / "together.duckdb", tmp_path / "apart.duckdb"
    for day in (day1, day2):
        run = run_gpufleet(
            tmp_path, "--db", str(together), "ingest", "files", str(day), "--compute"
        )
        assert run.returncode == 0, run.stderr
        assert "Computed data version" in run.stdout
        assert (
            run_gpufleet(tmp_path, "--db", str(apart), "ingest", "files", str(day)).returncode == 0
        )
        assert run_gpufleet(tmp_path, "--db", str(apart), "compute").returncode == 0
    # The compute ran on the loaded data: a compute afterwards has nothing to do.
    again = run_gpufleet(tmp_path, "--db", str(together), "compute")
    assert again.returncode == 0 and "Nothing changed since the last compute" in again.stdout
    tables = _derived(apart)
    assert len(tables) == 6
    a, b = open_store(together), open_store(apart)
    try:
        for table in tables:
            assert table_differences(a, b, table, set()) is None, table
    finally:
        a.close()
        b.close()


def test_a_failed_compute_publishes_nothing_of_the_load(tmp_path, days):
    """The load and its compute are one write: when the compute fails, the database keeps neither
    (the new data is not served without its numbers)."""
    day1, day2 = days
    db = tmp_path / "fleet.duckdb"
    assert (
        run_gpufleet(
            tmp_path, "--db", str(db), "ingest", "files", str(day1), "--compute"
        ).returncode
        == 0
    )
    before = db.read_bytes()
    (tmp_path / "broken.toml").write_text('[failures]\nxid_catalogue = "no-such-catalogue.csv"\n')
    run = run_gpufleet(
        tmp_path,
        "--db",
        str(db),
        "--config",
        "broken.toml",
        "ingest",
        "files",
        str(day2),
        "--compute",
    )
    assert run.returncode != 0
    assert "no-such-catalogue.csv" in run.stderr + run.stdout
    assert db.read_bytes() == before
    # The load alone, with the same settings, goes through: it was the compute that failed.
    alone = run_gpufleet(
        tmp_path, "--db", str(db), "--config", "broken.toml", "ingest", "files", str(day2)
    )
    assert alone.returncode == 0, alone.stderr
    assert db.read_bytes() != before
