"""Anomalies: every finding, filterable, each row linking to its node or job."""

import polars as pl
import streamlit as st

from gpufleet_app import data, fmt, ui

SEVERITIES = ["*", "critical", "warn", "info"]
STATUSES = {"*": "Open and closed", "open": "Open", "closed": "Closed"}

ANOMALY_COLUMNS = (
    "severity",
    "kind",
    "node",
    "gpu",
    "action",
    "impact_gpu_h",
    "goodput_lost_gpu_h",
    "evidence",
    "link",
    "job_id",
    "rank",
    "entity_type",
    "start_ts",
    "end_ts",
    "is_open",
    "score",
)
"""The anomaly table's column order."""

st.title("Anomalies")
filters = ui.week_and_cluster()
ui.stale_notice()

kinds = ["*", *data.query("anomaly_kinds")["kind"].to_list()]


severity_at = ui.choice_from_url("severity", SEVERITIES, "severity", "all severities")
kind_at = ui.choice_from_url(
    "kind", kinds, "anomaly kind (none of that kind in the database)", "all kinds"
)
status_at = ui.choice_from_url("status", list(STATUSES), "status", "open and closed")
left, middle, right = st.columns(3)
severity = left.selectbox(
    "Severity",
    SEVERITIES,
    index=severity_at,
    format_func=lambda s: "All severities" if s == "*" else s,
)
kind = middle.selectbox(
    "Kind", kinds, index=kind_at, format_func=lambda k: "All kinds" if k == "*" else k
)
status = right.selectbox(
    "Status", list(STATUSES), index=status_at, format_func=lambda choice: STATUSES[choice]
)
ui.set_url(
    severity=None if severity == "*" else severity,
    kind=None if kind == "*" else kind,
    status=None if status == "*" else status,
)

# `node` comes from links (the Remediation page's "findings"); there is no picker for it. Like a
# node page, a name several clusters have needs the link's cluster: without it the page lists
# the clusters to choose from, never every cluster's node of that name.
node = ui.url_param("node")
if node is not None:
    located = ui.locate("node", node)
    unknown = f"Unknown node “{fmt.text(node)}” in the link; showing every node."
    if not located.clusters:  # a stale filter: the page still lists every node's findings
        st.warning(unknown)
        node = None
    elif located.cluster is None:
        ui.explain_unlocated(
            located,
            "node",
            unknown,
            page=ui.ANOMALIES,
            keep=("week", "severity", "kind", "status"),
        )
        st.stop()
    else:
        shown = ui.shared_names().node(node, located.cluster)
        st.caption(f"Findings on node {fmt.text(shown)} only (from the link).")
ui.set_url(node=node)

rows = data.query(
    "anomaly_list",
    **filters.params(),
    severity=severity,
    kind=kind,
    status=status,
    node=node or "*",
    job="*",
    all_time=False,
)
if rows.is_empty():
    st.success(f"No anomalies match in {filters.week} ({filters.cluster_label}).")
else:
    week = str(filters.week)
    shared = ui.shared_names()
    linked = shared.qualify(
        shared.qualify(
            rows.with_columns(
                link=pl.when(pl.col("job_id").is_not_null())
                .then(ui.job_link(pl.col("job_id"), pl.col("cluster")))
                .otherwise(ui.node_link(pl.col("node"), pl.col("cluster"), week))
            ),
            "node",
            "node",
        ),
        "job_id",
        "job",
    )
    st.caption(
        f"{rows.height} anomalies overlapping {ui.week_label(week)}, {filters.cluster_label}; "
        "open = still open at the week's end. Most severe first; click a row (or its link) to open it."
    )
    event = ui.table(
        # What to do and what it cost first (ladder step, impact, evidence), so a narrow screen
        # still shows them; times and scores after.
        linked.select(*ANOMALY_COLUMNS),
        on_select="rerun",
        selection_mode="single-row",
        key="anomaly_table",
        column_config={
            "start_ts": st.column_config.DatetimeColumn("start (UTC)", format="YYYY-MM-DD HH:mm"),
            "end_ts": st.column_config.DatetimeColumn("end (UTC)", format="YYYY-MM-DD HH:mm"),
            "is_open": st.column_config.CheckboxColumn("open"),
            "impact_gpu_h": st.column_config.NumberColumn(
                "impact GPU-h",
                format="%.1f",
                help="GPU-hours of jobs on the entity while it was open.",
            ),
            "goodput_lost_gpu_h": st.column_config.NumberColumn(
                "goodput lost GPU-h",
                format="%.1f",
                help="Goodput lost by the job attempts the finding ended: wasted progress + recovery.",
            ),
            "link": st.column_config.LinkColumn("open", display_text="open ↗"),
        },
    )
    if event.selection.rows:
        ui.open_finding(rows.row(event.selection.rows[0], named=True), week)
