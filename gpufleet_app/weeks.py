"""ISO week arithmetic (UTC): `2026-W48` is Monday 2026-11-23 .. Sunday 2026-11-29."""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta

_WEEK = re.compile(r"^(\d{4})-W(\d{2})$")


@dataclass(frozen=True)
class IsoWeek:
    year: int
    week: int

    @classmethod
    def parse(cls, text: str) -> IsoWeek:
        """`2026-W48` → IsoWeek(2026, 48); ValueError for anything else (incl. W54)."""
        match = _WEEK.match(text.strip())
        if not match:
            raise ValueError(f"`{text}` is not an ISO week like 2026-W48.")
        year, week = int(match[1]), int(match[2])
        date.fromisocalendar(year, week, 1)  # raises ValueError for a week the year lacks
        return cls(year, week)

    @classmethod
    def of(cls, day: date) -> IsoWeek:
        iso = day.isocalendar()
        return cls(iso.year, iso.week)

    def __str__(self) -> str:
        return f"{self.year}-W{self.week:02d}"

    @property
    def monday(self) -> date:
        return date.fromisocalendar(self.year, self.week, 1)

    @property
    def start(self) -> datetime:
        """Monday 00:00 UTC (inclusive)."""
        return datetime.combine(self.monday, time(0), tzinfo=UTC)

    @property
    def end(self) -> datetime:
        """Next Monday 00:00 UTC (exclusive)."""
        return self.start + timedelta(days=7)

    def previous(self) -> IsoWeek:
        return IsoWeek.of(self.monday - timedelta(days=7))

    def params(self) -> dict[str, object]:
        """Named SQL parameters: `$week`, `$week_start`, `$week_end`, `$prev_week`."""
        return {
            "week": str(self),
            "week_start": self.start,
            "week_end": self.end,
            "prev_week": str(self.previous()),
        }
