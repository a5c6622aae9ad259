"""One fleet loaded in pieces, as an hourly pipeline sees it, equals the same fleet loaded at once.

The fleet is simulated once and cut into the deliveries its sources would have made
(`pipelines.simulator.deliveries`): telemetry and step logs by the time they were
recorded, jobs as the scheduler saw them at each run (still running, then ended). Each
pattern loads the pieces and computes after every one; at the end, every landing and
derived table must hold exactly the rows of one load and one compute of the whole span.
This is the contract any faster compute path must keep.
"""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime, timedelta
from pathlib import Path

import duckdb
import pytest

from pipelines.compute import DERIVED_TABLES, compute
from pipelines.config import Settings
from pipelines.contract import LANDING_TABLES
from pipelines.simulator.deliveries import deliver, windows
from pipelines.simulator.model import SimulationConfig
from pipelines.simulator.output import simulate_to_dir
from pipelines.sources.files import ingest_files
from pipelines.store import open_store
from testkit.equivalence import table_differences

START = datetime(2026, 11, 23, tzinfo=UTC)
END = START + timedelta(days=1)
H = timedelta(hours=1)

Delivery = tuple[datetime, datetime, datetime]  # window start, window end, the scheduler's "as of"


def _in_order(step: timedelta) -> list[Delivery]:
    return [(a, b, b) for a, b in windows(START, END, step)]


def _one_late(step: timedelta, late: int) -> list[Delivery]:
    """In order, except one window's telemetry arrives after all the others (jobs as of the end)."""
    cuts = windows(START, END, step)
    on_time = [(a, b, b) for i, (a, b) in enumerate(cuts) if i != late]
    return [*on_time, (*cuts[late], END)]


def _overlapping(step: timedelta, overlap: timedelta) -> list[Delivery]:
    """Each run re-reads the end of the previous window, as a scraper with a safety margin does."""
    return [(max(START, a - overlap), b, b) for a, b in windows(START, END, step)]


PATTERNS: dict[str, list[Delivery]] = {
    "three 8-hour runs in order": _in_order(8 * H),
    "uneven runs: 1 h, then 5 h, then 18 h": [
        (START, START + H, START + H),
        (START + H, START + 6 * H, START + 6 * H),
        (START + 6 * H, END, END),
    ],
    "the first of three windows arrives last": _one_late(8 * H, late=0),
    "8-hour runs that re-read the previous 2 hours": _overlapping(8 * H, 2 * H),
}


@pytest.fixture(scope="module")
def fleet(tmp_path_factory) -> tuple[Path, duckdb.DuckDBPyConnection]:
    """Eight nodes (enough for multi-node jobs with step logs, and for a MIG node serving
    inference in one cluster) over one day, and its one-load database."""
    root = tmp_path_factory.mktemp("batched")
    simulate_to_dir(
        SimulationConfig.create(nodes=8, days=1, seed=5, start="2026-11-23", inference=True),
        root / "fleet",
    )
    whole = root / "whole"
    deliver(root / "fleet", whole, START, END)
    con = open_store(root / "whole.duckdb")
    ingest_files(con, whole)
    compute(con, Settings())
    return root, con


def test_the_fleet_has_what_the_patterns_must_cut(fleet):
    _, con = fleet
    counts = {
        t: con.execute(f"SELECT count(*) FROM {t}").fetchone()[0]
        for t in ("rank_steps", "checkpoints", "gpu_instance_samples")
    }
    running_then_ended = con.execute(
        "SELECT count(*) FROM jobs WHERE start_ts < $cut AND end_ts >= $cut", {"cut": START + 6 * H}
    ).fetchone()[0]
    assert counts["rank_steps"] > 0 and counts["checkpoints"] > 0
    assert counts["gpu_instance_samples"] > 0  # MIG rows of gpu_activity_windows
    assert running_then_ended > 0  # jobs that the first run sees running and a later one ended


def test_windows_of_a_partition_deliver_every_stamped_row_once(
    fleet: tuple[Path, duckdb.DuckDBPyConnection], tmp_path: Path
) -> None:
    root, _ = fleet
    delivered: dict[str, int] = {}
    for i, (a, b) in enumerate(windows(START, END, 5 * H)):
        for table, n in deliver(root / "fleet", tmp_path / str(i), a, b).items():
            delivered[table] = delivered.get(table, 0) + n
    whole = deliver(root / "fleet", tmp_path / "whole", START, END)
    for table in (
        "gpu_samples",
        "node_conditions",
        "node_samples",
        "gpu_events",
        "rank_steps",
        "checkpoints",
    ):
        assert delivered[table] == whole[table], table


def test_a_job_running_at_the_cut_is_delivered_without_its_outcome(fleet, tmp_path):
    root, whole = fleet
    job_id, end_ts = whole.execute(
        "SELECT job_id, end_ts FROM jobs WHERE start_ts < $cut AND end_ts >= $cut ORDER BY job_id LIMIT 1",
        {"cut": START + 6 * H},
    ).fetchone()
    deliver(root / "fleet", tmp_path / "first", START, START + 6 * H)
    seen = (
        duckdb.connect()
        .execute(
            f"SELECT state, end_ts, exit_code FROM '{tmp_path}/first/jobs.parquet' WHERE job_id = $j",
            {"j": job_id},
        )
        .fetchall()
    )
    assert seen == [("running", None, None)]
    later = (
        duckdb.connect()
        .execute(
            f"SELECT end_ts FROM '{tmp_path}/first/job_attempts.parquet' WHERE job_id = $j",
            {"j": job_id},
        )
        .fetchall()
    )
    assert later and all(e is None for (e,) in later)
    assert end_ts is not None


COMPUTED_AFTER_EVERY_RUN = {"three 8-hour runs in order", "the first of three windows arrives last"}
"""Patterns that compute after every run, as the hourly pipeline does; the others compute once at the
end (a compute costs seconds even here, and those patterns test the loads)."""


@pytest.mark.slow
@pytest.mark.parametrize("pattern", list(PATTERNS))
def test_loading_in_pieces_equals_loading_at_once(fleet, tmp_path, pattern):
    root, whole = fleet
    con = open_store(tmp_path / "pieces.duckdb")
    settings = Settings()
    runs = PATTERNS[pattern]
    for i, (start, end, as_of) in enumerate(runs):
        deliver(root / "fleet", tmp_path / f"run{i}", start, end, as_of=as_of)
        ingest_files(con, tmp_path / f"run{i}")
        if pattern in COMPUTED_AFTER_EVERY_RUN or i == len(runs) - 1:
            compute(con, settings)
    differences = [
        d
        for table in (*LANDING_TABLES, *DERIVED_TABLES)
        if (d := table_differences(con, whole, table))
    ]
    assert not differences, "\n".join(differences)


def _two_hour_runs_one_late() -> list[Delivery]:
    """Two-hour runs in order, except 08-10 h, delivered after 12-14 h: a late batch inside the
    simulated throttling and temperature episodes (09:21 to 21:21), which span many runs."""
    cuts = windows(START, END, 2 * H)
    on_time = [(a, b, b) for a, b in cuts]
    # The late telemetry comes with the scheduler's view of when it arrives (14 h).
    return [*on_time[:4], *on_time[5:7], (*cuts[4], cuts[6][1]), *on_time[7:]]


@pytest.mark.slow
def test_kept_detector_episodes_after_every_run_equal_one_compute(
    fleet: tuple[Path, duckdb.DuckDBPyConnection], tmp_path: Path
) -> None:
    """The peer and counter detectors keep their episodes between computes (kept_candidates) and
    re-find only those new data can change: after twelve runs, one of them late, computing after each,
    every derived table equals one compute, and a settings change finds them from all history."""
    root, whole = fleet
    con = open_store(tmp_path / "pieces.duckdb")
    settings = Settings()
    straddled: dict[str, int] = {"peers": 0, "counters": 0}
    for i, (start, end, as_of) in enumerate(_two_hour_runs_one_late()):
        deliver(root / "fleet", tmp_path / f"run{i}", start, end, as_of=as_of)
        ingest_files(con, tmp_path / f"run{i}")
        compute(con, settings)
        # An episode kept open across this run's end is what the next compute must extend.
        for detector, count in con.execute(
            "SELECT detector, count(*) FROM kept_candidates WHERE start_ts < $end "
            "AND (end_ts IS NULL OR end_ts >= $end) GROUP BY detector",
            {"end": end},
        ).fetchall():
            straddled[detector] += count
    assert all(straddled.values()), f"an episode open at a run's end is not tested: {straddled}"
    differences = [d for table in DERIVED_TABLES if (d := table_differences(con, whole, table))]
    assert not differences, "\n".join(differences)

    # Other settings: the kept episodes were found with the old ones, so all are found again.
    stricter = dataclasses.replace(
        settings, detection=dataclasses.replace(settings.detection, peer_z=5.0)
    )
    compute(con, stricter)
    kept = con.execute(
        "SELECT kind, start_ts, end_ts, score FROM anomalies WHERE kind IN "
        "('throttling', 'temp_above_peers') ORDER BY ALL"
    ).fetchall()
    compute(con, stricter, force=True)
    again = con.execute(
        "SELECT kind, start_ts, end_ts, score FROM anomalies WHERE kind IN "
        "('throttling', 'temp_above_peers') ORDER BY ALL"
    ).fetchall()
    assert kept == again
    before = whole.execute(
        "SELECT kind, start_ts, end_ts, score FROM anomalies WHERE kind IN "
        "('throttling', 'temp_above_peers') ORDER BY ALL"
    ).fetchall()
    assert again != before, "the stricter z changed no finding: the basis is not tested"


SCHEDULER_AND_STEP_LOGS = ("jobs", "job_attempts", "rank_steps", "checkpoints")


@pytest.mark.slow
def test_jobs_that_arrive_after_their_telemetry_re_attribute_kept_activity(fleet, tmp_path):
    """The scheduler and the step logs are out from 06 to 12 h while telemetry keeps arriving; the
    jobs of those hours come in one catch-up load with no GPU samples. The kept activity windows of
    06-12 h were attributed to the jobs known at 06 h: the catch-up must re-attribute them (only
    the assignments changed, not the samples), so every derived table equals one compute."""
    root, whole = fleet
    con = open_store(tmp_path / "pieces.duckdb")
    settings = Settings()
    outage_start, outage_end = START + 6 * H, START + 12 * H
    for i, (start, end) in enumerate(windows(START, END, 2 * H)):
        run = tmp_path / f"run{i}"
        deliver(root / "fleet", run, start, end)
        if outage_start <= start < outage_end:
            for table in SCHEDULER_AND_STEP_LOGS:
                (run / f"{table}.parquet").unlink()
        ingest_files(con, run)
        compute(con, settings)
        if end == outage_end:
            before = con.execute(
                "SELECT count(*) FROM gpu_activity_windows WHERE start_ts >= $a AND start_ts < $b "
                "AND job_id IS NOT NULL",
                {"a": outage_start, "b": outage_end},
            ).fetchone()[0]
            catch_up = tmp_path / "catch_up"
            deliver(root / "fleet", catch_up, outage_start, outage_end)
            for path in catch_up.glob("*.parquet"):
                if path.stem not in SCHEDULER_AND_STEP_LOGS:
                    path.unlink()
            ingest_files(con, catch_up)
            compute(con, settings)
            after = con.execute(
                "SELECT count(*) FROM gpu_activity_windows WHERE start_ts >= $a AND start_ts < $b "
                "AND job_id IS NOT NULL",
                {"a": outage_start, "b": outage_end},
            ).fetchone()[0]
            assert after != before, "the catch-up changed no attribution: nothing is tested"
    differences = [d for table in DERIVED_TABLES if (d := table_differences(con, whole, table))]
    assert not differences, "\n".join(differences)
