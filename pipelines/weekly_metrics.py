"""The weekly metrics, declared once in `queries/data/weekly_metrics.csv`: which `weekly_summary`
columns the weekly review shows, in which order, their label, unit, better direction, whether the
dashboard's overview shows one as a card, its help text, and whether the 12-week trends show it
(`pipelines/trend_metrics.py`). The report's summary reads the file in SQL
(`queries/report/summary.sql`, `$weekly_metrics`); the dashboard's cards and trends read it here."""

from __future__ import annotations

import csv
from dataclasses import dataclass
from typing import Literal, cast

from pipelines.sql import BUNDLED_DATA, data_path

Card = Literal["kpi_row", "escapes", ""]
"""Where the overview shows the metric as a card: its KPI row, its Escapes section, or nowhere."""
CARDS: tuple[Card, ...] = ("kpi_row", "escapes", "")
TREND_COLUMNS = ("trend_title", "trend_label", "trend_when_present")


@dataclass(frozen=True)
class WeeklyMetric:
    position: int
    """Its place in the report's summary table (and among the cards of its section)."""
    metric: str
    """The weekly_summary column."""
    label: str
    short_label: str
    """The card's label where a card is too narrow for `label`; empty: `label`."""
    unit: str
    """How the value reads (`pipelines.presentation.in_unit`): ratio, hours, seconds, attempts, ..."""
    higher_is_better: bool
    card: Card
    help: str
    trend_title: str = ""
    """The dashboard's trend panel title (with its unit); empty: not among the trends."""
    trend_label: str = ""
    """The report's trend-table header; empty: the trend is on the dashboard only."""
    trend_when_present: bool = False
    """The trend is shown only once some week has a value (the escape rate needs fleet failures)."""

    @property
    def card_label(self) -> str:
        return self.short_label or self.label


def weekly_metrics_path() -> str:
    """The catalogue's path, the `$weekly_metrics` parameter `queries/report/summary.sql` is bound
    to by default (`pipelines.sql.BUNDLED_DATA`)."""
    return data_path(BUNDLED_DATA["weekly_metrics"])


def read_catalogue(path: str) -> tuple[WeeklyMetric, ...]:
    """The metrics of a catalogue file, in its order (`position`)."""
    with open(path, newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    metrics = []
    for row in rows:
        # A typo must not quietly flip a delta's colour or hide a card.
        if row["better"] not in ("higher", "lower"):
            raise ValueError(f"weekly_metrics.csv: {row['metric']}: better is {row['better']!r}")
        if row["card"] not in CARDS:
            raise ValueError(f"weekly_metrics.csv: {row['metric']}: card is {row['card']!r}")
        # Rows may stop before the trend columns (a metric that is not a trend).
        trend = {name: row.get(name) or "" for name in TREND_COLUMNS}
        if trend["trend_when_present"] not in ("yes", ""):
            raise ValueError(
                f"weekly_metrics.csv: {row['metric']}: trend_when_present is "
                f"{trend['trend_when_present']!r} (yes or empty)"
            )
        if trend["trend_label"] and not trend["trend_title"]:
            raise ValueError(
                f"weekly_metrics.csv: {row['metric']}: a trend_label needs a trend_title"
            )
        metrics.append(
            WeeklyMetric(
                position=int(row["position"]),
                metric=row["metric"],
                label=row["label"],
                short_label=row["short_label"],
                unit=row["unit"],
                higher_is_better=row["better"] == "higher",
                card=cast(Card, row["card"]),
                help=row["help"],
                trend_title=trend["trend_title"],
                trend_label=trend["trend_label"],
                trend_when_present=trend["trend_when_present"] == "yes",
            )
        )
    return tuple(sorted(metrics, key=lambda m: m.position))


WEEKLY_METRICS: tuple[WeeklyMetric, ...] = read_catalogue(weekly_metrics_path())
"""Every weekly metric, in the catalogue's order (`position`)."""


def cards(section: Card) -> tuple[WeeklyMetric, ...]:
    """The metrics the overview shows as cards in `section`, in the catalogue's order."""
    return tuple(m for m in WEEKLY_METRICS if m.card == section and section)
