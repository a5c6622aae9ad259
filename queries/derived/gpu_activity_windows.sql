-- gpu_activity_windows: one row per scrape window of a GPU or a MIG instance, with the job
-- that held it (docs/metrics.md "Utilisation"). The utilisation tables aggregate this one.
--   activity     DCGM_FI_PROF_GR_ENGINE_ACTIVE (0-1: share of the window the graphics engine was
--                busy), else DCGM_FI_DEV_GPU_UTIL / 100, of the sample at start_ts
--   window_s     seconds to the next sample of the same GPU or instance (the last sample: from
--                the previous one), at most $util_window_max_s: a longer gap is missing telemetry
--   fb_used_mib  DCGM_FI_DEV_FB_USED at start_ts (MiB), NULL when not scraped
--   gpu_i_id, gpu_i_profile   the MIG instance (NULL: the whole GPU)
--   gpu_share    the share of a GPU the row stands for: 1 for a whole GPU, compute slices / 7 for
--                a MIG instance (the number before `g` in its profile: 3g.40gb -> 3/7)
--   job_id, attempt, mapped_by   who held it: a MIG instance by dcgm-exporter's labels
--                (gpu_instance_samples.job_id; attempt NULL; mapped_by 'labels'); a whole GPU by
--                gpu_job_assignments ('rank_steps' / 'whole_node'); NULL when no job is known
-- Whole-GPU samples of a GPU at an instant its MIG instances report are left out (a MIG-mode GPU
-- reports activity per instance), so no GPU-second counts twice.
-- cluster is the sample's; every join is on (cluster, node, ...), so a node name repeated in
-- another cluster is another GPU.
-- Whole-GPU fields come from `detect_gpu_scrapes`, the temporary per-scrape table the compute step
-- `gpu_scrapes` builds for the detectors (queries/detect/gpu_scrapes.sql): a second pass over
-- gpu_samples for three of its fields cost more than everything else here. It holds one cluster's
-- scrapes (compute runs its steps once per cluster), so its rows take that cluster.
CREATE OR REPLACE TABLE gpu_activity_windows AS
WITH this_pass AS (
    SELECT cluster FROM gpu_scrapes LIMIT 1
),
device AS (
    SELECT p.cluster, s.node, s.gpu, s.ts, s.gr_active, s.util AS gpu_util, s.fb_used_mib
    FROM detect_gpu_scrapes s CROSS JOIN this_pass p
),
instance AS (
    SELECT cluster, node, gpu, gpu_i_id, ts,
           any_value(gpu_i_profile) AS gpu_i_profile,
           any_value(job_id) AS job_id,
           max(value) FILTER (WHERE metric = 'DCGM_FI_PROF_GR_ENGINE_ACTIVE') AS gr_active,
           max(value) FILTER (WHERE metric = 'DCGM_FI_DEV_GPU_UTIL') AS gpu_util,
           max(value) FILTER (WHERE metric = 'DCGM_FI_DEV_FB_USED') AS fb_used_mib
    FROM gpu_instance_samples
    WHERE metric IN ('DCGM_FI_PROF_GR_ENGINE_ACTIVE', 'DCGM_FI_DEV_GPU_UTIL', 'DCGM_FI_DEV_FB_USED')
    GROUP BY cluster, node, gpu, gpu_i_id, ts
),
samples AS (
    SELECT d.cluster, d.node, d.gpu, NULL::SMALLINT AS gpu_i_id, NULL::VARCHAR AS gpu_i_profile, NULL::VARCHAR AS job_id,
           d.ts, coalesce(d.gr_active, d.gpu_util / 100.0) AS activity, d.fb_used_mib
    FROM device d
    WHERE coalesce(d.gr_active, d.gpu_util) IS NOT NULL
      AND NOT EXISTS (SELECT 1 FROM instance i
                      WHERE i.cluster = d.cluster AND i.node = d.node AND i.gpu = d.gpu AND i.ts = d.ts)
    UNION ALL
    SELECT cluster, node, gpu, gpu_i_id, gpu_i_profile, job_id, ts, coalesce(gr_active, gpu_util / 100.0), fb_used_mib
    FROM instance
    WHERE coalesce(gr_active, gpu_util) IS NOT NULL
),
windows AS (
    -- On integer microseconds: half the cost of interval arithmetic on TIMESTAMPTZ.
    SELECT *,
           least(coalesce(lead(epoch_us(ts)) OVER w - epoch_us(ts), epoch_us(ts) - lag(epoch_us(ts)) OVER w),
                 $util_window_max_s * 1000000::BIGINT) / 1e6 AS window_s
    FROM samples
    WINDOW w AS (PARTITION BY cluster, node, gpu, gpu_i_id ORDER BY ts)
),
assigned AS (
    SELECT w.*, a.job_id AS assigned_job, a.attempt, a.mapped_by
    FROM windows w
    LEFT JOIN gpu_job_assignments a
        ON w.gpu_i_id IS NULL AND a.cluster = w.cluster AND a.node = w.node AND a.gpu = w.gpu
       AND a.start_us <= epoch_us(w.ts) AND epoch_us(w.ts) < a.end_us
)
SELECT
    s.cluster,
    s.node,
    s.gpu,
    s.gpu_i_id,
    s.gpu_i_profile,
    s.ts AS start_ts,
    s.window_s,
    s.activity,
    s.fb_used_mib,
    CASE WHEN s.gpu_i_id IS NULL THEN 1.0
         ELSE coalesce(TRY_CAST(regexp_extract(s.gpu_i_profile, '^(\d+)g', 1) AS INTEGER) / 7.0, 1.0) END AS gpu_share,
    coalesce(s.job_id, s.assigned_job) AS job_id,
    s.attempt,
    CASE WHEN s.job_id IS NOT NULL THEN 'labels' ELSE s.mapped_by END AS mapped_by
FROM assigned s
WHERE s.window_s > 0
