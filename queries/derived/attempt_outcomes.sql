-- attempt_outcomes: one row per job attempt with its failure class and the hardware evidence
-- (docs/metrics.md "Job success and failure classes").
--
-- A job without job_attempts rows is treated as one attempt 0 taken from its jobs row.
-- failure_class of an ended attempt that did not succeed, first match wins:
--   hardware       state node_fail, or a hardware signal on one of its nodes within
--                  [end_ts - $failure_before_s, end_ts + $failure_after_s]: the node was unavailable or
--                  unknown (node_state_intervals), logged a hardware-class XID (xid_catalogue), or had
--                  an anomaly whose kind is in $hardware_anomaly_kinds
--   infrastructure preempted, or the scheduler's reason mentions an eviction
--   user           cancelled, oom, timeout
--   software       failed with a non-zero exit code and no hardware signal
--   unknown        anything else (e.g. failed without an exit code)
-- NULL for succeeded and running attempts.
-- hardware_signal: the signals found, '; '-separated and sorted (also shown for attempts that
-- succeeded despite them); implicated_nodes: the nodes those signals came from.
-- duration_s: attempt length in seconds (a running attempt counts up to the data horizon, data_horizon);
-- allocated_gpu_s = num_gpus x duration_s (GPU-seconds).
CREATE OR REPLACE TABLE attempt_outcomes AS
WITH
horizon AS (
    SELECT horizon_ts FROM data_horizon
),
attempts AS (
    SELECT a.job_id, a.attempt, a.start_ts, a.end_ts, a.state, a.exit_code, a.reason, a.nodes, j.num_gpus
    FROM job_attempts a JOIN jobs j USING (job_id)
    UNION ALL
    SELECT j.job_id, 0, j.start_ts, j.end_ts, j.state, j.exit_code, j.reason, CAST([] AS VARCHAR[]), j.num_gpus
    FROM jobs j
    WHERE NOT EXISTS (SELECT 1 FROM job_attempts a WHERE a.job_id = j.job_id)
),
attempt_nodes AS (
    SELECT job_id, attempt, end_ts,
        end_ts - to_seconds($failure_before_s) AS window_start,
        end_ts + to_seconds($failure_after_s) AS window_end,
        unnest(nodes) AS node
    FROM attempts
    WHERE end_ts IS NOT NULL
),
signals AS (
    SELECT an.job_id, an.attempt, an.node, greatest(i.start_ts, an.window_start) AS ts,
        an.node || ' ' || i.state || coalesce(': ' || i.reason, '') AS signal
    FROM attempt_nodes an
    JOIN node_state_intervals i
        ON i.node = an.node AND i.state IN ('unavailable', 'unknown')
        AND i.start_ts <= an.window_end AND i.end_ts > an.window_start
    UNION ALL
    SELECT an.job_id, an.attempt, an.node, e.ts,
        an.node || ' XID ' || e.code || coalesce(' (' || x.name || ')', '') || coalesce(' on gpu ' || e.gpu, '')
    FROM attempt_nodes an
    JOIN gpu_events e
        ON e.node = an.node AND e.kind = 'xid' AND e.ts BETWEEN an.window_start AND an.window_end
    JOIN xid_catalogue x ON x.code = e.code AND x.class = 'hardware'
    UNION ALL
    SELECT an.job_id, an.attempt, an.node, greatest(a.start_ts, an.window_start),
        an.node || ' anomaly ' || a.kind || coalesce(' on gpu ' || a.gpu, '')
    FROM attempt_nodes an
    JOIN anomalies a
        ON a.node = an.node AND list_contains($hardware_anomaly_kinds, a.kind)
        AND a.start_ts <= an.window_end AND (a.end_ts IS NULL OR a.end_ts >= an.window_start)
),
evidence AS (
    SELECT job_id, attempt,
        string_agg(DISTINCT signal, '; ' ORDER BY signal) AS hardware_signal,
        list(DISTINCT node ORDER BY node) AS implicated_nodes
    FROM signals
    GROUP BY job_id, attempt
),
classified AS (
    SELECT a.*, e.hardware_signal, e.implicated_nodes,
        CASE
            WHEN a.end_ts IS NULL OR a.state IN ('succeeded', 'running') THEN NULL
            WHEN a.state = 'node_fail' OR e.hardware_signal IS NOT NULL THEN 'hardware'
            WHEN a.state = 'preempted' OR a.reason ILIKE '%evict%' THEN 'infrastructure'
            WHEN a.state IN ('cancelled', 'oom', 'timeout') THEN 'user'
            WHEN a.state = 'failed' AND a.exit_code <> 0 THEN 'software'
            ELSE 'unknown'
        END AS failure_class,
        CASE
            WHEN a.start_ts IS NULL THEN 0.0
            ELSE greatest(0.0, epoch(coalesce(a.end_ts, greatest(h.horizon_ts, a.start_ts))) - epoch(a.start_ts))
        END AS duration_s
    FROM attempts a
    LEFT JOIN evidence e USING (job_id, attempt)
    CROSS JOIN horizon h
)
SELECT job_id, attempt, start_ts, end_ts, state, exit_code, reason, nodes, failure_class,
    CASE WHEN state = 'node_fail' THEN concat_ws('; ', 'node_fail reported by the scheduler', hardware_signal)
         ELSE hardware_signal END AS hardware_signal,
    coalesce(implicated_nodes, CAST([] AS VARCHAR[])) AS implicated_nodes,
    num_gpus, duration_s, num_gpus * duration_s AS allocated_gpu_s
FROM classified
ORDER BY job_id, attempt
