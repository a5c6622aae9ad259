"""GPU samples stored as series and values behind the `gpu_samples` view (queries/schema/landing.sql).

The view must give back exactly the rows the contract describes, whatever the batches; a GPU
swapped under one index stays two series; an older database of string rows upgrades in place.
"""

from __future__ import annotations

import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import duckdb
import polars as pl
import pytest

from pipelines.errors import InputError
from pipelines.sources.files import ingest_files
from pipelines.store import open_store, table_columns
from testkit.landing_rows import GPU_SAMPLE_SCHEMA
from tests.conftest import database_of_schema_at

STRING_ROWS_SCHEMA = "29cab93"
"""The last commit whose gpu_samples was a table of string rows."""
UTIL = "DCGM_FI_DEV_GPU_UTIL"
TEMP = "DCGM_FI_DEV_GPU_TEMP"


def at(minute: int) -> datetime:
    return datetime(2026, 11, 23, 0, minute, tzinfo=UTC)


# n1 gpu 0 is swapped at minute 2 (GPU-A -> GPU-B); n2 reports no UUID.
ROWS = [
    ("east", at(0), "n1", 0, "GPU-A", UTIL, 10.0),
    ("east", at(1), "n1", 0, "GPU-A", UTIL, 11.0),
    ("east", at(2), "n1", 0, "GPU-B", UTIL, 12.0),
    ("east", at(0), "n1", 0, "GPU-A", TEMP, 40.0),
    ("east", at(0), "n2", 3, None, UTIL, 50.0),
    ("west", at(0), "n1", 0, "GPU-W", UTIL, 70.0),
]


def frame(rows) -> pl.DataFrame:
    return pl.DataFrame(list(rows), schema=GPU_SAMPLE_SCHEMA, orient="row")


def write_batch(folder: Path, rows) -> Path:
    folder.mkdir(parents=True)
    frame(rows).write_parquet(folder / "gpu_samples.parquet")
    return folder


def in_order(rows) -> list[tuple]:
    return sorted(rows, key=lambda row: tuple((v is None, v) for v in row))


def stored(con: duckdb.DuckDBPyConnection) -> list[tuple]:
    return in_order(
        con.execute(
            "SELECT cluster, ts, node, gpu, uuid, metric, value FROM gpu_samples"
        ).fetchall()
    )


def test_the_view_gives_back_every_sample_and_each_series_is_stored_once(con, tmp_path):
    (result,) = ingest_files(con, write_batch(tmp_path / "b", ROWS))
    assert result.rows_new == 6
    assert stored(con) == in_order(ROWS)
    # (east n1 0 GPU-A UTIL), (east n1 0 GPU-B UTIL), (east n1 0 GPU-A TEMP), (east n2 3 - UTIL),
    # (west n1 0 GPU-W UTIL): five series for six samples.
    assert con.execute("SELECT count(*) FROM gpu_series").fetchall() == [(5,)]
    assert con.execute("SELECT count(*) FROM gpu_sample_values").fetchall() == [(6,)]
    assert con.execute(
        "SELECT count(*) = count(DISTINCT series_id) FROM gpu_series"
    ).fetchall() == [(True,)]


def test_batches_in_any_order_and_repeated_give_the_same_rows(tmp_path):
    one = open_store(tmp_path / "one.duckdb")
    ingest_files(one, write_batch(tmp_path / "all", ROWS))
    other = open_store(tmp_path / "other.duckdb")
    ingest_files(other, write_batch(tmp_path / "late", ROWS[3:]))
    ingest_files(other, write_batch(tmp_path / "early", ROWS[:3]))
    (again,) = ingest_files(other, write_batch(tmp_path / "again", ROWS))
    assert (again.rows_new, again.rows_updated) == (0, 0)
    assert stored(other) == stored(one)
    assert other.execute("SELECT count(*) FROM gpu_series").fetchall() == [(5,)]


def test_values_are_stored_by_time_then_metric_whatever_order_the_rows_came_in(con, tmp_path):
    # Rows arrive GPU by GPU, newest first; stored, each scrape's values run metric by metric
    # (series ids are metric-major), which is what lets one metric's values compress together.
    gpus = [("n1", 0), ("n1", 1), ("n2", 0)]
    arriving = [
        ("east", at(minute), node, gpu, f"GPU-{node}-{gpu}", metric, float(minute))
        for node, gpu in gpus
        for minute in (2, 1, 0)
        for metric in (UTIL, TEMP)
    ]
    ingest_files(con, write_batch(tmp_path / "b", arriving))
    ids = dict(
        con.execute(
            "SELECT (metric, node, gpu), series_id FROM gpu_series ORDER BY series_id"
        ).fetchall()
    )
    metric_major = sorted(ids, key=lambda series: (series[0], series[1], series[2]))
    assert list(ids) == metric_major
    physical = con.execute("SELECT ts, series_id FROM gpu_sample_values ORDER BY rowid").fetchall()
    assert physical == sorted(physical)
    assert len(physical) == 18


def test_a_stored_sample_wins_over_a_later_different_value_of_its_key(con, tmp_path):
    ingest_files(con, write_batch(tmp_path / "first", ROWS[:1]))
    (later,) = ingest_files(con, write_batch(tmp_path / "later", [ROWS[0][:6] + (99.0,), ROWS[1]]))
    assert later.rows_new == 1
    assert [r[6] for r in stored(con)] == [10.0, 11.0]


def test_the_contract_columns_keep_not_null(con, tmp_path):
    required = {c.name for c in table_columns(con, "gpu_samples") if not c.nullable}
    assert required == {"cluster", "ts", "node", "gpu", "metric", "value"}
    folder = tmp_path / "bad"
    folder.mkdir()
    (folder / "gpu_samples.csv").write_text(
        "cluster,ts,node,gpu,uuid,metric,value\neast,2026-11-23T00:00:00Z,n1,0,GPU-A,,1.0\n"
    )
    with pytest.raises(InputError) as refused:
        ingest_files(con, folder)
    assert "metric" in str(refused.value) and "gpu_samples.csv" in str(refused.value)
    assert stored(con) == []


def test_a_database_of_string_rows_upgrades_to_series_and_values(tmp_path):
    path = tmp_path / "old.duckdb"
    con = database_of_schema_at(STRING_ROWS_SCHEMA, path)
    con.executemany("INSERT INTO gpu_samples VALUES (?, ?, ?, ?, ?, ?, ?)", ROWS)
    before = stored(con)
    con.close()

    upgraded = open_store(path)
    assert upgraded.execute(
        "SELECT table_type FROM information_schema.tables WHERE table_name = 'gpu_samples'"
    ).fetchall() == [("VIEW",)]
    assert stored(upgraded) == before
    assert upgraded.execute("SELECT count(*) FROM gpu_series").fetchall() == [(5,)]
    assert upgraded.execute("SELECT source FROM load_log").fetchall() == [("migrate:compact",)]
    upgraded.close()
    # A second open finds nothing to do.
    again = open_store(path)
    assert again.execute("SELECT count(*) FROM load_log").fetchall() == [(1,)]
    assert stored(again) == before


def test_gpufleet_migrate_upgrades_and_rewrites_the_file_without_the_old_rows(tmp_path):
    path = tmp_path / "old.duckdb"
    con = database_of_schema_at(STRING_ROWS_SCHEMA, path)
    # 2 clusters x 16 nodes x 8 GPUs x 4 fields x 600 scrapes: 614,400 samples of 1,024 series.
    con.execute(
        "INSERT INTO gpu_samples SELECT 'cluster-' || (i // 4) % 2, TIMESTAMPTZ "
        "'2026-11-23 00:00:00+00' + to_minutes(i // 1024), 'node-' || (i // 64) % 16, "
        "(i // 8) % 8, 'GPU-' || (i // 4) % 256, 'DCGM_FI_FIELD_' || i % 4, (i % 97)::DOUBLE "
        "FROM range(614400) r(i)"
    )
    before = con.execute(
        "SELECT count(*), sum(value), count(DISTINCT (cluster, node, gpu, metric)) FROM gpu_samples"
    ).fetchall()
    con.close()

    done = subprocess.run(
        [sys.executable, "-m", "pipelines", "--db", str(path), "migrate"],
        capture_output=True,
        text=True,
        check=False,
        cwd=Path(__file__).parent.parent,
    )
    assert done.returncode == 0, done.stderr
    assert "Upgraded gpu_samples" in done.stdout
    con = duckdb.connect(str(path), read_only=True)
    assert (
        con.execute(
            "SELECT count(*), sum(value), count(DISTINCT (cluster, node, gpu, metric)) FROM gpu_samples"
        ).fetchall()
        == before
    )
    assert before[0][2] == 1024
    assert con.execute("SELECT count(*) FROM gpu_series").fetchall() == [(1024,)]
    # Rewritten, not just converted: no block of the dropped string rows is left as free space.
    assert con.execute("SELECT free_blocks FROM pragma_database_size()").fetchall() == [(0,)]
    con.close()
