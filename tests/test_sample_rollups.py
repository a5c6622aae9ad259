"""gpu_samples_15m and gpu_scrapes kept between computes (pipelines/sample_rollups.py): an update
rebuilds the rows from the earliest sample loaded since the last compute and keeps the rest, and
the rows always equal one build from all samples. Hand-worked cases, then a property over random fleets
loaded in random pieces and orders."""

from __future__ import annotations

import itertools
from datetime import UTC, datetime, timedelta
from pathlib import Path

import duckdb
import hypothesis.strategies as st
import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings

from pipelines.sample_rollups import update_gpu_samples_15m, update_gpu_scrapes
from pipelines.sources.files import ingest_files
from pipelines.sql import execute_script
from pipelines.store import open_store
from pipelines.times import FAR_FUTURE, FAR_PAST
from testkit.equivalence import table_differences
from testkit.landing_rows import GPU_SAMPLE_SCHEMA, add_gpu_samples

T0 = datetime(2026, 11, 23, tzinfo=UTC)
PCIE = "DCGM_FI_DEV_PCIE_REPLAY_COUNTER"
TEMP = "DCGM_FI_DEV_GPU_TEMP"
REASONS = "DCGM_FI_DEV_CLOCKS_EVENT_REASONS"
UTIL = "DCGM_FI_DEV_GPU_UTIL"


def at(minutes: float) -> datetime:
    return T0 + timedelta(minutes=minutes)


def increases(con: duckdb.DuckDBPyConnection) -> dict[datetime, float]:
    rows = con.execute(
        "SELECT bucket_ts, increase FROM gpu_samples_15m WHERE metric = ? ORDER BY 1", [PCIE]
    ).fetchall()
    return dict(rows)


def test_a_counter_step_counts_from_a_sample_of_the_last_day(tmp_path: Path) -> None:
    con = open_store(tmp_path / "fleet.duckdb")
    day = 24 * 60
    samples = [
        (0, 5.0),  # first sample: nothing before it, +0
        (10, 7.0),  # +2
        (2 * day, 9.0),  # two days later (a node back from an outage): starts afresh, +0
        (2 * day + 5, 3.0),  # reset: counts as the new value, +3
        (3 * day + 5, 4.0),  # exactly 24 h after the one before: still counted, +1
    ]
    add_gpu_samples(con, [("c1", at(m), "n1", 0, "GPU-0", PCIE, v) for m, v in samples])
    update_gpu_samples_15m(con)
    assert increases(con) == {
        at(0): 2.0,
        at(2 * day): 3.0,
        at(3 * day): 1.0,
    }


def test_an_update_counts_a_step_from_a_kept_bucket(tmp_path: Path) -> None:
    # 00:00 5 -> 00:10 5 -> 00:20 8 (+3); the update brings 01:00 8 -> 01:10 12 -> 01:20 12. Within
    # the update the counter moves (+4), and its first step (+0 from 8) needs the kept samples.
    # Then 02:00 15 alone: constant within its update, +3 from the kept 12.
    con = open_store(tmp_path / "fleet.duckdb")
    add_gpu_samples(
        con, [("c1", at(m), "n1", 0, "GPU-0", PCIE, v) for m, v in [(0, 5), (10, 5), (20, 8)]]
    )
    update_gpu_samples_15m(con)
    add_gpu_samples(
        con, [("c1", at(m), "n1", 0, "GPU-0", PCIE, v) for m, v in [(60, 8), (70, 12), (80, 12)]]
    )
    update_gpu_samples_15m(con)
    add_gpu_samples(con, [("c1", at(120), "n1", 0, "GPU-0", PCIE, 15.0)])
    update_gpu_samples_15m(con)
    assert increases(con) == {at(0): 0.0, at(15): 3.0, at(60): 4.0, at(75): 0.0, at(120): 3.0}


def test_an_update_rebuilds_only_the_buckets_from_the_new_samples_on(tmp_path: Path) -> None:
    con = open_store(tmp_path / "fleet.duckdb")
    add_gpu_samples(
        con, [("c1", at(m), "n1", 0, "GPU-0", TEMP, 50.0 + m) for m in range(0, 120, 10)]
    )
    update_gpu_samples_15m(con)
    # A mark on a kept bucket: an update that rebuilt it would erase the mark.
    con.execute("UPDATE gpu_samples_15m SET value_avg = -1 WHERE bucket_ts = ?", [at(0)])
    add_gpu_samples(con, [("c1", at(125), "n1", 0, "GPU-0", TEMP, 90.0)])
    update_gpu_samples_15m(con)
    kept = con.execute("SELECT value_avg FROM gpu_samples_15m WHERE bucket_ts = ?", [at(0)])
    assert kept.fetchall() == [(-1.0,)]
    # The new sample opened the 02:00 bucket (the first loads ended at 01:50).
    assert con.execute(
        "SELECT samples, value_avg FROM gpu_samples_15m WHERE bucket_ts = ?", [at(120)]
    ).fetchall() == [(1, 90.0)]
    # A late sample in the first bucket moves the rebuild back to it: the mark goes.
    add_gpu_samples(con, [("c1", at(5), "n1", 0, "GPU-0", TEMP, 55.0)])
    update_gpu_samples_15m(con)
    assert con.execute(
        "SELECT samples, value_avg FROM gpu_samples_15m WHERE bucket_ts = ?", [at(0)]
    ).fetchall() == [(3, 55.0)]  # 50, 60 and the late 55
    assert con.execute("SELECT count(*) FROM gpu_samples_loaded").fetchall() == [(0,)]


def test_an_update_rebuilds_only_the_scrapes_from_the_new_samples_on(tmp_path: Path) -> None:
    con = open_store(tmp_path / "fleet.duckdb")
    add_gpu_samples(
        con,
        [
            ("c1", at(m), "n1", 0, "GPU-0", metric, 50.0 + m)
            for m in range(0, 60, 10)
            for metric in (TEMP, UTIL)
        ],
    )
    update_gpu_scrapes(con)
    update_gpu_samples_15m(con)
    assert con.execute("SELECT count(*) FROM gpu_scrapes").fetchall() == [(6,)]
    # Marks on two kept scrapes, 00:10 and 00:50: an update that rebuilt either would erase it.
    con.execute("UPDATE gpu_scrapes SET temp = -1 WHERE ts IN (?, ?)", [at(10), at(50)])
    # A sample at 00:55 rebuilds from its bucket's start, 00:45: the 00:50 scrape, not 00:10.
    add_gpu_samples(con, [("c1", at(55), "n1", 0, "GPU-0", UTIL, 7.0)])
    update_gpu_scrapes(con)
    rows = con.execute("SELECT ts, util, temp FROM gpu_scrapes WHERE ts >= ? ORDER BY ts", [at(10)])
    assert rows.fetchall() == [
        (at(10), 60.0, -1.0),
        (at(20), 70.0, 70.0),
        (at(30), 80.0, 80.0),
        (at(40), 90.0, 90.0),
        (at(50), 100.0, 100.0),
        (at(55), 7.0, None),  # a scrape with the utilisation alone: no temperature
    ]
    # The record of the load stays for the rollup, which the compute updates after the passes.
    assert con.execute("SELECT count(*) FROM gpu_samples_loaded").fetchall() == [(1,)]


def test_loading_the_same_samples_again_leaves_nothing_to_update(tmp_path: Path) -> None:
    folder = tmp_path / "landing"
    folder.mkdir()
    pl.DataFrame(
        [("c1", at(m), "n1", 0, "GPU-0", TEMP, 50.0) for m in range(0, 60, 5)],
        schema=GPU_SAMPLE_SCHEMA,
        orient="row",
    ).write_parquet(folder / "gpu_samples.parquet")
    con = open_store(tmp_path / "fleet.duckdb")
    ingest_files(con, folder)
    assert con.execute("SELECT from_ts FROM gpu_samples_loaded").fetchall() == [(at(0),)]
    update_gpu_samples_15m(con)
    ingest_files(con, folder)
    assert con.execute("SELECT count(*) FROM gpu_samples_loaded").fetchall() == [(0,)]


# ---------------------------------------------------------------- property

# Two clusters with the same node name, a GPU swapped mid-way (a new UUID in the same slot), a
# counter, gauges and a clock-reasons bitmask: every shape the rollup groups or orders by, and
# two fields of one GPU's scrape (utilisation, whose series gpu_scrapes keeps, and temperature).
SERIES = [
    ("c1", "n1", 0, PCIE),
    ("c1", "n1", 0, TEMP),
    ("c1", "n1", 0, UTIL),
    ("c1", "n1", 1, REASONS),
    ("c2", "n1", 0, PCIE),
]

sample_lists = st.lists(
    st.tuples(
        st.integers(min_value=0, max_value=3 * 24 * 60),  # minute of a 3-day span
        st.sampled_from(range(len(SERIES))),
        st.integers(min_value=0, max_value=40),
    ),
    min_size=1,
    max_size=60,
    unique_by=lambda s: (s[0], s[1]),
)


def _rows(samples: list[tuple[int, int, int]]) -> list[tuple]:
    rows = []
    for minute, series, value in samples:
        cluster, node, gpu, metric = SERIES[series]
        uuid = f"GPU-{gpu}" if minute < 36 * 60 else f"GPU-{gpu}-swapped"
        rows.append((cluster, at(minute), node, gpu, uuid, metric, float(value)))
    return rows


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(samples=sample_lists, cuts=st.lists(st.integers(0, 59), max_size=4), data=st.data())
def test_updates_in_any_pieces_and_order_equal_one_build(
    tmp_path_factory, samples: list[tuple[int, int, int]], cuts: list[int], data
) -> None:
    folder = tmp_path_factory.mktemp("rollups")
    rows = _rows(samples)
    whole = open_store(folder / "whole.duckdb")
    add_gpu_samples(whole, rows)
    _build_in_one_statement(whole)
    # A rebuild works a day of samples at a time (three or four windows over this span).
    rebuilt = open_store(folder / "rebuilt.duckdb")
    add_gpu_samples(rebuilt, rows)
    update_gpu_scrapes(rebuilt, rebuild=True)
    update_gpu_samples_15m(rebuilt, rebuild=True)
    assert table_differences(rebuilt, whole, "gpu_samples_15m") is None
    assert table_differences(rebuilt, whole, "gpu_scrapes") is None

    bounds = sorted({0, len(rows), *(c for c in cuts if c < len(rows))})
    pieces = [rows[a:b] for a, b in itertools.pairwise(bounds) if b > a]
    order = data.draw(st.permutations(range(len(pieces))), label="load order")
    pieced = open_store(folder / "pieces.duckdb")
    for i in order:
        add_gpu_samples(pieced, pieces[i])
        update_gpu_scrapes(pieced)
        update_gpu_samples_15m(pieced)
    assert table_differences(pieced, whole, "gpu_samples_15m") is None
    # Series ids follow load order; the GPU a scrape's utilisation series names must match.
    assert table_differences(pieced, whole, "gpu_scrapes", ignore=["util_series"]) is None
    assert _scrape_uuids(pieced) == _scrape_uuids(whole)


def _build_in_one_statement(con: duckdb.DuckDBPyConnection) -> None:
    """Both tables as their SQL defines them over all samples at once: one window per cluster
    from before the first sample to after the last."""
    clusters = [r[0] for r in con.execute("SELECT DISTINCT cluster FROM gpu_series").fetchall()]
    for table in ("gpu_scrapes", "gpu_samples_15m"):
        for cluster in clusters:
            params = {"cluster": cluster, "from_ts": FAR_PAST, "to_ts": FAR_FUTURE}
            execute_script(con, f"derived/{table}", params)


def _scrape_uuids(con: duckdb.DuckDBPyConnection) -> list[tuple]:
    return con.execute(
        "SELECT s.cluster, s.node, s.gpu, s.ts, g.uuid FROM gpu_scrapes s "
        "LEFT JOIN gpu_series g ON g.series_id = s.util_series ORDER BY ALL"
    ).fetchall()


@pytest.mark.parametrize("rebuild", [False, True])
def test_a_store_without_samples_has_empty_kept_tables(tmp_path: Path, rebuild: bool) -> None:
    con = open_store(tmp_path / "fleet.duckdb")
    update_gpu_scrapes(con, rebuild=rebuild)
    update_gpu_samples_15m(con, rebuild=rebuild)
    assert con.execute("SELECT count(*) FROM gpu_samples_15m").fetchall() == [(0,)]
    assert con.execute("SELECT count(*) FROM gpu_scrapes").fetchall() == [(0,)]
