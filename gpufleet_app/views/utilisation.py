"""Utilisation: whether the GPUs that are up do useful work. Teams and queues by idle allocated
GPU-hours, the jobs that hold GPUs they barely use, MIG packing advice with the whole GPUs it
frees, and a per-GPU-model view (`/utilisation?week=2026-W48&cluster=...`).

The numbers are the utilisation tables of docs/metrics.md ("Utilisation", "MIG packing").
"""

import polars as pl
import streamlit as st

from gpufleet_app import data, fmt, ui

st.title("Utilisation")
filters = ui.week_and_cluster()
params = filters.params()
ui.stale_notice()
missing = [
    t
    for t in ("team_utilisation_weekly", "job_utilisation", "mig_packing", "gpu_utilisation_daily")
    if not ui.has_table(t)
]
if missing:
    raise ui.NothingToShow(
        f"The database has no `{missing[0]}` table yet (computed by a newer gpufleet).",
        "Run `gpufleet compute --force` to build it.",
    )

week = str(filters.week)
shared = ui.shared_names()  # job ids another cluster also has are shown as cluster/job
summary = data.query("kpis", **params).filter(pl.col("week") == week)
current = summary.row(0, named=True) if summary.height else {}
left, middle, right = st.columns(3)
left.metric(
    "Busy share of allocated GPU-hours",
    fmt.pct(current.get("busy_share_allocated")),
    border=True,
    help="Graphics-engine-active GPU-hours / allocated GPU-hours seen in DCGM telemetry.",
)
middle.metric(
    "Allocated but idle",
    fmt.gpu_hours(current.get("allocated_idle_gpu_h")),
    border=True,
    help="Allocated GPU-hours whose activity stayed below the idle threshold "
    "(`[utilisation] idle_activity`) for a whole scrape window.",
)
right.metric(
    "GPUs freeable by MIG packing",
    fmt.number(current.get("gpus_freeable_by_mig"), 2),
    border=True,
    help="Whole GPUs the MIG packing advice below would free, on average over the week.",
)
st.caption(
    f"{ui.week_label(week)}, {filters.cluster_label}. Idle capacity that is not allocated at all is the "
    "goodput stack's `idle` level on the overview."
)

st.subheader("Teams and queues")
teams = data.query("utilisation_teams", **params)
if teams.is_empty():
    st.info(
        "No allocated GPU-hours in DCGM telemetry this week (no GPU or MIG instance mapped to a job)."
    )
else:
    ui.table(
        shared.qualify(teams, "top_idle_jobs", "job", "top_idle_job_clusters").drop(
            "top_idle_job_clusters"
        ),
        key="utilisation_teams",
        column_config={
            "measured_gpu_h": st.column_config.NumberColumn(
                "allocated GPU-h", format="%.1f", help="Allocated GPU-hours seen in telemetry."
            ),
            "busy_gpu_h": st.column_config.NumberColumn("busy GPU-h", format="%.1f"),
            "busy_share": st.column_config.ProgressColumn(
                "busy share", min_value=0.0, max_value=1.0, format="percent"
            ),
            "idle_gpu_h": st.column_config.NumberColumn("idle GPU-h", format="%.1f"),
        },
    )

st.subheader("Idle jobs")
jobs = data.query("utilisation_jobs", **params)
if jobs.is_empty():
    st.info("No job held a GPU idle this week.")
else:
    linked = shared.qualify(
        jobs.with_columns(job_link=ui.job_link(pl.col("job_id"), pl.col("cluster"))),
        "job_id",
        "job",
    )
    ui.table(
        linked.select(
            "job_id",
            "job_link",
            "name",
            "team",
            "queue",
            "idle_gpu_h",
            "gpus_mapped",
            "gpus_used",
            "mean_activity",
            "p95_activity",
            "peak_memory_gib",
            "allocated_gpu_h",
            "measured_gpu_h",
            "mapped_by",
            "on_mig",
            "cluster",
        ),
        key="utilisation_jobs",
        column_config={
            "job_id": st.column_config.TextColumn("job"),
            "job_link": st.column_config.LinkColumn("open", display_text="open ↗"),
            "idle_gpu_h": st.column_config.NumberColumn("idle GPU-h", format="%.1f"),
            "gpus_mapped": st.column_config.NumberColumn(
                "GPUs held", help="GPUs and MIG instances mapped to it."
            ),
            "gpus_used": st.column_config.NumberColumn(
                "GPUs used", help="Of those, active above the idle threshold."
            ),
            "mean_activity": st.column_config.NumberColumn("mean activity", format="percent"),
            "p95_activity": st.column_config.NumberColumn("p95 activity", format="percent"),
            "peak_memory_gib": st.column_config.NumberColumn("peak memory GiB", format="%.1f"),
            "allocated_gpu_h": st.column_config.NumberColumn(
                "allocated GPU-h", format="%.1f", help="The scheduler's GPUs × attempt time."
            ),
            "measured_gpu_h": st.column_config.NumberColumn("telemetry GPU-h", format="%.1f"),
            "mapped_by": st.column_config.TextColumn(
                "mapped by",
                help="labels: dcgm-exporter's hpc_job / pod labels; rank_steps: the GPUs its ranks "
                "logged; whole_node: it held every GPU of the node.",
            ),
        },
    )

st.subheader("MIG packing")
packing = data.query("utilisation_packing", **params)
if packing.is_empty():
    st.info("No workload this week holds whole GPUs while fitting a MIG profile.")
else:
    freed = float(packing["gpus_freed"].sum())  # a DOUBLE column: its sum is a float
    st.caption(
        f"Packing these workloads on MIG instances would free {fmt.number(freed, 2)} whole GPUs "
        "on average over the week."
    )
    ui.table(
        shared.qualify(packing, "job_ids", "job"),
        key="utilisation_packing",
        column_config={
            "gpu_h": st.column_config.NumberColumn("GPU-h held", format="%.1f"),
            "p95_activity": st.column_config.NumberColumn("p95 activity", format="percent"),
            "peak_memory_gib": st.column_config.NumberColumn("peak memory GiB", format="%.1f"),
            "profile": st.column_config.TextColumn(
                "MIG profile",
                help="Smallest profile of the GPU model that fits "
                "p95 activity and peak memory with headroom.",
            ),
            "packed_gpu_h": st.column_config.NumberColumn("packed GPU-h", format="%.2f"),
            "freed_gpu_h": st.column_config.NumberColumn("freed GPU-h", format="%.2f"),
            "gpus_freed": st.column_config.NumberColumn("GPUs freed", format="%.2f"),
        },
    )

st.subheader("By GPU model")
models = data.query("utilisation_models", **params)
if models.is_empty():
    st.info("No GPU activity telemetry this week.")
else:
    ui.table(
        models,
        key="utilisation_models",
        column_config={
            "mig_instance": st.column_config.CheckboxColumn("MIG instances"),
            "sampled_h": st.column_config.NumberColumn("sampled h", format="%.1f"),
            "allocated_h": st.column_config.NumberColumn("allocated h", format="%.1f"),
            "busy_share": st.column_config.ProgressColumn(
                "busy share", min_value=0.0, max_value=1.0, format="percent"
            ),
            "idle_allocated_h": st.column_config.NumberColumn("idle allocated h", format="%.1f"),
            "allocated_share": st.column_config.NumberColumn("allocated share", format="percent"),
            "peak_memory_gib": st.column_config.NumberColumn("peak memory GiB", format="%.1f"),
        },
    )
