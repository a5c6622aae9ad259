"""How numbers read, on the dashboard and in the report: one formatter per unit.

The dashboard (`gpufleet_app.fmt`) and `gpufleet report` both format through these functions,
so one number reads the same in both. A missing value is never shown as 0: it reads `missing`,
`—` on the page (MISSING) and `n/a` in the report (NOT_AVAILABLE).
"""

from __future__ import annotations

import math
from datetime import UTC, datetime
from typing import Any

from typing_extensions import TypeIs

MISSING = "—"
"""A missing value on the dashboard."""
NOT_AVAILABLE = "n/a"
"""A missing value in the report (plain text that Markdown, HTML and a terminal all show)."""


def is_missing(value: Any) -> TypeIs[None]:
    """None or NaN.

    TypeIs: where it returns False the value is a number (NaN also returns True, and is not None,
    but every caller returns its missing text there without reading it)."""
    return value is None or (isinstance(value, float) and math.isnan(value))


def pct(ratio: float | None, digits: int = 2, missing: str = MISSING) -> str:
    """A 0-1 ratio as a percentage: 0.99953 → `99.95 %`."""
    return missing if is_missing(ratio) else f"{ratio * 100:.{digits}f} %"


def number(value: float | None, digits: int = 1, missing: str = MISSING) -> str:
    """1234.56 → `1,234.6`."""
    return missing if is_missing(value) else f"{value:,.{digits}f}"


def hours(value_h: float | None, digits: int = 1, missing: str = MISSING) -> str:
    """12.34 → `12.3 h`."""
    return missing if is_missing(value_h) else f"{number(value_h, digits)} h"


def gpu_hours(value_h: float | None, digits: int = 1, missing: str = MISSING) -> str:
    """1234.56 → `1,234.6 GPU-h`."""
    return missing if is_missing(value_h) else f"{number(value_h, digits)} GPU-h"


def seconds(value_s: float | None, missing: str = MISSING) -> str:
    """Whole seconds: 1799.6 → `1,800 s`."""
    return missing if is_missing(value_s) else f"{number(value_s, 0)} s"


def signed(change: float | None, unit: str = "", digits: int = 1, missing: str = MISSING) -> str:
    """A change with its sign and unit: 1.5, `h` → `+1.5 h`; -3, digits 0 → `-3`."""
    if is_missing(change):
        return missing
    return f"{change:+,.{digits}f}{' ' + unit if unit else ''}"


def signed_pp(change: float | None, missing: str = MISSING) -> str:
    """A change of a 0-1 ratio in percentage points: 0.001 → `+0.10 pp`."""
    return missing if is_missing(change) else f"{change * 100:+.2f} pp"


def delta_pp(current: float | None, previous: float | None) -> str | None:
    """Change of a 0-1 ratio in percentage points: 0.9990 vs 0.9980 → `+0.10 pp`."""
    if is_missing(current) or is_missing(previous):
        return None
    return signed_pp(current - previous)


def delta(
    current: float | None, previous: float | None, unit: str = "", digits: int = 1
) -> str | None:
    """Plain difference with a unit: 2.5 vs 1.0 h → `+1.5 h`."""
    if is_missing(current) or is_missing(previous):
        return None
    return signed(current - previous, unit, digits)


def timestamp(value: datetime | None, suffix: str = " UTC", missing: str = MISSING) -> str:
    """UTC, to the minute: `2026-11-25 10:00 UTC`."""
    if is_missing(value):
        return missing
    return (value.astimezone(UTC) if value.tzinfo else value).strftime(f"%Y-%m-%d %H:%M{suffix}")


def duration_s(seconds: float | None) -> str:
    """3725 → `1 h 02 min`; 95 → `1 min 35 s`."""
    if is_missing(seconds):
        return MISSING
    s = round(seconds)
    if s >= 3600:
        return f"{s // 3600} h {s % 3600 // 60:02d} min"
    if s >= 60:
        return f"{s // 60} min {s % 60:02d} s"
    return f"{s} s"


def compact_s(seconds: float | None) -> str:
    """A duration that fits a KPI tile: 36 → `36 s`, 570 → `9.5 min`, 8640 → `2.4 h`."""
    if is_missing(seconds):
        return MISSING
    if seconds < 60:
        return f"{seconds:.0f} s"
    if seconds < 3600:
        return f"{seconds / 60:.1f} min"
    return f"{seconds / 3600:,.1f} h"


# The units of the weekly metrics (`queries/report/summary.sql`): a ratio reads in %, hours and
# seconds in hours, counts whole, anything else (rates, GPU-hours, GPUs) to one decimal.
_WHOLE = ("attempts", "jobs")


def in_unit(value: float | None, unit: str, missing: str = NOT_AVAILABLE) -> str:
    """A weekly metric's value in its unit: ratio → `99.75 %`, hours → `103.1 h`,
    seconds → hours, attempts and jobs whole, others to one decimal."""
    if is_missing(value):
        return missing
    if unit == "ratio":
        return pct(value)
    if unit == "hours":
        return hours(value)
    if unit == "seconds":  # durations read in hours
        return hours(value / 3600)
    if unit in _WHOLE:
        return number(value, 0)
    return number(value)


def change_in(change: float | None, unit: str, missing: str = NOT_AVAILABLE) -> str:
    """A weekly metric's week-over-week change: ratios in percentage points, others signed in
    their unit as `in_unit` reads them."""
    if is_missing(change):
        return missing
    if unit == "ratio":
        return signed_pp(change)
    if unit == "hours":
        return signed(change, "h")
    if unit == "seconds":
        return signed(change / 3600, "h")
    if unit in _WHOLE:
        return signed(change, digits=0)
    return signed(change)
