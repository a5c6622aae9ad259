-- The weekly KPIs of $week and of the week before ($prev_week) for one cluster
-- ($cluster; '*' = all clusters, stored in weekly_summary as cluster '*' or NULL).
-- Ratios are 0-1 (from summed numerators and denominators), mtbf_h/mttr_h hours,
-- interruptions per 1,000 GPU-days allocated, *_failures counts of failed attempts.
SELECT *
FROM weekly_summary
WHERE week IN ($week, $prev_week)
  AND coalesce(cluster, '*') = $cluster
ORDER BY week
