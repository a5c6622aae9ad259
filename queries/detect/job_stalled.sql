-- Stalled jobs (hangs): a collective that never completes keeps every GPU of the job busy while
-- no step ends, until a watchdog kills it. One finding per stall, entity = the job:
--   a) attempts with step logs: the stalls of `job_stalls` (no step ended for max(`$det_stall_min_s`,
--      `$det_stall_step_multiple` x the median step interval), checkpoint time excluded);
--   b) attempts without step logs that hold whole nodes (num_gpus >= the GPUs of their nodes):
--      every GPU of every node of the attempt busy-but-idle at a scrape -- utilisation >=
--      `$det_stall_util_min` %, power <= `$det_stall_power_max_w` W, tensor activity <=
--      `$det_stall_activity_max` (when reported) -- over consecutive scrapes (at most two
--      intervals apart) spanning >= `$det_stall_telemetry_min_s`. Reads `detect_gpu_scrapes`.
-- Start: the stall's start; end: its end (NULL while the attempt still stalls at the horizon).
-- Detected when the rule first held (start + threshold). Score = stalled minutes.
-- Class `software`; evidence.cause = 'hardware' (with the kinds) when a hardware-class finding
-- already collected in `anomaly_candidates` (this detector runs last) holds on one of the attempt's
-- nodes within the job-failure window (`$failure_before_s` before .. `$failure_after_s` after the stall).
-- evidence.wasted_gpu_h = GPUs x stall hours when the attempt then failed (goodput: `wasted`).
WITH whole_node_attempts AS (
    SELECT a.job_id, a.attempt, a.start_ts, coalesce(a.end_ts, $horizon::TIMESTAMPTZ) AS end_ts,
           a.end_ts IS NULL AS is_open, a.state, a.nodes, len(a.nodes) AS node_count, j.num_gpus AS gpus
    FROM job_attempts a
    JOIN jobs j USING (job_id)
    WHERE len(a.nodes) > 0
      -- no logged step: read from the per-step summaries (one row per logged step of the pass's
      -- cluster, built before this step), not from every rank's row
      AND NOT EXISTS (
          SELECT 1 FROM rank_step_summaries r
          WHERE r.cluster = getvariable('pass_cluster') AND r.job_id = a.job_id AND r.attempt = a.attempt
      )
      AND j.num_gpus >= (SELECT sum(n.gpu_count) FROM nodes n WHERE list_contains(a.nodes, n.node))
),
busy_idle_nodes AS (
    -- (node, scrape) where every GPU of the node is busy-but-idle
    SELECT s.node, s.ts
    FROM detect_gpu_scrapes s
    WHERE s.util >= $det_stall_util_min AND s.power <= $det_stall_power_max_w
      AND coalesce(s.tensor_active, 0) <= $det_stall_activity_max
      AND s.node IN (SELECT unnest(nodes) FROM whole_node_attempts)
    GROUP BY s.node, s.ts
    HAVING count(*) >= (SELECT max(n.gpu_count) FROM nodes n WHERE n.node = s.node)
),
attempt_scrapes AS (
    SELECT w.job_id, w.attempt, b.ts
    FROM whole_node_attempts w
    JOIN busy_idle_nodes b ON list_contains(w.nodes, b.node) AND b.ts >= w.start_ts AND b.ts < w.end_ts
    GROUP BY w.job_id, w.attempt, w.node_count, b.ts
    HAVING count(*) = w.node_count
),
islands AS (
    SELECT job_id, attempt, ts,
           sum(CASE WHEN prev_ts IS NULL OR ts - prev_ts > to_seconds(2 * $det_sample_interval_s) THEN 1 ELSE 0 END)
               OVER (PARTITION BY job_id, attempt ORDER BY ts) AS island
    FROM (SELECT *, lag(ts) OVER (PARTITION BY job_id, attempt ORDER BY ts) AS prev_ts FROM attempt_scrapes)
),
telemetry_stalls AS (
    SELECT i.job_id, i.attempt, min(i.ts) AS start_ts,
           max(i.ts) + to_seconds($det_sample_interval_s) AS last_ts
    FROM islands i
    GROUP BY i.job_id, i.attempt, i.island
    HAVING max(i.ts) + to_seconds($det_sample_interval_s) - min(i.ts) >= to_seconds($det_stall_telemetry_min_s)
),
stalls AS (
    SELECT s.job_id, s.attempt, s.start_ts,
           CASE WHEN s.is_open THEN NULL ELSE s.end_ts END AS end_ts,
           s.start_ts + to_microseconds(CAST(s.threshold_s * 1e6 AS BIGINT)) AS detected_at,
           s.stalled_s, s.threshold_s, s.median_step_s, s.last_step, s.failed, s.gpus, 'step_logs' AS source,
           a.nodes, a.state
    FROM job_stalls s
    LEFT JOIN job_attempts a USING (job_id, attempt)
    UNION ALL
    SELECT t.job_id, t.attempt, t.start_ts,
           -- the stall holds while the busy-idle scrapes go on; to the attempt's end when they reach it
           CASE WHEN w.is_open AND t.last_ts >= w.end_ts THEN NULL
                WHEN w.end_ts - t.last_ts <= to_seconds(2 * $det_sample_interval_s) THEN w.end_ts
                ELSE t.last_ts END,
           t.start_ts + to_seconds($det_stall_telemetry_min_s),
           epoch(least(t.last_ts, w.end_ts) - t.start_ts), $det_stall_telemetry_min_s::DOUBLE, NULL::DOUBLE,
           NULL::BIGINT, NOT w.is_open AND w.state NOT IN ('succeeded', 'running'), w.gpus, 'gpu_telemetry',
           w.nodes, w.state
    FROM telemetry_stalls t
    JOIN whole_node_attempts w USING (job_id, attempt)
),
explained AS (
    SELECT s.job_id, s.attempt, s.start_ts, list(DISTINCT c.kind ORDER BY c.kind) AS kinds
    FROM stalls s
    JOIN anomaly_candidates c
      ON list_contains(s.nodes, c.node)
     AND c.kind IN (SELECT kind FROM read_csv($anomaly_kinds, header = true) WHERE class = 'hardware')
     AND c.start_ts <= coalesce(s.end_ts, $horizon::TIMESTAMPTZ) + to_seconds($failure_after_s)
     AND coalesce(c.end_ts, $horizon::TIMESTAMPTZ) >= s.start_ts - to_seconds($failure_before_s)
    GROUP BY ALL
)
SELECT 'job' AS entity_type, NULL::VARCHAR AS node, NULL::SMALLINT AS gpu, NULL::VARCHAR AS uuid,
       s.job_id, NULL::INTEGER AS rank, 'job_stalled' AS kind,
       s.start_ts, s.end_ts, s.detected_at,
       round(s.stalled_s / 60.0, 2) AS score,
       'warn' AS severity,
       json_object(
           'attempt', s.attempt,
           'source', s.source,
           'stalled_s', round(s.stalled_s, 1),
           'threshold_s', round(s.threshold_s, 1),
           'median_step_s', round(s.median_step_s, 3),
           'last_step', s.last_step,
           'attempt_state', s.state,
           'nodes', s.nodes,
           'cause', CASE WHEN e.kinds IS NULL THEN 'software' ELSE 'hardware' END,
           'hardware_findings', e.kinds,
           'wasted_gpu_h', CASE WHEN s.failed THEN round(s.stalled_s * s.gpus / 3600.0, 4) ELSE 0 END,
           'goodput_lost_gpu_h', CASE WHEN s.failed THEN round(s.stalled_s * s.gpus / 3600.0, 4) ELSE 0 END
       )::VARCHAR AS evidence,
       'watch' AS action
FROM stalls s
LEFT JOIN explained e USING (job_id, attempt, start_ts)
