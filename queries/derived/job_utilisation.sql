-- job_utilisation: per job, how much of what it held it used (docs/metrics.md "Utilisation").
-- GPU-hours are whole-GPU hours: a MIG instance's hours count x gpu_share (3g.40gb: 3/7).
--   allocated_gpu_h   the scheduler's: sum over attempts of GPUs x attempt length (goodput_attempts)
--   measured_gpu_h    hours of telemetry windows on GPUs / instances mapped to the job
--                     (gpu_activity_windows; how they are mapped: mapped_by)
--   busy_gpu_h        sum of activity x window x gpu_share
--   mean_activity     busy_gpu_h / measured_gpu_h (0-1); NULL without telemetry
--   p95_activity      95th percentile of the job's windows' activity
--   peak_memory_gib   high-water mark of DCGM_FI_DEV_FB_USED on any of its GPUs / instances, GiB
--   idle_gpu_h        measured GPU-hours of windows with activity below $util_idle_activity
--   gpus_mapped       distinct GPUs and instances it held (node, gpu, instance)
--   gpus_used         of those, how many had at least one window at or above $util_idle_activity
--   mapped_by         how its GPUs were found: labels, rank_steps, whole_node (comma separated)
--   on_mig            it ran on MIG instances
-- Jobs without any mapped telemetry have measured_gpu_h 0 and NULL activity. A job that only
-- dcgm-exporter's labels name (an inference pod with no `jobs` row) has a row with NULL name,
-- team and queue and allocated_gpu_h 0.
-- One row per (cluster, job_id): the job's own cluster (jobs.cluster), or for a job that only
-- labels name, the cluster of its windows. Every join is on (cluster, job_id); goodput_attempts
-- holds one cluster's attempts (compute runs once per cluster) and takes its job's cluster.
CREATE OR REPLACE TABLE job_utilisation AS
WITH allocated AS (
    SELECT j.cluster, g.job_id, sum(g.gpus * (g.end_us - g.start_us)) / 3.6e9 AS allocated_gpu_h
    FROM goodput_attempts g
    JOIN jobs j ON j.job_id = g.job_id
    GROUP BY j.cluster, g.job_id
),
used AS (
    -- The telemetry half, kept per job between computes (queries/derived/job_activity.sql).
    SELECT * FROM job_activity WHERE cluster = getvariable('pass_cluster')
)
SELECT
    ids.cluster,
    ids.job_id,
    j.name,
    j.team,
    j.queue,
    j.num_gpus,
    coalesce(a.allocated_gpu_h, 0) AS allocated_gpu_h,
    coalesce(u.measured_gpu_h, 0) AS measured_gpu_h,
    coalesce(u.busy_gpu_h, 0) AS busy_gpu_h,
    u.busy_gpu_h / nullif(u.measured_gpu_h, 0) AS mean_activity,
    u.p95_activity,
    u.peak_memory_gib,
    coalesce(u.idle_gpu_h, 0) AS idle_gpu_h,
    coalesce(u.gpus_mapped, 0) AS gpus_mapped,
    coalesce(u.gpus_used, 0) AS gpus_used,
    u.mapped_by,
    coalesce(u.on_mig, false) AS on_mig
FROM (SELECT cluster, job_id FROM jobs UNION SELECT cluster, job_id FROM used) ids
LEFT JOIN jobs j USING (cluster, job_id)
LEFT JOIN allocated a USING (cluster, job_id)
LEFT JOIN used u USING (cluster, job_id)
ORDER BY idle_gpu_h DESC, ids.cluster, ids.job_id
