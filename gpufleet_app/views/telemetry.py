"""Fleet telemetry: nodes x time heatmap of one DCGM field for a cluster and week
(`/telemetry?week=2026-W48&cluster=c1&field=DCGM_FI_DEV_GPU_TEMP&stat=max`)."""

import math

import streamlit as st

from gpufleet_app import data, figures, fmt, ui

# Fields the heatmap offers (dcgm-exporter names), with units; first = default.
FIELDS = {
    "DCGM_FI_DEV_GPU_TEMP": "GPU temperature (°C)",
    "DCGM_FI_DEV_POWER_USAGE": "Power (W)",
    "DCGM_FI_DEV_GPU_UTIL": "GPU utilisation (%)",
    "DCGM_FI_DEV_SM_CLOCK": "SM clock (MHz)",
    "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE": "Tensor pipe active (0-1)",
    "DCGM_FI_DEV_MEMORY_TEMP": "Memory temperature (°C)",
}
# URL value -> (query column, wording). min finds the throttled GPU, max the hottest one.
STATISTICS = {
    "mean": ("mean_value", "mean"),
    "min": ("min_value", "minimum"),
    "max": ("max_value", "maximum"),
}
# At most this many time columns per week: 1-hour columns (168) from the 15-minute rollup.
MAX_COLUMNS = 200

st.title("Fleet telemetry")
filters = ui.week_and_cluster()
ui.stale_notice()

fields = list(FIELDS)
asked_field = ui.url_param("field")
if asked_field and asked_field not in FIELDS:
    st.warning(f"Unknown field `{asked_field}`; showing {fields[0]}. Fields: {', '.join(fields)}.")
asked_stat = ui.url_param("stat")
if asked_stat and asked_stat not in STATISTICS:
    st.warning(f"Unknown statistic `{asked_stat}`; showing the mean. Use mean, min or max.")
left, right, _ = st.columns([3, 2, 4])
field = left.selectbox(
    "Field",
    fields,
    index=fields.index(asked_field) if asked_field in FIELDS else 0,
    format_func=lambda m: f"{FIELDS[m]} · {m}",
)
stats = list(STATISTICS)
stat = right.selectbox(
    "Statistic per cell",
    stats,
    index=stats.index(asked_stat) if asked_stat in STATISTICS else 0,
    format_func=lambda s: f"{STATISTICS[s][1]} over the node's GPUs",
)
ui.set_url(field=None if field == fields[0] else field, stat=None if stat == "mean" else stat)

cells = data.query("fleet_heatmap", **filters.params(), metric=field, max_columns=MAX_COLUMNS)
if cells.is_empty():
    st.info(f"No `{field}` samples in {filters.week} ({filters.cluster_label}).")
    st.stop()
column, wording = STATISTICS[stat]
nodes = cells.select("cluster", "node").n_unique()
# The query's column width: whole 15-minute buckets, at most MAX_COLUMNS over the 7-day week.
hours = math.ceil(7 * 96 / MAX_COLUMNS) / 4
st.caption(
    f"{nodes} nodes, {ui.week_label(str(filters.week))}, {filters.cluster_label}. Each cell: the "
    f"{wording} of the node's GPUs' samples over {hours:g} h (from the 15-minute rollup); an "
    "empty cell is a node that did not report. Open a node below for its per-GPU charts."
)
st.plotly_chart(
    # one row per (cluster, node): a name two clusters share is shown as cluster/name
    figures.fleet_heatmap(
        ui.shared_names().qualify(cells, "node", "node"),
        column,
        FIELDS[field],
        column_s=round(hours * 3600),
    ),
    key="fleet_heatmap",
)

shared = ui.shared_names()
heatmap_nodes = cells.select("node", "cluster").unique().sort("node", "cluster").rows()
chosen = st.selectbox(
    "Open a node",
    heatmap_nodes,
    index=None,
    format_func=lambda nc: shared.node(nc[0], nc[1]),
    placeholder="Choose a node to open its page",
)
if chosen:
    node, cluster = chosen
    st.page_link(
        ui.NODES,
        label=f"Node {fmt.text(shared.node(node, cluster))}",
        icon=":material/arrow_forward:",
        query_params={"node": node, "cluster": cluster, "week": str(filters.week), "metric": field},
    )
