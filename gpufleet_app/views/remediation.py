"""Remediation: the action list. Every node with a step recommended this week, why, since when,
granted or waiting under the disruption budget, its history, and the command an operator would run.

The rows are `queries/app/remediation_plan.sql`, which `gpufleet remediation` writes as JSON or CSV.
gpufleet never runs the commands: it recommends, a person (or their automation) acts.
"""

import polars as pl
import streamlit as st

from gpufleet_app import data, fmt, ui

STATUS_HELP = (
    "granted: within the cluster's disruption budget, run it now; waiting: over the budget "
    "(`[detection] max_out_share`), run it when another node returns; watch: needs no capacity, "
    "nothing to run; ended: no longer recommended at the data horizon."
)

st.title("Remediation")
filters = ui.week_and_cluster()
ui.stale_notice()
missing = [
    t
    for t in ("node_remediation_history", "node_remediation", "cluster_schedulers")
    if not ui.has_table(t)
]
if missing:
    raise ui.NothingToShow(
        f"The database has no `{missing[0]}` table yet (computed by a newer gpufleet).",
        "Run `gpufleet compute --force` to build it.",
    )

plan = data.query("remediation_plan", **filters.params())
if plan.is_empty():
    st.success(f"Nothing was recommended for any node in {filters.week} ({filters.cluster_label}).")
    st.stop()

week = str(filters.week)
counts = plan.group_by("status").len()
by_status = dict(zip(counts["status"].to_list(), counts["len"].to_list(), strict=True))
st.caption(
    f"{plan.height} nodes with a step recommended in {ui.week_label(week)}, {filters.cluster_label}: "
    f"{by_status.get('granted', 0)} granted, {by_status.get('waiting', 0)} waiting for the disruption budget, "
    f"{by_status.get('watch', 0)} to watch, {by_status.get('ended', 0)} ended. Most severe first, then the "
    "costliest. Status as of the data horizon. gpufleet never acts on a cluster: the commands are for an "
    "operator (`gpufleet remediation --week ... --format json` writes this plan for automation)."
)
# Both links name the node's cluster: a node is a (cluster, node) pair.
linked = ui.shared_names().qualify(
    plan.with_columns(
        node_link=ui.node_link(pl.col("node"), pl.col("cluster"), week),
        findings_link=pl.format(
            "/anomalies?week={}&cluster={}&node={}", pl.lit(week), pl.col("cluster"), pl.col("node")
        ),
    ),
    "node",
    "node",
)
event = ui.table(
    # The columns an operator acts on first, so a narrow screen still shows them.
    linked.select(
        "node",
        "step",
        "severity",
        "status",
        "command",
        "findings_link",
        "node_link",
        "since",
        "until",
        "cost_gpu_h",
        "why",
        "cluster",
        "scheduler",
        "priority",
        "out_budget",
    ),
    on_select="rerun",
    selection_mode="single-row",
    key="remediation_table",
    column_config={
        "step": st.column_config.TextColumn(
            "step",
            help="The ladder step: watch < cordon < drain < reset_gpu "
            "< reboot < replace (the node's latest step in the week).",
        ),
        "status": st.column_config.TextColumn("status", help=STATUS_HELP),
        "since": st.column_config.DatetimeColumn("since (UTC)", format="YYYY-MM-DD HH:mm"),
        "until": st.column_config.DatetimeColumn(
            "until (UTC)",
            format="YYYY-MM-DD HH:mm",
            help="Empty: still in force at the data horizon.",
        ),
        "cost_gpu_h": ui.NODE_LOSS_COLUMNS["cost_gpu_h"],
        "why": st.column_config.TextColumn("why", help="The findings behind the step."),
        "command": st.column_config.TextColumn(
            "command",
            help='What an operator would run (docs/detection.md "Remediation plan"); empty for '
            "watch, ended steps and clusters whose scheduler the data does not show.",
        ),
        "node_link": st.column_config.LinkColumn("node", display_text="node ↗"),
        "findings_link": st.column_config.LinkColumn("findings", display_text="findings ↗"),
        "priority": st.column_config.NumberColumn(
            "priority", help="Place in the cluster's queue for capacity."
        ),
        "out_budget": st.column_config.NumberColumn(
            "budget", help="Nodes the cluster may have out at once."
        ),
    },
)

selected = event.selection.rows[0] if event.selection.rows else 0
row = plan.row(selected, named=True)
shown_node = ui.shared_names().node(row["node"], row["cluster"])
st.subheader(f"{fmt.text(shown_node)}: {fmt.text(row['step'])} ({fmt.text(row['status'])})")
st.markdown(f"**Why:** {fmt.text(row['why'])}")
if row["command"]:
    st.code(row["command"], language="bash")
elif row["status"] in ("granted", "waiting"):
    st.info(
        f"No command: the data does not show which scheduler runs cluster {fmt.text(row['cluster'])}."
    )
history = data.query(
    "node_remediation_history",
    node=row["node"],
    cluster=row["cluster"],
    week_end=filters.params()["week_end"],
)
st.caption(
    "Every step recommended for the node up to the week's end, newest first (until empty: still in force)."
)
ui.table(history.select("step", "since", "until", "severity", "why"), key="remediation_history")
