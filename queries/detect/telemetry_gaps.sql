-- Telemetry gaps: a GPU that stops reporting DCGM samples for more than `$det_gap_s` seconds while
-- its node keeps reporting Ready=True (fail closed: a silent health check is not a healthy GPU).
-- A gap runs from the first missed scrape (last sample + `$det_sample_interval_s`) to the next
-- sample, or stays open (end NULL) when the GPU never reports again before the horizon `$horizon`.
-- Ready must have been sampled during the gap and been True every time (a node that went NotReady
-- or silent is an availability outage, not a telemetry gap).
-- When every GPU of the node is silent over overlapping gaps, it is the node's exporter: one
-- node-level finding replaces the per-GPU ones. Score = gap length in minutes.
WITH gaps AS (
    -- Consecutive scrapes (that reported any field) further apart than $det_gap_s, and each GPU's
    -- last scrape: the kept table of queries/derived/gpu_scrape_gaps.sql, the pass's cluster's rows.
    SELECT node, gpu, last_ts, next_ts
    FROM gpu_scrape_gaps
    WHERE coalesce(next_ts, $horizon::TIMESTAMPTZ) - last_ts > to_seconds($det_gap_s)
),
ready_during AS (
    SELECT g.node, g.gpu, g.last_ts, any_value(g.next_ts) AS next_ts,
           count(*) AS ready_samples, bool_and(c.status = 'True') AS always_ready
    FROM gaps g JOIN node_conditions c
      ON c.node = g.node AND c.condition = 'Ready'
     AND c.ts > g.last_ts AND c.ts < coalesce(g.next_ts, $horizon::TIMESTAMPTZ)
    GROUP BY g.node, g.gpu, g.last_ts
),
gpu_gaps AS (
    SELECT node, gpu, last_ts + to_seconds($det_sample_interval_s) AS start_ts, next_ts AS end_ts,
           last_ts, ready_samples
    FROM ready_during WHERE always_ready
),
-- Overlapping gaps of one node form a cluster; a cluster covering every GPU is the node's.
ordered AS (
    SELECT *, max(coalesce(end_ts, 'infinity'::TIMESTAMPTZ)) OVER (
                  PARTITION BY node ORDER BY start_ts, gpu
                  ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS reach
    FROM gpu_gaps
),
clustered AS (
    SELECT *, sum(CASE WHEN reach IS NULL OR reach <= start_ts THEN 1 ELSE 0 END)
                  OVER (PARTITION BY node ORDER BY start_ts, gpu) AS cluster_id
    FROM ordered
),
sized AS (
    SELECT c.*, n.gpu_count,
           count(DISTINCT c.gpu) OVER (PARTITION BY c.node, c.cluster_id) AS silent_gpus
    FROM clustered c JOIN nodes n USING (node)
),
findings AS (
    SELECT 'gpu' AS entity_type, node, gpu, start_ts, end_ts, last_ts, 1 AS silent_gpus, ready_samples
    FROM sized WHERE silent_gpus < gpu_count
    UNION ALL
    SELECT 'node', node, NULL, min(start_ts),
           CASE WHEN bool_or(end_ts IS NULL) THEN NULL ELSE max(end_ts) END,
           min(last_ts), any_value(silent_gpus), max(ready_samples)
    FROM sized WHERE silent_gpus >= gpu_count
    GROUP BY node, cluster_id
)
SELECT entity_type, node, gpu::SMALLINT AS gpu, NULL::VARCHAR AS uuid,
       NULL::VARCHAR AS job_id, NULL::INTEGER AS rank, 'telemetry_gap' AS kind,
       start_ts, end_ts,
       last_ts + to_seconds($det_gap_s) AS detected_at,
       epoch(coalesce(end_ts, $horizon::TIMESTAMPTZ) - start_ts) / 60.0 AS score,
       'warn' AS severity,
       json_object('last_sample', last_ts, 'silent_gpus', silent_gpus,
                   'ready_samples_during_gap', ready_samples)::VARCHAR AS evidence,
       'cordon' AS action
FROM findings
