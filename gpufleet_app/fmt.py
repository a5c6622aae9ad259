"""How numbers read on the page: one formatter per unit, `—` for missing (never 0)."""

from __future__ import annotations

import math
from datetime import datetime

from typing_extensions import TypeIs

from pipelines.markdown import escape_markdown

MISSING = "—"

text = escape_markdown
"""A value from the URL or the data, as literal text in Markdown (never a link, image or HTML)."""


def _missing(value: float | None) -> TypeIs[None]:
    # TypeIs: where it returns False the value is a number (NaN also returns True, and is not None,
    # but every caller returns MISSING there without reading it).
    return value is None or (isinstance(value, float) and math.isnan(value))


def pct(ratio: float | None, digits: int = 2) -> str:
    """A 0-1 ratio as a percentage: 0.99953 → `99.95 %`."""
    return MISSING if _missing(ratio) else f"{ratio * 100:.{digits}f} %"


def hours(value_h: float | None, digits: int = 1) -> str:
    return MISSING if _missing(value_h) else f"{value_h:,.{digits}f} h"


def gpu_hours(value_h: float | None, digits: int = 1) -> str:
    return MISSING if _missing(value_h) else f"{value_h:,.{digits}f} GPU-h"


def number(value: float | None, digits: int = 1) -> str:
    return MISSING if _missing(value) else f"{value:,.{digits}f}"


def delta_pp(current: float | None, previous: float | None) -> str | None:
    """Change of a 0-1 ratio in percentage points: 0.9990 vs 0.9980 → `+0.10 pp`."""
    if _missing(current) or _missing(previous):
        return None
    return f"{(current - previous) * 100:+.2f} pp"


def delta(
    current: float | None, previous: float | None, unit: str = "", digits: int = 1
) -> str | None:
    """Plain difference with a unit: 2.5 vs 1.0 h → `+1.5 h`."""
    if _missing(current) or _missing(previous):
        return None
    return f"{current - previous:+,.{digits}f}{' ' + unit if unit else ''}"


def timestamp(value: datetime | None) -> str:
    """UTC, minutes: `2026-11-25 10:00 UTC`."""
    return MISSING if value is None else value.strftime("%Y-%m-%d %H:%M UTC")


def duration_s(seconds: float | None) -> str:
    """3725 → `1 h 02 min`; 95 → `1 min 35 s`."""
    if _missing(seconds):
        return MISSING
    s = round(seconds)
    if s >= 3600:
        return f"{s // 3600} h {s % 3600 // 60:02d} min"
    if s >= 60:
        return f"{s // 60} min {s % 60:02d} s"
    return f"{s} s"


def compact_s(seconds: float | None) -> str:
    """A duration that fits a KPI tile: 36 → `36 s`, 570 → `9.5 min`, 8640 → `2.4 h`."""
    if _missing(seconds):
        return MISSING
    if seconds < 60:
        return f"{seconds:.0f} s"
    if seconds < 3600:
        return f"{seconds / 60:.1f} min"
    return f"{seconds / 3600:,.1f} h"
