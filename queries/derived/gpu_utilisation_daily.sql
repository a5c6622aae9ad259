-- gpu_utilisation_daily: per GPU (and MIG instance) and UTC day, from gpu_activity_windows
-- (a window counts on the day it starts). Hours are hours of the GPU or instance itself
-- (an instance-hour of a 3g.40gb is one hour of that instance, not 3/7 of a GPU-hour).
--   sampled_h           hours covered by activity samples
--   allocated_h         of those, hours a job held it (gpu_activity_windows.job_id not NULL)
--   busy_h              sum of activity x window: hours the graphics engine was active
--                       (GPU_UTIL / 100 where the profiling field is not scraped)
--   allocated_busy_h    busy_h while allocated
--   idle_allocated_h    allocated hours of windows with activity below $util_idle_activity
--   mean_activity       busy_h / sampled_h (0-1)
--   p95_activity        95th percentile of the windows' activity (unweighted: windows are one
--                       scrape interval each)
--   peak_memory_gib / mean_memory_gib   max and mean of DCGM_FI_DEV_FB_USED, GiB (MiB / 1024)
--   jobs                distinct jobs that held it that day
CREATE OR REPLACE TABLE gpu_utilisation_daily AS
SELECT
    cluster,
    node,
    gpu,
    gpu_i_id,
    any_value(gpu_i_profile) AS gpu_i_profile,
    CAST(timezone('UTC', start_ts) AS DATE) AS day,
    sum(window_s) / 3600.0 AS sampled_h,
    coalesce(sum(window_s) FILTER (WHERE job_id IS NOT NULL), 0) / 3600.0 AS allocated_h,
    sum(window_s * activity) / 3600.0 AS busy_h,
    coalesce(sum(window_s * activity) FILTER (WHERE job_id IS NOT NULL), 0) / 3600.0 AS allocated_busy_h,
    coalesce(sum(window_s) FILTER (WHERE job_id IS NOT NULL AND activity < $util_idle_activity), 0) / 3600.0
        AS idle_allocated_h,
    sum(window_s * activity) / sum(window_s) AS mean_activity,
    quantile_cont(activity, 0.95) AS p95_activity,
    max(fb_used_mib) / 1024.0 AS peak_memory_gib,
    avg(fb_used_mib) / 1024.0 AS mean_memory_gib,
    count(DISTINCT job_id) AS jobs
FROM gpu_activity_windows
GROUP BY cluster, node, gpu, gpu_i_id, day
ORDER BY cluster, node, gpu, gpu_i_id NULLS FIRST, day
