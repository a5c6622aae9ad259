"""The overview's trend and weighting views: 12-week KPI sparklines, the *Trends* section
(per week, per cluster), the failure Pareto weighted by GPU-hours lost, and goodput per team
and per queue. Each reads one `queries/app/*.sql` file."""

from __future__ import annotations

from datetime import date

import polars as pl
import streamlit as st

from gpufleet_app import data, figures, fmt, ui
from pipelines import charts
from pipelines.trend_metrics import TREND_WEEKS, shown_trend_metrics


def shown_metrics(trend: pl.DataFrame) -> list[tuple[str, str, bool]]:
    """(weekly_summary column, panel title, is a 0-1 ratio) of the trend metrics to draw."""
    return [(metric.column, metric.title, metric.is_ratio) for metric in shown_trend_metrics(trend)]


PARETO_WEIGHTS = {"attempts": "Failed attempts", "lost": "GPU-hours lost"}


def mondays(filters: ui.Filters) -> list[date]:
    """The Mondays of the TREND_WEEKS weeks ending with the chosen one, oldest first."""
    week, found = filters.week, []
    for _ in range(TREND_WEEKS):
        found.append(week.monday)
        week = week.previous
    return found[::-1]


def load(filters: ui.Filters) -> pl.DataFrame:
    """weekly_summary rows of the trend weeks, every cluster (`queries/app/trends.sql`)."""
    if not ui.has_table("weekly_summary"):
        return pl.DataFrame()
    return data.query("trends", week=filters.week.label, weeks=TREND_WEEKS)


def sparkline(trend: pl.DataFrame, filters: ui.Filters, column: str) -> list[float] | None:
    """The KPI's values over the trend weeks for the chosen cluster, from its first week with a
    value; a week without one in between repeats nothing and shows as a gap (None)."""
    if trend.is_empty():
        return None
    part = trend.filter(pl.col("cluster") == filters.cluster)
    by_week = dict(zip(part["week_start"].to_list(), part[column].to_list()))
    values = [by_week.get(monday) for monday in mondays(filters)]
    while values and values[0] is None:
        values.pop(0)
    if len([v for v in values if v is not None]) < 2:
        return None  # one point is no trend
    return [float("nan") if v is None else float(v) for v in values]


def section(filters: ui.Filters, trend: pl.DataFrame) -> None:
    """The Trends section: small multiples per metric with a line per cluster, and the table."""
    st.subheader("Trends")
    if trend.is_empty():
        st.info("No weekly summary rows to draw trends from: run `gpufleet compute`.")
        return
    weeks = mondays(filters)
    st.caption(
        f"The {TREND_WEEKS} ISO weeks to {filters.week} (UTC), per cluster and for all clusters "
        "(black), from the weekly summary: ratios are summed numerators over summed denominators; "
        "a week without data is a gap, never 0."
    )
    metrics = shown_metrics(trend)
    st.plotly_chart(figures.trends(trend, metrics, weeks), key="trends")
    with st.expander("Trend table (per week, per cluster)"):
        shown = trend.select(
            "week",
            pl.col("cluster").replace({"*": "all clusters"}),
            *[(pl.col(c) * 100).alias(c) if ratio else pl.col(c) for c, _, ratio in metrics],
        )
        ui.table(
            shown,
            key="trend_table",
            column_config={
                column: st.column_config.NumberColumn(title, format="%.2f" if ratio else "%.1f")
                for column, title, ratio in metrics
            },
        )


def failure_pareto(container, pareto: pl.DataFrame) -> None:
    """The failure Pareto, counted by attempts or weighted by the GPU-hours they lost."""
    asked = ui.url_param("pareto")
    weight = (
        container.segmented_control(
            "Weight failures by",
            list(PARETO_WEIGHTS),
            format_func=PARETO_WEIGHTS.get,
            default=asked if asked in PARETO_WEIGHTS else "attempts",
            key="pareto_weight",
        )
        or "attempts"
    )
    ui.set_url(pareto=None if weight == "attempts" else weight)
    if weight == "attempts":
        container.plotly_chart(charts.failure_pareto(pareto), key="failure_pareto")
        return
    container.plotly_chart(figures.lost_pareto(pareto), key="failure_pareto_lost")
    container.caption(
        f"GPU-hours lost = wasted progress (work after the last checkpoint, GPUs x time) + the "
        f"recovery gap before the retry (the job's GPUs x time): "
        f"{fmt.gpu_hours(float(pareto['lost_gpu_h'].sum()))} this week. Causes as in the count."
    )


GROUP_COLUMNS = {
    "jobs": st.column_config.NumberColumn("jobs"),
    "goodput_pct": st.column_config.NumberColumn("goodput", format="%.2f %%"),
    **{
        f"{c}_gpu_h": st.column_config.NumberColumn(f"{c} GPU-h", format="%.1f")
        for c in ("allocated", "productive", "init", "checkpoint", "wasted", "other")
    },
}


def goodput_groups(filters: ui.Filters) -> None:
    """Goodput and its stack per team and per queue (`queries/app/goodput_groups.sql`)."""
    st.subheader("Goodput by team and queue")
    groups = data.query("goodput_groups", week_start=filters.week.start, cluster=filters.cluster)
    if groups.is_empty():
        st.info(f"No job held GPUs in {filters.week} ({filters.cluster_label}).")
        return
    st.caption(
        "Allocated GPU-hours of the week split as the goodput stack splits them; goodput = "
        "productive / allocated (summed over the group's jobs, never averaged)."
    )
    for column, grouping in zip(st.columns(2), ("team", "queue")):
        part = groups.filter(pl.col("grouping") == grouping)
        column.markdown(f"**Per {grouping}**")
        ui.table(
            part.select(
                pl.col("name").alias(grouping),
                "jobs",
                (pl.col("goodput") * 100).alias("goodput_pct"),
                "allocated_gpu_h",
                "productive_gpu_h",
                "init_gpu_h",
                "checkpoint_gpu_h",
                "wasted_gpu_h",
                "other_gpu_h",
            ),
            container=column,
            key=f"goodput_{grouping}",
            column_config=GROUP_COLUMNS,
        )
