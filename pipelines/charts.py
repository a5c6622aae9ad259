"""Plotly figures, each a pure function of a polars frame (no database, no Streamlit)."""

from __future__ import annotations

import html
import math
from collections.abc import Callable
from datetime import UTC, datetime
from typing import cast

import plotly.graph_objects as go
import polars as pl
from plotly.subplots import make_subplots

CONDITION_COLORS = {"healthy": "#2ca02c", "unhealthy": "#d62728", "unknown": "#7f7f7f"}
"""A node condition's status by its polarity (queries/app/node_conditions.sql)."""
STATE_COLORS = {
    "available": "#2ca02c",
    "degraded": "#e6b800",
    "unavailable": "#d62728",
    "unknown": "#7f7f7f",
    "maintenance": "#1f77b4",
}
CATEGORY_COLORS = {
    "productive": "#2ca02c",
    "init": "#9467bd",
    "checkpoint": "#1f77b4",
    "wasted": "#d62728",
    "recovery": "#ff7f0e",
    "other": "#7f7f7f",
}
CLASS_COLORS = {
    "hardware": "#d62728",
    "software": "#ff7f0e",
    "infrastructure": "#1f77b4",
    "user": "#7f7f7f",
    "unknown": "#bcbd22",
}
SEVERITY_COLORS = {"critical": "#d62728", "warn": "#e6b800", "info": "#1f77b4"}


def _layout(fig: go.Figure, title: str, height: int = 320) -> go.Figure:
    fig.update_layout(
        title={"text": title, "x": 0, "font": {"size": 15}},
        height=height,
        margin={"l": 10, "r": 10, "t": 80, "b": 10},
        legend={"orientation": "h", "x": 0, "y": 1.02, "yanchor": "bottom", "font": {"size": 11}},
    )
    fig.update_xaxes(automargin=True)
    return fig


def legend_below(fig: go.Figure, y: float = -0.12) -> go.Figure:
    """The legend under the plot, left-aligned: on a half-width chart a legend above the plot
    wraps onto the title; below, plotly grows the bottom margin to fit it. `y` (a share of the
    plot's height) clears tilted tick labels."""
    fig.update_layout(
        legend={"orientation": "h", "x": 0, "xanchor": "left", "y": y, "yanchor": "top"},
        margin={"t": 50, "b": 10},
    )
    return fig


DAY_TICKS = "%a %d"
TIME_TICKS = "%d %b %H:%M"


def _utc_naive(times: pl.Series):
    """UTC timestamps as numpy datetime64 (the axis is labelled UTC)."""
    return times.dt.convert_time_zone("UTC").dt.replace_time_zone(None).to_numpy()


def _naive(moment: datetime) -> datetime:
    return moment.astimezone(UTC).replace(tzinfo=None)


def column_max(series: pl.Series) -> float:
    """The largest value of a numeric column, 0.0 when it is empty or all null."""
    return float(cast(float | None, series.max()) or 0.0)


def nice_step(span: float, ticks: int = 5, factors: tuple[float, ...] = (1, 2, 2.5, 5)) -> float:
    """A tick step of factor x 10^k giving at most `ticks` steps over `span`
    (0-635 jobs: 200, never 127; 0-30.5 %: 10, never 15.2)."""
    if not span or span <= 0 or math.isnan(span):
        return 1.0
    raw = span / ticks
    power = 10 ** math.floor(math.log10(raw))
    return next((f * power for f in factors if f * power >= raw * (1 - 1e-9)), 10 * power)


def count_tick(largest: int | None) -> int:
    """A whole-number tick step of 1, 2 or 5 x 10^k giving at most five steps (counts have no
    fractions, and a reader adds up round steps: 0, 200, 400, 600, never 127, 254, 381)."""
    return max(1, round(nice_step(float(largest or 0), factors=(1, 2, 5))))


def availability_range(percents: list[float | None]) -> list[float]:
    """The availability axis (percent): up to 100, from a round value under the week's lowest
    day, never below 0 (a 0 % day draws from 0 to 100, not -1..1)."""
    known = [p for p in percents if p is not None and not math.isnan(p)]
    lowest = min(known) if known else 0.0
    if lowest >= 100:
        return [99.0, 100.5]
    step = nice_step(100 - lowest)
    # one step of room under the lowest day, on a multiple of the step
    return [max(0.0, round(math.floor(lowest / step + 1e-9) * step - step, 6)), 100.5]


def availability_trend(daily: pl.DataFrame) -> go.Figure:
    """Node availability per UTC day (percent) over node-hours lost (bars)."""
    fig = make_subplots(specs=[[{"secondary_y": True}]])
    days = daily["day"].to_list()
    fig.add_bar(
        x=days,
        y=daily["unavailable_node_h"].to_list(),
        name="Unavailable node-h",
        marker_color=STATE_COLORS["unavailable"],
        secondary_y=True,
        opacity=0.6,
    )
    fig.add_bar(
        x=days,
        y=daily["unknown_node_h"].to_list(),
        name="Unknown node-h",
        marker_color=STATE_COLORS["unknown"],
        secondary_y=True,
        opacity=0.6,
    )
    fig.add_scatter(
        x=days,
        y=(daily["availability"] * 100).to_list(),
        name="Availability %",
        mode="lines+markers",
        line={"color": "#111"},
        secondary_y=False,
    )
    fig.update_layout(barmode="stack")
    fig.update_xaxes(tickformat=DAY_TICKS, dtick=86_400_000)
    low, high = availability_range((daily["availability"] * 100).to_list())
    fig.update_yaxes(
        title_text="availability %",
        secondary_y=False,
        range=[low, high],
        dtick=nice_step(high - low),
    )
    lost = column_max(daily["unavailable_node_h"] + daily["unknown_node_h"])
    fig.update_yaxes(
        title_text="node-hours lost",
        secondary_y=True,
        showgrid=False,
        rangemode="tozero",
        dtick=nice_step(lost),
    )
    return legend_below(_layout(fig, "Node availability per day"))


def jobs_trend(daily: pl.DataFrame) -> go.Figure:
    """Eligible jobs that ended per day: succeeded vs not."""
    fig = go.Figure()
    days = daily["day"].to_list()
    fig.add_bar(
        x=days,
        y=daily["succeeded_jobs"].to_list(),
        name="Succeeded",
        marker_color=CATEGORY_COLORS["productive"],
    )
    fig.add_bar(
        x=days,
        y=(daily["eligible_jobs"] - daily["succeeded_jobs"]).to_list(),
        name="Failed (failed, node_fail, timeout, oom)",
        marker_color=STATE_COLORS["unavailable"],
    )
    fig.update_layout(barmode="stack")
    fig.update_xaxes(tickformat=DAY_TICKS, dtick=86_400_000)
    fig.update_yaxes(
        title_text="jobs ended",
        rangemode="tozero",
        dtick=count_tick(cast(int | None, daily["eligible_jobs"].max())),
    )
    return _layout(fig, "Jobs ended per day")


WATERFALL_STEPS = (
    ("capacity_gpu_h", "Capacity", "absolute"),
    ("unavailable_gpu_h", "Unavailable", "relative"),
    ("unknown_gpu_h", "Unknown", "relative"),
    ("idle_gpu_h", "Idle", "relative"),
    ("allocated_gpu_h", "Allocated", "total"),
    ("init_gpu_h", "Init", "relative"),
    ("checkpoint_gpu_h", "Checkpoint", "relative"),
    ("wasted_gpu_h", "Wasted", "relative"),
    ("other_gpu_h", "Other", "relative"),
    ("productive_gpu_h", "Productive", "total"),
)


def goodput_waterfall(stack: dict[str, float]) -> go.Figure:
    """Capacity → losses → allocated → badput → productive, in GPU-hours."""
    labels, values, measures, texts = [], [], [], []
    for column, label, measure in WATERFALL_STEPS:
        value = float(stack[column] or 0.0)
        labels.append(label)
        measures.append(measure)
        values.append(
            value if measure == "absolute" else (-value if measure == "relative" else 0.0)
        )
        texts.append(f"{value:,.0f}")
    fig = go.Figure(
        go.Waterfall(
            x=labels,
            y=values,
            measure=measures,
            text=texts,
            textposition="outside",
            decreasing={"marker": {"color": STATE_COLORS["unavailable"]}},
            totals={"marker": {"color": CATEGORY_COLORS["productive"]}},
            increasing={"marker": {"color": "#1f77b4"}},
            connector={"line": {"color": "#bbb"}},
        )
    )
    fig.update_yaxes(title_text="GPU-hours")
    return _layout(fig, "Where the GPU-hours went (goodput stack)", height=360)


def plain(value: object) -> object:
    """A name from the data as text in a chart: plotly draws `<a href>`, `<b>`, ... in labels,
    legends and hovers, so `<`, `>` and `&` go in as entities (drawn as the characters)."""
    return html.escape(value, quote=False) if isinstance(value, str) else value


def _cause_labels(causes: list[str], classes: list[str]) -> list[str]:
    """Short axis labels (`XID 79`; the hover names the cause in full), with the failure class
    added where two classes share one."""
    labels = [str(plain(c.split(" (")[0] if c.startswith("XID") else c)) for c in causes]
    return [
        f"{label} [{c}]" if labels.count(label) > 1 else label for label, c in zip(labels, classes)
    ]


def _class_pareto(
    ranked: pl.DataFrame,
    *,
    value: str,
    other: str,
    cumulative_share: str,
    hover: Callable[[str], str],
    axis_title: str,
    dtick: float,
    title: str,
) -> go.Figure:
    """Bars of `value` per failure cause in `ranked`'s order, coloured by failure class, with the
    cumulative share (0-1 column) as a line; the hover shows the cause in full and `other`."""
    labels = _cause_labels(ranked["cause"].to_list(), ranked["failure_class"].to_list())
    framed = ranked.with_columns(label=pl.Series(labels))
    fig = make_subplots(specs=[[{"secondary_y": True}]])
    for failure_class in framed["failure_class"].unique(maintain_order=True).to_list():
        part = framed.filter(pl.col("failure_class") == failure_class)
        fig.add_bar(
            x=part["label"].to_list(),
            y=part[value].to_list(),
            name=failure_class,
            marker_color=CLASS_COLORS.get(failure_class, "#999"),
            secondary_y=False,
            customdata=list(zip(map(plain, part["cause"].to_list()), part[other].to_list())),
            hovertemplate=hover(failure_class),
        )
    fig.add_scatter(
        x=labels,
        y=[None if v is None else v * 100 for v in ranked[cumulative_share].to_list()],
        name="cumulative %",
        mode="lines+markers",
        line={"color": "#111"},
        secondary_y=True,
    )
    fig.update_xaxes(categoryorder="array", categoryarray=labels, tickangle=-30)
    fig.update_yaxes(title_text=axis_title, secondary_y=False, rangemode="tozero", dtick=dtick)
    fig.update_yaxes(
        title_text="cumulative %",
        range=[0, 105],
        dtick=25,
        secondary_y=True,
        showgrid=False,
        tickmode="linear",
    )
    return legend_below(_layout(fig, title, height=440), y=-0.35)


def failure_pareto(pareto: pl.DataFrame) -> go.Figure:
    """Failed attempts by cause (bars coloured by failure class), most frequent first,
    with the cumulative share of all failed attempts."""
    return _class_pareto(
        pareto,
        value="attempts",
        other="gpu_h",
        cumulative_share="cum_share",
        hover=lambda failure_class: (
            f"{failure_class}: %{{customdata[0]}}<br>%{{y}} attempts<br>"
            "%{customdata[1]:,.1f} GPU-h<extra></extra>"
        ),
        axis_title="failed attempts",
        dtick=count_tick(cast(int | None, pareto["attempts"].max())),
        title="Failed attempts by cause (Pareto)",
    )


def lost_pareto(pareto: pl.DataFrame) -> go.Figure:
    """Failure causes weighted by the GPU-hours they lost (wasted progress + recovery), largest
    first, bars coloured by failure class, with the cumulative share of all lost GPU-hours."""
    return _class_pareto(
        pareto.sort(
            ["lost_gpu_h", "attempts", "failure_class", "cause"],
            descending=[True, True, False, False],
        ),
        value="lost_gpu_h",
        other="attempts",
        cumulative_share="lost_cum_share",
        hover=lambda failure_class: (
            f"{failure_class}: %{{customdata[0]}}<br>"
            "%{y:,.1f} GPU-h lost<br>%{customdata[1]} attempts<extra></extra>"
        ),
        axis_title="GPU-hours lost",
        dtick=nice_step(column_max(pareto["lost_gpu_h"])),
        title="GPU-hours lost by cause (Pareto)",
    )


def timeline(
    frame: pl.DataFrame,
    lane: str,
    color: str,
    colors: dict[str, str],
    title: str,
    hover: str | None = None,
    height: int = 220,
) -> go.Figure:
    """Horizontal bars [start_ts, end_ts) per lane, colored by a category column."""
    fig = go.Figure()
    for category in frame[color].unique(maintain_order=True).to_list():
        part = frame.filter(pl.col(color) == category)
        starts = part["start_ts"].to_list()
        widths = [(e - s).total_seconds() * 1000 for s, e in zip(starts, part["end_ts"].to_list())]
        fig.add_bar(
            base=starts,
            x=widths,
            y=[plain(v) for v in part[lane].cast(pl.String).to_list()],
            orientation="h",
            name=str(category),
            marker_color=colors.get(str(category), "#999"),
            customdata=[plain(v) for v in part[hover].to_list()] if hover else None,
            hovertemplate=(
                f"{category}<br>%{{base|%Y-%m-%d %H:%M}} + %{{x:,.0f}} ms"
                + ("<br>%{customdata}" if hover else "")
                + "<extra></extra>"
            ),
        )
    fig.update_layout(barmode="overlay")
    fig.update_xaxes(type="date", tickformat=TIME_TICKS)
    fig.update_yaxes(autorange="reversed")
    return _layout(fig, title, height=height)


def _with_gaps(samples: pl.DataFrame, bucket_s: int) -> pl.DataFrame:
    """A null point after every bucket followed by a silence longer than twice the GPU's
    usual spacing (at least two buckets), so a telemetry gap shows as a break in the line
    instead of a straight segment, whatever the scrape interval."""
    if samples.is_empty():
        return samples
    spaced = samples.sort("gpu", "bucket_ts").with_columns(
        gap_s=(pl.col("bucket_ts").shift(-1).over("gpu") - pl.col("bucket_ts")).dt.total_seconds()
    )
    usual = spaced.group_by("gpu").agg(usual_s=pl.col("gap_s").median())
    breaks = (
        spaced.join(usual, on="gpu")
        .filter(pl.col("gap_s") > pl.max_horizontal(2 * pl.col("usual_s"), pl.lit(2 * bucket_s)))
        .select("gpu", (pl.col("bucket_ts") + pl.duration(seconds=bucket_s)).alias("bucket_ts"))
    )
    return pl.concat([samples, breaks], how="diagonal_relaxed").sort("gpu", "bucket_ts")


def gpu_metric(
    samples: pl.DataFrame, anomalies: pl.DataFrame, metric_label: str, bucket_s: int = 900
) -> go.Figure:
    """One line per GPU (bucket means; gaps left empty); the node's anomaly spans shaded."""
    fig = go.Figure()
    samples = _with_gaps(samples, bucket_s)
    for gpu in sorted(samples["gpu"].unique().to_list()):
        part = samples.filter(pl.col("gpu") == gpu)
        # numpy arrays: plotly validates and encodes them in one step (lists go point by point).
        fig.add_scatter(
            x=_utc_naive(part["bucket_ts"]),
            y=part["value"].to_numpy(),
            mode="lines",
            name=f"gpu {gpu}",
            line={"width": 1.5},
        )
    horizon = cast(datetime | None, samples["bucket_ts"].max()) if not samples.is_empty() else None
    # Spans are shaded without text: overlapping findings stacked their labels into an unreadable
    # pile. Each span gets a marker on the top edge instead, named on hover, one legend entry per
    # severity.
    markers: dict[str, tuple[list, list]] = {}
    for row in anomalies.iter_rows(named=True):
        end: datetime | None = row["end_ts"] or horizon
        if end is None:
            continue
        where = f"gpu {row['gpu']}" if row["gpu"] is not None else "node"
        color = SEVERITY_COLORS.get(row["severity"], "#999")
        fig.add_vrect(
            x0=_naive(row["start_ts"]), x1=_naive(end), fillcolor=color, opacity=0.15, line_width=0
        )
        starts, texts = markers.setdefault(row["severity"], ([], []))
        starts.append(_naive(row["start_ts"]))
        texts.append(plain(f"{row['kind']} ({where}), {row['severity']}"))
    for severity, (starts, texts) in markers.items():
        fig.add_scatter(
            x=starts,
            y=[1.0] * len(starts),
            yaxis="y2",
            mode="markers",
            name=f"{severity} finding",
            marker={
                "symbol": "triangle-down",
                "size": 10,
                "color": SEVERITY_COLORS.get(severity, "#999"),
            },
            hovertext=texts,
            hovertemplate="%{hovertext}<br>from %{x|%a %d %H:%M} UTC<extra></extra>",
        )
    if markers:
        fig.update_layout(
            yaxis2={"overlaying": "y", "range": [0, 1.02], "visible": False, "fixedrange": True}
        )
    fig.update_layout(yaxis_title_text=metric_label)
    return _layout(fig, metric_label, height=340)


def goodput_breakdown(job: dict[str, float]) -> go.Figure:
    """The job's wall time split into productive and badput categories (hours)."""
    fig = go.Figure()
    for category, color in CATEGORY_COLORS.items():
        seconds = float(job.get(f"{category}_s") or 0.0)
        fig.add_bar(
            x=[seconds / 3600],
            y=["wall"],
            orientation="h",
            name=category,
            marker_color=color,
            hovertemplate=f"{category}: %{{x:.2f}} h<extra></extra>",
        )
    fig.update_layout(barmode="stack")
    fig.update_xaxes(title_text="hours")
    return _layout(fig, "Goodput breakdown of the job's wall time", height=200)


def rank_heatmap(cells: pl.DataFrame, episodes: pl.DataFrame | None = None) -> go.Figure:
    """Rank × step slowdown ratio (rank time / median rank time of the step); each straggler
    episode (rank, first_step, last_step) outlined."""
    ranks = sorted(cells["rank"].unique().to_list())
    steps = sorted(cells["step_bucket"].unique().to_list())
    grid = cells.pivot(on="step_bucket", index="rank", values="ratio").sort("rank")
    z = [[row.get(str(s)) for s in steps] for row in grid.iter_rows(named=True)]
    fig = go.Figure(
        go.Heatmap(
            z=z,
            x=steps,
            y=ranks,
            colorscale="RdYlGn_r",
            zmid=1.0,
            colorbar={"title": "ratio"},
            hovertemplate="rank %{y}<br>step %{x}<br>ratio %{z:.3f}<extra></extra>",
        )
    )
    for e in [] if episodes is None else episodes.iter_rows(named=True):
        fig.add_shape(
            type="rect",
            x0=e["first_step"],
            x1=e["last_step"],
            y0=e["rank"] - 0.5,
            y1=e["rank"] + 0.5,
            line={"color": "black", "width": 2},
            fillcolor="rgba(0,0,0,0)",
        )
    fig.update_xaxes(title_text="step")
    fig.update_yaxes(title_text="rank", autorange="reversed")
    return _layout(
        fig,
        "Slowdown ratio per rank and step (1.0 = the step's median rank; "
        "boxes: straggler episodes)",
        height=max(260, min(700, 14 * len(ranks) + 120)),
    )
