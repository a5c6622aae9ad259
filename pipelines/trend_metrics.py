"""The weekly trend metrics: which `weekly_summary` columns the dashboard's *Trends* section and
the report's trend table show, how each reads, and which appear only once some week has a value.
They are the weekly metrics catalogue's rows with a `trend_title` (`queries/data/weekly_metrics.csv`,
`pipelines.weekly_metrics`), in its order. Both read the rows from `queries/app/trends.sql`."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, cast, get_args

import polars as pl

from pipelines.weekly_metrics import WEEKLY_METRICS, WeeklyMetric

TREND_WEEKS = 12
"""Weeks in the sparklines, the Trends section and the report's trend table, the chosen week included."""

Unit = Literal["ratio", "hours", "per 1,000 GPU-days"]


@dataclass(frozen=True)
class TrendMetric:
    column: str
    """The weekly_summary column."""
    title: str
    """The dashboard's panel title (with its unit)."""
    report_label: str | None
    """The report's trend-table header; None: on the dashboard only."""
    unit: Unit
    """How the value reads: a 0-1 ratio (shown in %), hours, or a rate per 1,000 GPU-days."""
    only_when_present: bool = False
    """Shown only when some week has a value (the escape rate needs fleet failures)."""

    @property
    def is_ratio(self) -> bool:
        return self.unit == "ratio"


def trend_metric(metric: WeeklyMetric) -> TrendMetric:
    """A catalogue row with a trend title as the trend it draws."""
    if metric.unit not in get_args(Unit):
        raise ValueError(
            f"weekly_metrics.csv: {metric.metric}: a trend's unit is one of "
            f"{', '.join(get_args(Unit))}, not {metric.unit!r}"
        )
    return TrendMetric(
        column=metric.metric,
        title=metric.trend_title,
        report_label=metric.trend_label or None,
        unit=cast(Unit, metric.unit),
        only_when_present=metric.trend_when_present,
    )


TREND_METRICS: tuple[TrendMetric, ...] = tuple(
    trend_metric(metric) for metric in WEEKLY_METRICS if metric.trend_title
)


def shown_trend_metrics(trends: pl.DataFrame) -> list[TrendMetric]:
    """TREND_METRICS without the optional ones no week of `trends` has a value for."""
    return [
        metric
        for metric in TREND_METRICS
        if not metric.only_when_present
        or (metric.column in trends.columns and trends[metric.column].is_not_null().any())
    ]
