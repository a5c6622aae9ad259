-- team_utilisation_weekly: per cluster, ISO week ('YYYY-Www', UTC), team and queue
-- (docs/metrics.md "Utilisation"). A window counts in the week it starts; a job's team and queue
-- come from `jobs` of the same cluster ('unknown' when the job has no row). cluster is the
-- window's (its sample's).
--   measured_gpu_h    allocated GPU-hours seen in telemetry (gpu_activity_windows with a job,
--                     MIG instances x gpu_share)
--   busy_gpu_h        activity x window x gpu_share over those windows
--   busy_share        busy_gpu_h / measured_gpu_h (0-1): the share of allocated capacity that worked
--   idle_gpu_h        measured GPU-hours of windows with activity below $util_idle_activity
--   jobs              distinct jobs
--   top_idle_jobs     up to 3 job ids with the most idle GPU-hours that week, most first
--
-- Kept between computes (pipelines/kept_rows.py), every cluster's rows in one table: a week's rows
-- depend on the windows that start that week and their jobs' records alone, so with $incremental
-- the weeks from $changed_from's on (the earliest window gpu_activity_windows changed)
-- and the weeks holding windows of a job whose record changed (job_weeks_changed,
-- queries/derived/job_records_changed.sql) are summed again; every other week stands. Without it
-- (other settings or code, `compute --force`) every week of the cluster is.
-- Params: $incremental, $changed_from, $util_idle_activity.
CREATE TABLE IF NOT EXISTS team_utilisation_weekly (
    cluster VARCHAR, week VARCHAR, team VARCHAR, queue VARCHAR, measured_gpu_h DOUBLE, busy_gpu_h DOUBLE,
    busy_share DOUBLE, idle_gpu_h DOUBLE, jobs BIGINT, top_idle_jobs VARCHAR[], week_start DATE
);

DELETE FROM team_utilisation_weekly
WHERE cluster = getvariable('pass_cluster')
  AND (NOT $incremental
       OR week_summed_again(epoch_us(week_start::TIMESTAMP), $changed_from::TIMESTAMPTZ));

INSERT INTO team_utilisation_weekly BY NAME
WITH windows AS (
    SELECT w.*,
           -- The week as a number: its name is formatted once per team, not on every window.
           iso_week_us(w.start_ts) AS week_us
    FROM gpu_activity_windows w
    WHERE w.cluster = getvariable('pass_cluster') AND w.job_id IS NOT NULL
      -- Read from the first week summed again on: a bound on start_ts itself, which reaches the
      -- scan (the week filter below, with its subquery, is applied only after the joins).
      AND (NOT $incremental OR w.start_ts >= first_week_summed_again($changed_from::TIMESTAMPTZ))
),
per_job AS (
    SELECT w.cluster,
           w.week_us,
           coalesce(j.team, 'unknown') AS team,
           coalesce(j.queue, 'unknown') AS queue,
           w.job_id,
           sum(w.window_s * w.gpu_share) / 3600.0 AS measured_gpu_h,
           sum(w.window_s * w.gpu_share * w.activity) / 3600.0 AS busy_gpu_h,
           coalesce(sum(w.window_s * w.gpu_share) FILTER (WHERE w.activity < $util_idle_activity), 0) / 3600.0
               AS idle_gpu_h
    FROM windows w
    LEFT JOIN jobs j ON j.cluster = w.cluster AND j.job_id = w.job_id
    WHERE NOT $incremental OR week_summed_again(w.week_us, $changed_from::TIMESTAMPTZ)
    GROUP BY ALL
)
SELECT
    cluster,
    strftime(make_timestamp(week_us), '%G-W%V') AS week,
    team,
    queue,
    sum(measured_gpu_h) AS measured_gpu_h,
    sum(busy_gpu_h) AS busy_gpu_h,
    sum(busy_gpu_h) / nullif(sum(measured_gpu_h), 0) AS busy_share,
    sum(idle_gpu_h) AS idle_gpu_h,
    count(*) AS jobs,
    list(job_id ORDER BY idle_gpu_h DESC, job_id) FILTER (WHERE idle_gpu_h > 0)[1:3] AS top_idle_jobs,
    CAST(strptime(week || '-1', '%G-W%V-%u') AS DATE) AS week_start
FROM per_job
GROUP BY cluster, week_us, team, queue
ORDER BY week, cluster, idle_gpu_h DESC, team, queue;
