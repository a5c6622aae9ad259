"""`gpufleet export`: read back equals the view, re-runs replace one week, a killed export harms nothing."""

from __future__ import annotations

import hashlib
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import duckdb
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pipelines.errors import GpufleetError
from pipelines.export import EXPORT_TABLES, export_week
from pipelines.store import connect
from pipelines.weeks import parse_week
from testkit.cli import run_gpufleet

ROOT = Path(__file__).resolve().parent.parent
W47, W48 = parse_week("2026-W47"), parse_week("2026-W48")

# The view's rows for W48, written independently of queries/export/ (what a user expects).
W48_ROWS = {
    "weekly_summary": "SELECT * FROM weekly_summary WHERE week = '2026-W48'",
    "goodput_stack": "SELECT * FROM goodput_stack WHERE window_start = '2026-11-23'",
    "node_availability_daily": (
        "SELECT * FROM node_availability_daily WHERE day BETWEEN '2026-11-23' AND '2026-11-29'"
    ),
    "fleet_availability_daily": (
        "SELECT * FROM fleet_availability_daily WHERE day BETWEEN '2026-11-23' AND '2026-11-29'"
    ),
    "job_outcomes": (
        "SELECT * FROM job_outcomes WHERE end_ts >= '2026-11-23' AND end_ts < '2026-11-30'"
    ),
    "attempt_outcomes": (
        "SELECT * FROM attempt_outcomes WHERE end_ts >= '2026-11-23' AND end_ts < '2026-11-30'"
    ),
    "job_goodput": (
        "SELECT g.* FROM job_goodput g JOIN job_outcomes o USING (job_id) "
        "WHERE o.end_ts >= '2026-11-23' AND o.end_ts < '2026-11-30'"
    ),
    # clipped to the week: n3's 11-22 22:00 outage starts at 11-23 00:00 in the W48 export
    "node_state_intervals": (
        "SELECT node, greatest(start_ts, '2026-11-23'::TIMESTAMPTZ) AS start_ts, "
        "least(end_ts, '2026-11-30'::TIMESTAMPTZ) AS end_ts, state, reason, cluster "
        "FROM node_state_intervals WHERE end_ts > '2026-11-23' AND start_ts < '2026-11-30'"
    ),
}
W48_ROWS["failure_escapes"] = "SELECT * FROM failure_escapes WHERE week = '2026-W48'"
# Hand-counted W48 rows: 3 summary rows (c1, c2, *), 2 stack rows, 3 nodes x 7 days,
# 2 clusters x 7 days, jobs j1..j5, 9 attempts of j1..j5, 5 goodput rows, 14 intervals overlapping.
W48_COUNTS = {
    "weekly_summary": 3,
    "goodput_stack": 2,
    "node_availability_daily": 21,
    "fleet_availability_daily": 14,
    "job_outcomes": 5,
    "attempt_outcomes": 9,
    "job_goodput": 5,
    "node_state_intervals": 14,
    "failure_escapes": 1,  # j2's attempt 0, placed on n2 while its finding was open
}


@pytest.fixture
def ro(fixture_db):
    con = connect(fixture_db, read_only=True)
    yield con
    con.close()


def read_back(con: duckdb.DuckDBPyConnection, out: Path, table: str, fmt: str, columns: list[str]):
    pattern = str(out / table / "**" / f"*.{fmt}")
    reader = "read_parquet" if fmt == "parquet" else "read_csv"
    extra = "" if fmt == "parquet" else ", all_varchar = true"
    # CSV carries text: compare it as text (partition columns are typed by the Hive reader).
    cast = "{}" if fmt == "parquet" else "CAST({} AS VARCHAR)"
    select = ", ".join(cast.format(f'"{c}"') for c in columns)
    return con.sql(f"SELECT {select} FROM {reader}('{pattern}', hive_partitioning = true{extra})")


def assert_same_rows(con, view_sql: str, back: duckdb.DuckDBPyRelation, as_text: bool) -> int:
    view = con.sql(view_sql)
    if as_text:
        view = con.sql(
            "SELECT "
            + ", ".join(f'CAST("{c}" AS VARCHAR) AS "{c}"' for c in view.columns)
            + f" FROM ({view_sql})"
        )
    expected = sorted(view.fetchall(), key=repr)
    actual = sorted(back.fetchall(), key=repr)
    assert actual == expected
    return len(actual)


@pytest.mark.parametrize("fmt", ["parquet", "csv"])
@pytest.mark.parametrize("table", sorted(W48_ROWS))
def test_read_back_equals_the_view_for_the_week(ro, tmp_path, fmt, table):
    out = tmp_path / "lake"
    export_week(ro, W48, out, fmt, [table])
    columns = ro.sql(f"SELECT * FROM {table} LIMIT 0").columns
    back = read_back(ro, out, table, fmt, columns)
    rows = assert_same_rows(ro, W48_ROWS[table], back, as_text=(fmt == "csv"))
    assert rows == W48_COUNTS[table]


def test_partition_layout(ro, tmp_path):
    out = tmp_path / "lake"
    export_week(ro, W48, out)
    files = sorted(str(p.relative_to(out)) for p in out.rglob("*.parquet"))
    assert "weekly_summary/cluster=%2A/week=2026-W48/data_0.parquet" in files
    assert "node_availability_daily/cluster=c1/day=2026-11-23/data_0.parquet" in files
    assert "job_outcomes/week=2026-W48/data_0.parquet" in files
    assert not list(out.rglob("*.partial")) and not list(out.glob(".staging-*"))
    # The all-clusters row reads back as cluster '*'
    clusters = (
        connect(":memory:")
        .sql(
            f"SELECT list(cluster ORDER BY cluster) FROM read_parquet('{out}/weekly_summary/**/*.parquet', "
            "hive_partitioning = true)"
        )
        .fetchall()[0][0]
    )
    assert clusters == ["*", "c1", "c2"]


def digests(out: Path) -> dict[str, str]:
    return {
        str(p.relative_to(out)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(out.rglob("*"))
        if p.is_file() and p.suffix in (".parquet", ".csv")
    }


def test_rerunning_a_week_replaces_only_that_week(fixture_db, tmp_path):
    out = tmp_path / "lake"
    con = connect(fixture_db, read_only=True)
    export_week(con, W47, out)
    w47 = digests(out)
    export_week(con, W48, out)
    con.close()
    # Cluster c2 loses its W48 days and job j5 (W48) disappears.
    rw = connect(fixture_db)
    rw.execute("DELETE FROM node_availability_daily WHERE cluster = 'c2' AND day >= '2026-11-23'")
    rw.execute("DELETE FROM job_outcomes WHERE job_id = 'j5'")
    rw.close()
    con = connect(fixture_db, read_only=True)
    results = {r.table: r for r in export_week(con, W48, out)}
    con.close()
    # c2's seven W48 days are gone from the view, so their partitions are removed...
    assert results["node_availability_daily"].removed_partitions == 7
    assert not (out / "node_availability_daily" / "cluster=c2" / "day=2026-11-23").exists()
    # ... while W47's c2 days stay, byte for byte.
    after = digests(out)
    for path, digest in w47.items():
        assert after[path] == digest, path
    assert (out / "node_availability_daily" / "cluster=c2" / "day=2026-11-22").is_dir()
    jobs = (
        connect(":memory:")
        .sql(
            f"SELECT list(job_id ORDER BY job_id) FROM read_parquet('{out}/job_outcomes/**/*.parquet')"
        )
        .fetchall()[0][0]
    )
    assert jobs == ["j0", "j00", "j1", "j2", "j3", "j4"]  # W47's j0, j00 kept; j5 gone from W48


def test_same_week_twice_gives_identical_data(ro, tmp_path):
    out = tmp_path / "lake"
    export_week(ro, W48, out, "csv")
    first = digests(out)
    export_week(ro, W48, out, "csv")
    assert digests(out) == first


def test_a_failure_between_tables_leaves_the_previous_export_intact(fixture_db, tmp_path):
    out = tmp_path / "lake"
    con = connect(fixture_db, read_only=True)
    export_week(con, W48, out)
    before = digests(out)
    con.close()
    rw = connect(fixture_db)
    rw.execute("UPDATE weekly_summary SET goodput = 0.5")  # the next export would differ
    rw.close()
    con = connect(fixture_db, read_only=True)

    def fail_after_third(table: str) -> None:
        if table == "fleet_availability_daily":
            raise OSError("disk full")

    with pytest.raises(OSError, match="disk full"):
        export_week(con, W48, out, on_staged=fail_after_third)
    assert digests(out) == before
    assert not list(out.glob(".staging-*"))
    # and the next run publishes the new numbers
    export_week(con, W48, out, tables=["weekly_summary"])
    goodput = con.sql(
        f"SELECT DISTINCT goodput FROM read_parquet('{out}/weekly_summary/**/*.parquet')"
    ).fetchall()
    con.close()
    assert goodput == [(0.5,)]


KILLED_EXPORT = textwrap.dedent(
    """
    import sys, time
    from pathlib import Path
    from pipelines.export import export_week
    from pipelines.store import connect
    from pipelines.weeks import parse_week

    db, out, marker = sys.argv[1:4]

    def stall(table):
        if table == "node_availability_daily":
            Path(marker).write_text("staged")
            time.sleep(60)

    con = connect(db, read_only=True)
    export_week(con, parse_week("2026-W48"), out, "parquet", on_staged=stall)
    """
)


def test_sigkill_mid_export_leaves_the_previous_export_intact(fixture_db, tmp_path):
    out = tmp_path / "lake"
    con = connect(fixture_db, read_only=True)
    export_week(con, W48, out)
    con.close()
    before = digests(out)
    rw = connect(fixture_db)
    rw.execute("UPDATE node_availability_daily SET availability = 0")
    rw.close()
    marker = tmp_path / "staged"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen(
        [sys.executable, "-c", KILLED_EXPORT, str(fixture_db), str(out), str(marker)], env=env
    )
    try:
        for _ in range(600):  # bounded wait: up to 60 s for the export to stage some tables
            if marker.exists() or proc.poll() is not None:
                break
            time.sleep(0.1)
        assert marker.exists(), "the export never reached the staging point"
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=30)
    assert proc.returncode == -signal.SIGKILL
    # Staged data was left behind (the process could not clean up), but under names no reader sees.
    assert list(out.glob(".staging-*/**/*.partial"))
    assert digests(out) == before
    con = connect(fixture_db, read_only=True)
    export_week(con, W48, out, tables=["node_availability_daily"])  # the next run cleans up
    zero = con.sql(
        f"SELECT DISTINCT availability FROM read_parquet('{out}/node_availability_daily/**/*.parquet')"
    ).fetchall()
    con.close()
    assert zero == [(0.0,)]
    assert not list(out.glob(".staging-*"))


def test_unknown_table_is_a_clean_error(ro, tmp_path):
    with pytest.raises(GpufleetError, match="`nodez` is not an exportable table"):
        export_week(ro, W48, tmp_path / "lake", tables=["nodez"])


def test_every_exportable_table_has_its_query_and_docs():
    docs = (ROOT / "README.md").read_text()
    for table, partitions in EXPORT_TABLES.items():
        layout = "".join(f"{p}=.../" for p in partitions)
        assert f"`{table}/{layout}`" in docs, table
        assert (ROOT / "queries" / "export" / f"{table}.sql").is_file()


def test_cli_export(fixture_db, tmp_path):
    result = run_gpufleet(
        tmp_path,
        "--db",
        str(fixture_db),
        "export",
        "--week",
        "2026-W48",
        "--format",
        "csv",
        "--out",
        str(tmp_path / "lake"),
        "--tables",
        "weekly_summary,job_outcomes",
    )
    assert result.returncode == 0, result.stderr
    assert "job_outcomes" in result.stdout and "5 rows" in result.stdout
    assert sorted(p.name for p in (tmp_path / "lake").iterdir() if not p.name.startswith(".")) == [
        "job_outcomes",
        "weekly_summary",
    ]


# Property: whatever a week's rows are, and however often it is re-exported, the lake holds exactly
# the view's rows for every exported week (re-exporting W48 never changes W47).
@settings(
    max_examples=10, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    runs=st.lists(
        st.sets(st.tuples(st.sampled_from(["c1", "c2", "c 3/x"]), st.integers(0, 13)), max_size=8),
        min_size=1,
        max_size=3,
    )
)
def test_lake_always_equals_the_view(tmp_path_factory, runs):
    out = tmp_path_factory.mktemp("lake")
    con = duckdb.connect()
    con.execute(
        "CREATE TABLE node_availability_daily (day DATE, node VARCHAR, cluster VARCHAR, "
        "in_fleet_s DOUBLE, maintenance_s DOUBLE, available_s DOUBLE, degraded_s DOUBLE, "
        "unavailable_s DOUBLE, unknown_s DOUBLE, availability DOUBLE)"
    )
    for i, rows in enumerate(runs):
        con.execute("DELETE FROM node_availability_daily")
        for cluster, offset in rows:
            con.execute(
                "INSERT INTO node_availability_daily VALUES "
                "(DATE '2026-11-16' + ?::INTEGER, 'n1', ?, 86400, 0, ?, 0, 0, 0, 1)",
                [offset, cluster, float(i)],
            )
        for week in (W47, W48):
            # A week emptied on purpose is part of this property, hence allow_empty.
            export_week(con, week, out, "parquet", ["node_availability_daily"], allow_empty=True)
        expected = sorted(con.sql("FROM node_availability_daily").fetchall(), key=repr)
        files = list(out.rglob("*.parquet"))
        back = (
            sorted(
                con.sql(
                    f"SELECT day, node, cluster, in_fleet_s, maintenance_s, available_s, degraded_s, "
                    f"unavailable_s, unknown_s, availability FROM read_parquet('{out}/**/*.parquet', "
                    "hive_partitioning = true)"
                ).fetchall(),
                key=repr,
            )
            if files
            else []
        )
        assert back == expected


def test_csv_text_reads_back_as_text_in_duckdb_and_polars(fixture_db, tmp_path):
    # Job ids that look like numbers (`001` .. `005`, from j1 .. j5) must come back as written,
    # not as the integers 1 .. 5: text columns are quoted (DuckDB's reader keeps quoted values
    # as text) and `<table>/schema.json` gives their types (for readers such as polars).
    import json

    import polars as pl

    con = connect(fixture_db)
    con.execute("UPDATE job_outcomes SET job_id = '00' || substr(job_id, 2)")
    con.close()
    ro = connect(fixture_db, read_only=True)
    try:
        out = tmp_path / "lake"
        export_week(ro, W48, out, "csv", ["job_outcomes"])
        back = ro.sql(
            f"SELECT job_id FROM read_csv('{out}/job_outcomes/**/*.csv', hive_partitioning = true)"
        )
        assert back.types == ["VARCHAR"]
        assert sorted(r[0] for r in back.fetchall()) == ["001", "002", "003", "004", "005"]
    finally:
        ro.close()
    schema = json.loads((out / "job_outcomes" / "schema.json").read_text())
    assert (
        schema["job_id"] == "VARCHAR" and "week" not in schema
    )  # a partition column is in the path
    text = {column: pl.String for column, type_name in schema.items() if type_name == "VARCHAR"}
    (file,) = (out / "job_outcomes").glob("week=*/*.csv")
    frame = pl.read_csv(file, schema_overrides=text)
    assert sorted(frame["job_id"].to_list()) == ["001", "002", "003", "004", "005"]
    assert frame.columns == list(schema)
