"""ISO weeks: Python's and DuckDB's week labels agree, and every week round-trips."""

from __future__ import annotations

from datetime import date, timedelta

import duckdb
from hypothesis import given, settings
from hypothesis import strategies as st

from pipelines.weeks import parse_week, week_of

DUCKDB = duckdb.connect()


@settings(max_examples=100, deadline=None)
@given(st.dates(min_value=date(2000, 1, 1), max_value=date(2100, 12, 31)))
def test_week_of_a_day(day):
    week = week_of(day)
    assert week.start.weekday() == 0 and week.start <= day < week.end
    assert week.end - week.start == timedelta(days=7)
    assert parse_week(week.label) == week
    assert week.previous.end == week.start
    # The SQL side labels weeks with strftime('%G-W%V'): it must give the same label.
    assert DUCKDB.execute("SELECT strftime(?::DATE, '%G-W%V')", [day]).fetchall()[0][0] == week.label
