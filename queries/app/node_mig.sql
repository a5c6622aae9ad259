-- Node page ($cluster, $node): the node's MIG-partitioned GPUs in the week [$week_start, $week_end), from
-- gpu_utilisation_daily: per GPU, its instances as `id:profile` (by id) and their mean activity.
WITH instances AS (
    SELECT gpu, gpu_i_id, any_value(gpu_i_profile) AS gpu_i_profile, sum(busy_h) AS busy_h, sum(sampled_h) AS sampled_h
    FROM gpu_utilisation_daily
    WHERE cluster = $cluster AND node = $node AND gpu_i_id IS NOT NULL
      AND day >= CAST(timezone('UTC', $week_start) AS DATE) AND day < CAST(timezone('UTC', $week_end) AS DATE)
    GROUP BY gpu, gpu_i_id
)
SELECT gpu,
       list(gpu_i_id::VARCHAR || ':' || coalesce(gpu_i_profile, '?') ORDER BY gpu_i_id) AS instances,
       sum(busy_h) / nullif(sum(sampled_h), 0) AS mean_activity
FROM instances
GROUP BY gpu
ORDER BY gpu
