-- report/top_nodes: the nodes that lost the most GPU-hours in a week, worst first.
-- down_gpu_h = (unavailable + unknown) seconds x the node's GPUs / 3600: unknown counts as lost
-- (fail closed), shown apart so telemetry gaps stay visible. Only nodes that lost time are listed.
-- availability = (available + degraded) / (in fleet - maintenance) over the week.
-- failed_attempts: attempts that ended in the week and implicate the node (attempt_outcomes).
-- xid_events / xid_codes: XIDs on the node in the week (one per XID across sources,
-- queries/metrics/xid_events.sql). top_reason: the reason of the
-- unavailable|unknown intervals that cover most of the node's lost time in the week.
-- Params: $week_start (DATE, a Monday), $cluster ('*' = all), $limit.
WITH
week AS (
    SELECT $week_start::TIMESTAMPTZ AS start_ts, $week_start::TIMESTAMPTZ + INTERVAL 7 DAY AS end_ts
),
lost AS (
    SELECT d.node, d.cluster,
           sum(d.unavailable_s) AS unavailable_s,
           sum(d.unknown_s) AS unknown_s,
           sum(d.available_s + d.degraded_s) / nullif(sum(d.in_fleet_s - d.maintenance_s), 0)
               AS availability
    FROM node_availability_daily d, week w
    WHERE d.day >= w.start_ts AND d.day < w.end_ts
      AND ($cluster = '*' OR d.cluster = $cluster)
    GROUP BY ALL
),
failed AS (
    SELECT a.cluster, u.node, count(*) AS failed_attempts
    FROM attempt_outcomes a CROSS JOIN unnest(a.implicated_nodes) AS u(node), week w
    WHERE a.end_ts >= w.start_ts AND a.end_ts < w.end_ts AND a.fleet_failure
    GROUP BY ALL
),
xids AS (
    SELECT e.cluster, e.node, count(*) AS xid_events, list(DISTINCT e.code ORDER BY e.code) AS xid_codes
    FROM {{ metrics/xid_events }} e, week w
    WHERE e.ts >= w.start_ts AND e.ts < w.end_ts
    GROUP BY ALL
),
reason_seconds AS (
    SELECT i.cluster, i.node, coalesce(i.reason, i.state) AS reason,
           sum(epoch(least(i.end_ts, w.end_ts) - greatest(i.start_ts, w.start_ts))) AS seconds
    FROM node_state_intervals i, week w
    WHERE i.state IN ('unavailable', 'unknown')
      AND i.start_ts < w.end_ts AND i.end_ts > w.start_ts
    GROUP BY ALL
),
reasons AS (
    SELECT cluster, node, first(reason ORDER BY seconds DESC, reason) AS top_reason
    FROM reason_seconds
    GROUP BY ALL
)
SELECT l.node, l.cluster, n.gpu_model, n.gpu_count,
       (l.unavailable_s + l.unknown_s) * n.gpu_count / 3600.0 AS down_gpu_h,
       l.unavailable_s * n.gpu_count / 3600.0 AS unavailable_gpu_h,
       l.unknown_s * n.gpu_count / 3600.0 AS unknown_gpu_h,
       l.availability,
       coalesce(f.failed_attempts, 0) AS failed_attempts,
       coalesce(x.xid_events, 0) AS xid_events,
       coalesce(x.xid_codes, []) AS xid_codes,
       r.top_reason
FROM lost l
JOIN nodes n USING (cluster, node)
LEFT JOIN failed f USING (cluster, node)
LEFT JOIN xids x USING (cluster, node)
LEFT JOIN reasons r USING (cluster, node)
WHERE l.unavailable_s + l.unknown_s > 0
ORDER BY down_gpu_h DESC, l.node, l.cluster
LIMIT $limit
