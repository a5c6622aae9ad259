-- Anomalies that overlap [$week_start, $week_end) (all time when $all_time), filtered
-- by $cluster, $severity, $kind, $node, $job ('*' = any; a node or job is
-- one of $cluster's, so a page for one names its cluster too) and $status:
-- 'open' = still open at the window's end (end_ts NULL or later), 'closed' =
-- ended inside it, '*' = both. Most severe first, then the most goodput lost, then newest.
-- impact_gpu_h = GPU-hours of jobs on the entity while it was open; goodput_lost_gpu_h = goodput
-- lost by the attempts the finding ended (wasted progress + recovery, GPU-hours).
SELECT
    a.anomaly_id,
    a.severity,
    a.kind,
    a.entity_type,
    a.node,
    a.cluster,
    a.gpu,
    a.job_id,
    a.rank,
    a.start_ts,
    a.end_ts,
    (a.end_ts IS NULL OR a.end_ts > $week_end) AS is_open,
    a.score,
    a.action,
    a.impact_gpu_h,
    a.goodput_lost_gpu_h,
    a.evidence
FROM anomalies a
WHERE ($all_time OR (a.start_ts < $week_end AND (a.end_ts IS NULL OR a.end_ts > $week_start)))
  AND ($cluster = '*' OR a.cluster = $cluster)
  AND ($severity = '*' OR a.severity = $severity)
  AND ($kind = '*' OR a.kind = $kind)
  AND ($node = '*' OR a.node = $node)
  AND ($job = '*' OR a.job_id = $job)
  AND ($status = '*'
       OR ($status = 'open' AND (a.end_ts IS NULL OR a.end_ts > $week_end))
       OR ($status = 'closed' AND a.end_ts IS NOT NULL AND a.end_ts <= $week_end))
ORDER BY
    CASE a.severity WHEN 'critical' THEN 0 WHEN 'warn' THEN 1 WHEN 'info' THEN 2 ELSE 3 END,
    a.goodput_lost_gpu_h DESC NULLS LAST,
    a.impact_gpu_h DESC NULLS LAST,
    a.start_ts DESC,
    a.anomaly_id
