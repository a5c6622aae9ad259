"""Error counters as rates per hour (queries/app/node_counter_rates.sql over the rollup's
reset-safe `increase`, queries/derived/gpu_samples_15m.sql) and the clock-event reasons decoded
per NVIDIA's bits, on hand-worked samples: a counter reset counts as the new value, never as a
negative rate."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from itertools import pairwise
from pathlib import Path

import duckdb
import hypothesis.strategies as st
import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings

from pipelines.sample_rollups import update_gpu_samples_15m
from pipelines.sql import query_pl
from pipelines.store import open_store
from testkit.landing_rows import add_gpu_samples

MONDAY = datetime(2026, 11, 23, tzinfo=UTC)
WEEK = {"node": "n1", "cluster": "c1", "week_start": MONDAY, "week_end": MONDAY + timedelta(days=7)}
PCIE = "DCGM_FI_DEV_PCIE_REPLAY_COUNTER"
FLIT = "DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL"
NIC = "nic_link_errors_total"
REASONS = "DCGM_FI_DEV_CLOCKS_EVENT_REASONS"


def at(hour: int, minute: int = 0) -> datetime:
    """Monday 2026-11-23 <hour>:<minute> UTC (negative hours: the Sunday before)."""
    return MONDAY + timedelta(hours=hour, minutes=minute)


# gpu 0's PCIe replay counter: (time, value) and the increase it adds, by hand
PCIE_SAMPLES = [
    (at(-1, 55), 10.0),  # the week before: only the start of the first increase
    (at(0, 0), 12.0),  # +2
    (at(0, 20), 15.0),  # +3
    (at(0, 40), 15.0),  # +0
    (at(1, 0), 4.0),  # reset (GPU reset): counts as the new value, +4, never -11
    (at(1, 30), 9.0),  # +5
    (at(2, 0), 9.0),  # +0
]
# node-level NIC error counter (node_samples), same arithmetic on raw samples
NIC_SAMPLES = [
    (at(-1, 50), 100.0),
    (at(0, 10), 130.0),  # +30
    (at(0, 50), 0.0),  # reset to 0: +0
    (at(1, 10), 6.0),  # +6
]


def build(path: Path) -> duckdb.DuckDBPyConnection:
    con = open_store(path)
    rows = [(t, "n1", 0, "GPU-0", PCIE, v) for t, v in PCIE_SAMPLES]
    # gpu 1's NVLink CRC counter never moves: a rate of 0, not missing
    rows += [(t, "n1", 1, "GPU-1", FLIT, 7.0) for t, _ in PCIE_SAMPLES]
    # a gauge is no counter: no increase
    rows += [(t, "n1", 0, "GPU-0", "DCGM_FI_DEV_GPU_TEMP", 50.0) for t, _ in PCIE_SAMPLES]
    add_gpu_samples(con, [("c1", *row) for row in rows])
    con.executemany(
        "INSERT INTO node_samples VALUES ('c1', ?, 'n1', ?, ?)",
        [(t, NIC, v) for t, v in NIC_SAMPLES],
    )
    update_gpu_samples_15m(con)
    return con


@pytest.fixture
def con(tmp_path: Path):
    connection = build(tmp_path / "fleet.duckdb")
    yield connection
    connection.close()


def rates(con: duckdb.DuckDBPyConnection, bucket_s: int) -> dict[tuple, tuple[float, float]]:
    frame = query_pl(con, "app/node_counter_rates", {**WEEK, "bucket_s": bucket_s})
    return {
        (r["metric"], r["gpu"], r["bucket_ts"]): (r["increase"], r["per_hour"])
        for r in frame.iter_rows(named=True)
    }


@pytest.mark.parametrize(
    ("metric", "gpu", "hour", "increase", "per_hour"),
    [
        (PCIE, 0, 0, 5.0, 5.0),  # 00:00 +2, 00:20 +3, 00:40 +0
        (PCIE, 0, 1, 9.0, 9.0),  # 01:00 reset to 4 (+4), 01:30 +5
        (PCIE, 0, 2, 0.0, 0.0),  # 02:00 unchanged
        (FLIT, 1, 0, 0.0, 0.0),  # constant counter
        (FLIT, 1, 1, 0.0, 0.0),
        (NIC, None, 0, 30.0, 30.0),  # 00:10 +30, 00:50 reset to 0 (+0)
        (NIC, None, 1, 6.0, 6.0),  # 01:10 +6
    ],
)
def test_hourly_rates(
    con, metric: str, gpu: int | None, hour: int, increase: float, per_hour: float
) -> None:
    assert rates(con, 3600)[(metric, gpu, at(hour))] == (increase, per_hour)


@pytest.mark.parametrize(
    ("hour", "minute", "increase", "per_hour"),
    [
        (0, 0, 2.0, 8.0),  # 00:00-00:15: +2 in a quarter hour = 8 per hour
        (0, 15, 3.0, 12.0),  # 00:20 +3
        (0, 30, 0.0, 0.0),  # 00:40 +0
        (1, 0, 4.0, 16.0),  # the reset: +4 (the new value)
        (1, 30, 5.0, 20.0),
    ],
)
def test_quarter_hour_rates(con, hour: int, minute: int, increase: float, per_hour: float) -> None:
    assert rates(con, 900)[(PCIE, 0, at(hour, minute))] == (increase, per_hour)


def test_no_rate_is_negative_and_no_bucket_before_the_week(con) -> None:
    frame = query_pl(con, "app/node_counter_rates", {**WEEK, "bucket_s": 3600})
    lowest = frame["per_hour"].min()
    assert isinstance(lowest, float) and lowest >= 0  # a DOUBLE column, not empty
    assert frame["bucket_ts"].min() == MONDAY
    assert "DCGM_FI_DEV_GPU_TEMP" not in frame["metric"].to_list()


def test_rollup_increase_only_for_counters(con) -> None:
    rows = con.execute(
        "SELECT metric, count(*) FILTER (WHERE increase IS NULL), sum(increase) FROM gpu_samples_15m GROUP BY 1"
    ).fetchall()
    by_metric = {m: (nulls, total) for m, nulls, total in rows}
    # PCIe: 2 + 3 + 4 + 5 (the 23:55 sample starts the series: no increase of its own)
    assert by_metric[PCIE] == (0, 14.0)
    assert by_metric[FLIT] == (0, 0.0)
    assert by_metric["DCGM_FI_DEV_GPU_TEMP"] == (7, None)


# ---------------------------------------------------------------- clock-event reasons

BITS = {
    "gpu_idle": 0x1,
    "applications_clocks_setting": 0x2,
    "sw_power_cap": 0x4,
    "hw_slowdown": 0x8,
    "sync_boost": 0x10,
    "sw_thermal_slowdown": 0x20,
    "hw_thermal_slowdown": 0x40,
    "hw_power_brake_slowdown": 0x80,
    "display_clock_setting": 0x100,
}


@pytest.mark.parametrize(
    ("mask", "reasons"),
    [
        (0, set()),
        (1, {"gpu_idle"}),
        (0x20 | 0x40, {"sw_thermal_slowdown", "hw_thermal_slowdown"}),  # 96: thermal
        (0x4 | 0x8, {"sw_power_cap", "hw_slowdown"}),  # 12
        (0x80 | 0x100, {"hw_power_brake_slowdown", "display_clock_setting"}),
    ],
)
@pytest.mark.parametrize("field", [REASONS, "DCGM_FI_DEV_CLOCK_THROTTLE_REASONS"])
def test_clock_event_reasons_decoded(
    tmp_path: Path, field: str, mask: int, reasons: set[str]
) -> None:
    con = open_store(tmp_path / "fleet.duckdb")
    add_gpu_samples(con, [("c1", at(0), "n1", 0, "GPU-0", field, float(mask))])
    update_gpu_samples_15m(con)
    found = dict(
        con.execute(
            "SELECT split_part(metric, '/', 2), value_max FROM gpu_samples_15m WHERE metric LIKE ? || '/%'",
            [field],
        ).fetchall()
    )
    con.close()
    assert set(found) == set(BITS)  # every documented bit gets a row
    assert {reason for reason, active in found.items() if active == 1.0} == reasons


# ---------------------------------------------------------------- property


def prometheus_increase(values: list[float]) -> float:
    """Sum over consecutive samples of the rise, a drop counting as the new value."""
    return sum(v if v < prev else v - prev for prev, v in pairwise(values))


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(st.lists(st.integers(min_value=0, max_value=1000), min_size=2, max_size=40))
def test_week_increase_is_prometheus_increase(tmp_path_factory, values: list[int]) -> None:
    path = tmp_path_factory.mktemp("prop") / "fleet.duckdb"
    con = open_store(path)
    samples = [
        (at(0, 0) + timedelta(minutes=7 * i), "n1", 0, "GPU-0", PCIE, float(v))
        for i, v in enumerate(values)
    ]
    add_gpu_samples(con, [("c1", *sample) for sample in samples])
    update_gpu_samples_15m(con)
    frame = query_pl(con, "app/node_counter_rates", {**WEEK, "bucket_s": 3600})
    con.close()
    lowest = frame["increase"].min()
    assert isinstance(lowest, float) and lowest >= 0  # a DOUBLE column, not empty
    assert frame.filter(pl.col("metric") == PCIE)["increase"].sum() == pytest.approx(
        prometheus_increase([float(v) for v in values])
    )
