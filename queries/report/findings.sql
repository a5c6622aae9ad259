-- report/findings: the week's findings that cost the most, worst first: anomalies overlapping the
-- week on nodes of $cluster ('*' = all), by goodput_lost_gpu_h (goodput lost by the attempts the
-- finding ended: wasted progress + recovery, GPU-hours), then impact_gpu_h (GPU-hours of jobs on the
-- entity while open). Only findings with a cost are listed, at most $limit.
-- Params: $week_start (DATE, a Monday), $cluster, $limit.
WITH week AS (
    SELECT $week_start::TIMESTAMPTZ AS start_ts, $week_start::TIMESTAMPTZ + INTERVAL 7 DAY AS end_ts
)
SELECT a.node, a.cluster, a.gpu, a.job_id, a.kind,
       CASE WHEN a.kind = 'xid' THEN json_extract_string(a.evidence, '$.xid') END AS xid,
       a.severity, a.action, a.start_ts, a.end_ts, a.goodput_lost_gpu_h, a.impact_gpu_h
FROM anomalies a, week w
WHERE a.start_ts < w.end_ts AND (a.end_ts IS NULL OR a.end_ts > w.start_ts)
  AND ($cluster = '*' OR a.cluster = $cluster)
  AND (a.goodput_lost_gpu_h > 0 OR a.impact_gpu_h > 0)
ORDER BY a.goodput_lost_gpu_h DESC, a.impact_gpu_h DESC, a.start_ts, a.anomaly_id
LIMIT $limit
