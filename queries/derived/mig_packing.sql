-- mig_packing: workloads that hold whole GPUs but use a fraction of them, the smallest MIG profile
-- of their GPU model that fits, and the whole GPUs packing would free (docs/metrics.md "MIG packing").
-- One row per cluster, ISO week ('YYYY-Www', UTC), workload and GPU model.
--   workload          the job's name, else team/queue (`jobs`; 'unknown' parts when missing)
--   gpu_h             whole-GPU hours its jobs held, seen in telemetry (gpu_activity_windows with a
--                     job and no MIG instance)
--   p95_activity      95th percentile of those windows' activity (0-1)
--   peak_memory_gib   high-water mark of DCGM_FI_DEV_FB_USED, GiB
-- A workload is a candidate when p95_activity <= $util_packing_max_activity and its peak memory
-- is known (no memory telemetry: no advice). The profile is the one with the smallest gpu_share
-- (then fewest compute slices, then least memory) among mig_profiles of the node's gpu_model with
--   compute_slices / gpu_slices >= p95_activity x (1 + $util_packing_headroom)  and
--   memory_gb                   >= peak_memory_gib x (1 + $util_packing_headroom)
-- and gpu_share < 1 (a profile that takes a whole GPU frees nothing). Rows only for candidates
-- with such a profile.
--   packed_gpu_h      gpu_h x gpu_share: what the workload would hold packed on instances
--   freed_gpu_h       gpu_h - packed_gpu_h
--   gpus_freed        freed_gpu_h / 168: whole GPUs freed on average over the week
--
-- Kept between computes (pipelines/kept_rows.py), every cluster's rows in one table, by week as
-- team_utilisation_weekly is (the weeks from $changed_from's on and the weeks of jobs whose
-- records changed are built again). The profiles and the nodes' GPU models are part of the basis
-- (queries/derived/mig_packing_basis.sql): a change to either builds every week again.
-- Params: $incremental, $changed_from, $util_packing_max_activity, $util_packing_headroom.
CREATE TABLE IF NOT EXISTS mig_packing (
    cluster VARCHAR, week VARCHAR, workload VARCHAR, gpu_model VARCHAR, jobs BIGINT, job_ids VARCHAR[],
    gpu_h DOUBLE, p95_activity DOUBLE, peak_memory_gib DOUBLE, profile VARCHAR, gpu_share DOUBLE,
    packed_gpu_h DOUBLE, freed_gpu_h DOUBLE, gpus_freed DOUBLE, week_start DATE
);

DELETE FROM mig_packing
WHERE cluster = getvariable('pass_cluster')
  AND (NOT $incremental
       OR week_summed_again(epoch_us(week_start::TIMESTAMP), $changed_from::TIMESTAMPTZ));

INSERT INTO mig_packing BY NAME
WITH whole AS (
    SELECT w.cluster,
           -- The week as a number: its name is formatted once per workload, not on every window.
           iso_week_us(w.start_ts) AS week_us,
           coalesce(j.name, coalesce(j.team, 'unknown') || '/' || coalesce(j.queue, 'unknown')) AS workload,
           coalesce(n.gpu_model, 'unknown') AS gpu_model,
           w.job_id, w.window_s, w.activity, w.fb_used_mib
    FROM gpu_activity_windows w
    LEFT JOIN jobs j ON j.cluster = w.cluster AND j.job_id = w.job_id
    LEFT JOIN nodes n ON n.cluster = w.cluster AND n.node = w.node
    WHERE w.cluster = getvariable('pass_cluster') AND w.job_id IS NOT NULL AND w.gpu_i_id IS NULL
      -- Read from the first week summed again on: a bound on start_ts itself, which reaches the
      -- scan (the week filter below, with its subquery, is applied only after the joins).
      AND (NOT $incremental OR w.start_ts >= first_week_summed_again($changed_from::TIMESTAMPTZ))
),
to_sum AS (
    FROM whole
    WHERE NOT $incremental OR week_summed_again(week_us, $changed_from::TIMESTAMPTZ)
),
workloads AS (
    SELECT cluster, strftime(make_timestamp(week_us), '%G-W%V') AS week, workload, gpu_model,
           count(DISTINCT job_id) AS jobs,
           list(DISTINCT job_id ORDER BY job_id) AS job_ids,
           sum(window_s) / 3600.0 AS gpu_h,
           quantile_cont(activity, 0.95) AS p95_activity,
           max(fb_used_mib) / 1024.0 AS peak_memory_gib
    FROM to_sum
    GROUP BY cluster, week_us, workload, gpu_model
),
fits AS (
    SELECT w.*, p.profile, p.gpu_share
    FROM workloads w
    JOIN mig_profiles p ON regexp_matches(w.gpu_model, p.model_pattern)
    WHERE w.p95_activity <= $util_packing_max_activity
      AND w.peak_memory_gib IS NOT NULL
      AND p.compute_slices / p.gpu_slices >= w.p95_activity * (1 + $util_packing_headroom)
      AND p.memory_gb >= w.peak_memory_gib * (1 + $util_packing_headroom)
      AND p.gpu_share < 1
    QUALIFY row_number() OVER (PARTITION BY w.cluster, w.week, w.workload, w.gpu_model
                               ORDER BY p.gpu_share, p.compute_slices, p.memory_gb) = 1
)
SELECT
    cluster, week, workload, gpu_model, jobs, job_ids, gpu_h, p95_activity, peak_memory_gib,
    profile, gpu_share,
    gpu_h * gpu_share AS packed_gpu_h,
    gpu_h * (1 - gpu_share) AS freed_gpu_h,
    gpu_h * (1 - gpu_share) / 168.0 AS gpus_freed,
    CAST(strptime(week || '-1', '%G-W%V-%u') AS DATE) AS week_start
FROM fits
ORDER BY week, cluster, freed_gpu_h DESC, workload;
