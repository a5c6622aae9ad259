"""The app's pure parts: the week filter's parameters, number formats, the default week, the read layer."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta
from pathlib import Path

import duckdb
import pytest

from gpufleet_app import fmt
from gpufleet_app.data import Reader, fingerprint
from gpufleet_app.ui import Filters, default_week, week_label
from pipelines.errors import DatabaseMissingError
from pipelines.weeks import IsoWeek


@pytest.mark.parametrize(
    ("text", "monday", "previous"),
    [
        ("2026-W48", date(2026, 11, 23), "2026-W47"),  # the SPEC's example week
        ("2021-W01", date(2021, 1, 4), "2020-W53"),  # 2020 has 53 ISO weeks
    ],
)
def test_filters_bind_the_week_as_utc_instants(text: str, monday: date, previous: str) -> None:
    # The app's queries compare TIMESTAMPTZ columns with $week_start / $week_end.
    params = Filters(IsoWeek.parse(text), "c1").params()
    start = datetime(monday.year, monday.month, monday.day, tzinfo=UTC)
    assert params == {
        "week": text,
        "week_start": start,
        "week_end": start + timedelta(days=7),
        "prev_week": previous,
        "cluster": "c1",
    }


@pytest.mark.parametrize(
    ("week", "shown"),
    [
        ("2026-W48", "2026-W48 · 23 Nov–29 Nov 2026"),
        ("2026-W01", "2026-W01 · 29 Dec–04 Jan 2026"),  # Mon 2025-12-29 .. Sun 2026-01-04
    ],
)
def test_week_picker_shows_monday_to_sunday(week: str, shown: str) -> None:
    assert week_label(week) == shown


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (fmt.pct(0.99953), "99.95 %"),
        (fmt.pct(1.0), "100.00 %"),
        (fmt.pct(None), "—"),  # missing is shown as missing, never as 0
        (fmt.pct(float("nan")), "—"),
        (fmt.delta_pp(0.9990, 0.9980), "+0.10 pp"),  # (0.9990 - 0.9980) x 100 = 0.10
        (fmt.delta_pp(0.5, 2 / 3), "-16.67 pp"),  # (0.5 - 0.6667) x 100 = -16.67
        (fmt.delta_pp(0.5, None), None),  # no previous week: no delta
        (fmt.hours(334.54), "334.5 h"),
        (fmt.delta(2.5, 1.0, "h"), "+1.5 h"),
        (fmt.gpu_hours(1234.56), "1,234.6 GPU-h"),
        (fmt.number(55.555), "55.6"),
        (fmt.duration_s(3725), "1 h 02 min"),  # 3600 + 2 x 60 + 5
        (fmt.duration_s(95), "1 min 35 s"),
        (fmt.duration_s(36), "36 s"),
        (fmt.compact_s(36.0), "36 s"),
        (fmt.compact_s(570.0), "9.5 min"),  # 570 / 60
        (fmt.compact_s(8640.0), "2.4 h"),  # 8640 / 3600
        (fmt.timestamp(datetime(2026, 11, 25, 10, 0, tzinfo=UTC)), "2026-11-25 10:00 UTC"),
    ],
)
def test_formats(value: str | None, expected: str | None) -> None:
    assert value == expected


@pytest.mark.parametrize(
    ("weeks", "expected"),
    [
        ([("2026-W49", 2), ("2026-W48", 7), ("2026-W47", 7)], "2026-W48"),  # newest full week
        ([("2026-W48", 7), ("2026-W47", 7)], "2026-W48"),
        ([("2026-W49", 3)], "2026-W49"),  # no full week: the newest
    ],
)
def test_default_week(weeks: list[tuple[str, int]], expected: str) -> None:
    assert default_week(weeks) == expected


def test_fingerprint_changes_when_the_file_is_written(tmp_path: Path) -> None:
    db = tmp_path / "fleet.duckdb"
    assert fingerprint(db) is None
    con = duckdb.connect(str(db))
    con.execute("CREATE TABLE t AS SELECT 1 AS x")
    con.close()
    first = fingerprint(db)
    con = duckdb.connect(str(db))
    con.execute("INSERT INTO t SELECT range FROM range(100000)")
    con.close()
    assert fingerprint(db) != first


def test_reader_on_a_missing_file_raises_and_creates_nothing(tmp_path: Path) -> None:
    reader = Reader(tmp_path / "missing.duckdb")
    with pytest.raises(DatabaseMissingError):
        reader.connection()
    assert not (tmp_path / "missing.duckdb").exists()


@pytest.mark.parametrize(
    ("minutes", "breaks"),
    [
        ([0, 15, 30, 45, 60], 0),  # every 15-minute bucket present: one unbroken line
        ([0, 30, 60, 90], 0),  # a 30-minute scrape: sparse but regular, no gap
        ([0, 15, 30, 120, 135], 1),  # 90 minutes of silence after 00:30: one break
    ],
)
def test_gpu_chart_breaks_only_at_telemetry_gaps(minutes: list[int], breaks: int) -> None:
    import polars as pl

    from pipelines.charts import _with_gaps

    start = datetime(2026, 11, 23, tzinfo=UTC)
    samples = pl.DataFrame(
        {
            "gpu": [0] * len(minutes),
            "bucket_ts": [start + timedelta(minutes=m) for m in minutes],
            "value": [1.0] * len(minutes),
        }
    )
    drawn = _with_gaps(samples, 900)
    assert drawn["value"].null_count() == breaks
    assert drawn.height == len(minutes) + breaks
