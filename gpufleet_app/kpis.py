"""The overview's cards: which weekly_summary columns, their label, direction and help (the weekly
metrics catalogue, `pipelines.weekly_metrics`), and how each unit reads on a card."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from gpufleet_app import fmt
from pipelines import presentation
from pipelines.weekly_metrics import Card, WeeklyMetric, cards

Value = Callable[[float | None], str]
Change = Callable[[float | None, float | None], str | None]


@dataclass(frozen=True)
class Kpi:
    column: str
    label: str
    value: Value
    change: Change
    higher_is_better: bool
    help: str


def _value(unit: str) -> Value:
    if unit == "seconds":  # a card reads a lead time as a duration (`1 h 02 min`), not in hours
        return fmt.duration_s
    return lambda v: presentation.in_unit(v, unit, missing=fmt.MISSING)


def _change(unit: str) -> Change:
    """The change from the previous week; None (no delta shown) when either week is missing."""
    if unit == "seconds":
        return lambda c, p: fmt.delta(
            None if c is None else c / 60, None if p is None else p / 60, " min"
        )

    def change(current: float | None, previous: float | None) -> str | None:
        if presentation.is_missing(current) or presentation.is_missing(previous):
            return None
        return presentation.change_in(current - previous, unit)

    return change


def _kpi(metric: WeeklyMetric) -> Kpi:
    return Kpi(
        metric.metric,
        metric.card_label,
        _value(metric.unit),
        _change(metric.unit),
        metric.higher_is_better,
        metric.help,
    )


def _cards(section: Card) -> tuple[Kpi, ...]:
    return tuple(_kpi(metric) for metric in cards(section))


KPIS: tuple[Kpi, ...] = _cards("kpi_row")
"""The overview's KPI row."""

ESCAPE_KPIS: tuple[Kpi, ...] = _cards("escapes")
"""The overview's Escapes section: weekly_summary columns from failure_escapes."""
