-- job_activity: per (cluster, job_id), what the job's activity windows add up to: the telemetry
-- half of job_utilisation (docs/metrics.md "Utilisation"; the columns are defined there).
--   last_start_ts     the start of the job's latest window
--
-- Kept between computes (pipelines/kept_rows.py), every cluster's rows in one table. A job's row
-- depends on its windows alone, and the windows that start before $changed_from (the earliest
-- window gpu_activity_windows changed this compute) are unchanged; so with $incremental
-- the jobs with a window from $changed_from on, now or in their kept row, are summed again from
-- all their windows, and every other job's row stands. Without it (other settings or code,
-- `compute --force`) every job of the cluster is.
-- Params: $incremental, $changed_from, $util_idle_activity.
CREATE TABLE IF NOT EXISTS job_activity (
    cluster         VARCHAR,
    job_id          VARCHAR,
    measured_gpu_h  DOUBLE,
    busy_gpu_h      DOUBLE,
    p95_activity    DOUBLE,
    peak_memory_gib DOUBLE,
    idle_gpu_h      DOUBLE,
    gpus_mapped     BIGINT,
    gpus_used       BIGINT,
    mapped_by       VARCHAR,
    on_mig          BOOLEAN,
    last_start_ts   TIMESTAMPTZ
);

CREATE OR REPLACE TEMP TABLE job_activity_to_sum AS
SELECT job_id FROM gpu_activity_windows
WHERE cluster = getvariable('pass_cluster') AND job_id IS NOT NULL AND start_ts >= $changed_from
UNION
SELECT job_id FROM job_activity
WHERE cluster = getvariable('pass_cluster') AND last_start_ts >= $changed_from;

DELETE FROM job_activity
WHERE cluster = getvariable('pass_cluster')
  AND (NOT $incremental OR job_id IN (SELECT job_id FROM job_activity_to_sum));

INSERT INTO job_activity BY NAME
SELECT cluster, job_id,
       sum(window_s * gpu_share) / 3600.0 AS measured_gpu_h,
       sum(window_s * gpu_share * activity) / 3600.0 AS busy_gpu_h,
       quantile_cont(activity, 0.95) AS p95_activity,
       max(fb_used_mib) / 1024.0 AS peak_memory_gib,
       coalesce(sum(window_s * gpu_share) FILTER (WHERE activity < $util_idle_activity), 0) / 3600.0 AS idle_gpu_h,
       count(DISTINCT (node, gpu, gpu_i_id)) AS gpus_mapped,
       count(DISTINCT (node, gpu, gpu_i_id)) FILTER (WHERE activity >= $util_idle_activity) AS gpus_used,
       string_agg(DISTINCT mapped_by, ',' ORDER BY mapped_by) AS mapped_by,
       bool_or(gpu_i_id IS NOT NULL) AS on_mig,
       max(start_ts) AS last_start_ts
FROM gpu_activity_windows
WHERE cluster = getvariable('pass_cluster') AND job_id IS NOT NULL
  AND (NOT $incremental OR job_id IN (SELECT job_id FROM job_activity_to_sum))
GROUP BY cluster, job_id
ORDER BY cluster, job_id;

DROP TABLE temp.main.job_activity_to_sum;
