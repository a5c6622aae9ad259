"""Jobs: the week's jobs, and one job's drill-down (`/jobs?job=j-123&cluster=east`; `cluster` may
be left out where the job id is unique in the fleet)."""

import polars as pl
import streamlit as st

from gpufleet_app import data, fmt, ui
from pipelines import charts

HEATMAP_MAX_COLUMNS = 200
OUTCOMES = {
    "*": "All outcomes",
    "failed": "Failed (counts against success)",
    "succeeded": "Succeeded",
    "node_fail": "node_fail",
    "timeout": "timeout",
    "oom": "oom",
    "cancelled": "cancelled",
    "preempted": "preempted",
    "running": "running",
}


def attempts_gpus_per_host(attempts: pl.DataFrame) -> int | None:
    """GPUs per node of the job (its GPUs / its nodes), when every node holds the same share."""
    if attempts.is_empty():
        return None
    row = attempts.row(-1, named=True)
    nodes = len(row["nodes"] or [])
    gpus = row.get("num_gpus")
    return gpus // nodes if nodes and gpus and gpus % nodes == 0 else None


def job_table(filters: ui.Filters) -> None:
    asked = ui.choice_from_url("outcome", list(OUTCOMES), "outcome", OUTCOMES["*"].lower())
    outcome = st.selectbox(
        "Outcome", list(OUTCOMES), index=asked, format_func=lambda choice: OUTCOMES[choice]
    )
    ui.set_url(outcome=None if outcome == "*" else outcome)
    jobs = data.query("job_table", **filters.params(), outcome=outcome)
    if jobs.is_empty():
        st.info(f"No jobs ended in {filters.week} ({filters.cluster_label}) with this outcome.")
        return
    st.caption(
        f"{len(jobs)} jobs that ended in {ui.week_label(str(filters.week))} or were still running, "
        f"{filters.cluster_label}; largest first. Click a row to open the job."
    )
    event = ui.table(
        ui.shared_names()
        .qualify(jobs, "job_id", "job")
        .select(
            "job_id",
            "name",
            "user",
            "final_state",
            "failure_class",
            "crash_loop",
            "attempts",
            "num_gpus",
            "gpu_hours",
            (pl.col("goodput") * 100).alias("goodput_pct"),
            (pl.col("ettr") * 100).alias("ettr_pct"),
            "straggler_ranks",
            "end_ts",
        ),
        on_select="rerun",
        selection_mode="single-row",
        key="job_table",
        column_config={
            "final_state": st.column_config.TextColumn("outcome"),
            "num_gpus": st.column_config.NumberColumn("GPUs"),
            "gpu_hours": st.column_config.NumberColumn("GPU-h", format="%.1f"),
            "goodput_pct": st.column_config.NumberColumn("goodput", format="%.1f %%"),
            "ettr_pct": st.column_config.NumberColumn("ETTR", format="%.1f %%"),
            "straggler_ranks": st.column_config.NumberColumn("straggler ranks"),
            "end_ts": st.column_config.DatetimeColumn("ended (UTC)", format="YYYY-MM-DD HH:mm"),
        },
    )
    if event.selection.rows:
        row = jobs.row(event.selection.rows[0], named=True)
        ui.set_url(job=row["job_id"], cluster=row["cluster"])
        st.rerun()


def job_detail(job_id: str, cluster: str) -> None:
    """The page of job `job_id` of `cluster` (a job is a (cluster, job id) pair)."""
    info = data.query("job_info", job=job_id, cluster=cluster)
    job = info.row(0, named=True)
    verdict = fmt.text(job["final_state"] or job["state"])
    if job["failure_class"]:
        verdict += f" · {fmt.text(job['failure_class'])} failure"
    if job["crash_loop"]:
        verdict += " · crash-looping on a bug: retrying will not help"
    st.caption(
        f"{fmt.text(job['name'] or '')} · cluster {fmt.text(cluster)} · user {fmt.text(job['user'] or '?')} · "
        f"team {fmt.text(job['team'] or '?')} · "
        f"{job['num_gpus']} GPUs · submitted {fmt.timestamp(job['submit_ts'])} · "
        f"ended {fmt.timestamp(job['end_ts'])}"
    )
    (st.error if job["failure_class"] in ("hardware", "software") else st.info)(
        f"Outcome: {verdict}"
    )

    # two rows of three cards: six in one row cut values such as "Straggler drag 17.4 min"
    columns = [*st.columns(3), *st.columns(3)]
    columns[0].metric(
        "Goodput",
        fmt.pct(job["goodput"]),
        border=True,
        help="Productive time / wall time (first attempt start to job end).",
    )
    columns[1].metric(
        "ETTR",
        fmt.pct(job["ettr"]),
        border=True,
        help="Productive time / (job end − submit), queueing included.",
    )
    columns[2].metric(
        "Wall time",
        fmt.hours(None if job["wall_s"] is None else job["wall_s"] / 3600),
        border=True,
        help="First attempt start to job end, recovery gaps included.",
    )
    columns[3].metric("GPU-hours", fmt.number(job["gpu_hours"]), border=True)
    columns[4].metric(
        "Attempts", job["attempts"] if job["attempts"] is not None else fmt.MISSING, border=True
    )
    columns[5].metric(
        "Straggler drag",
        fmt.compact_s(job["straggler_drag_s"]),
        border=True,
        help="Sum over steps of (slowest rank − median rank): the cost of the slowest rank.",
    )

    if ui.has_table("job_utilisation"):
        usage = data.query("job_utilisation", job=job_id, cluster=cluster)
        if usage.height and usage["measured_gpu_h"][0]:
            u = usage.row(0, named=True)
            st.markdown(
                f"**Utilisation:** mean activity {fmt.pct(u['mean_activity'])}, p95 {fmt.pct(u['p95_activity'])} · "
                f"{u['gpus_used']} of {u['gpus_mapped']} GPUs{' (MIG instances)' if u['on_mig'] else ''} used · "
                f"{fmt.gpu_hours(u['idle_gpu_h'])} allocated but idle of {fmt.gpu_hours(u['measured_gpu_h'])} in "
                f"telemetry · memory high-water {fmt.number(u['peak_memory_gib'])} GiB"
            )
    segments = data.query("job_segments", job=job_id, cluster=cluster)
    attempts = data.query("job_attempts", job=job_id, cluster=cluster)
    st.subheader("Attempts")
    if not segments.is_empty():
        st.plotly_chart(
            charts.timeline(
                segments,
                "lane",
                "category",
                charts.CATEGORY_COLORS,
                "Attempts timeline (goodput categories)",
                height=140 + 35 * segments["lane"].n_unique(),
            ),
            key="attempts_timeline",
        )
    if not attempts.is_empty():
        ui.table(
            attempts.select(
                "attempt",
                "start_ts",
                "end_ts",
                "state",
                "exit_code",
                "reason",
                "failure_class",
                "hardware_signal",
                "nodes",
                "steps",
            ),
        )
    if job["wall_s"] is not None:
        st.plotly_chart(charts.goodput_breakdown(job), key="goodput_breakdown")
        st.caption(
            " · ".join(f"{c} {fmt.duration_s(job[f'{c}_s'])}" for c in charts.CATEGORY_COLORS)
            + f" = wall {fmt.duration_s(job['wall_s'])}"
        )

    # the job's hosts are its cluster's nodes: a name another cluster has reads cluster/name
    shared = ui.shared_names()
    ranks = shared.qualify(
        data.query("job_ranks", job=job_id, cluster=cluster).with_columns(cluster=pl.lit(cluster)),
        "node",
        "node",
    )
    with_steps = (
        attempts.filter(pl.col("steps") > 0)["attempt"].to_list() if attempts.height else []
    )
    st.subheader("Ranks")
    if not with_steps:
        st.info("This job logged no per-rank step timings.")
        return
    attempt = with_steps[-1]
    if len(with_steps) > 1:
        labels = [str(a) for a in with_steps]
        at = ui.choice_from_url("attempt", labels, "attempt (none with step timings)", str(attempt))
        wanted = with_steps[at] if ui.url_param("attempt") in labels else attempt
        attempt = st.selectbox("Attempt", with_steps, index=with_steps.index(wanted))
        ui.set_url(attempt=None if attempt == with_steps[-1] else str(attempt))
    cells = data.query(
        "job_heatmap",
        job=job_id,
        cluster=cluster,
        attempt=attempt,
        max_columns=HEATMAP_MAX_COLUMNS,
    )
    episodes = shared.qualify(
        data.query("job_episodes", job=job_id, cluster=cluster, attempt=attempt).with_columns(
            cluster=pl.lit(cluster)
        ),
        "node",
        "node",
    )
    st.plotly_chart(charts.rank_heatmap(cells, episodes), key="rank_heatmap")
    if not episodes.is_empty():
        st.markdown(
            f"**{episodes.height} straggler episode(s)** in attempt {attempt} "
            "(a spell in which one rank ran slower than the others):"
        )
        ui.table(
            episodes.select(
                "rank",
                "node",
                "gpu",
                "first_step",
                "last_step",
                "start_ts",
                "end_ts",
                "open",
                "median_ratio",
                "drag_s",
            ),
            column_config={
                "first_step": st.column_config.NumberColumn("first step"),
                "last_step": st.column_config.NumberColumn("last step"),
                "start_ts": st.column_config.DatetimeColumn(
                    "started (UTC)", format="YYYY-MM-DD HH:mm"
                ),
                "end_ts": st.column_config.DatetimeColumn("ended (UTC)", format="YYYY-MM-DD HH:mm"),
                "open": st.column_config.CheckboxColumn("to the end"),
                "median_ratio": st.column_config.NumberColumn("median ratio", format="%.3f"),
                "drag_s": st.column_config.NumberColumn("drag s", format="%.1f"),
            },
        )
    stragglers = ranks.filter(pl.col("is_straggler"))
    if stragglers.is_empty():
        st.success("No straggler rank: no rank is consistently slower than its peers.")
    else:
        gpus_per_host = attempts_gpus_per_host(attempts)
        lines = []
        for node, ranks in stragglers.group_by("node", maintain_order=True):
            listed = ", ".join(
                f"rank {r['rank']} (gpu {fmt.text(r['gpu'])})" for r in ranks.iter_rows(named=True)
            )
            whole_host = gpus_per_host and ranks["gpu"].n_unique() >= gpus_per_host
            verdict = (
                " — every rank on this host is slow: suspect the host (network, CPU), not a GPU"
                if whole_host
                else ""
            )
            lines.append(f"- **{fmt.text(node[0])}**: {listed}{verdict}")
        st.warning(f"{stragglers.height} straggler rank(s):\n" + "\n".join(lines))
    ui.table(
        ranks.head(32)
        .with_columns((pl.col("slowest_share") * 100).alias("slowest_share_pct"))
        .select(
            "attempt",
            "rank",
            "node",
            "gpu",
            "steps",
            "median_ratio",
            "p95_ratio",
            "slowest_share_pct",
            "drag_s",
            "relative_score",
            "p_value",
            "is_straggler",
        ),
        column_config={
            "median_ratio": st.column_config.NumberColumn("median ratio", format="%.3f"),
            "p95_ratio": st.column_config.NumberColumn("p95 ratio", format="%.3f"),
            "slowest_share_pct": st.column_config.NumberColumn(
                "slowest in % of steps", format="%.1f %%"
            ),
            "drag_s": st.column_config.NumberColumn("drag s", format="%.1f"),
            "relative_score": st.column_config.NumberColumn("relative score (NVRx)", format="%.3f"),
            "p_value": st.column_config.NumberColumn("p-value", format="%.2e"),
            "is_straggler": st.column_config.CheckboxColumn("straggler"),
        },
    )
    st.caption("Stragglers first, then slowest median ratio; at most 32 ranks shown.")


def checkpoint_table(filters: ui.Filters) -> None:
    st.subheader("Checkpoints")
    if not ui.has_table("checkpoint_advice"):
        st.info("Checkpoint advice is not computed yet: run `gpufleet compute`.")
        return
    advice = data.query("checkpoint_advice", **filters.params())
    if advice.is_empty():
        st.info(f"No job saved checkpoints in {filters.week}.")
        return
    st.caption(
        "Per recurring job (team/name): the interval between saves against the Young/Daly optimum for "
        "the fleet's interruption rate at the job's size (all clusters). Most GPU-hours to regain first."
    )
    ui.table(
        advice.select(
            "job_key",
            "jobs",
            "gpus",
            "nodes",
            "save_cost_s",
            "current_interval_s",
            "optimal_interval_s",
            "mtbi_h",
            (pl.col("lost_fraction_current") * 100).alias("lost_current_pct"),
            (pl.col("lost_fraction_optimal") * 100).alias("lost_optimal_pct"),
            "regained_gpu_h",
        ),
        key="checkpoint_table",
        column_config={
            "job_key": st.column_config.TextColumn("job (team/name)"),
            "gpus": st.column_config.NumberColumn("GPUs"),
            "save_cost_s": st.column_config.NumberColumn("save cost s", format="%.0f"),
            "current_interval_s": st.column_config.NumberColumn("interval now s", format="%.0f"),
            "optimal_interval_s": st.column_config.NumberColumn(
                "optimal interval s", format="%.0f"
            ),
            "mtbi_h": st.column_config.NumberColumn("MTBI at its size h", format="%.1f"),
            "lost_current_pct": st.column_config.NumberColumn("lost now", format="%.1f %%"),
            "lost_optimal_pct": st.column_config.NumberColumn("lost at optimum", format="%.1f %%"),
            "regained_gpu_h": st.column_config.NumberColumn("GPU-h/week regained", format="%.1f"),
        },
    )


selected = ui.url_param("job")
if selected:
    located = ui.locate("job", selected)
    st.title(f"Job {fmt.text(ui.shared_names().job(selected, located.cluster))}")
    ui.require_computed()
    ui.stale_notice()
    st.page_link(ui.JOBS, label="All jobs", icon=":material/arrow_back:")
    if located.cluster is None:
        ui.explain_unlocated(
            located,
            "job",
            f"Job “{fmt.text(selected)}” is not in the database (table `jobs`).",
        )
    else:
        ui.set_url(cluster=located.cluster)
        job_detail(selected, located.cluster)
else:
    st.title("Jobs")
    filters = ui.week_and_cluster()
    ui.stale_notice()
    job_table(filters)
    checkpoint_table(filters)
