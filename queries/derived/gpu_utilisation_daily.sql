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
--
-- Kept between computes (pipelines/kept_rows.py), every cluster's rows in one table: a day's row
-- depends on the windows that start that day alone, so with $incremental the days from
-- $changed_from's on (the earliest window of the pass that gpu_activity_windows changed,
-- queries/derived/activity_windows_changed_from.sql) are summed again and every earlier day
-- stands. Without it (other settings or code, `compute --force`) every day of the cluster is.
-- Params: $incremental, $changed_from, $util_idle_activity.
CREATE TABLE IF NOT EXISTS gpu_utilisation_daily (
    cluster          VARCHAR,
    node             VARCHAR,
    gpu              SMALLINT,
    gpu_i_id         SMALLINT,
    gpu_i_profile    VARCHAR,
    day              DATE,
    sampled_h        DOUBLE,
    allocated_h      DOUBLE,
    busy_h           DOUBLE,
    allocated_busy_h DOUBLE,
    idle_allocated_h DOUBLE,
    mean_activity    DOUBLE,
    p95_activity     DOUBLE,
    peak_memory_gib  DOUBLE,
    mean_memory_gib  DOUBLE,
    jobs             BIGINT
);

DELETE FROM gpu_utilisation_daily
WHERE cluster = getvariable('pass_cluster')
  AND (NOT $incremental OR day >= CAST($changed_from::TIMESTAMPTZ AT TIME ZONE 'UTC' AS DATE));

INSERT INTO gpu_utilisation_daily
SELECT
    cluster,
    node,
    gpu,
    gpu_i_id,
    any_value(gpu_i_profile) AS gpu_i_profile,
    -- The UTC day by integer arithmetic: timezone() on every row cost more than the sums.
    DATE '1970-01-01' + CAST(epoch_us(start_ts) // 86400000000 AS INTEGER) AS day,
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
WHERE cluster = getvariable('pass_cluster')
  -- from the UTC midnight at or before $changed_from
  AND start_ts >= make_timestamptz(epoch_us($changed_from::TIMESTAMPTZ) // 86400000000 * 86400000000)
GROUP BY cluster, node, gpu, gpu_i_id, day
ORDER BY cluster, node, gpu, gpu_i_id NULLS FIRST, day;
