-- The week's fleet failures per detector (failure_escapes) for $week and $cluster ('*' = all):
-- catches (a signal of that kind was open before the failure), escapes (it opened only after;
-- 'none': nothing saw it), placed_on_flagged among the catches, the median lead time of the
-- catches in seconds, and late_remediation_gpu_h (GPU-hours the caught failures still lost).
SELECT detector,
       count(*) FILTER (WHERE NOT escaped) AS catches,
       count(*) FILTER (WHERE escaped) AS escapes,
       count(*) FILTER (WHERE placed_on_flagged) AS placed_on_flagged,
       median(lead_time_s) FILTER (WHERE NOT escaped) AS median_lead_time_s,
       sum(late_remediation_gpu_s) / 3600.0 AS late_remediation_gpu_h
FROM failure_escapes
WHERE week = $week
  AND ($cluster = '*' OR coalesce(cluster, '*') = $cluster)
GROUP BY detector
ORDER BY catches + escapes DESC, late_remediation_gpu_h DESC, detector
