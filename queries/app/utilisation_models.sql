-- Utilisation page: per GPU model, the week's hours from gpu_utilisation_daily (the days of
-- [$week_start, $week_end)). Whole GPUs and MIG instances apart: instance hours are hours of the
-- instance. busy_share = allocated busy hours / allocated hours.
SELECT coalesce(n.gpu_model, 'unknown') AS gpu_model,
       d.gpu_i_id IS NOT NULL AS mig_instance,
       count(DISTINCT (d.cluster, d.node, d.gpu, d.gpu_i_id)) AS devices,
       sum(d.sampled_h) AS sampled_h,
       sum(d.allocated_h) AS allocated_h,
       sum(d.allocated_busy_h) / nullif(sum(d.allocated_h), 0) AS busy_share,
       sum(d.idle_allocated_h) AS idle_allocated_h,
       sum(d.allocated_h) / nullif(sum(d.sampled_h), 0) AS allocated_share,
       max(d.peak_memory_gib) AS peak_memory_gib
FROM gpu_utilisation_daily d
LEFT JOIN nodes n ON n.cluster = d.cluster AND n.node = d.node
WHERE d.day >= CAST(timezone('UTC', $week_start) AS DATE) AND d.day < CAST(timezone('UTC', $week_end) AS DATE)
  AND ($cluster = '*' OR d.cluster = $cluster)
GROUP BY ALL
ORDER BY gpu_model, mig_instance
