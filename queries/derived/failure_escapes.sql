-- failure_escapes: did the checks see a fleet failure coming, or did a job discover it for us?
-- (docs/metrics.md "Failure escapes").
--
-- One row per fleet failure (attempt_outcomes.fleet_failure: state failed or node_fail, never user or
-- scheduler policy) of class 'hardware' or 'infrastructure' (by evidence).
-- Nodes looked at: the attempt's implicated_nodes (where its hardware evidence came from), or every
-- node of the attempt when none is named (a bare node_fail).
-- A signal on a node: a finding (anomalies row of severity warn or critical naming the node) or a
-- not-good condition (a merged run of `unavailable` node_state_intervals: a required condition in
-- its bad status, a cordon, missing GPUs), each over [start_ts, end_ts) (end NULL: still open).
-- outcome, first match wins:
--   placed_on_flagged     a signal was already open on one of the nodes when the attempt started
--                         (start <= attempt start < end): the scheduler put work on a flagged node
--   seen_before_failure   a signal opened after the attempt started and before it failed
--                         (attempt start < start < attempt end)
--   escaped               neither: the job found the failure before the checks did
-- first_signal_kind / first_signal_ts / node / gpu: the earliest such signal (anomaly kind, or
-- 'node_unavailable'); lead_time_s = attempt end - first_signal_ts (seconds; NULL when escaped).
-- late_signal_kind: for an escape, the first signal that opened on the nodes in
-- [attempt end, attempt end + $failure_after_s] (the check that saw it only after the job did).
-- detector = first_signal_kind, else late_signal_kind, else 'none' (nothing saw it).
-- lost_gpu_s: the attempt's wasted progress (goodput_segments 'wasted' x GPUs) plus the recovery gap
-- after it x num_gpus, GPU-seconds. late_remediation_gpu_s: lost_gpu_s of a failure the checks saw
-- coming (not escaped), 0 otherwise. week: ISO week of end_ts; cluster from attempt_clusters.
CREATE OR REPLACE TABLE failure_escapes AS
WITH
failures AS (
    SELECT a.job_id, a.attempt, a.start_ts, a.end_ts, a.state, a.failure_class, a.num_gpus,
        CASE WHEN len(a.implicated_nodes) > 0 THEN a.implicated_nodes ELSE a.nodes END AS looked_at
    FROM attempt_outcomes a
    WHERE a.end_ts IS NOT NULL AND a.start_ts IS NOT NULL
        AND a.fleet_failure
        AND a.failure_class IN ('hardware', 'infrastructure')
),
failure_nodes AS (
    SELECT job_id, attempt, start_ts, end_ts, unnest(looked_at) AS node
    FROM failures
),
unavailable_runs AS (
    -- Consecutive unavailable intervals (the reason may change) are one condition episode.
    SELECT node, start_ts, end_ts,
        sum(CASE WHEN prev_end = start_ts THEN 0 ELSE 1 END)
            OVER (PARTITION BY node ORDER BY start_ts ROWS UNBOUNDED PRECEDING) AS run
    FROM (SELECT node, start_ts, end_ts, lag(end_ts) OVER (PARTITION BY node ORDER BY start_ts) AS prev_end
          FROM node_state_intervals WHERE state = 'unavailable')
),
signals AS (
    SELECT node, gpu, kind AS signal_kind, start_ts, end_ts
    FROM anomalies
    WHERE node IS NOT NULL AND severity IN ('warn', 'critical')
    UNION ALL
    SELECT node, NULL::SMALLINT, 'node_unavailable', min(start_ts), max(end_ts)
    FROM unavailable_runs
    GROUP BY node, run
),
early AS (
    SELECT f.job_id, f.attempt, s.node, s.gpu, s.signal_kind, s.start_ts AS signal_ts,
        s.start_ts <= f.start_ts AS open_at_start
    FROM failure_nodes f
    JOIN signals s
        ON s.node = f.node AND s.start_ts < f.end_ts AND (s.end_ts IS NULL OR s.end_ts > f.start_ts)
),
early_by_attempt AS (
    SELECT job_id, attempt,
        bool_or(open_at_start) AS placed,
        arg_min(signal_kind, (signal_ts, signal_kind, node)) AS first_signal_kind,
        min(signal_ts) AS first_signal_ts,
        arg_min(node, (signal_ts, signal_kind, node)) AS node,
        arg_min(gpu, (signal_ts, signal_kind, node)) AS gpu
    FROM early
    GROUP BY job_id, attempt
),
late AS (
    SELECT f.job_id, f.attempt,
        arg_min(s.signal_kind, (s.start_ts, s.signal_kind, s.node)) AS late_signal_kind,
        arg_min(s.node, (s.start_ts, s.signal_kind, s.node)) AS node,
        arg_min(s.gpu, (s.start_ts, s.signal_kind, s.node)) AS gpu
    FROM failure_nodes f
    JOIN signals s
        ON s.node = f.node AND s.start_ts >= f.end_ts AND s.start_ts <= f.end_ts + to_seconds($failure_after_s)
    GROUP BY f.job_id, f.attempt
),
losses AS (
    SELECT s.job_id, s.attempt,
        sum((epoch(s.end_ts) - epoch(s.start_ts)) * s.gpus) FILTER (WHERE s.category = 'wasted') AS wasted_gpu_s,
        sum(epoch(s.end_ts) - epoch(s.start_ts)) FILTER (WHERE s.category = 'recovery') AS recovery_s
    FROM goodput_segments s
    JOIN failures f USING (job_id, attempt)
    GROUP BY s.job_id, s.attempt
),
classified AS (
    SELECT f.*,
        CASE WHEN e.placed THEN 'placed_on_flagged'
             WHEN e.first_signal_ts IS NOT NULL THEN 'seen_before_failure'
             ELSE 'escaped' END AS outcome,
        e.first_signal_kind, e.first_signal_ts, l.late_signal_kind,
        coalesce(e.node, l.node, f.looked_at[1]) AS node,
        CASE WHEN e.first_signal_ts IS NOT NULL THEN e.gpu ELSE l.gpu END AS gpu,
        coalesce(x.wasted_gpu_s, 0) + coalesce(x.recovery_s, 0) * f.num_gpus AS lost_gpu_s
    FROM failures f
    LEFT JOIN early_by_attempt e USING (job_id, attempt)
    LEFT JOIN late l USING (job_id, attempt)
    LEFT JOIN losses x USING (job_id, attempt)
)
SELECT strftime(c.end_ts, '%G-W%V') AS week, ac.cluster, c.job_id, c.attempt, c.start_ts, c.end_ts,
    c.state, c.failure_class, c.num_gpus, c.looked_at AS implicated_nodes, c.node, c.gpu, c.outcome,
    c.outcome = 'placed_on_flagged' AS placed_on_flagged,
    c.outcome = 'seen_before_failure' AS seen_before_failure,
    c.outcome = 'escaped' AS escaped,
    c.first_signal_kind, c.first_signal_ts,
    CASE WHEN c.first_signal_ts IS NOT NULL THEN epoch(c.end_ts) - epoch(c.first_signal_ts) END AS lead_time_s,
    c.late_signal_kind,
    coalesce(c.first_signal_kind, c.late_signal_kind, 'none') AS detector,
    c.lost_gpu_s,
    CASE WHEN c.outcome = 'escaped' THEN 0.0 ELSE c.lost_gpu_s END AS late_remediation_gpu_s
FROM classified c
LEFT JOIN attempt_clusters ac USING (job_id, attempt)
ORDER BY c.end_ts, c.job_id, c.attempt
