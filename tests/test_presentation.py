"""One number reads the same on the dashboard and in the report: the KPI tiles and the report's
summary table format the same weekly_summary values through `pipelines.presentation`."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import duckdb
import pytest

from gpufleet_app.kpis import ESCAPE_KPIS, KPIS
from pipelines import presentation
from pipelines.report import _gpu_h, _pct, _seconds, _ts
from pipelines.sql import query_pl

# Both weeks' values of each KPI column, chosen so every unit's rounding and sign shows:
# ratios to 2 decimals of %, hours to 1 decimal with thousands, counts whole.
THIS_WEEK = {
    "node_availability": 0.997531,
    "job_success_rate": 0.949367,
    "job_success_rate_gpu_h": 0.98587,
    "goodput": 0.963449,
    "ettr": 0.068456,
    "mtbf_h": 103.14,
    "mttr_h": 0.33,
    "interruptions_per_1k_gpu_days": 93.46,
    "escape_rate": 0.25,
    "jobs_placed_on_flagged": 3.0,
    "median_lead_time_s": 3725.0,
}
PREVIOUS_WEEK = {
    "node_availability": 0.992634,
    "job_success_rate": 0.945455,
    "job_success_rate_gpu_h": 0.977704,
    "goodput": 0.955823,
    "ettr": 0.123906,
    "mtbf_h": 1330.08,
    "mttr_h": 9.94,
    "interruptions_per_1k_gpu_days": 123.31,
    "escape_rate": 1.0,
    "jobs_placed_on_flagged": 1.0,
    "median_lead_time_s": 95.0,
}
DELIBERATELY_DIFFERENT = {"median_lead_time_s"}
"""The tile reads a lead time as a duration (`1 h 02 min`); the report's table in hours."""


@pytest.fixture(scope="module")
def report_summary() -> dict[str, dict]:
    """`queries/report/summary.sql` over a weekly_summary of two weeks, one row per metric."""
    con = duckdb.connect()
    columns = list(THIS_WEEK)
    con.execute(
        "CREATE TABLE weekly_summary (week VARCHAR, cluster VARCHAR, week_start DATE, "
        + ", ".join(f"{c} DOUBLE" for c in columns)
        + ")"
    )
    for week, start, values in (
        ("2026-W47", "2026-11-16", THIS_WEEK),
        ("2026-W46", "2026-11-09", PREVIOUS_WEEK),
    ):
        con.execute(
            f"INSERT INTO weekly_summary VALUES (?, '*', ?, {', '.join('?' for _ in columns)})",
            [week, start, *(values[c] for c in columns)],
        )
    rows = query_pl(con, "report/summary", {"week": "2026-W47", "cluster": "*"})
    return {r["metric"]: r for r in rows.iter_rows(named=True)}


def test_every_kpi_tile_is_a_metric_of_the_report(report_summary):
    assert {k.column for k in KPIS + ESCAPE_KPIS} <= set(report_summary)


@pytest.mark.parametrize(
    "kpi",
    [k for k in KPIS + ESCAPE_KPIS if k.column not in DELIBERATELY_DIFFERENT],
    ids=lambda k: k.column,
)
def test_tile_and_report_read_the_same_number_alike(kpi, report_summary):
    row = report_summary[kpi.column]
    assert kpi.value(row["value"]) == presentation.in_unit(row["value"], row["unit"])
    assert kpi.value(row["previous"]) == presentation.in_unit(row["previous"], row["unit"])
    assert kpi.change(row["value"], row["previous"]) == presentation.change_in(
        row["delta"], row["unit"]
    )


def test_the_shared_units_by_hand():
    # 0.997531 = 99.7531 %; 0.997531 - 0.992634 = 0.004897 = +0.49 pp.
    assert presentation.in_unit(0.997531, "ratio") == "99.75 %"
    assert presentation.change_in(0.997531 - 0.992634, "ratio") == "+0.49 pp"
    # 103.14 - 1330.08 = -1226.94 h.
    assert presentation.in_unit(1330.08, "hours") == "1,330.1 h"
    assert presentation.change_in(103.14 - 1330.08, "hours") == "-1,226.9 h"
    # 3725 s = 1.03 h.
    assert presentation.in_unit(3725.0, "seconds") == "1.0 h"
    assert presentation.in_unit(3.0, "jobs") == "3"
    assert presentation.change_in(2.0, "attempts") == "+2"
    assert presentation.in_unit(93.46, "per 1,000 GPU-days") == "93.5"
    assert presentation.change_in(-29.84, "GPU-hours") == "-29.8"


def test_missing_is_never_zero():
    for unit in ("ratio", "hours", "seconds", "jobs", "GPUs"):
        assert presentation.in_unit(None, unit) == "n/a"
        assert presentation.in_unit(float("nan"), unit) == "n/a"
        assert presentation.change_in(None, unit) == "n/a"
    for tile in KPIS + ESCAPE_KPIS:
        assert tile.value(None) == presentation.MISSING == "—"
        assert tile.change(None, 0.5) is None


def test_report_cells_and_tiles_share_their_digits():
    assert _gpu_h(1234.56) == "1,234.6"
    assert presentation.gpu_hours(1234.56) == "1,234.6 GPU-h"
    assert _pct(0.8594) == presentation.pct(0.8594) == "85.94 %"
    assert _seconds(1799.6) == "1,800 s"
    assert _gpu_h(None) == _pct(None) == _seconds(None) == "n/a"


def test_timestamps_read_in_utc():
    berlin = timezone(timedelta(hours=1))
    at = datetime(2026, 11, 25, 11, 0, tzinfo=berlin)
    assert presentation.timestamp(at) == "2026-11-25 10:00 UTC"
    assert _ts(at) == "2026-11-25 10:00"
    assert _ts(datetime(2026, 11, 25, 10, 0, tzinfo=UTC)) == "2026-11-25 10:00"
    assert _ts(None) == ""
    assert presentation.timestamp(None) == "—"
