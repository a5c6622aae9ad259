"""The weekly trend metrics, declared once: which `weekly_summary` columns the dashboard's *Trends*
section and the report's trend table show, how each reads, and which appear only once some week
has a value. Both read the rows from `queries/app/trends.sql`."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import polars as pl

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


TREND_METRICS: tuple[TrendMetric, ...] = (
    TrendMetric("node_availability", "Node availability %", "Availability", "ratio"),
    TrendMetric("job_success_rate", "Job success %", "Job success", "ratio"),
    TrendMetric("job_success_rate_gpu_h", "Job success, GPU-h weighted %", None, "ratio"),
    TrendMetric("goodput", "Goodput %", "Goodput", "ratio"),
    TrendMetric("ettr", "ETTR %", "ETTR", "ratio"),
    TrendMetric("mtbf_h", "MTBF (h)", "MTBF", "hours"),
    TrendMetric("mttr_h", "MTTR (h)", "MTTR", "hours"),
    TrendMetric(
        "interruptions_per_1k_gpu_days",
        "Interruptions / 1,000 GPU-days",
        "Interruptions / 1,000 GPU-days",
        "per 1,000 GPU-days",
    ),
    TrendMetric("escape_rate", "Escape rate %", "Escape rate", "ratio", only_when_present=True),
)


def shown_trend_metrics(trends: pl.DataFrame) -> list[TrendMetric]:
    """TREND_METRICS without the optional ones no week of `trends` has a value for."""
    return [
        metric
        for metric in TREND_METRICS
        if not metric.only_when_present
        or (metric.column in trends.columns and trends[metric.column].is_not_null().any())
    ]
