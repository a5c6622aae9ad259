"""ISO weeks ('2026-W48' = Mon 2026-11-23 00:00 UTC .. Mon 2026-11-30 00:00 UTC, half-open)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta

from pipelines.errors import ConfigError

_WEEK = re.compile(r"^(\d{4})-W(\d{2})$")


@dataclass(frozen=True)
class IsoWeek:
    """One ISO week, e.g. `IsoWeek(2026, 48)`, labelled '2026-W48'.

    Its bounds come two ways, so each SQL parameter keeps its type: `monday` and `sunday` are
    calendar dates (DATE), `start` and `end` the half-open UTC instants (TIMESTAMPTZ).
    """

    year: int
    week: int

    def __post_init__(self) -> None:
        date.fromisocalendar(self.year, self.week, 1)  # ValueError for a week the year lacks

    @classmethod
    def parse(cls, text: str) -> IsoWeek:
        """'2026-W48' → IsoWeek(2026, 48); ValueError for anything else (incl. 2026-W54)."""
        match = _WEEK.match(text.strip())
        if not match:
            raise ValueError(f"`{text}` is not an ISO week like 2026-W48.")
        return cls(int(match[1]), int(match[2]))

    @classmethod
    def of(cls, day: date) -> IsoWeek:
        """The ISO week containing `day`."""
        iso = day.isocalendar()
        return cls(iso.year, iso.week)

    @property
    def label(self) -> str:
        """'YYYY-Www', as DuckDB's strftime('%G-W%V') writes it."""
        return f"{self.year}-W{self.week:02d}"

    def __str__(self) -> str:
        return self.label

    @property
    def monday(self) -> date:
        return date.fromisocalendar(self.year, self.week, 1)

    @property
    def sunday(self) -> date:
        """The week's last day."""
        return self.monday + timedelta(days=6)

    @property
    def start(self) -> datetime:
        """Monday 00:00 UTC (inclusive)."""
        return datetime.combine(self.monday, time(0), tzinfo=UTC)

    @property
    def end(self) -> datetime:
        """The next Monday 00:00 UTC (exclusive)."""
        return self.start + timedelta(days=7)

    @property
    def previous(self) -> IsoWeek:
        return IsoWeek.of(self.monday - timedelta(days=7))


def parse_week(text: str, today: date | None = None) -> IsoWeek:
    """Parse 'YYYY-Www', or `this` (the current ISO week, UTC) or `last` (the one before).

    A malformed or impossible week is a `ConfigError`.
    """
    today = today or datetime.now(UTC).date()
    word = text.strip().lower()
    if word == "this":
        return IsoWeek.of(today)
    if word == "last":
        return IsoWeek.of(today).previous
    try:
        return IsoWeek.parse(text)
    except ValueError:
        raise ConfigError(
            f"`{text}` is not an ISO week.",
            "Write the week as YYYY-Www, e.g. --week 2026-W48 (Monday 2026-11-23 to Sunday "
            "2026-11-29), or `this` / `last` for the current / previous ISO week (UTC).",
        ) from None
