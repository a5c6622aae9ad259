-- attempt_outcomes: one row per job attempt with its failure class, its cause and the evidence
-- (docs/metrics.md "Job success and failure classes").
--
-- A job without job_attempts rows is treated as one attempt 0 taken from its jobs row.
-- Evidence: signals on any node of the attempt within [end_ts - $failure_before_s, end_ts + $failure_after_s].
-- failure_class of an ended attempt that did not succeed, first match wins:
--   user            cancelled, timeout, oom: the job asked for it or ran out of its own limits;
--                   never blamed on hardware, whatever else happened on the node
--   infrastructure  preempted, or the scheduler's reason mentions an eviction (policy)
--   hardware        node_fail, or positive hardware evidence: a hardware-class XID (xid_catalogue),
--                   an anomaly whose kind is in $hardware_anomaly_kinds, or the node `unavailable`
--                   (a required condition in its bad status, a cordon, fewer GPUs)
--   infrastructure  only missing evidence: the node `unknown` (stale conditions, a telemetry gap) or an
--                   anomaly whose kind is in $infrastructure_anomaly_kinds (condition flapping)
--   software        failed with a non-zero exit code and none of the above
--   unknown         anything else (e.g. failed without an exit code)
-- NULL for succeeded and running attempts.
-- fleet_failure: the attempt counts as a failure of the fleet: state failed / node_fail and class
--   hardware, infrastructure by evidence, software or unknown. user and policy infrastructure
--   (preempted / evicted) never do. Failure counts, the failure Pareto (dashboard and report) and
--   crash loops read only these.
-- cause: the one rule for "cause" (the Pareto's bars): hardware -> the latest hardware XID
--   ('XID 79 (NAME)'), else 'node_fail', else the hardware anomaly kind, else 'node unavailable';
--   infrastructure by evidence -> the anomaly kind, else 'node unknown'; software -> 'failed (exit N)';
--   user / policy -> the state ('cancelled', 'timeout', 'oom', 'preempted', 'evicted'); unknown -> the
--   state with its exit code when it has one.
-- hardware_signal: the positive hardware evidence, '; '-separated and sorted (also shown for attempts
-- that succeeded or were cancelled despite it); infrastructure_signal: the missing evidence likewise;
-- implicated_nodes: the nodes the hardware evidence came from (for a node_fail without any, the nodes
-- with missing evidence: the scheduler says a node failed and those went silent).
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
-- evidence: 'hardware' (positive) or 'infrastructure' (missing evidence); label = the cause it gives
signals AS (
    SELECT an.job_id, an.attempt, an.node, greatest(i.start_ts, an.window_start) AS ts,
        CASE WHEN i.state = 'unavailable' THEN 'hardware' ELSE 'infrastructure' END AS evidence,
        'node ' || i.state AS label, 3 AS label_rank,
        an.node || ' ' || i.state || coalesce(': ' || i.reason, '') AS signal
    FROM attempt_nodes an
    JOIN node_state_intervals i
        ON i.node = an.node AND i.state IN ('unavailable', 'unknown')
        AND i.start_ts <= an.window_end AND i.end_ts > an.window_start
    UNION ALL
    SELECT an.job_id, an.attempt, an.node, e.ts, 'hardware',
        'XID ' || e.code || coalesce(' (' || x.name || ')', ''), 1,
        an.node || ' XID ' || e.code || coalesce(' (' || x.name || ')', '') || coalesce(' on gpu ' || e.gpu, '')
    FROM attempt_nodes an
    JOIN {{ metrics/xid_events }} e
        ON e.node = an.node AND e.ts BETWEEN an.window_start AND an.window_end
    JOIN xid_catalogue x ON x.code = e.code AND x.class = 'hardware'
    UNION ALL
    SELECT an.job_id, an.attempt, an.node, greatest(a.start_ts, an.window_start),
        CASE WHEN list_contains($hardware_anomaly_kinds, a.kind) THEN 'hardware' ELSE 'infrastructure' END,
        a.kind, 2,
        an.node || ' anomaly ' || a.kind || coalesce(' on gpu ' || a.gpu, '')
    FROM attempt_nodes an
    JOIN anomalies a
        ON a.node = an.node
        AND (list_contains($hardware_anomaly_kinds, a.kind) OR list_contains($infrastructure_anomaly_kinds, a.kind))
        AND a.start_ts <= an.window_end AND (a.end_ts IS NULL OR a.end_ts >= an.window_start)
),
evidence AS (
    SELECT job_id, attempt,
        string_agg(DISTINCT signal, '; ' ORDER BY signal) FILTER (WHERE evidence = 'hardware') AS hardware_signal,
        string_agg(DISTINCT signal, '; ' ORDER BY signal) FILTER (WHERE evidence = 'infrastructure') AS infrastructure_signal,
        list(DISTINCT node ORDER BY node) FILTER (WHERE evidence = 'hardware') AS hardware_nodes,
        list(DISTINCT node ORDER BY node) FILTER (WHERE evidence = 'infrastructure') AS infrastructure_nodes,
        -- the most specific signal (XID, then anomaly, then node state), the latest of its rank
        arg_min(label, (label_rank, -epoch(ts), label)) FILTER (WHERE evidence = 'hardware') AS hardware_cause,
        arg_min(label, (label_rank, -epoch(ts), label)) FILTER (WHERE evidence = 'infrastructure') AS infrastructure_cause
    FROM signals
    GROUP BY job_id, attempt
),
classified AS (
    SELECT a.*, e.hardware_signal, e.infrastructure_signal,
        -- node_fail without positive evidence: the scheduler's word, on the nodes that went silent
        CASE WHEN e.hardware_nodes IS NULL AND a.state = 'node_fail' THEN e.infrastructure_nodes
             ELSE e.hardware_nodes END AS implicated_nodes,
        e.hardware_cause, e.infrastructure_cause,
        a.state = 'preempted' OR coalesce(a.reason ILIKE '%evict%', false) AS by_policy,
        CASE
            WHEN a.end_ts IS NULL OR a.state IN ('succeeded', 'running') THEN NULL
            WHEN a.state IN ('cancelled', 'oom', 'timeout') THEN 'user'
            WHEN by_policy THEN 'infrastructure'
            WHEN a.state = 'node_fail' OR e.hardware_signal IS NOT NULL THEN 'hardware'
            WHEN e.infrastructure_signal IS NOT NULL THEN 'infrastructure'
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
    failure_class IS NOT NULL AND state IN ('failed', 'node_fail') AND failure_class <> 'user'
        AND NOT by_policy AS fleet_failure,
    CASE
        WHEN failure_class IS NULL THEN NULL
        WHEN failure_class = 'user' THEN state
        WHEN by_policy THEN CASE WHEN state = 'preempted' THEN 'preempted' ELSE 'evicted' END
        WHEN failure_class = 'hardware' THEN coalesce(
            CASE WHEN hardware_cause LIKE 'XID %' THEN hardware_cause END,
            CASE WHEN state = 'node_fail' THEN 'node_fail' END,
            hardware_cause)
        WHEN failure_class = 'infrastructure' THEN infrastructure_cause
        WHEN failure_class = 'software' THEN 'failed (exit ' || exit_code || ')'
        ELSE state || coalesce(' (exit ' || exit_code || ')', '')
    END AS cause,
    CASE WHEN state = 'node_fail' THEN concat_ws('; ', 'node_fail reported by the scheduler', hardware_signal)
         ELSE hardware_signal END AS hardware_signal,
    infrastructure_signal,
    coalesce(implicated_nodes, CAST([] AS VARCHAR[])) AS implicated_nodes,
    num_gpus, duration_s, num_gpus * duration_s AS allocated_gpu_s
FROM classified
ORDER BY job_id, attempt
