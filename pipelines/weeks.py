"""ISO weeks ('2026-W48' = Mon 2026-11-23 00:00 UTC .. Mon 2026-11-30 00:00 UTC, half-open)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta

from pipelines.errors import ConfigError

_WEEK = re.compile(r"^(\d{4})-W(\d{2})$")


@dataclass(frozen=True)
class IsoWeek:
    """One ISO week: `label` 'YYYY-Www', `start` its Monday, `end` the next Monday (exclusive)."""

    label: str
    start: date

    @property
    def end(self) -> date:
        return self.start + timedelta(days=7)

    @property
    def previous(self) -> IsoWeek:
        return week_of(self.start - timedelta(days=7))


def week_of(day: date) -> IsoWeek:
    """The ISO week containing `day`."""
    year, week, weekday = day.isocalendar()
    return IsoWeek(f"{year}-W{week:02d}", day - timedelta(days=weekday - 1))


def parse_week(text: str, today: date | None = None) -> IsoWeek:
    """Parse 'YYYY-Www', or `this` (the current ISO week, UTC) or `last` (the one before).

    A malformed or impossible week is a `ConfigError`.
    """
    today = today or datetime.now(UTC).date()
    if text.strip().lower() == "this":
        return week_of(today)
    if text.strip().lower() == "last":
        return week_of(today).previous
    match = _WEEK.match(text.strip())
    if match:
        try:
            return IsoWeek(text.strip(), date.fromisocalendar(int(match[1]), int(match[2]), 1))
        except ValueError:
            pass
    raise ConfigError(
        f"`{text}` is not an ISO week.",
        "Write the week as YYYY-Www, e.g. --week 2026-W48 (Monday 2026-11-23 to Sunday 2026-11-29), "
        "or `this` / `last` for the current / previous ISO week (UTC).",
    )
