"""ISO weeks: labels, bounds as dates and as UTC instants, this/last, and DuckDB agrees."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta

import duckdb
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pipelines.errors import ConfigError
from pipelines.weeks import IsoWeek, parse_week

DUCKDB = duckdb.connect()


@pytest.mark.parametrize(
    ("text", "monday", "sunday", "previous"),
    [
        ("2026-W48", date(2026, 11, 23), date(2026, 11, 29), "2026-W47"),  # the SPEC's example week
        (
            "2026-W01",
            date(2025, 12, 29),
            date(2026, 1, 4),
            "2025-W52",
        ),  # ISO 2026 starts on Mon 2025-12-29
        ("2026-W53", date(2026, 12, 28), date(2027, 1, 3), "2026-W52"),  # 2026 has 53 ISO weeks
        ("2027-W01", date(2027, 1, 4), date(2027, 1, 10), "2026-W53"),
        ("2021-W01", date(2021, 1, 4), date(2021, 1, 10), "2020-W53"),  # 2020 has 53 ISO weeks
        ("2020-W53", date(2020, 12, 28), date(2021, 1, 3), "2020-W52"),
    ],
)
def test_iso_weeks(text: str, monday: date, sunday: date, previous: str) -> None:
    week = IsoWeek.parse(text)
    assert week.label == str(week) == text
    assert (week.monday, week.sunday) == (monday, sunday)
    assert week.start == datetime(monday.year, monday.month, monday.day, tzinfo=UTC)
    assert week.end == week.start + timedelta(days=7)
    assert week.previous.label == previous
    assert parse_week(text) == week
    assert parse_week(f" {text} ") == week


@pytest.mark.parametrize(
    "text",
    [
        "2026-48",
        "2026-W4",
        "2026-W54",
        "2021-W53",
        "2025-W53",
        "W48",
        "",
        "2026-w48",
        "2026-w48x",
        "2026-W48x",
    ],
)
def test_malformed_or_impossible_weeks_are_rejected(text: str) -> None:
    with pytest.raises(ValueError):
        IsoWeek.parse(text)
    with pytest.raises(ConfigError, match="not an ISO week"):
        parse_week(text)


@pytest.mark.parametrize(("year", "week"), [(2026, 54), (2021, 53), (2026, 0)])
def test_a_week_the_year_lacks_cannot_be_built(year: int, week: int) -> None:
    with pytest.raises(ValueError):
        IsoWeek(year, week)


@pytest.mark.parametrize(
    ("text", "label"),
    # Wed 2026-12-02 is in W49. 2027-W01 starts Mon 2027-01-04: on Mon 2027-01-11 (W02) last week
    # is 2027-W01, on Mon 2027-01-04 it is 2026-W53 (2026 has 53 ISO weeks).
    [("this", "2026-W49"), ("last", "2026-W48"), ("LAST", "2026-W48"), (" This ", "2026-W49")],
)
def test_relative_weeks(text: str, label: str) -> None:
    assert parse_week(text, today=date(2026, 12, 2)).label == label
    assert parse_week("last", today=date(2027, 1, 11)).label == "2027-W01"
    assert parse_week("last", today=date(2027, 1, 4)).label == "2026-W53"


@settings(max_examples=100, deadline=None)
@given(st.dates(min_value=date(2000, 1, 1), max_value=date(2100, 12, 31)))
def test_every_day_lies_in_its_iso_week(day: date) -> None:
    week = IsoWeek.of(day)
    assert week.monday.isoweekday() == 1 and week.sunday.isoweekday() == 7
    assert week.monday <= day <= week.sunday
    assert week.start.date() <= day < week.end.date() == week.sunday + timedelta(days=1)
    assert week.end - week.start == timedelta(days=7)
    assert IsoWeek.parse(str(week)) == week and parse_week(week.label) == week
    assert week.previous.end == week.start
    # The SQL side labels weeks with strftime('%G-W%V') and truncates to ISO Mondays: same answers.
    label, monday = DUCKDB.execute(
        "SELECT strftime($day::DATE, '%G-W%V'), CAST(date_trunc('week', $day::DATE) AS DATE)",
        {"day": day},
    ).fetchall()[0]
    assert (label, monday) == (week.label, week.monday)
