"""Plotly figures of the trends, weighted Pareto and telemetry views; each a pure function of
polars frames (no database, no Streamlit). Shares the look of `charts`."""

from __future__ import annotations

from datetime import date, datetime
from typing import cast

import numpy as np
import plotly.colors
import plotly.graph_objects as go
import polars as pl
from plotly.subplots import make_subplots

from pipelines import charts

ALL_CLUSTERS = "*"
PALETTE = plotly.colors.qualitative.Plotly


def _layout(fig: go.Figure, title: str, height: int) -> go.Figure:
    fig.update_layout(
        title={"text": title, "x": 0, "font": {"size": 15}},
        height=height,
        margin={"l": 10, "r": 10, "t": 80, "b": 10},
        legend={"orientation": "h", "x": 0, "y": 1.02, "yanchor": "bottom", "font": {"size": 11}},
    )
    return fig


def _rgba(hex_color: str, alpha: float) -> str:
    red, green, blue = (int(hex_color[i : i + 2], 16) for i in (1, 3, 5))
    return f"rgba({red},{green},{blue},{alpha})"


# ---------------------------------------------------------------- trends


def trends(
    frame: pl.DataFrame, metrics: list[tuple[str, str, bool]], mondays: list[date]
) -> go.Figure:
    """Small multiples: one panel per metric (column, title, is_ratio), one line per cluster over
    the weeks (`mondays`); the all-clusters line is black. Ratios are drawn in percent."""
    columns = 4
    rows = -(-len(metrics) // columns)
    fig = make_subplots(
        rows=rows,
        cols=columns,
        subplot_titles=[title for _, title, _ in metrics],
        vertical_spacing=0.16,
        horizontal_spacing=0.06,
    )
    clusters = sorted(frame["cluster"].unique().to_list(), key=lambda c: (c != ALL_CLUSTERS, c))
    # ISO week labels as categories: one tick per week, exactly under its point
    labels = [f"W{monday.isocalendar().week:02d}" for monday in mondays]
    for position, (column, _, is_ratio) in enumerate(metrics):
        row, col = divmod(position, columns)
        for index, cluster in enumerate(clusters):
            part = frame.filter(pl.col("cluster") == cluster)
            by_week = dict(zip(part["week_start"].to_list(), part[column].to_list()))
            # every week on the axis: a week without a value is a gap, never 0
            ys = [by_week.get(monday) for monday in mondays]
            ys = [None if y is None else (y * 100 if is_ratio else y) for y in ys]
            color = "#111" if cluster == ALL_CLUSTERS else PALETTE[index % len(PALETTE)]
            fig.add_scatter(
                x=labels,
                y=ys,
                mode="lines+markers",
                row=row + 1,
                col=col + 1,
                name="all clusters" if cluster == ALL_CLUSTERS else cluster,
                legendgroup=cluster,
                showlegend=position == 0,
                line={"color": color, "width": 2.5 if cluster == ALL_CLUSTERS else 1.5},
                marker={"size": 5},
                hovertemplate="%{x}: %{y:,.2f}"
                + (" %" if is_ratio else "")
                + "<extra>"
                + ("all clusters" if cluster == ALL_CLUSTERS else cluster)
                + "</extra>",
            )
    # every third week labelled, counting back from the chosen one, so the labels never run together
    fig.update_xaxes(type="category", tickangle=0, tickmode="array", tickvals=labels[::-3])
    _layout(fig, "Per ISO week and cluster", height=260 * rows + 90)
    # the legend right of the title, above the panel titles, not over either
    fig.update_layout(
        legend={"x": 1, "xanchor": "right", "y": 1.1, "yanchor": "bottom"}, margin={"t": 120}
    )
    return fig


# ---------------------------------------------------------------- weighted Pareto


lost_pareto = charts.lost_pareto


# ---------------------------------------------------------------- node telemetry


def gpu_metric_band(
    samples: pl.DataFrame, anomalies: pl.DataFrame, metric_label: str, bucket_s: int = 900
) -> go.Figure:
    """The node page's per-GPU chart (`charts.gpu_metric`: 15-minute means, gaps, anomaly spans)
    with each GPU's min-max band of the bucket's samples drawn beneath its mean line, so a short
    throttle that the mean smooths away still shows as a dip of the band."""
    fig = charts.gpu_metric(
        samples.drop("min_value", "max_value", strict=False), anomalies, metric_label, bucket_s
    )
    if "min_value" not in samples.columns or "max_value" not in samples.columns:
        return fig
    gapped = charts._with_gaps(samples, bucket_s)
    bands = []
    for index, gpu in enumerate(sorted(samples["gpu"].unique().to_list())):
        color = PALETTE[index % len(PALETTE)]
        x, y, edge = _band_polygons(gapped.filter(pl.col("gpu") == gpu))
        # One closed polygon per stretch of telemetry: `fill="tonexty"` between a min and a max
        # line would join the stretches either side of a gap with a diagonal fill (plotly fills
        # across the nulls of a `tonexty` trace), `toself` closes each stretch on its own.
        bands.append(
            go.Scatter(
                x=x,
                y=y,
                customdata=edge,
                mode="lines",
                line={"width": 0},
                fill="toself",
                fillcolor=_rgba(color, 0.18),
                hoveron="points",
                legendgroup=f"gpu {gpu}",
                showlegend=False,
                name=f"gpu {gpu} min-max",
                hovertemplate=f"gpu {gpu} %{{customdata}} %{{y:,.1f}}<extra></extra>",
            )
        )
        for trace in fig.data:
            if trace.name == f"gpu {gpu}":
                trace.line.color = color
                trace.legendgroup = f"gpu {gpu}"
    # Bands first, so every mean line is drawn on top of them.
    return go.Figure(data=[*bands, *fig.data], layout=fig.layout)


def _band_polygons(part: pl.DataFrame) -> tuple[list, list, list]:
    """The min-max band of one GPU as closed polygons, one per run of buckets without a gap
    (`charts._with_gaps` marks a gap by a null row): along the maxima forward, back along the
    minima, then a null point so plotly starts the next polygon afresh. Returns x, y and which
    edge (max/min) each point is."""
    runs = (
        part.with_columns(missing=pl.col("min_value").is_null() | pl.col("max_value").is_null())
        .with_columns(run=pl.col("missing").cum_sum())
        .filter(~pl.col("missing"))
    )
    x: list = []
    y: list = []
    edge: list = []
    for _, run in runs.group_by("run", maintain_order=True):
        times = charts._utc_naive(run["bucket_ts"]).tolist()
        x += [*times, *reversed(times), None]
        y += [*run["max_value"].to_list(), *reversed(run["min_value"].to_list()), None]
        edge += ["max"] * run.height + ["min"] * run.height + [None]
    return x[:-1], y[:-1], edge[:-1]


def _steps_with_gaps(times: pl.Series, *columns: pl.Series, bucket_s: int) -> tuple:
    """A step line's x and y arrays, broken where buckets are missing: each bucket followed by a
    silence keeps its step to the end of the bucket, then a null point ends the line, so a gap is
    a gap (a held step would claim a rate or a link count nobody measured)."""
    x = charts._utc_naive(times)
    ys = [c.cast(pl.Float64).to_numpy() for c in columns]
    if len(x) < 2:
        return (x, *ys)
    step = np.timedelta64(bucket_s, "s")
    before_gap = np.flatnonzero(np.diff(x) > step)
    if len(before_gap) == 0:
        return (x, *ys)
    ends = x[before_gap] + step
    # insert after each bucket before a gap: (end of bucket, same value), then (end, null)
    where = np.repeat(before_gap + 1, 2)
    x = np.insert(x, where, np.repeat(ends, 2))
    gapped = []
    for y in ys:
        extra = np.empty(2 * len(before_gap))
        extra[0::2] = y[before_gap]
        extra[1::2] = np.nan
        gapped.append(np.insert(y, where, extra))
    return (x, *gapped)


def counter_rates(rates: pl.DataFrame, bucket_s: int = 3600) -> go.Figure:
    """One panel per error counter that went up: its rate per hour per GPU (or per node, for
    the NIC counter) over the week."""
    counters = rates.filter(pl.col("increase") > 0)["counter"].unique(maintain_order=True).to_list()
    fig = make_subplots(
        rows=len(counters),
        cols=1,
        subplot_titles=counters,
        shared_xaxes=True,
        vertical_spacing=0.08,
    )
    for row, counter in enumerate(counters, start=1):
        part = rates.filter(pl.col("counter") == counter)
        # only the GPUs whose counter went up: a flat line per healthy GPU hides the sick one
        moved = part.group_by("gpu", maintain_order=True).agg(pl.col("increase").sum())
        for gpu in moved.filter(pl.col("increase") > 0)["gpu"].to_list():
            series = part.filter(pl.col("gpu").is_null() if gpu is None else pl.col("gpu") == gpu)
            name = "node" if gpu is None else f"gpu {gpu}"
            x, y = _steps_with_gaps(series["bucket_ts"], series["per_hour"], bucket_s=bucket_s)
            fig.add_scatter(
                x=x,
                y=y,
                mode="lines",
                line={"shape": "hv", "width": 1.5},
                name=f"{name}",
                legendgroup=name,
                showlegend=row == 1,
                row=row,
                col=1,
                hovertemplate=f"{name}: %{{y:,.1f}} per hour<extra>{counter}</extra>",
            )
        fig.update_yaxes(title_text="per hour", rangemode="tozero", row=row, col=1)
    _layout(
        fig,
        "Error counters, rate per hour (reset-safe increases)",
        height=160 + 200 * max(1, len(counters)),
    )
    # panel titles sit where the shared legend would: the legend goes under the panels
    fig.update_layout(legend={"y": -0.08, "yanchor": "top"}, margin={"b": 40})
    return fig


def clock_reasons(reasons: pl.DataFrame) -> go.Figure:
    """Hours each clock-event reason was active, per GPU, stacked."""
    fig = go.Figure()
    shown = reasons.filter(pl.col("active_h") > 0)
    for index, reason in enumerate(sorted(shown["reason"].unique().to_list())):
        part = shown.filter(pl.col("reason") == reason).sort("gpu")
        fig.add_bar(
            x=[f"gpu {g}" for g in part["gpu"].to_list()],
            y=part["active_h"].to_list(),
            name=reason,
            marker_color=PALETTE[index % len(PALETTE)],
            hovertemplate=f"{reason}: %{{y:,.2f}} h<extra>%{{x}}</extra>",
        )
    fig.update_layout(barmode="stack")
    fig.update_yaxes(title_text="hours active", rangemode="tozero")
    return _layout(fig, "Clock-event (throttle) reasons, hours active per GPU", height=340)


# ---------------------------------------------------------------- fleet telemetry


def fleet_heatmap(cells: pl.DataFrame, value: str, label: str, column_s: int = 3600) -> go.Figure:
    """Nodes x time: the `value` column of every (node, column_ts) cell; columns `column_s` apart."""
    nodes = sorted(cells["node"].unique().to_list())
    reported = cells["column_ts"].unique().sort()
    # Every column from the first to the last, reported or not: plotly widens each cell to meet its
    # neighbours, so a column no node reported would be painted over by the columns either side.
    first, last = cast(datetime, reported.min()), cast(datetime, reported.max())
    times = pl.datetime_range(first, last, interval=f"{column_s}s", eager=True).cast(reported.dtype)
    # Cells by (node, column) index; a node that did not report in a column stays empty (NaN).
    z = np.full((len(nodes), len(times)), np.nan)
    rows = (
        cells["node"]
        .replace_strict(nodes, list(range(len(nodes))), return_dtype=pl.Int64)
        .to_numpy()
    )
    cols = np.searchsorted(times.to_numpy(), cells["column_ts"].to_numpy())
    z[rows, cols] = cells[value].cast(pl.Float64).fill_null(np.nan).to_numpy()
    x = charts._utc_naive(times)
    fig = go.Figure(
        go.Heatmap(
            z=z,
            x=x,
            y=nodes,
            colorscale="Viridis",
            colorbar={"title": label},
            hovertemplate="%{y}<br>%{x|%a %d %b %H:%M} UTC<br>%{z:,.1f}<extra></extra>",
        )
    )
    fig.update_xaxes(type="date", tickformat=charts.DAY_TICKS, dtick=86_400_000)
    fig.update_yaxes(autorange="reversed", type="category")
    return _layout(
        fig, f"{label} per node and hour", height=max(320, min(4000, 12 * len(nodes) + 160))
    )


def nvlink_traffic(traffic: pl.DataFrame, bucket_s: int = 3600) -> go.Figure:
    """NVLink traffic per GPU, MiB/s averaged over each bucket (the counter's rate, never its total)."""
    fig = go.Figure()
    for index, gpu in enumerate(sorted(traffic["gpu"].unique().to_list())):
        part = traffic.filter(pl.col("gpu") == gpu)
        x, y = _steps_with_gaps(part["bucket_ts"], part["mib_per_s"], bucket_s=bucket_s)
        fig.add_scatter(
            x=x,
            y=y,
            mode="lines",
            line={"shape": "hv", "width": 1.5, "color": PALETTE[index % len(PALETTE)]},
            name=f"gpu {gpu}",
            hovertemplate=f"gpu {gpu}: %{{y:,.1f}} MiB/s<extra></extra>",
        )
    fig.update_yaxes(title_text="MiB/s", rangemode="tozero")
    return _layout(fig, "NVLink traffic per GPU (MiB/s, hourly mean)", height=320)


def nic_links(links: pl.DataFrame, bucket_s: int = 3600) -> go.Figure:
    """Network links up per bucket (fewest and most in the bucket's scrapes) against the links the
    node should have: a link down for one scrape shows as a dip of the `fewest` line."""
    fig = go.Figure()
    x, most, fewest = _steps_with_gaps(
        links["bucket_ts"], links["links_max"], links["links_min"], bucket_s=bucket_s
    )
    fig.add_scatter(
        x=x,
        y=most,
        mode="lines",
        name="most up",
        line={"shape": "hv", "width": 1, "color": "#1f77b4"},
    )
    fig.add_scatter(
        x=x,
        y=fewest,
        mode="lines",
        name="fewest up",
        line={"shape": "hv", "width": 2, "color": charts.STATE_COLORS["unavailable"]},
    )
    expected = links["expected"].drop_nulls()
    top = max(charts.column_max(links["links_max"]), charts.column_max(expected))
    if expected.len():
        fig.add_hline(y=float(expected[0]), line={"dash": "dash", "color": "#111", "width": 1})
        fig.add_scatter(
            x=[None],
            y=[None],
            mode="lines",
            name=f"expected ({expected[0]:.0f})",
            line={"dash": "dash", "color": "#111", "width": 1},
        )
    # whole links: integer ticks from 0, with room above the expected line
    fig.update_yaxes(
        title_text="links up",
        range=[0, top + 1 if top else 1],
        dtick=charts.count_tick(int(top) + 1),
        rangemode="tozero",
    )
    return _layout(fig, "Network links up (InfiniBand / EFA)", height=300)
