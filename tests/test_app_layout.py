"""How the charts and tables read: round axis ticks, a 0-100 availability axis for a 0 % day,
legends under the plot (never on the title), no stacked text on anomaly spans, the useful
columns first in wide tables, `—` for a missing value."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta
from pathlib import Path

import polars as pl
import pytest

from gpufleet_app import figures
from pipelines import charts
from tests.app_helpers import no_errors, open_page

T0 = datetime(2026, 11, 25, tzinfo=UTC)


@pytest.mark.parametrize(
    ("largest", "step"),
    [
        (635, 200),  # 0, 200, 400, 600 (never 127, 254, 381: 635 / 5 rounded up)
        (381, 100),  # 76.2 per tick -> 100
        (12, 5),  # 2.4 per tick -> 5: 0, 5, 10
        (5, 1),
        (0, 1),
        (1000, 200),
    ],
)
def test_count_ticks_are_round(largest: int, step: int) -> None:
    assert charts.count_tick(largest) == step


@pytest.mark.parametrize(
    ("span", "step"),
    [
        (30.5, 10.0),  # 6.1 per tick -> 10 (never 15.2, 30.5)
        (12.7, 5.0),  # 2.54 -> 5
        (0.8, 0.2),  # 0.16 -> 0.2
        (100.0, 20.0),
    ],
)
def test_nice_step(span: float, step: float) -> None:
    assert charts.nice_step(span) == pytest.approx(step)


def daily(availability: list[float]) -> pl.DataFrame:
    days = [date(2026, 11, 23) + timedelta(days=i) for i in range(len(availability))]
    return pl.DataFrame(
        {
            "day": days,
            "availability": availability,
            "unavailable_node_h": [24.0 * (1 - a) for a in availability],
            "unknown_node_h": [0.0] * len(days),
            "eligible_jobs": [635] * len(days),
            "succeeded_jobs": [600] * len(days),
        }
    )


@pytest.mark.parametrize(
    ("availability", "axis"),
    [
        ([0.0] * 7, [0.0, 100.5]),  # a cluster down all week: 0..100, never -1..1
        ([0.992, 0.999, 1.0], [99.0, 100.5]),  # lowest 99.2 %: span 0.8, step 0.2, one step under
        ([1.0] * 7, [99.0, 100.5]),
    ],
)
def test_availability_axis(availability: list[float], axis: list[float]) -> None:
    fig = charts.availability_trend(daily(availability))
    assert list(fig.layout.yaxis.range) == pytest.approx(axis)


def test_jobs_axis_has_round_ticks() -> None:
    fig = charts.jobs_trend(daily([1.0] * 7))
    assert fig.layout.yaxis.dtick == 200  # 635 jobs a day


PARETO = pl.DataFrame(
    {
        "cause": ["XID 79 (GPU fell off the bus)", "NCCL timeout", "OOM"],
        "failure_class": ["hardware", "software", "software"],
        "attempts": [3, 5, 1],
        "gpu_h": [30.0, 10.0, 1.0],
        "cum_share": [0.33, 0.88, 1.0],
        "lost_gpu_h": [30.5, 10.0, 1.0],
        "lost_cum_share": [0.73, 0.98, 1.0],
    }
)


@pytest.mark.parametrize(
    "make",
    [
        lambda: charts.availability_trend(daily([0.99] * 7)),
        lambda: charts.failure_pareto(PARETO),
        lambda: figures.lost_pareto(PARETO),
    ],
    ids=["availability", "pareto", "lost_pareto"],
)
def test_legend_is_under_the_plot_not_on_the_title(make) -> None:
    fig = make()
    assert fig.layout.legend.y < 0 and fig.layout.legend.yanchor == "top"


def test_lost_pareto_ticks_are_round() -> None:
    assert figures.lost_pareto(PARETO).layout.yaxis.dtick == 10  # 30.5 GPU-h: 0, 10, 20, 30


@pytest.mark.parametrize(
    "make", [charts.failure_pareto, figures.lost_pareto], ids=["count", "lost"]
)
def test_pareto_causes_from_the_data_are_drawn_as_text(make) -> None:
    # A cause is text from a scheduler or log: plotly would draw `<a href>` in it as a link.
    crafted = PARETO.with_columns(
        pl.when(pl.col("cause") == "OOM")
        .then(pl.lit("<a href='http://evil.example'>OOM</a>"))
        .otherwise(pl.col("cause"))
        .alias("cause")
    )
    fig = make(crafted)
    drawn = [str(v) for trace in fig.data for v in list(trace.x) + list(trace.customdata or [])]
    assert any("&lt;a href='http://evil.example'&gt;OOM&lt;/a&gt;" in v for v in drawn)
    assert not any("<a " in v for v in drawn)


def test_anomaly_spans_carry_no_stacked_labels() -> None:
    samples = pl.DataFrame(
        {
            "gpu": [0] * 8,
            "bucket_ts": [T0 + timedelta(minutes=15 * i) for i in range(8)],
            "value": [1400.0] * 8,
        }
    )
    # three findings overlapping the same hour: their labels used to pile up on the top edge
    anomalies = pl.DataFrame(
        {
            "kind": ["thermal", "clock_drop", "xid"],
            "gpu": [0, 0, None],
            "severity": ["warn", "warn", "critical"],
            "start_ts": [T0, T0 + timedelta(minutes=5), T0 + timedelta(minutes=10)],
            "end_ts": [T0 + timedelta(hours=1)] * 3,
        }
    )
    fig = charts.gpu_metric(samples, anomalies, "SM clock (MHz)")
    assert len(fig.layout.shapes) == 3
    assert not fig.layout.annotations  # no text on the spans
    markers = {t.name: list(t.hovertext) for t in fig.data if t.name.endswith("finding")}
    assert markers == {
        "warn finding": ["thermal (gpu 0), warn", "clock_drop (gpu 0), warn"],
        "critical finding": ["xid (node), critical"],
    }


# ---------------------------------------------------------------- tables (AppTest)


def frames(at) -> list:
    return [d.value for d in at.dataframe]


def test_node_table_shows_the_ladder_step_and_cost_first(use_db: Path) -> None:
    at = open_page("nodes", week="2026-W48")
    no_errors(at)
    assert list(frames(at)[0].columns[:3]) == ["node", "ladder_step", "cost_gpu_h"]


def test_anomaly_table_shows_action_impact_evidence_before_times(use_db: Path) -> None:
    at = open_page("anomalies", week="2026-W48")
    no_errors(at)
    columns = list(frames(at)[0].columns)
    assert columns.index("evidence") < 8 < columns.index("start_ts")
    assert columns[:4] == ["severity", "kind", "node", "gpu"]


def test_node_page_anomalies_action_and_impact_before_times(use_db: Path) -> None:
    at = open_page("nodes", node="gpu-001", week="2026-W48")
    no_errors(at)
    table = next(f for f in frames(at) if "evidence" in f.columns)
    columns = list(table.columns)
    assert (
        columns.index("action")
        < columns.index("impact_gpu_h")
        < columns.index("evidence")
        < columns.index("start_ts")
    )


@pytest.mark.parametrize(
    ("page", "query"),
    [
        ("nodes", {"week": "2026-W48"}),
        ("nodes", {"node": "gpu-001", "week": "2026-W48"}),
        ("anomalies", {"week": "2026-W48"}),
        ("remediation", {"week": "2026-W48"}),
    ],
)
def test_no_table_shows_the_text_none(use_db: Path, page: str, query: dict[str, str]) -> None:
    at = open_page(page, **query)
    no_errors(at)
    for frame in frames(at):
        text_columns = [c for c in frame.columns if frame[c].dtype == object]
        for column in text_columns:
            assert "None" not in set(frame[column].dropna().astype(str)), (page, column)
