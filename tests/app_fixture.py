"""The database the app tests read: ONE function builds it, `build_app_db(path, fleet)`.

`fleet="simulated"`: the real pipeline on a small simulated fleet (8 nodes, 3 days
from Sunday 2026-11-22: simulate → ingest_files → compute).

`fleet="handmade"`: a hand-made two-week fleet (2026-W47, 2026-W48; clusters c1 and c2, four 8-GPU
nodes) with the landing tables the drill-downs read and the derived views the
metrics pipeline produces, filled by hand so the app can be tested against the
view contracts. Tests compare what the app shows with what the views hold, so
the same tests run unchanged on a database computed by the real pipeline.
"""

from __future__ import annotations

import shutil
import tempfile
from collections import defaultdict
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import TypedDict

import numpy as np
import polars as pl

from pipelines.config import Settings
from pipelines.contract import STORAGE_TABLES
from pipelines.kept_rows import update_kept_rows
from pipelines.sample_rollups import update_gpu_samples_15m
from pipelines.sql import execute, load_sql, statements
from pipelines.store import open_store
from testkit.landing_rows import insert_landing

W47 = datetime(2026, 11, 16, tzinfo=UTC)
W48 = datetime(2026, 11, 23, tzinfo=UTC)
END = datetime(2026, 11, 30, tzinfo=UTC)
NODES = {"gpu-000": "c1", "gpu-001": "c1", "gpu-002": "c2", "gpu-003": "c2"}
MODEL = {"c1": "NVIDIA H100 80GB HBM3", "c2": "NVIDIA H200"}


def ts(day: int, hour: float = 0.0) -> datetime:
    """2026-11-<day> at <hour> UTC."""
    return datetime(2026, 11, day, tzinfo=UTC) + timedelta(hours=hour)


def uuid(node: str, gpu: int) -> str:
    n = int(node[-3:])
    return f"GPU-{n:08x}-0000-0000-0000-{gpu:012x}"


# (node, start, end, state, reason); everything not listed is available.
STATE_EVENTS = [
    (
        "gpu-001",
        ts(25, 10),
        ts(25, 12),
        "unavailable",
        "AcceleratedHardwareReady=False (NvidiaXID79Error)",
    ),
    ("gpu-001", ts(25, 12), ts(25, 12.5), "unknown", "no DCGM sample from gpu 3"),
    ("gpu-002", ts(24, 2), ts(24, 3), "maintenance", "maintenance: firmware"),
    ("gpu-000", ts(26, 0), ts(26, 6), "degraded", "thermal_throttle on gpu 5"),
    ("gpu-003", ts(18, 4), ts(18, 5), "unavailable", "Ready=False (KubeletNotReady)"),
]


def _state_intervals() -> pl.DataFrame:
    rows: list[tuple[str, datetime, datetime, str, str | None]] = []
    for node in NODES:
        cursor = W47
        for n, start, end, state, reason in sorted(STATE_EVENTS, key=lambda e: e[1]):
            if n != node:
                continue
            if cursor < start:
                rows.append((node, cursor, start, "available", None))
            rows.append((node, start, end, state, reason))
            cursor = end
        rows.append((node, cursor, END, "available", None))
    return pl.DataFrame(
        rows, schema=["node", "start_ts", "end_ts", "state", "reason"], orient="row"
    ).with_columns(pl.col("start_ts", "end_ts").dt.convert_time_zone("UTC"))


def _node_daily(intervals: pl.DataFrame) -> pl.DataFrame:
    seconds: dict[tuple[date, str], dict[str, float]] = defaultdict(lambda: defaultdict(float))
    for node, start, end, state, _ in intervals.iter_rows():
        cursor = start
        while cursor < end:
            midnight = datetime.combine(cursor.date() + timedelta(days=1), datetime.min.time(), UTC)
            piece_end = min(end, midnight)
            seconds[(cursor.date(), node)][state] += (piece_end - cursor).total_seconds()
            cursor = piece_end
    rows = []
    for (day, node), s in sorted(seconds.items()):
        in_fleet = sum(s.values())
        denominator = in_fleet - s["maintenance"]
        up = s["available"] + s["degraded"]
        rows.append(
            (
                day,
                node,
                NODES[node],
                in_fleet,
                s["maintenance"],
                s["available"],
                s["degraded"],
                s["unavailable"],
                s["unknown"],
                up / denominator if denominator else None,
            )
        )
    return pl.DataFrame(
        rows,
        orient="row",
        schema=[
            "day",
            "node",
            "cluster",
            "in_fleet_s",
            "maintenance_s",
            "available_s",
            "degraded_s",
            "unavailable_s",
            "unknown_s",
            "availability",
        ],
    )


def _fleet_daily(node_daily: pl.DataFrame) -> pl.DataFrame:
    secs = [
        "in_fleet_s",
        "maintenance_s",
        "available_s",
        "degraded_s",
        "unavailable_s",
        "unknown_s",
    ]
    fleet = node_daily.group_by("day", "cluster").agg(pl.col(secs).sum()).sort("day", "cluster")
    # Failures: gpu-001 on 11-25 (one episode 10:00-12:30 = 2.5 h), gpu-003 on 11-18 (1 h).
    # MTBF = up seconds of the cluster that day / failures; NULL on a day without failures.
    failures = {(date(2026, 11, 25), "c1"): (1, 2.5), (date(2026, 11, 18), "c2"): (1, 1.0)}
    mtbf, mttr = [], []
    for day, cluster, up in fleet.select(
        "day", "cluster", pl.col("available_s") + pl.col("degraded_s")
    ).iter_rows():
        count, repair_h = failures.get((day, cluster), (0, None))
        mtbf.append(up / 3600 / count if count else None)
        mttr.append(repair_h)
    return fleet.with_columns(
        availability=(pl.col("available_s") + pl.col("degraded_s"))
        / (pl.col("in_fleet_s") - pl.col("maintenance_s")),
        mtbf_h=pl.Series(mtbf, dtype=pl.Float64),
        mttr_h=pl.Series(mttr, dtype=pl.Float64),
    )


# week, cluster -> escape_rate, jobs_placed_on_flagged, median_lead_time_s (failure_escapes):
# W48: j-101's attempt 0 failed on gpu-001 (c1) 5 min after its XID finding opened: 0 of 1 escaped.
# W47 c2: one hand-set escaped failure in the week before, so the escape rate has a delta.
ESCAPES = {
    ("2026-W47", "*"): (1.0, 0, None),
    ("2026-W47", "c2"): (1.0, 0, None),
    ("2026-W48", "*"): (0.0, 0, 300.0),
    ("2026-W48", "c1"): (0.0, 0, 300.0),
}


def _weekly_summary(node_daily: pl.DataFrame) -> pl.DataFrame:
    # Availability from the daily seconds (summed, never averaged); the job numbers are hand-set:
    # W48 all clusters: 3 eligible jobs ended (j-101 ok, j-102 failed, j-103 ok) → 2/3.
    rows = []
    jobs = {  # week, cluster → success, success_gpu_h, first_attempt, goodput, ettr, mtbf, mttr, interruptions, hw, sw, infra, user
        ("2026-W47", "*"): (1.0, 1.0, 1.0, 0.91, 0.85, 336.0, 1.0, 0.0, 0, 0, 0, 0),
        ("2026-W47", "c1"): (None, None, None, None, None, None, None, 0.0, 0, 0, 0, 0),
        ("2026-W47", "c2"): (1.0, 1.0, 1.0, 0.91, 0.85, 335.0, 1.0, 0.0, 0, 0, 0, 0),
        ("2026-W48", "*"): (2 / 3, 0.8826, 1 / 3, 0.7742, 0.7013, 334.5, 2.5, 55.56, 1, 3, 0, 1),
        ("2026-W48", "c1"): (1.0, 1.0, 0.0, 0.7125, 0.65, 333.5, 2.5, 66.67, 1, 0, 0, 1),
        ("2026-W48", "c2"): (0.5, 0.7804, 0.5, 0.8102, 0.74, None, None, 47.62, 0, 3, 0, 0),
    }
    daily = node_daily.with_columns(week=pl.col("day").dt.strftime("%G-W%V"))
    for (week, cluster), v in jobs.items():
        part = daily.filter(pl.col("week") == week)
        if cluster != "*":
            part = part.filter(pl.col("cluster") == cluster)
        # Series.sum() is typed int | float | Decimal; these columns hold seconds (int or float).
        up = float(part["available_s"].sum()) + float(part["degraded_s"].sum())
        denominator = float(part["in_fleet_s"].sum()) - float(part["maintenance_s"].sum())
        rows.append(
            (week, cluster, up / denominator, *v, *ESCAPES.get((week, cluster), (None, 0, None)))
        )
    return pl.DataFrame(
        rows,
        orient="row",
        schema={
            "week": pl.String,
            "cluster": pl.String,
            "node_availability": pl.Float64,
            "job_success_rate": pl.Float64,
            "job_success_rate_gpu_h": pl.Float64,
            "first_attempt_success_rate": pl.Float64,
            "goodput": pl.Float64,
            "ettr": pl.Float64,
            "mtbf_h": pl.Float64,
            "mttr_h": pl.Float64,
            "interruptions_per_1k_gpu_days": pl.Float64,
            "hardware_failures": pl.Int64,
            "software_failures": pl.Int64,
            "infrastructure_failures": pl.Int64,
            "user_failures": pl.Int64,
            "escape_rate": pl.Float64,
            "jobs_placed_on_flagged": pl.Int64,
            "median_lead_time_s": pl.Float64,
        },
    )


# job_id, name, user, team, submit, start, end, gpus, state, exit_code, reason
JOBS = [
    ("j-100", "llama-eval", "ana", "eval", ts(17, 23), ts(18), ts(18, 10), 8, "succeeded", 0, None),
    (
        "j-101",
        "pretrain-7b",
        "bo",
        "llm",
        ts(25, 7.5),
        ts(25, 8),
        ts(25, 18),
        16,
        "succeeded",
        0,
        None,
    ),
    (
        "j-102",
        "sweep-lr",
        "cy",
        "rl",
        ts(26, 0.5),
        ts(26, 1),
        ts(26, 2 + 10 / 60),
        8,
        "failed",
        1,
        "exit code 1",
    ),
    ("j-103", "finetune-13b", "bo", "llm", ts(26, 23), ts(27), ts(27, 4), 16, "succeeded", 0, None),
    (
        "j-104",
        "notebook",
        "di",
        "eval",
        ts(27, 5),
        ts(27, 5),
        ts(27, 5.5),
        1,
        "cancelled",
        None,
        "cancelled by user",
    ),
]
# job_id, attempt, start, end, state, exit_code, reason, nodes, failure_class, hardware_signal
ATTEMPTS = [
    ("j-100", 0, ts(18), ts(18, 10), "succeeded", 0, None, ["gpu-002"], None, None),
    (
        "j-101",
        0,
        ts(25, 8),
        ts(25, 10 + 5 / 60),
        "node_fail",
        None,
        "NodeFail",
        ["gpu-000", "gpu-001"],
        "hardware",
        (
            "node_fail reported by the scheduler; gpu-001 XID 79 "
            "(ROBUST_CHANNEL_GPU_HAS_FALLEN_OFF_THE_BUS) on gpu 3"
        ),
    ),
    ("j-101", 1, ts(25, 13), ts(25, 18), "succeeded", 0, None, ["gpu-000", "gpu-003"], None, None),
    (
        "j-102",
        0,
        ts(26, 1),
        ts(26, 1 + 20 / 60),
        "failed",
        1,
        "exit code 1",
        ["gpu-002"],
        "software",
        None,
    ),
    (
        "j-102",
        1,
        ts(26, 1 + 25 / 60),
        ts(26, 1 + 45 / 60),
        "failed",
        1,
        "exit code 1",
        ["gpu-002"],
        "software",
        None,
    ),
    (
        "j-102",
        2,
        ts(26, 1 + 50 / 60),
        ts(26, 2 + 10 / 60),
        "failed",
        1,
        "exit code 1",
        ["gpu-002"],
        "software",
        None,
    ),
    ("j-103", 0, ts(27), ts(27, 4), "succeeded", 0, None, ["gpu-002", "gpu-003"], None, None),
    (
        "j-104",
        0,
        ts(27, 5),
        ts(27, 5.5),
        "cancelled",
        None,
        "cancelled by user",
        ["gpu-000"],
        "user",
        None,
    ),
]

STRAGGLER_JOB, STRAGGLER_RANK, STEPS = "j-103", 11, 40


def _rank_steps() -> pl.DataFrame:
    rng = np.random.default_rng(7)
    rows = []
    for step in range(STEPS):
        compute = 9.0 + rng.normal(0, 0.05, 16)
        compute[STRAGGLER_RANK] *= 1.10  # rank 11 (gpu-003 gpu 3) is 10 % slow
        step_s = float(compute.max() + 0.5)
        for rank in range(16):
            node = "gpu-002" if rank < 8 else "gpu-003"
            end = ts(27, 0.1) + timedelta(seconds=(step + 1) * step_s)
            rows.append(
                (STRAGGLER_JOB, 0, step, rank, node, rank % 8, end, step_s, float(compute[rank]))
            )
    return pl.DataFrame(
        rows,
        orient="row",
        schema=[
            "job_id",
            "attempt",
            "step",
            "rank",
            "node",
            "gpu",
            "end_ts",
            "step_s",
            "compute_s",
        ],
    )


def _rank_episodes(steps: pl.DataFrame) -> pl.DataFrame:
    """The straggler episodes of the fixture's steps, by the real episode detector (rank 11 is
    10 % slow for all 40 steps: one episode, steps 0-39)."""
    from pipelines.config import Settings
    from pipelines.episodes import EPISODE_COLUMNS, EpisodeParams, attempt_episodes

    times = steps.sort("rank", "step").with_columns(
        time_s=pl.col("compute_s"),
        ratio=pl.col("compute_s") / pl.col("compute_s").median().over("step"),
        drag_s=pl.lit(0.0),
    )
    found = attempt_episodes(times, EpisodeParams.from_params(Settings().sql_params()))
    return pl.DataFrame(schema=EPISODE_COLUMNS) if found is None else found


def _rank_slowdown(steps: pl.DataFrame) -> pl.DataFrame:
    ratios = steps.with_columns(
        ratio=pl.col("compute_s") / pl.col("compute_s").median().over("step"),
        slowest=pl.col("compute_s") == pl.col("compute_s").max().over("step"),
        drag=pl.col("compute_s").max().over("step") - pl.col("compute_s").median().over("step"),
    )
    per_rank = (
        ratios.group_by("job_id", "attempt", "rank", "node", "gpu")
        .agg(
            steps=pl.len(),
            median_ratio=pl.col("ratio").median(),
            p95_ratio=pl.col("ratio").quantile(0.95),
            slowest_share=pl.col("slowest").mean(),
            drag_s=(pl.col("drag") * pl.col("slowest")).sum(),
            median_s=pl.col("compute_s").median(),
        )
        .sort("rank")
    )
    fastest = per_rank["median_s"].min()
    return per_rank.with_columns(
        relative_score=fastest / pl.col("median_s"),
        p_value=pl.when(pl.col("rank") == STRAGGLER_RANK).then(1e-9).otherwise(0.5),
        is_straggler=pl.col("rank") == STRAGGLER_RANK,
    ).drop("median_s")


def _goodput() -> tuple[pl.DataFrame, pl.DataFrame]:
    # (job, attempt, start, end, category, gpus); each job's segments cover [first start, end).
    # A recovery gap carries the attempt that ended before it, as goodput_segments does.
    segs = [
        ("j-100", 0, ts(18), ts(18, 0.25), "init", 8),
        ("j-100", 0, ts(18, 0.25), ts(18, 9.75), "productive", 8),
        ("j-100", 0, ts(18, 9.75), ts(18, 10), "checkpoint", 8),
        ("j-101", 0, ts(25, 8), ts(25, 8.5), "init", 16),
        ("j-101", 0, ts(25, 8.5), ts(25, 9.5), "productive", 16),
        ("j-101", 0, ts(25, 9.5), ts(25, 10 + 5 / 60), "wasted", 16),
        ("j-101", 0, ts(25, 10 + 5 / 60), ts(25, 13), "recovery", 0),
        ("j-101", 1, ts(25, 13), ts(25, 13.25), "checkpoint", 16),
        ("j-101", 1, ts(25, 13.25), ts(25, 18), "productive", 16),
        ("j-102", 0, ts(26, 1), ts(26, 1 + 20 / 60), "wasted", 8),
        ("j-102", 0, ts(26, 1 + 20 / 60), ts(26, 1 + 25 / 60), "recovery", 0),
        ("j-102", 1, ts(26, 1 + 25 / 60), ts(26, 1 + 45 / 60), "wasted", 8),
        ("j-102", 1, ts(26, 1 + 45 / 60), ts(26, 1 + 50 / 60), "recovery", 0),
        ("j-102", 2, ts(26, 1 + 50 / 60), ts(26, 2 + 10 / 60), "wasted", 8),
        ("j-103", 0, ts(27), ts(27, 0.1), "init", 16),
        ("j-103", 0, ts(27, 0.1), ts(27, 3.9), "productive", 16),
        ("j-103", 0, ts(27, 3.9), ts(27, 4), "other", 16),
        ("j-104", 0, ts(27, 5), ts(27, 5.5), "other", 1),
    ]
    segments = pl.DataFrame(
        segs,
        orient="row",
        schema={
            "job_id": pl.String,
            "attempt": pl.Int32,
            "start_ts": pl.Datetime("us", "UTC"),
            "end_ts": pl.Datetime("us", "UTC"),
            "category": pl.String,
            "gpus": pl.Int32,
        },
    )
    dur = (pl.col("end_ts") - pl.col("start_ts")).dt.total_microseconds() / 1e6
    cats = ["productive", "init", "checkpoint", "wasted", "recovery", "other"]
    per_job = segments.group_by("job_id").agg(
        wall_s=dur.sum(),
        **{f"{c}_s": dur.filter(pl.col("category") == c).sum() for c in cats},
        allocated_gpu_s=(dur * pl.col("gpus")).filter(pl.col("category") != "recovery").sum(),
        productive_gpu_s=(dur * pl.col("gpus")).filter(pl.col("category") == "productive").sum(),
    )
    submit = {j[0]: j[4] for j in JOBS}
    end = {j[0]: j[6] for j in JOBS}
    per_job = per_job.with_columns(
        straggler_drag_s=pl.when(pl.col("job_id") == STRAGGLER_JOB)
        .then(0.9 * STEPS)
        .otherwise(0.0),
        goodput=pl.col("productive_s") / pl.col("wall_s"),
        ettr=pl.col("productive_s")
        / pl.col("job_id").replace_strict(
            {k: (end[k] - submit[k]).total_seconds() for k in submit}, return_dtype=pl.Float64
        ),
    ).sort("job_id")
    return segments, per_job.select(
        "job_id",
        "wall_s",
        "productive_s",
        "init_s",
        "checkpoint_s",
        "wasted_s",
        "recovery_s",
        "other_s",
        "allocated_gpu_s",
        "productive_gpu_s",
        "straggler_drag_s",
        "goodput",
        "ettr",
    )


def _goodput_stack() -> pl.DataFrame:
    # Capacity per cluster-week = 2 nodes x 8 GPUs x 168 h = 2688 GPU-h; levels sum exactly:
    # capacity = unavailable + unknown + idle + allocated; allocated = init+checkpoint+wasted+other+productive.
    rows = []
    for start, cluster, unav, unk, init, ckpt, wasted, other, prod in [
        (W47, "c1", 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0),
        (W47, "c2", 8.0, 0.0, 2.0, 2.0, 0.0, 0.0, 76.0),
        (W48, "c1", 40.0, 4.0, 8.0, 4.0, 26.0, 0.5, 96.0),
        (W48, "c2", 8.0, 0.0, 1.6, 0.0, 8.0, 1.6, 60.8),
    ]:
        allocated = init + ckpt + wasted + other + prod
        idle = 2688.0 - unav - unk - allocated
        # Allocated but idle (telemetry): a tenth of allocated, part of it, not a level.
        rows.append(
            (
                start,
                start + timedelta(days=7),
                cluster,
                2688.0,
                unav,
                unk,
                idle,
                allocated,
                init,
                ckpt,
                wasted,
                other,
                prod,
                prod / allocated if allocated else None,
                allocated / 10,
            )
        )
    return pl.DataFrame(
        rows,
        orient="row",
        schema=[
            "window_start",
            "window_end",
            "cluster",
            "capacity_gpu_h",
            "unavailable_gpu_h",
            "unknown_gpu_h",
            "idle_gpu_h",
            "allocated_gpu_h",
            "init_gpu_h",
            "checkpoint_gpu_h",
            "wasted_gpu_h",
            "other_gpu_h",
            "productive_gpu_h",
            "goodput",
            "allocated_idle_gpu_h",
        ],
    )


def _anomalies() -> pl.DataFrame:
    rows = [
        (
            "a-1",
            "gpu",
            "gpu-001",
            3,
            uuid("gpu-001", 3),
            None,
            None,
            "xid",
            ts(25, 10),
            ts(25, 12.5),
            1.0,
            "critical",
            '{"xid": 79, "name": "GPU has fallen off the bus"}',
            "reset_gpu",
            32.0,
            24.0,
        ),
        (
            "a-2",
            "gpu",
            "gpu-000",
            5,
            uuid("gpu-000", 5),
            None,
            None,
            "thermal_throttle",
            ts(26),
            None,
            4.2,
            "warn",
            '{"sm_clock_z": -4.2}',
            "watch",
            12.0,
            0.0,
        ),
        (
            "a-3",
            "rank",
            "gpu-003",
            3,
            uuid("gpu-003", 3),
            "j-103",
            11,
            "straggler",
            ts(27, 0.1),
            ts(27, 4),
            3.1,
            "warn",
            '{"median_ratio": 1.10}',
            "cordon",
            8.0,
            1.5,
        ),
        (
            "a-4",
            "gpu",
            "gpu-002",
            0,
            uuid("gpu-002", 0),
            None,
            None,
            "telemetry_gap",
            ts(17, 3),
            ts(17, 3.5),
            0.5,
            "info",
            '{"missing_s": 1800}',
            "watch",
            0.0,
            0.0,
        ),
        (
            "a-5",
            "node",
            "gpu-003",
            None,
            None,
            None,
            None,
            "condition_flap",
            ts(28, 6),
            None,
            2.0,
            "critical",
            '{"flaps": 12}',
            "drain",
            0.0,
            0.0,
        ),
    ]
    return pl.DataFrame(
        rows,
        orient="row",
        schema={
            "anomaly_id": pl.String,
            "entity_type": pl.String,
            "node": pl.String,
            "gpu": pl.Int16,
            "uuid": pl.String,
            "job_id": pl.String,
            "rank": pl.Int32,
            "kind": pl.String,
            "start_ts": pl.Datetime("us", "UTC"),
            "end_ts": pl.Datetime("us", "UTC"),
            "score": pl.Float64,
            "severity": pl.String,
            "evidence": pl.String,
            "action": pl.String,
            "impact_gpu_h": pl.Float64,
            "goodput_lost_gpu_h": pl.Float64,
        },
    )


def _remediation_history() -> pl.DataFrame:
    """What the ladder recommended while each finding of `_anomalies` was open (a-N): gpu-001's XID
    called for reset_gpu; gpu-000's throttling is watched (still open); gpu-002's telemetry gap was
    watched in W47; gpu-003's straggler rank called for cordon, then its flapping condition for drain
    (still open)."""
    return pl.DataFrame(
        [
            (
                "gpu-001",
                "c1",
                "reset_gpu",
                ts(25, 10),
                ts(25, 12.5),
                "critical",
                "xid 79 on gpu 3 (critical) -> reset_gpu",
                ["a-1"],
            ),
            (
                "gpu-000",
                "c1",
                "watch",
                ts(26),
                None,
                "warn",
                "thermal_throttle on gpu 5 (warn) -> watch",
                ["a-2"],
            ),
            (
                "gpu-002",
                "c2",
                "watch",
                ts(17, 3),
                ts(17, 3.5),
                "info",
                "telemetry_gap on gpu 0 (info) -> watch",
                ["a-4"],
            ),
            (
                "gpu-003",
                "c2",
                "cordon",
                ts(27, 0.1),
                ts(27, 4),
                "warn",
                "straggler on gpu 3 (job j-103 rank 11) (warn) -> cordon",
                ["a-3"],
            ),
            (
                "gpu-003",
                "c2",
                "drain",
                ts(28, 6),
                None,
                "critical",
                "condition_flap (critical) -> drain",
                ["a-5"],
            ),
        ],
        orient="row",
        schema={
            "node": pl.String,
            "cluster": pl.String,
            "step": pl.String,
            "since": pl.Datetime("us", "UTC"),
            "until": pl.Datetime("us", "UTC"),
            "severity": pl.String,
            "why": pl.String,
            "anomaly_ids": pl.List(pl.String),
        },
    )


# gpu-000 gpu 2's ECC single-bit counter: 100 until 11-26 00:00, then +5 per half-hour sample
# (105 at 00:00 ... 130 at 02:30), reset by a GPU reset to 2 at 03:00, flat after. Every other
# GPU of gpu-000: 0. Its increases: 5 per sample 00:00-02:30, 2 at the reset (the new value).
ECC_NODE, ECC_GPU = "gpu-000", 2
# gpu-000's clock-event reasons: gpu 5 throttled from 11-26 00:00 (SW + HW thermal slowdown,
# bits 0x20 | 0x40 = 96); idle (bit 0x1) outside its busy hours 11-25 08:00-18:00.
REASONS_THROTTLED, REASONS_IDLE = 96.0, 1.0


def _counter_and_reason_samples(times: list[datetime]) -> list[tuple]:
    rows = []
    for t in times:
        busy = ts(25, 8) <= t < ts(25, 18)
        for gpu in range(8):
            sbe = 0.0
            if gpu == ECC_GPU:
                if t < ts(26):
                    sbe = 100.0
                elif t < ts(26, 3):
                    sbe = 105.0 + 5 * round((t - ts(26)).total_seconds() / 1800)
                else:
                    sbe = 2.0
            rows.append(
                (t, ECC_NODE, gpu, uuid(ECC_NODE, gpu), "DCGM_FI_DEV_ECC_SBE_VOL_TOTAL", sbe)
            )
            rows.append(
                (t, ECC_NODE, gpu, uuid(ECC_NODE, gpu), "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL", 0.0)
            )
            throttled = gpu == 5 and t >= ts(26)
            reasons = REASONS_THROTTLED if throttled else (0.0 if busy else REASONS_IDLE)
            rows.append(
                (t, ECC_NODE, gpu, uuid(ECC_NODE, gpu), "DCGM_FI_DEV_CLOCKS_EVENT_REASONS", reasons)
            )
    return rows


def _landing() -> dict[str, pl.DataFrame]:
    nodes = pl.DataFrame(
        [(n, c, "p5.48xlarge", MODEL[c], 8, 32) for n, c in NODES.items()],
        orient="row",
        schema=["node", "cluster", "instance_type", "gpu_model", "gpu_count", "nic_expected"],
    )
    half_hours = [W48 + timedelta(minutes=30 * i) for i in range(7 * 48)]
    # (ts, node, type, status, reason, message); the hardware condition carries no message.
    conditions: list[tuple[datetime, str, str, str, str, str | None]] = []
    samples = []
    for node in ("gpu-000", "gpu-001"):
        for t in half_hours:
            bad = node == "gpu-001" and ts(25, 10) <= t < ts(25, 12)
            conditions.append(
                (t, node, "Ready", "True", "KubeletReady", "kubelet is posting ready status")
            )
            conditions.append(
                (
                    t,
                    node,
                    "AcceleratedHardwareReady",
                    "False" if bad else "True",
                    "NvidiaXID79Error" if bad else "AcceleratedHardwareIsReady",
                    None,
                )
            )
            for gpu in range(8):
                if node == "gpu-001" and gpu == 3 and ts(25, 10) <= t < ts(25, 12.5):
                    continue  # fell off the bus: no samples
                throttled = node == "gpu-000" and gpu == 5 and t >= ts(26)
                busy = ts(25, 8) <= t < ts(25, 18)
                samples.append(
                    (
                        t,
                        node,
                        gpu,
                        uuid(node, gpu),
                        "DCGM_FI_DEV_SM_CLOCK",
                        (1500.0 if throttled else 1980.0) if busy or throttled else 345.0,
                    )
                )
                samples.append(
                    (
                        t,
                        node,
                        gpu,
                        uuid(node, gpu),
                        "DCGM_FI_DEV_POWER_USAGE",
                        650.0 if busy else 70.0,
                    )
                )
                samples.append(
                    (
                        t,
                        node,
                        gpu,
                        uuid(node, gpu),
                        "DCGM_FI_DEV_GPU_TEMP",
                        (88.0 if throttled else 62.0) if busy else 35.0,
                    )
                )
    samples += _counter_and_reason_samples(half_hours)
    events = pl.DataFrame(
        [
            (
                ts(25, 10),
                "gpu-001",
                3,
                uuid("gpu-001", 3),
                "xid",
                79,
                "NVRM: Xid (PCI:0000:53:00): 79, GPU has fallen off the bus.",
                "dcgm",
            )
        ],
        orient="row",
        schema=["ts", "node", "gpu", "uuid", "kind", "code", "message", "source"],
    )
    jobs = pl.DataFrame(
        JOBS,
        orient="row",
        schema=[
            "job_id",
            "name",
            "user",
            "team",
            "submit_ts",
            "start_ts",
            "end_ts",
            "num_gpus",
            "state",
            "exit_code",
            "reason",
        ],
    ).with_columns(queue=pl.lit("default"))
    attempts = pl.DataFrame(
        [a[:8] for a in ATTEMPTS],
        orient="row",
        schema=["job_id", "attempt", "start_ts", "end_ts", "state", "exit_code", "reason", "nodes"],
    )
    return {
        "nodes": nodes,
        "node_conditions": pl.DataFrame(
            conditions,
            orient="row",
            schema=["ts", "node", "condition", "status", "reason", "message"],
        ),
        "gpu_samples": pl.DataFrame(
            samples, orient="row", schema=["ts", "node", "gpu", "uuid", "metric", "value"]
        ),
        "gpu_events": events,
        "jobs": jobs,
        "job_attempts": attempts,
        "maintenance": pl.DataFrame(
            [("gpu-002", ts(24, 2), ts(24, 3), "firmware")],
            orient="row",
            schema=["node", "start_ts", "end_ts", "reason"],
        ),
    }


def _derived(steps: pl.DataFrame) -> dict[str, pl.DataFrame]:
    intervals = _state_intervals()
    node_daily = _node_daily(intervals)
    segments, job_goodput = _goodput()
    num_gpus = {j[0]: j[7] for j in JOBS}

    def cause(a: tuple) -> str | None:
        # as queries/derived/attempt_outcomes.sql words it
        if a[8] is None:
            return None
        if a[8] == "hardware":
            return (
                "XID 79 (ROBUST_CHANNEL_GPU_HAS_FALLEN_OFF_THE_BUS)"
                if "XID 79" in (a[9] or "")
                else "node_fail"
            )
        return f"failed (exit {a[5]})" if a[8] == "software" else a[4]

    attempts = pl.DataFrame(
        [
            (
                a[0],
                a[1],
                a[2],
                a[3],
                a[4],
                a[6],
                a[7],
                a[8],
                a[8] is not None and a[4] in ("failed", "node_fail"),
                cause(a),
                a[9],
                a[7] if a[9] else [],
                num_gpus[a[0]],
                (a[3] - a[2]).total_seconds(),
            )
            for a in ATTEMPTS
        ],
        orient="row",
        schema={
            "job_id": pl.String,
            "attempt": pl.Int32,
            "start_ts": pl.Datetime("us", "UTC"),
            "end_ts": pl.Datetime("us", "UTC"),
            "state": pl.String,
            "reason": pl.String,
            "nodes": pl.List(pl.String),
            "failure_class": pl.String,
            "fleet_failure": pl.Boolean,
            "cause": pl.String,
            "hardware_signal": pl.String,
            "implicated_nodes": pl.List(pl.String),
            "num_gpus": pl.Int32,
            "duration_s": pl.Float64,
        },
    )
    eligible = {"succeeded", "failed", "node_fail", "timeout", "oom"}
    outcomes = []
    for job_id, _, _, _, _, _, end, gpus, state, _, _ in JOBS:
        mine = attempts.filter(pl.col("job_id") == job_id).sort("attempt")
        gpu_h = float(((mine["end_ts"] - mine["start_ts"]).dt.total_seconds() * gpus).sum() / 3600)
        last = mine.row(-1, named=True)
        software = mine.filter(pl.col("failure_class") == "software").height
        outcomes.append(
            (
                job_id,
                end,
                state,
                state in eligible,
                state == "succeeded",
                None if state == "succeeded" else last["failure_class"],
                software >= 3,
                mine.height,
                gpus,
                gpu_h,
                mine.row(0, named=True)["state"] == "succeeded",
                sorted({n for ns in mine["implicated_nodes"] for n in ns}),
            )
        )
    job_outcomes = pl.DataFrame(
        outcomes,
        orient="row",
        schema={
            "job_id": pl.String,
            "end_ts": pl.Datetime("us", "UTC"),
            "final_state": pl.String,
            "eligible": pl.Boolean,
            "succeeded": pl.Boolean,
            "failure_class": pl.String,
            "crash_loop": pl.Boolean,
            "attempts": pl.Int32,
            "num_gpus": pl.Int32,
            "gpu_hours": pl.Float64,
            "first_attempt_succeeded": pl.Boolean,
            "implicated_nodes": pl.List(pl.String),
        },
    )
    return {
        "node_state_intervals": intervals,
        "node_availability_daily": node_daily,
        "fleet_availability_daily": _fleet_daily(node_daily),
        "weekly_summary": _weekly_summary(node_daily),
        "job_outcomes": job_outcomes,
        "attempt_outcomes": attempts,
        "job_goodput": job_goodput,
        "goodput_segments": segments,
        "goodput_stack": _goodput_stack(),
        "rank_slowdown": _rank_slowdown(steps),
        "node_remediation_history": _remediation_history(),
        "rank_episodes": _rank_episodes(steps),
    }


class SimulationArgs(TypedDict):
    """`SimulationConfig.create`'s arguments for a simulated test fleet."""

    nodes: int
    days: int
    seed: int
    start: str


SIMULATED: SimulationArgs = {"nodes": 8, "days": 3, "seed": 1, "start": "2026-11-22T00:00:00"}


def build_app_db(path: Path, fleet: str = "handmade") -> Path:
    """Write the app-test fleet (`handmade`, `simulated` or `two-clusters`) to a new DuckDB file
    at `path`."""
    if fleet == "simulated":
        return _simulated(path)
    if fleet == "two-clusters":
        return _two_clusters(path)
    con = open_store(path)
    for statement in statements(load_sql("schema/derived")):
        con.execute(statement)
    steps = _rank_steps()
    landing = {**_landing(), "rank_steps": steps}
    # nodes first, then the attempts: the other rows take their cluster from those
    order = {"nodes": 0, "job_attempts": 1}
    for table, frame in sorted(landing.items(), key=lambda item: order.get(item[0], 2)):
        con.register("__frame", frame)
        columns = ", ".join(f'"{c}"' for c in frame.columns)
        # The handmade rows name no cluster: a node's from `nodes`, a job's from its first node.
        if "cluster" in frame.columns:
            cluster = ""
        elif table == "jobs":
            cluster = (
                "(SELECT min(n.cluster) FROM job_attempts a JOIN nodes n ON n.node = a.nodes[1] "
                "WHERE a.job_id = f.job_id AND a.attempt = 0)"
            )
        elif "node" in frame.columns:
            cluster = "(SELECT min(cluster) FROM nodes n WHERE n.node = f.node)"
        elif "nodes" in frame.columns:
            cluster = "(SELECT min(cluster) FROM nodes n WHERE n.node = f.nodes[1])"
        else:
            cluster = "(SELECT min(cluster) FROM nodes)"
        if cluster:
            insert_landing(
                con,
                table,
                f"SELECT coalesce({cluster}, (SELECT min(cluster) FROM nodes)) AS cluster, "
                f"{columns} FROM __frame f",
            )
        else:
            insert_landing(con, table, f"SELECT {columns} FROM __frame")
        con.unregister("__frame")
    anomalies = _anomalies()
    con.register("__frame", anomalies)
    con.execute("INSERT INTO anomalies SELECT * FROM __frame")
    con.unregister("__frame")
    for table, frame in _derived(steps).items():
        con.register("__frame", frame)
        con.execute(f"CREATE OR REPLACE TABLE {table} AS SELECT * FROM __frame")
        con.unregister("__frame")
    update_gpu_samples_15m(con)
    # The inventory as one pass over every cluster (node names are unique across the fixture's
    # clusters); name_clusters gives its rows their cluster.
    execute(con, "compute/pass_cluster", {"cluster": "fixture"})
    update_kept_rows(con, Settings(), "gpu_inventory_days", ())
    execute(con, "derived/gpu_inventory")
    # Each condition's first sample and changes (cluster_schedulers reads them), their rows then
    # given their node's cluster, as that cluster's own pass would have named them.
    update_kept_rows(
        con,
        Settings(),
        "node_condition_changes",
        (),
        changed_from_queries=("derived/kept_conditions_from",),
    )
    con.execute(
        "UPDATE node_condition_changes c SET cluster = n.cluster FROM nodes n WHERE n.node = c.node"
    )
    execute(con, "derived/attempt_clusters")
    # The escapes, checkpoint and node-cost steps run on the hand-made tables above: j-101's
    # attempt 0 failed on gpu-001 5 min after its XID 79 finding opened (seen before the failure).
    for step in (
        "failure_escapes",
        "checkpoint_advice",
        "node_cost",
        "node_remediation",
        "cluster_schedulers",
    ):
        execute(con, f"derived/{step}", Settings().sql_params())
    name_clusters(con)
    con.execute(
        "INSERT INTO load_log VALUES (1, TIMESTAMPTZ '2026-11-30 00:05:00+00', 'fixture', "
        "['nodes'], 1, 1)"
    )
    con.close()
    return path


def name_clusters(con) -> None:
    """Give each derived table without `cluster` its rows' cluster, as compute does after a
    cluster's pass: a row's job's cluster, else its node's."""
    tables = con.execute(
        "SELECT table_name FROM duckdb_columns() WHERE schema_name = 'main' GROUP BY table_name "
        "HAVING NOT list_contains(list(column_name), 'cluster') "
        "AND (list_contains(list(column_name), 'node') OR list_contains(list(column_name), 'job_id'))"
    ).fetchall()
    for (table,) in tables:
        columns = {r[0] for r in con.execute(f"DESCRIBE {table}").fetchall()}
        sources = []
        if "job_id" in columns:  # a job's rows are all in its cluster, whichever node they name
            sources.append(f"(SELECT min(j.cluster) FROM jobs j WHERE j.job_id = {table}.job_id)")
        if "node" in columns:
            sources.append(f"(SELECT min(n.cluster) FROM nodes n WHERE n.node = {table}.node)")
        con.execute(f"ALTER TABLE {table} ADD COLUMN cluster VARCHAR")
        con.execute(f"UPDATE {table} SET cluster = coalesce({', '.join(sources)})")


SECOND_CLUSTER = "c9"
"""`fleet="two-clusters"`: the hand-made fleet with cluster c1 copied as c9, so gpu-000, gpu-001 and
c1's job ids are in both clusters (SPEC "Fleet-wide identity"). c9 differs where the tests look:
its gpu-001 was unavailable for 12 h on 2026-11-25 (10:00-22:00) and down at no other time of W48;
its j-101 is named `j-101-in-c9`; both have an info straggler finding `a-6` on j-101 (rank 4, gpu-000
GPU 4, 2026-11-25 10:00-12:00); and only c9 holds utilisation rows (gpu-001's GPU 0 split in two
MIG instances, j-101 at 25 % mean activity) and c1 holds j-101's at 75 %. Utilisation of W48 for
the tables that list job ids: idle j-101 12 GPU-h in c9, 4 in c1, idle j-103 2 GPU-h in c2 (each
its team llm/default's top idle job), and MIG packing advice for c9's j-104 and c2's j-102."""

C9_GPU001_INTERVALS = [
    ("gpu-001", W47, ts(25, 10), "available", None),
    ("gpu-001", ts(25, 10), ts(25, 22), "unavailable", "Ready=False (KubeletNotReady)"),
    ("gpu-001", ts(25, 22), END, "available", None),
]


def copy_cluster(con, source: str, target: str) -> None:
    """Copy every row of cluster `source`, in every table with `cluster`, as cluster `target`: the
    same node names and job ids in two clusters."""
    tables = con.execute(
        "SELECT DISTINCT table_name FROM duckdb_columns() JOIN duckdb_tables() USING "
        "(database_name, schema_name, table_name) WHERE schema_name = 'main' "
        "AND column_name = 'cluster' ORDER BY 1"
    ).fetchall()
    for (table,) in tables:
        if table in STORAGE_TABLES:
            continue  # gpu_samples' storage: copied through the view below, with new series ids
        con.execute(
            f"INSERT INTO {table} SELECT * REPLACE (CAST(? AS VARCHAR) AS cluster) FROM {table} "
            "WHERE cluster = ?",
            [target, source],
        )
    insert_landing(
        con,
        "gpu_samples",
        f"SELECT * REPLACE ('{target}' AS cluster) FROM gpu_samples WHERE cluster = '{source}'",
    )


def _two_clusters(path: Path) -> Path:
    build_app_db(path)
    con = open_store(path)
    copy_cluster(con, "c1", SECOND_CLUSTER)
    intervals = pl.DataFrame(
        C9_GPU001_INTERVALS, schema=["node", "start_ts", "end_ts", "state", "reason"], orient="row"
    )
    daily = _node_daily(intervals).with_columns(cluster=pl.lit(SECOND_CLUSTER))
    for table, frame in (("node_state_intervals", intervals), ("node_availability_daily", daily)):
        con.execute(f"DELETE FROM {table} WHERE cluster = ? AND node = 'gpu-001'", [SECOND_CLUSTER])
        con.register("__frame", frame.with_columns(cluster=pl.lit(SECOND_CLUSTER)))
        con.execute(f"INSERT INTO {table} BY NAME SELECT * FROM __frame")
        con.unregister("__frame")
    con.execute(
        "UPDATE jobs SET name = 'j-101-in-c9' WHERE cluster = ? AND job_id = 'j-101'",
        [SECOND_CLUSTER],
    )
    # a finding on a job both clusters have: rank 4 of j-101 slow on gpu-000's GPU 4, in each
    for cluster in ("c1", SECOND_CLUSTER):
        con.execute(
            "INSERT INTO anomalies BY NAME SELECT 'a-6' AS anomaly_id, 'rank' AS entity_type, "
            "'gpu-000' AS node, 4::SMALLINT AS gpu, ? AS uuid, 'j-101' AS job_id, 4 AS rank, "
            "'straggler' AS kind, ?::TIMESTAMPTZ AS start_ts, ?::TIMESTAMPTZ AS end_ts, 2.0 AS score, "
            "'info' AS severity, '{\"median_ratio\": 1.05}' AS evidence, 'watch' AS action, "
            "0.0 AS impact_gpu_h, 0.0 AS goodput_lost_gpu_h, ? AS cluster",
            [uuid("gpu-000", 4), ts(25, 10), ts(25, 12), cluster],
        )
    con.execute(
        "INSERT INTO gpu_utilisation_daily BY NAME SELECT * FROM (VALUES "
        "(?, 'gpu-001', 0::SMALLINT, 1::SMALLINT, '3g.40gb', DATE '2026-11-25', 24.0, 6.0), "
        "(?, 'gpu-001', 0::SMALLINT, 2::SMALLINT, '3g.40gb', DATE '2026-11-25', 24.0, 18.0)) "
        "AS t(cluster, node, gpu, gpu_i_id, gpu_i_profile, day, sampled_h, busy_h)",
        [SECOND_CLUSTER, SECOND_CLUSTER],
    )
    con.execute(
        "INSERT INTO job_utilisation BY NAME SELECT * FROM (VALUES "
        "('c1', 'j-101', 16.0, 0.75, 0.9, 16, 16, false, 4.0, 10.0), "
        "(?, 'j-101', 16.0, 0.25, 0.5, 8, 16, false, 12.0, 20.0), "
        "('c2', 'j-103', 32.0, 0.5, 0.6, 16, 16, false, 2.0, 30.0)) "
        "AS t(cluster, job_id, measured_gpu_h, mean_activity, p95_activity, gpus_used, gpus_mapped, "
        "on_mig, idle_gpu_h, peak_memory_gib)",
        [SECOND_CLUSTER],
    )
    # The scrape windows the tables above would come from are not needed (the page reads them
    # only for a job without a `jobs` row): an empty table, so its queries bind.
    con.execute(
        "CREATE TABLE gpu_activity_windows (cluster VARCHAR, node VARCHAR, gpu SMALLINT, "
        "gpu_i_id SMALLINT, gpu_i_profile VARCHAR, start_ts TIMESTAMPTZ, window_s DOUBLE, "
        "activity DOUBLE, fb_used_mib DOUBLE, gpu_share DOUBLE, job_id VARCHAR, attempt INTEGER, "
        "mapped_by VARCHAR)"
    )
    # team llm/default per cluster: the jobs above (busy = measured x mean activity)
    con.execute(
        "INSERT INTO team_utilisation_weekly BY NAME SELECT *, 'llm' AS team, 'default' AS queue, "
        "'2026-W48' AS week, DATE '2026-11-23' AS week_start, 1 AS jobs FROM (VALUES "
        "('c1', 16.0, 12.0, 0.75, 4.0, ['j-101']), "
        "(?, 16.0, 4.0, 0.25, 12.0, ['j-101']), "
        "('c2', 32.0, 16.0, 0.5, 2.0, ['j-103'])) "
        "AS t(cluster, measured_gpu_h, busy_gpu_h, busy_share, idle_gpu_h, top_idle_jobs)",
        [SECOND_CLUSTER],
    )
    con.execute(
        "INSERT INTO mig_packing BY NAME SELECT *, '2026-W48' AS week, DATE '2026-11-23' AS week_start, "
        "'NVIDIA H100 80GB HBM3' AS gpu_model, 1 AS jobs, '1g.10gb' AS profile, 1 / 7 AS gpu_share "
        "FROM (VALUES "
        "(?, 'notebook', ['j-104'], 0.5, 0.05, 4.0, 0.5 / 7, 0.5 * 6 / 7, 0.5 * 6 / 7 / 168), "
        "('c2', 'sweep-lr', ['j-102'], 0.25, 0.1, 6.0, 0.25 / 7, 0.25 * 6 / 7, 0.25 * 6 / 7 / 168)) "
        "AS t(cluster, workload, job_ids, gpu_h, p95_activity, peak_memory_gib, packed_gpu_h, "
        "freed_gpu_h, gpus_freed)",
        [SECOND_CLUSTER],
    )
    con.close()
    return path


_simulated_cache: dict[str, Path] = {}


def _simulated(path: Path) -> Path:
    """Simulate, ingest and compute once per test process; later calls copy that file."""
    if "db" in _simulated_cache:
        shutil.copyfile(_simulated_cache["db"], path)
        return path
    _build_simulated(path)
    cache = Path(tempfile.mkdtemp(prefix="gpufleet-app-sim-")) / "fleet.duckdb"
    shutil.copyfile(path, cache)
    _simulated_cache["db"] = cache
    return path


def _build_simulated(path: Path) -> Path:
    from pipelines.compute import compute
    from pipelines.config import Settings
    from pipelines.simulate import SimulationConfig, simulate_to_dir
    from pipelines.sources.files import ingest_files

    landing = path.parent / f"{path.stem}-landing"
    simulate_to_dir(SimulationConfig.create(**SIMULATED), landing)
    con = open_store(path)
    ingest_files(con, landing)
    compute(con, Settings())
    con.close()
    return path
