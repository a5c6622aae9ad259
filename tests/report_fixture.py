"""A hand-made fleet whose weekly numbers were worked out by hand.

Two ISO weeks, W47 (Mon 2026-11-16 .. Sun 2026-11-22) and W48 (Mon 2026-11-23 .. Sun 2026-11-29),
three 8-GPU nodes: n1 and n2 in cluster c1, n3 in cluster c2. Every node is in the fleet from
2026-11-16 00:00 to the data horizon 2026-11-30 00:00 (168 h per week).

The derived tables the weekly summary reads (node_state_intervals, node_availability_daily,
job_outcomes, attempt_outcomes, job_goodput, goodput_stack) are filled with the rows below, so the
summary's SQL is tested on its own. `node_availability_daily` and `fleet_availability_daily` are
derived from the intervals here (test glue, not the product's SQL) so the two stay consistent.

Node timelines (UTC):
  n1  W47: unavailable 11-18 10:00-12:00, unknown 12:00-13:00 (one 3 h episode); else available.
      W48: maintenance 11-24 00:00-06:00; degraded 11-25 00:00-12:00; unavailable 11-26 08:00-12:00.
  n2  W47: available.
      W48: unknown 11-27 00:00-02:00 then unavailable 02:00-04:00 (one 4 h episode);
           unavailable 11-29 22:00-24:00 (still open at the horizon: a failure, but no
           known repair time yet).
  n3  W47/W48: unavailable 11-22 22:00 -> 11-23 03:00 (one 5 h episode that starts in W47).
Findings: n2 ecc_sbe_rate (warn) 11-24 07:00-14:00.

Jobs (gpu_hours = GPUs x attempt lengths):
  W47  j0  c1 n1  8 GPUs  a0 failed 11-18 09:00-10:00 (hardware), a1 succeeded 11-19 00:00-04:00
       j00 c2 n3  8 GPUs  a0 succeeded 11-20 00:00-10:00
  W48  j1  c1 n1  8 GPUs  a0 succeeded 11-23 10:00-20:00
       j2  c1 n1+n2 16 GPUs a0 node_fail 11-24 08:00-12:00 (XID 79 on n2 11:58), a1 succeeded 12:30-18:30
       j3  c2 n3  8 GPUs  a0..a2 failed exit 1, 11-25 00:00-03:00 hourly (software, crash loop)
       j4  c1 n2  1 GPU   a0 cancelled 11-26 00:00-04:00 (user; not eligible)
       j5  c2 n3  8 GPUs  a0 preempted 11-27 00:00-02:00, a1 timeout 02:00-04:00
       j6  c2 n3  8 GPUs  a0 running since 11-29 12:00
"""

from __future__ import annotations

import atexit
import functools
import shutil
import tempfile
from pathlib import Path

import duckdb

from pipelines.config import Settings
from pipelines.sql import execute, load_sql, statements
from pipelines.store import ensure_schema, open_store
from tests.app_fixture import SimulationArgs, name_clusters

NODES = [("n1", "c1"), ("n2", "c1"), ("n3", "c2")]

# (node, start, end, state, reason)
INTERVALS = [
    ("n1", "2026-11-16 00:00", "2026-11-18 10:00", "available", None),
    ("n1", "2026-11-18 10:00", "2026-11-18 12:00", "unavailable", "Ready=False (KubeletNotReady)"),
    ("n1", "2026-11-18 12:00", "2026-11-18 13:00", "unknown", "Ready stale"),
    ("n1", "2026-11-18 13:00", "2026-11-24 00:00", "available", None),
    ("n1", "2026-11-24 00:00", "2026-11-24 06:00", "maintenance", "maintenance: firmware"),
    ("n1", "2026-11-24 06:00", "2026-11-25 00:00", "available", None),
    ("n1", "2026-11-25 00:00", "2026-11-25 12:00", "degraded", "thermal_throttle"),
    ("n1", "2026-11-25 12:00", "2026-11-26 08:00", "available", None),
    ("n1", "2026-11-26 08:00", "2026-11-26 12:00", "unavailable", "cordoned"),
    ("n1", "2026-11-26 12:00", "2026-11-30 00:00", "available", None),
    ("n2", "2026-11-16 00:00", "2026-11-27 00:00", "available", None),
    ("n2", "2026-11-27 00:00", "2026-11-27 02:00", "unknown", "no DCGM sample from gpu 3"),
    ("n2", "2026-11-27 02:00", "2026-11-27 04:00", "unavailable", "AcceleratedHardwareReady=False"),
    ("n2", "2026-11-27 04:00", "2026-11-29 22:00", "available", None),
    ("n2", "2026-11-29 22:00", "2026-11-30 00:00", "unavailable", "cordoned"),
    ("n3", "2026-11-16 00:00", "2026-11-22 22:00", "available", None),
    ("n3", "2026-11-22 22:00", "2026-11-23 03:00", "unavailable", "Ready=False (KubeletNotReady)"),
    ("n3", "2026-11-23 03:00", "2026-11-30 00:00", "available", None),
]

# (job_id, submit, final_state, num_gpus, eligible, succeeded, failure_class, crash_loop,
#  gpu_hours, first_attempt_succeeded, productive_s)
JOBS = [
    ("j0", "2026-11-18 08:00", "succeeded", 8, True, True, None, False, 40.0, False, 10800.0),
    ("j00", "2026-11-19 23:00", "succeeded", 8, True, True, None, False, 80.0, True, 32400.0),
    ("j1", "2026-11-23 09:00", "succeeded", 8, True, True, None, False, 80.0, True, 28800.0),
    ("j2", "2026-11-24 07:00", "succeeded", 16, True, True, None, False, 160.0, False, 25200.0),
    ("j3", "2026-11-24 23:00", "failed", 8, True, False, "software", True, 24.0, False, 0.0),
    ("j4", "2026-11-25 23:00", "cancelled", 1, False, False, "user", False, 4.0, False, 7200.0),
    ("j5", "2026-11-26 22:00", "timeout", 8, True, False, "user", False, 32.0, False, 3600.0),
    ("j6", "2026-11-29 11:00", "running", 8, False, False, None, False, 96.0, False, None),
]

# (job_id, attempt, start, end, state, exit_code, failure_class, nodes, implicated_nodes)
ATTEMPTS = [
    ("j0", 0, "2026-11-18 09:00", "2026-11-18 10:00", "failed", 1, "hardware", ["n1"], ["n1"]),
    ("j0", 1, "2026-11-19 00:00", "2026-11-19 04:00", "succeeded", 0, None, ["n1"], []),
    ("j00", 0, "2026-11-20 00:00", "2026-11-20 10:00", "succeeded", 0, None, ["n3"], []),
    ("j1", 0, "2026-11-23 10:00", "2026-11-23 20:00", "succeeded", 0, None, ["n1"], []),
    (
        "j2",
        0,
        "2026-11-24 08:00",
        "2026-11-24 12:00",
        "node_fail",
        None,
        "hardware",
        ["n1", "n2"],
        ["n2"],
    ),
    ("j2", 1, "2026-11-24 12:30", "2026-11-24 18:30", "succeeded", 0, None, ["n1", "n2"], []),
    ("j3", 0, "2026-11-25 00:00", "2026-11-25 01:00", "failed", 1, "software", ["n3"], []),
    ("j3", 1, "2026-11-25 01:00", "2026-11-25 02:00", "failed", 1, "software", ["n3"], []),
    ("j3", 2, "2026-11-25 02:00", "2026-11-25 03:00", "failed", 1, "software", ["n3"], []),
    ("j4", 0, "2026-11-26 00:00", "2026-11-26 04:00", "cancelled", None, "user", ["n2"], []),
    (
        "j5",
        0,
        "2026-11-27 00:00",
        "2026-11-27 02:00",
        "preempted",
        None,
        "infrastructure",
        ["n3"],
        [],
    ),
    ("j5", 1, "2026-11-27 02:00", "2026-11-27 04:00", "timeout", None, "user", ["n3"], []),
    ("j6", 0, "2026-11-29 12:00", None, "running", None, None, ["n3"], []),
]

# (window_start, cluster, capacity, unavailable, unknown, idle, allocated,
#  init, checkpoint, wasted, other, productive, allocated but idle); every level sums exactly
#  (allocated but idle is part of allocated, not a level).
STACK = [
    ("2026-11-16", "c1", 2688.0, 16.0, 8.0, 2624.0, 40.0, 6.0, 2.0, 8.0, 0.0, 24.0, 4.0),
    ("2026-11-16", "c2", 1344.0, 16.0, 0.0, 1248.0, 80.0, 4.0, 2.0, 0.0, 2.0, 72.0, 0.0),
    ("2026-11-23", "c1", 2640.0, 64.0, 16.0, 2316.0, 244.0, 20.0, 10.0, 30.0, 6.0, 178.0, 16.0),
    ("2026-11-23", "c2", 1344.0, 24.0, 0.0, 1168.0, 152.0, 20.0, 4.0, 30.0, 10.0, 88.0, 8.0),
]

# (ts, node, gpu, code)
XIDS = [("2026-11-24 11:58", "n2", 3, 79)]
# Findings: (node, gpu, kind, severity, start, end). n2's rising ECC single-bit rate was open when
# j2's attempt 0 started on it (08:00): a failure placed on a flagged node, 5 h after the finding.
ANOMALIES = [("n2", 3, "ecc_sbe_rate", "warn", "2026-11-24 07:00", "2026-11-24 14:00")]

# anomalies: (id, node, gpu, kind, start, end, severity, action, evidence, impact_gpu_h, goodput_lost_gpu_h)
FINDINGS = [
    # the XID 79 that ended j2 a0 (16 GPUs) at 12:00: it ran 2 min on the GPU's node (16 x 2/60 =
    # 0.53 GPU-h while open), its loss (a hand value here) 64.0 GPU-h
    (
        "x1",
        "n2",
        3,
        "xid",
        "2026-11-24 11:58",
        "2026-11-24 18:00",
        "critical",
        "reboot",
        '{"xid": 79}',
        0.53,
        64.0,
    ),
    # a W47 finding: not in W48's findings
    (
        "t1",
        "n3",
        1,
        "throttling",
        "2026-11-18 00:00",
        "2026-11-18 06:00",
        "warn",
        "cordon",
        "{}",
        12.0,
        0.0,
    ),
]

# node_remediation_history: (node, cluster, step, since, until, severity, why, anomaly_ids)
REMEDIATION = [
    (
        "n3",
        "c2",
        "cordon",
        "2026-11-18 00:00",
        "2026-11-18 06:00",
        "warn",
        "throttling on gpu 1 (warn) -> cordon",
        ["t1"],
    ),
    (
        "n2",
        "c1",
        "reboot",
        "2026-11-24 11:58",
        "2026-11-24 18:00",
        "critical",
        "xid 79 on gpu 3 (critical) -> reboot",
        ["x1"],
    ),
]

# The derived tables' shapes as `gpufleet compute` builds them (contract columns plus extras).
DERIVED_DDL = """
CREATE OR REPLACE TABLE node_remediation_history (
    node VARCHAR, cluster VARCHAR, step VARCHAR, since TIMESTAMPTZ, until TIMESTAMPTZ, severity VARCHAR,
    why VARCHAR, anomaly_ids VARCHAR[]);
CREATE OR REPLACE TABLE node_state_intervals (
    node VARCHAR, start_ts TIMESTAMPTZ, end_ts TIMESTAMPTZ, state VARCHAR, reason VARCHAR);
CREATE OR REPLACE TABLE job_outcomes (
    job_id VARCHAR, end_ts TIMESTAMPTZ, final_state VARCHAR, eligible BOOLEAN, succeeded BOOLEAN,
    failure_class VARCHAR, crash_loop BOOLEAN, attempts BIGINT, num_gpus INTEGER,
    gpu_hours DOUBLE, first_attempt_succeeded BOOLEAN, implicated_nodes VARCHAR[]);
CREATE OR REPLACE TABLE attempt_outcomes (
    job_id VARCHAR, attempt INTEGER, start_ts TIMESTAMPTZ, end_ts TIMESTAMPTZ, state VARCHAR,
    exit_code INTEGER, reason VARCHAR, nodes VARCHAR[], failure_class VARCHAR, fleet_failure BOOLEAN,
    cause VARCHAR, hardware_signal VARCHAR, infrastructure_signal VARCHAR, implicated_nodes VARCHAR[],
    num_gpus INTEGER, duration_s DOUBLE, gpu_s DOUBLE);
CREATE OR REPLACE TABLE job_goodput (
    job_id VARCHAR, first_start_ts TIMESTAMPTZ, end_ts TIMESTAMPTZ, wall_s DECIMAL(18,6),
    productive_s DECIMAL(18,6), init_s DECIMAL(18,6), checkpoint_s DECIMAL(18,6),
    wasted_s DECIMAL(18,6), recovery_s DECIMAL(18,6), other_s DECIMAL(18,6),
    allocated_gpu_s DECIMAL(18,6), productive_gpu_s DECIMAL(18,6),
    straggler_drag_s DECIMAL(18,6), goodput DOUBLE, ettr DOUBLE, is_running BOOLEAN);
CREATE OR REPLACE TABLE goodput_segments (
    job_id VARCHAR, attempt INTEGER, start_ts TIMESTAMPTZ, end_ts TIMESTAMPTZ, category VARCHAR,
    gpus INTEGER, duration_s DECIMAL(18,6), start_us BIGINT, end_us BIGINT);
CREATE OR REPLACE TABLE goodput_stack (
    window_start TIMESTAMPTZ, window_end TIMESTAMPTZ, week VARCHAR, cluster VARCHAR,
    capacity_gpu_h DECIMAL(18,6), unavailable_gpu_h DECIMAL(18,6), unknown_gpu_h DECIMAL(18,6),
    idle_gpu_h DECIMAL(18,6), allocated_gpu_h DECIMAL(18,6), init_gpu_h DECIMAL(18,6),
    checkpoint_gpu_h DECIMAL(18,6), wasted_gpu_h DECIMAL(18,6), other_gpu_h DECIMAL(18,6),
    productive_gpu_h DECIMAL(18,6), goodput DOUBLE, allocated_idle_gpu_h DECIMAL(18,6));
CREATE OR REPLACE TABLE rank_slowdown (
    job_id VARCHAR, attempt INTEGER, rank INTEGER, node VARCHAR, gpu SMALLINT, steps BIGINT,
    median_ratio DOUBLE, p95_ratio DOUBLE, slowest_share DOUBLE, drag_s DECIMAL(18,6),
    median_time_s DOUBLE, relative_score DOUBLE, relative_flagged BOOLEAN, u_statistic DOUBLE,
    p_value_raw DOUBLE, p_value DOUBLE, is_straggler BOOLEAN)
"""

# Test glue: per-node daily seconds by state, intervals split at UTC midnight.
DAILY_SQL = """
CREATE OR REPLACE TABLE node_availability_daily AS
WITH days AS (
    SELECT i.node, n.cluster, i.state, d.day::DATE AS day,
           epoch(least(i.end_ts, d.day + INTERVAL 1 DAY) - greatest(i.start_ts, d.day)) AS s
    FROM node_state_intervals i JOIN nodes n USING (node),
         unnest(generate_series(date_trunc('day', i.start_ts), i.end_ts - INTERVAL 1 MICROSECOND,
                                INTERVAL 1 DAY)) AS d(day)
)
SELECT day, node, cluster,
       sum(s) AS in_fleet_s,
       coalesce(sum(s) FILTER (WHERE state = 'maintenance'), 0) AS maintenance_s,
       coalesce(sum(s) FILTER (WHERE state = 'available'), 0) AS available_s,
       coalesce(sum(s) FILTER (WHERE state = 'degraded'), 0) AS degraded_s,
       coalesce(sum(s) FILTER (WHERE state = 'unavailable'), 0) AS unavailable_s,
       coalesce(sum(s) FILTER (WHERE state = 'unknown'), 0) AS unknown_s,
       (coalesce(sum(s) FILTER (WHERE state IN ('available', 'degraded')), 0))
         / nullif(sum(s) - coalesce(sum(s) FILTER (WHERE state = 'maintenance'), 0), 0) AS availability
FROM days GROUP BY ALL;
CREATE OR REPLACE TABLE fleet_availability_daily AS
SELECT day, cluster, sum(in_fleet_s) AS in_fleet_s, sum(maintenance_s) AS maintenance_s,
       sum(available_s) AS available_s, sum(degraded_s) AS degraded_s,
       sum(unavailable_s) AS unavailable_s, sum(unknown_s) AS unknown_s,
       sum(available_s + degraded_s) / nullif(sum(in_fleet_s - maintenance_s), 0) AS availability,
       CAST(NULL AS DOUBLE) AS mtbf_h, CAST(NULL AS DOUBLE) AS mttr_h
FROM node_availability_daily GROUP BY ALL
"""


def _ts(text: str | None) -> str | None:
    return None if text is None else text + ":00+00"


def build_report_fixture(con: duckdb.DuckDBPyConnection) -> None:
    """Fill landing and derived tables with the hand-made fleet described in the module docstring."""
    ensure_schema(con)
    con.execute("BEGIN TRANSACTION")
    _fill(con)
    con.execute("COMMIT")


def _fill(con: duckdb.DuckDBPyConnection) -> None:
    for statement in statements(load_sql("schema/derived")):
        con.execute(statement)
    for statement in statements(DERIVED_DDL):
        con.execute(statement)
    con.executemany(
        "INSERT INTO nodes VALUES (?, ?, 'p5.48xlarge', ?, 8, 32)",
        [(n, c, "NVIDIA H100 80GB HBM3" if c == "c1" else "NVIDIA H200") for n, c in NODES],
    )
    con.executemany(
        "INSERT INTO node_state_intervals VALUES (?, ?, ?, ?, ?)",
        [(n, _ts(s), _ts(e), st, r) for n, s, e, st, r in INTERVALS],
    )
    for statement in statements(DAILY_SQL):
        con.execute(statement)
    ends = {}
    for job_id, attempt, start, end, state, exit_code, fclass, nodes, implicated in ATTEMPTS:
        job = next(j for j in JOBS if j[0] == job_id)
        con.execute(
            "INSERT INTO job_attempts VALUES ((SELECT min(cluster) FROM nodes WHERE node = ?), "
            "?, ?, ?, ?, ?, ?, NULL, ?)",
            [
                nodes[0] if nodes else None,
                job_id,
                attempt,
                _ts(start),
                _ts(end),
                state,
                exit_code,
                nodes,
            ],
        )
        signal = "xid 79" if fclass == "hardware" and state == "node_fail" else None
        # as attempt_outcomes.sql words them: fleet failures are failed / node_fail attempts
        fleet_failure = fclass is not None and state in ("failed", "node_fail")
        cause = {
            "hardware": "XID 79" if signal else "node unavailable",
            "software": f"failed (exit {exit_code})",
        }.get(fclass or "", state)
        con.execute(
            "INSERT INTO attempt_outcomes (job_id, attempt, start_ts, end_ts, state, exit_code, nodes, "
            "failure_class, fleet_failure, cause, hardware_signal, implicated_nodes, num_gpus) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [
                job_id,
                attempt,
                _ts(start),
                _ts(end),
                state,
                exit_code,
                nodes,
                fclass,
                fleet_failure if fclass else None,
                cause if fclass else None,
                signal,
                implicated,
                job[3],
            ],
        )
        ends[job_id] = end
        ends.setdefault(job_id + "/start", start)
    for (
        job_id,
        submit,
        state,
        gpus,
        eligible,
        succeeded,
        fclass,
        crash,
        gpu_h,
        first_ok,
        productive_s,
    ) in JOBS:
        end = ends[job_id]
        n_attempts = sum(1 for a in ATTEMPTS if a[0] == job_id)
        implicated = sorted({n for a in ATTEMPTS if a[0] == job_id for n in a[8]})
        con.execute(
            "INSERT INTO jobs VALUES (coalesce((SELECT min(cluster) FROM job_attempts WHERE job_id = ?), 'c1'), "
            "?, ?, 'alice', 'llm', 'train', ?, ?, ?, ?, ?, NULL, NULL)",
            [
                job_id,
                job_id,
                f"job {job_id}",
                _ts(submit),
                _ts(ends[job_id + "/start"]),
                _ts(end),
                gpus,
                state,
            ],
        )
        con.execute(
            "INSERT INTO job_outcomes VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [
                job_id,
                _ts(end),
                state,
                eligible,
                succeeded,
                fclass,
                crash,
                n_attempts,
                gpus,
                gpu_h,
                first_ok,
                implicated,
            ],
        )
        if productive_s is not None:
            con.execute(
                "INSERT INTO job_goodput (job_id, end_ts, productive_s, productive_gpu_s, is_running) "
                "VALUES (?, ?, ?, ?, false)",
                [job_id, _ts(end), productive_s, productive_s * gpus],
            )
    con.executemany(
        "INSERT INTO goodput_stack VALUES (?::TIMESTAMPTZ, ?::TIMESTAMPTZ + INTERVAL 7 DAY, "
        "strftime(?::DATE, '%G-W%V'), ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ? / ?, ?)",
        [
            (
                s,
                s,
                s,
                c,
                cap,
                unav,
                unk,
                idle,
                alloc,
                ini,
                ck,
                wa,
                oth,
                prod,
                prod,
                alloc,
                alloc_idle,
            )
            for s, c, cap, unav, unk, idle, alloc, ini, ck, wa, oth, prod, alloc_idle in STACK
        ],
    )
    con.executemany(
        "INSERT INTO gpu_events VALUES ((SELECT min(cluster) FROM nodes WHERE node = ?), "
        "?, ?, ?, NULL, 'xid', ?, 'NVRM: Xid', 'kernel-log')",
        [(node, _ts(ts), node, gpu, code) for ts, node, gpu, code in XIDS],
    )
    con.executemany(
        "INSERT INTO anomalies VALUES (?, 'gpu', ?, ?, NULL, NULL, NULL, ?, ?, ?, 1.0, ?, ?, ?, ?, ?)",
        [
            (i, node, gpu, kind, _ts(s), _ts(e), sev, ev, action, impact, lost)
            for i, node, gpu, kind, s, e, sev, action, ev, impact, lost in FINDINGS
        ],
    )
    con.executemany(
        "INSERT INTO node_remediation_history VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
        [
            (n, c, step, _ts(s), _ts(u), sev, why, ids)
            for n, c, step, s, u, sev, why, ids in REMEDIATION
        ],
    )
    con.executemany(
        "INSERT INTO anomalies (anomaly_id, entity_type, node, gpu, kind, start_ts, end_ts, severity, action, "
        "impact_gpu_h, goodput_lost_gpu_h) VALUES (?, 'gpu', ?, ?, ?, ?, ?, ?, 'drain', 0.0, 0.0)",
        [
            (f"a{i}", node, gpu, kind, _ts(s), _ts(e), sev)
            for i, (node, gpu, kind, sev, s, e) in enumerate(ANOMALIES)
        ],
    )


SUMMARY_STEPS = (
    "attempt_clusters",
    "failure_escapes",
    "checkpoint_advice",
    "node_cost",
    "weekly_summary",
)
"""The compute steps run over the hand-made tables, in `gpufleet compute` order."""


@functools.cache
def _computed_template() -> Path:
    folder = Path(tempfile.mkdtemp(prefix="gpufleet-report-fixture-"))
    atexit.register(shutil.rmtree, folder, ignore_errors=True)
    path = folder / "fleet.duckdb"
    con = open_store(path)
    build_report_fixture(con)
    for step in SUMMARY_STEPS:
        execute(con, f"derived/{step}", Settings().sql_params())
    name_clusters(con)
    con.close()
    return path


def computed_fixture(path: Path) -> Path:
    """A copy at `path` of the hand-made fleet with weekly_summary computed (built once per run)."""
    shutil.copyfile(_computed_template(), path)
    return path


SIMULATED_FLEET: SimulationArgs = {"nodes": 6, "days": 2, "seed": 7, "start": "2026-11-22"}
"""A small simulated fleet (Sunday of 2026-W47 and Monday of 2026-W48) with multi-node jobs."""


@functools.cache
def _simulated_template() -> Path:
    from pipelines.compute import compute
    from pipelines.simulate import SimulationConfig, simulate_to_dir
    from pipelines.sources.files import ingest_files

    folder = Path(tempfile.mkdtemp(prefix="gpufleet-simulated-fleet-"))
    atexit.register(shutil.rmtree, folder, ignore_errors=True)
    simulate_to_dir(SimulationConfig.create(**SIMULATED_FLEET), folder / "landing")
    path = folder / "fleet.duckdb"
    con = open_store(path)
    ingest_files(con, folder / "landing")
    compute(con, Settings())
    con.close()
    shutil.rmtree(folder / "landing")
    return path


def simulated_fleet(path: Path) -> Path:
    """A copy at `path` of a small simulated fleet, ingested and computed (built once per run)."""
    shutil.copyfile(_simulated_template(), path)
    return path
