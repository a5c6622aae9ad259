"""Fleet overview: the weekly reliability review on one page."""

import polars as pl
import streamlit as st
from streamlit.delta_generator import DeltaGenerator

from gpufleet_app import data, fmt, trends, ui
from gpufleet_app.kpis import ESCAPE_KPIS, KPIS, Kpi
from pipelines import charts

st.title("Fleet overview")
filters = ui.week_and_cluster()
params = filters.params()
ui.stale_notice()

# KPI row with week-over-week deltas
summary = data.query("kpis", **params) if ui.has_table("weekly_summary") else None
if summary is None:
    st.warning("The weekly summary is not computed yet: run `gpufleet compute` for the KPI row.")
    summary = pl.DataFrame({"week": []}, schema={"week": pl.String})
this_week = summary.filter(pl.col("week") == str(filters.week))
last_week = summary.filter(pl.col("week") == str(filters.week.previous))
current = this_week.row(0, named=True) if this_week.height else {}
previous = last_week.row(0, named=True) if last_week.height else {}
if not current and summary.columns != ["week"]:
    st.warning(
        f"No weekly summary for {filters.week} ({filters.cluster_label}). "
        "Run `gpufleet compute` to build it."
    )
st.caption(
    f"{ui.week_label(str(filters.week))}, {filters.cluster_label}. "
    f"Deltas compare with {filters.week.previous}."
)
trend = trends.load(filters)


def kpi_card(column: DeltaGenerator, kpi: Kpi, chart_data: list[float] | None = None) -> None:
    """One KPI: this week's value, the change from the previous week, its sparkline if any."""
    value = current.get(kpi.column)
    column.metric(
        kpi.label,
        kpi.value(value),
        kpi.change(value, previous.get(kpi.column)),
        delta_color="normal" if kpi.higher_is_better else "inverse",
        help=kpi.help,
        border=True,
        chart_data=chart_data,
    )


for row_start in range(0, len(KPIS), 4):
    for column, kpi in zip(st.columns(4), KPIS[row_start : row_start + 4]):
        kpi_card(column, kpi, trends.sparkline(trend, filters, kpi.column))

# Utilisation: whether the GPUs that are up do work (its own page).
if "busy_share_allocated" in current:
    utilisation_query = {"week": str(filters.week)}
    if filters.cluster != ui.ALL_CLUSTERS:
        utilisation_query["cluster"] = filters.cluster
    st.page_link(
        ui.UTILISATION,
        label=(
            f"Utilisation: {fmt.pct(current.get('busy_share_allocated'))} of allocated GPU-hours busy, "
            f"{fmt.gpu_hours(current.get('allocated_idle_gpu_h'))} allocated but idle, "
            f"{fmt.number(current.get('gpus_freeable_by_mig'), 2)} GPUs freeable by MIG packing"
        ),
        icon=":material/arrow_forward:",
        query_params=utilisation_query,
    )

# Escapes: did the checks see the fleet's failures coming?
st.subheader("Escapes")
for column, kpi in zip(st.columns(4), ESCAPE_KPIS):
    kpi_card(column, kpi)

# Daily trends
daily = data.query("daily_trend", **params)
left, right = st.columns(2)
if daily.is_empty():
    left.info("No daily availability rows for this week.")
else:
    left.plotly_chart(charts.availability_trend(daily), key="availability_trend")
    right.plotly_chart(charts.jobs_trend(daily), key="jobs_trend")

# Goodput stack and failure Pareto
left, right = st.columns(2)
stack = data.query("goodput_stack", **params).row(0, named=True)
if not stack["clusters"]:
    left.info("No goodput stack for this week.")
else:
    left.plotly_chart(charts.goodput_waterfall(stack), key="goodput_waterfall")
    left.caption(
        f"Fleet goodput = productive / allocated = {fmt.gpu_hours(stack['productive_gpu_h'])} / "
        f"{fmt.gpu_hours(stack['allocated_gpu_h'])} = **{fmt.pct(stack['goodput'])}**. "
        f"Idle: {fmt.gpu_hours(stack['idle_gpu_h'])} unallocated; "
        f"{fmt.gpu_hours(stack['allocated_idle_gpu_h'])} allocated but idle (telemetry, part of allocated)."
    )
pareto = data.query("failure_pareto", **params)
if pareto.is_empty():
    right.success("No fleet failure ended this week.")
else:
    trends.failure_pareto(right, pareto)
apart = data.query("not_failures", **params)
if not apart.is_empty():
    right.caption(
        "Not fleet failures (user, scheduler policy): "
        + ", ".join(f"{r['cause']} {r['attempts']}" for r in apart.iter_rows(named=True))
        + " attempts."
    )

# Top offending nodes and open anomalies
left, right = st.columns([3, 2])
nodes = data.query("node_table", **params)
offenders = nodes.filter(
    (pl.col("unavailable_gpu_h") + pl.col("unknown_gpu_h") > 0)
    | (pl.col("anomalies") > 0)
    | (pl.col("cost_gpu_h") > 0)
).head(10)
left.subheader("Top offending nodes")
if offenders.is_empty():
    left.success("No node lost GPU-hours or raised an anomaly this week.")
else:
    left.caption(
        "Ranked by node cost (GPU-hours jobs lost because of the node), then GPU-hours "
        "unavailable + unknown. Click a row to open the node."
    )
    event = ui.table(
        ui.shared_names()
        .qualify(offenders, "node", "node")
        .select(
            "node",
            pl.col("ladder_step").fill_null("—"),
            "cost_gpu_h",
            (pl.col("availability") * 100).alias("availability_pct"),
            "unavailable_gpu_h",
            "unknown_gpu_h",
            "anomalies",
            "cluster",
        ),
        container=left,
        on_select="rerun",
        selection_mode="single-row",
        key="top_nodes",
        column_config={
            **ui.NODE_LOSS_COLUMNS,
            "ladder_step": st.column_config.TextColumn("next step"),
        },
    )
    if event.selection.rows:
        row = offenders.row(event.selection.rows[0], named=True)
        ui.open_node(row["node"], row["cluster"], str(filters.week))

open_anomalies = data.query(
    "anomaly_list",
    **params,
    severity="*",
    kind="*",
    status="open",
    node="*",
    job="*",
    all_time=False,
)
right.subheader("Open anomalies")
counts = dict(open_anomalies.group_by("severity").len().iter_rows())
for column, severity in zip(right.columns(3), ("critical", "warn", "info")):
    column.metric(severity, counts.get(severity, 0), border=True)
if not open_anomalies.is_empty():
    right.caption(f"Open at the end of {filters.week}. Click a row to open its node or job.")
    shown = open_anomalies.head(10)
    shared = ui.shared_names()
    event = ui.table(
        shared.qualify(shared.qualify(shown, "node", "node"), "job_id", "job").select(
            "severity",
            "kind",
            pl.when(pl.col("job_id").is_not_null())
            .then(pl.format("{} rank {}", "job_id", "rank"))
            .when(pl.col("gpu").is_not_null())
            .then(pl.format("{} gpu {}", "node", "gpu"))
            .otherwise(pl.col("node"))
            .alias("entity"),
            "start_ts",
            "action",
        ),
        container=right,
        on_select="rerun",
        selection_mode="single-row",
        key="open_anomalies",
        column_config={
            "start_ts": st.column_config.DatetimeColumn("since (UTC)", format="MM-DD HH:mm")
        },
    )
    if event.selection.rows:
        ui.open_finding(shown.row(event.selection.rows[0], named=True), str(filters.week))
right.page_link(
    ui.ANOMALIES,
    label="All anomalies",
    icon=":material/arrow_forward:",
    query_params={"week": str(filters.week), "status": "open"},
)

# Escapes per detector (below the worst nodes, which stay the page's first table)
if ui.has_table("failure_escapes"):
    st.subheader("Escapes by detector")
    detectors = data.query("escapes_by_detector", **params)
    if detectors.is_empty():
        st.caption("No fleet failure (hardware or infrastructure) ended this week.")
    else:
        st.caption(
            "Fleet failures of the week per detector: caught = a finding or bad condition was "
            "open before the failure; escaped = it opened only after (none: nothing saw it)."
        )
        ui.table(
            detectors.with_columns(
                (pl.col("median_lead_time_s") / 60).alias("median_lead_min")
            ).select(
                "detector",
                "catches",
                "escapes",
                "placed_on_flagged",
                "median_lead_min",
                "late_remediation_gpu_h",
            ),
            key="escapes_by_detector",
            column_config={
                "placed_on_flagged": st.column_config.NumberColumn("placed on flagged"),
                "median_lead_min": st.column_config.NumberColumn(
                    "median lead (min)", format="%.0f"
                ),
                "late_remediation_gpu_h": st.column_config.NumberColumn(
                    "GPU-h lost to late remediation", format="%.1f"
                ),
            },
        )

trends.goodput_groups(filters)
trends.section(filters, trend)
