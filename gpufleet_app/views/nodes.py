"""Nodes: the week's node table, and one node's drill-down
(`/nodes?node=gpu-017&cluster=east&week=2026-W48`; `cluster` may be left out where the name is
unique in the fleet)."""

import polars as pl
import streamlit as st

from gpufleet_app import data, figures, fmt, telemetry, ui
from pipelines import charts

# DCGM fields the drill-down can chart, with units (dcgm-exporter names). Error counters are
# not charted here as cumulative totals: the telemetry sections show them (and the NVLink
# traffic counter) as rates.
GPU_METRICS = {
    "DCGM_FI_DEV_SM_CLOCK": "SM clock (MHz)",
    "DCGM_FI_DEV_POWER_USAGE": "Power (W)",
    "DCGM_FI_DEV_GPU_TEMP": "GPU temperature (°C)",
    "DCGM_FI_DEV_GPU_UTIL": "GPU utilisation (%)",
    "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE": "Tensor pipe active (0-1)",
    "DCGM_FI_DEV_MEMORY_TEMP": "Memory temperature (°C)",
    "DCGM_FI_DEV_ROW_REMAP_FAILURE": "Row remap failure (0/1)",
    "DCGM_FI_DEV_XID_ERRORS": "Last XID (code)",
    "DCGM_FI_DEV_FB_USED": "Framebuffer used (MiB)",
    "DCGM_FI_DEV_MEM_CLOCK": "Memory clock (MHz)",
}
METRIC_BUCKET_S = 900  # 15-minute averages: 672 points per GPU for a week


def node_table(filters: ui.Filters) -> None:
    nodes = data.query("node_table", **filters.params())
    if nodes.is_empty():
        st.info(f"No node data for {filters.week} ({filters.cluster_label}).")
        return
    st.caption(
        f"{len(nodes)} nodes, {ui.week_label(str(filters.week))}, {filters.cluster_label}. "
        "Costliest first (GPU-hours jobs lost because of the node), with the remediation ladder step; "
        "click a column header to sort, a row to open the node."
    )
    shown = ui.shared_names().qualify(nodes, "node", "node")
    event = ui.table(
        shown.select(
            # the ladder step and cost next to the name: a narrow screen still shows them
            "node",
            pl.col("ladder_step").fill_null("—"),
            "cost_gpu_h",
            (pl.col("availability") * 100).alias("availability_pct"),
            "unavailable_gpu_h",
            "unknown_gpu_h",
            "anomalies",
            "open_anomalies",
            "straggler_jobs",
            "cluster",
            "gpu_model",
        ),
        on_select="rerun",
        selection_mode="single-row",
        key="node_table",
        column_config={
            **ui.NODE_LOSS_COLUMNS,
            "open_anomalies": st.column_config.NumberColumn("open anomalies"),
            "straggler_jobs": st.column_config.NumberColumn("straggler appearances"),
            "ladder_step": st.column_config.TextColumn("ladder step"),
        },
    )
    if event.selection.rows:
        row = nodes.row(event.selection.rows[0], named=True)
        ui.set_url(node=row["node"], cluster=row["cluster"])
        st.rerun()


def node_detail(node: str, cluster: str, filters: ui.Filters) -> None:
    """The page of node `node` of `cluster` (a node is a (cluster, node) pair)."""
    params = {**filters.params(), "node": node, "cluster": cluster}
    info = data.query("node_info", node=node, cluster=cluster)
    inv = info.row(0, named=True)
    st.page_link(
        ui.NODES,
        label="All nodes",
        icon=":material/arrow_back:",
        query_params={"week": str(filters.week)},
    )
    st.caption(
        f"{fmt.text(inv['cluster'])} · {fmt.text(inv['instance_type'] or 'unknown instance type')} · "
        f"{inv['gpu_count']} × {fmt.text(inv['gpu_model'] or 'GPU')} · {ui.week_label(str(filters.week))}"
    )
    table = data.query("node_table", **params)
    node_rows = table.filter(pl.col("node") == node)
    summary = node_rows.row(0, named=True) if node_rows.height else {}
    # two rows of three cards: six in one row cut values such as "1,234.5 GPU-h"
    columns = [*st.columns(3), *st.columns(3)]
    columns[5].metric(
        "Node cost",
        fmt.gpu_hours(summary.get("cost_gpu_h")),
        border=True,
        help="GPU-hours jobs lost because of this node this week: wasted progress and recovery of "
        "failures it is implicated in, straggler drag of its ranks, time it was down while jobs "
        "waited. Replacing it on Monday would have raised fleet goodput by "
        f"{fmt.pct(summary.get('goodput_regained'))} points.",
    )
    columns[0].metric("Availability", fmt.pct(summary.get("availability")), border=True)
    columns[1].metric(
        "Unavailable GPU-h", fmt.number(summary.get("unavailable_gpu_h")), border=True
    )
    columns[2].metric("Unknown GPU-h", fmt.number(summary.get("unknown_gpu_h")), border=True)
    columns[3].metric("Open anomalies", summary.get("open_anomalies", 0), border=True)
    columns[4].metric(
        "Ladder step",
        summary.get("ladder_step") or "none",
        border=True,
        help="Highest remediation step its open anomalies call for: "
        "watch → cordon → drain → reset_gpu → reboot → replace.",
    )

    states = data.query("node_states", **params)
    if states.is_empty():
        st.info("No state intervals for this node this week.")
    else:
        states = states.with_columns(lane=pl.lit(node))
        st.plotly_chart(
            charts.timeline(
                states,
                "lane",
                "state",
                charts.STATE_COLORS,
                "State timeline",
                hover="reason",
                height=200,
            ),
            key="state_timeline",
        )
        # Degraded is usable (it counts as available) and maintenance is outside the
        # denominator: only unavailable and unknown time is lost.
        lost = states.filter(pl.col("state").is_in(["unavailable", "unknown"]))
        if lost.height:
            with st.expander(f"{lost.height} intervals unavailable or unknown"):
                ui.table(
                    lost.select("state", "start_ts", "end_ts", "duration_s", "reason"),
                )

    conditions = data.query(
        "node_conditions",
        **params,
        good_when_true_suffixes=ui.settings().availability.good_when_true_suffixes,
    )
    st.subheader("Condition history")
    if conditions.is_empty():
        st.info("No condition samples for this node this week.")
    else:
        st.plotly_chart(
            # Coloured by what the status means for this condition, not by True/False.
            charts.timeline(
                conditions,
                "condition",
                "verdict",
                charts.CONDITION_COLORS,
                "Conditions (status runs)",
                hover="detail",
                height=120 + 40 * conditions["condition"].n_unique(),
            ),
            key="condition_timeline",
        )
        changes = conditions.filter(pl.len().over("condition") > 1)
        if changes.height:
            ui.table(
                changes.select("condition", "status", "reason", "start_ts", "end_ts"),
            )

    st.subheader("GPU telemetry (DCGM)")
    if ui.has_table("gpu_utilisation_daily"):
        mig = data.query("node_mig", **params)
        for mig_gpu in mig.iter_rows(named=True):
            st.markdown(
                f"**MIG-partitioned:** GPU {mig_gpu['gpu']} · "
                f"instances {', '.join(mig_gpu['instances'])} · "
                f"mean activity {fmt.pct(mig_gpu['mean_activity'])} (the charts show the whole GPU's "
                "series; per-instance use is on the Utilisation page)"
            )
    anomalies = data.query(
        "anomaly_list", **params, severity="*", kind="*", status="*", job="*", all_time=False
    )
    fields = list(GPU_METRICS)
    metric = st.selectbox(
        "Field",
        fields,
        index=ui.choice_from_url("metric", fields, "DCGM field"),
        format_func=lambda m: f"{GPU_METRICS[m]} · {m}",
    )
    ui.set_url(metric=None if metric == fields[0] else metric)
    samples = data.query("node_metric", **params, metric=metric, bucket_s=METRIC_BUCKET_S)
    if samples.is_empty():
        st.info(f"No `{metric}` samples from this node this week.")
    else:
        st.plotly_chart(
            figures.gpu_metric_band(samples, anomalies, GPU_METRICS[metric], METRIC_BUCKET_S),
            key="gpu_metric",
        )
        st.caption(
            "15-minute averages per GPU, each inside the band of its samples' min and max (a "
            "short throttle shows as a dip of the band); a break in a line is a telemetry gap. "
            "Shaded spans are the node's anomalies (red critical, yellow warn, blue info)."
        )
    telemetry.node_sections(params)

    left, right = st.columns(2)
    left.subheader("Anomalies")
    if anomalies.is_empty():
        left.success("No anomalies this week.")
    else:
        ui.table(
            container=left,
            key="node_anomalies",
            frame=anomalies.select(
                "severity",
                "kind",
                "gpu",
                "action",
                "impact_gpu_h",
                "goodput_lost_gpu_h",
                "evidence",
                "start_ts",
                "end_ts",
            ),
        )
    if ui.has_table("node_remediation_history"):
        left.subheader("Remediation history")
        ladder = data.query(
            "node_remediation_history", node=node, cluster=cluster, week_end=params["week_end"]
        )
        if ladder.is_empty():
            left.success("Nothing was ever recommended for this node.")
        else:
            left.caption(
                "What the ladder recommended and since when (until empty: still in force)."
            )
            ui.table(
                container=left, frame=ladder.select("step", "since", "until", "severity", "why")
            )
    right.subheader("XID and GPU events")
    events = data.query("node_events", **params)
    if events.is_empty():
        right.success("No GPU events this week.")
    else:
        ui.table(container=right, frame=events.select("ts", "gpu", "kind", "code", "message"))

    st.subheader("Straggler episodes on this node")
    episodes = data.query("node_episodes", **params)
    if episodes.is_empty():
        st.success("No rank on this node was a straggler this week.")
    else:
        jobs_hit = episodes["job_id"].n_unique()
        shared = ui.shared_names()
        st.caption(
            f"{episodes.height} episode(s) in {jobs_hit} job(s): spells in which a rank on this node "
            "ran slower than its job's other ranks. Spells that repeat across jobs point at the host."
        )
        ui.table(
            shared.qualify(episodes.with_columns(cluster=pl.lit(cluster)), "job_id", "job").select(
                "job_id",
                "attempt",
                "rank",
                "gpu",
                "first_step",
                "last_step",
                "start_ts",
                "end_ts",
                "open",
                "median_ratio",
                "drag_s",
            ),
            key="node_episodes",
            column_config={
                "start_ts": st.column_config.DatetimeColumn(
                    "started (UTC)", format="YYYY-MM-DD HH:mm"
                ),
                "end_ts": st.column_config.DatetimeColumn("ended (UTC)", format="YYYY-MM-DD HH:mm"),
                "open": st.column_config.CheckboxColumn("to the end"),
                "median_ratio": st.column_config.NumberColumn("median ratio", format="%.3f"),
                "drag_s": st.column_config.NumberColumn("drag s", format="%.1f"),
            },
        )

    st.subheader("Jobs that ran here")
    jobs = data.query("node_jobs", **params)
    if jobs.is_empty():
        st.info("No job attempts on this node this week.")
        return
    st.caption("Click a row to open the job.")
    event = ui.table(
        ui.shared_names()
        .qualify(jobs.with_columns(cluster=pl.lit(cluster)), "job_id", "job")
        .select(
            "job_id",
            "name",
            "attempt",
            "start_ts",
            "end_ts",
            "attempt_state",
            "failure_class",
            "hardware_signal",
            "final_state",
            "nodes",
            "gpu_h",
        ),
        on_select="rerun",
        selection_mode="single-row",
        key="node_jobs",
        column_config={"gpu_h": st.column_config.NumberColumn("GPU-h", format="%.1f")},
    )
    if event.selection.rows:
        job_id = jobs["job_id"][event.selection.rows[0]]
        st.switch_page(ui.JOBS, query_params={"job": job_id, "cluster": cluster})


selected = ui.url_param("node")
if selected:
    located = ui.locate("node", selected)
    shown_name = ui.shared_names().node(selected, located.cluster)
    st.title(f"Node {fmt.text(shown_name)}")
    filters = ui.week_and_cluster(with_cluster=False)
    ui.stale_notice()
    if located.cluster is None:
        ui.explain_unlocated(
            located,
            "node",
            f"Node “{fmt.text(selected)}” is not in the fleet inventory (table `nodes`).",
        )
    else:
        ui.set_url(cluster=located.cluster)
        node_detail(selected, located.cluster, filters)
else:
    st.title("Nodes")
    filters = ui.week_and_cluster()
    ui.stale_notice()
    node_table(filters)
