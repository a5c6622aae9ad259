-- gpu_activity_windows: one row per scrape window of a GPU or a MIG instance, with the job that
-- held it (docs/metrics.md "Utilisation"). The utilisation tables aggregate this one.
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
-- Whole-GPU fields come from `detect_gpu_scrapes`, the pass's rows of the kept per-scrape table
-- gpu_scrapes (queries/detect/gpu_scrapes.sql): a second pass over gpu_samples for three of its
-- fields cost more than everything else here.
--
-- Kept between computes (pipelines/activity_windows.py), every cluster's rows in one table; each
-- pass updates its cluster's. A row depends on its own sample, the next one of its GPU or
-- instance (the previous one for the last) and the assignments. So, with $incremental:
--   * new samples from $changed_from on (the 15-minute bucket of the earliest GPU or MIG sample
--     loaded since the last compute) change, per GPU or instance with samples or rows from then on
--     (`activity_scope`), the rows from its last sample before $changed_from on (that sample's
--     next one may be new); they are found again from its last two samples before it (the
--     second for the lag of a last sample), read from an hour before $changed_from and, for the
--     few without two there (a GPU silent for longer, or new), from all earlier samples;
--   * an assignment that differs from the last compute's (`previous_gpu_job_assignments`)
--     re-attributes the kept whole-GPU rows in the span where it differs (a running attempt's
--     end moving with the horizon: only the span between the old and new end).
-- Every other row stands. Without $incremental ($changed_from then before any sample) every row of
-- the cluster is deleted and built again; with no new samples $changed_from is after all of them.
-- Params: $incremental, $changed_from, $util_window_max_s; the temporary table
-- previous_gpu_job_assignments (empty when rebuilding).
CREATE TABLE IF NOT EXISTS gpu_activity_windows (
    cluster       VARCHAR,
    node          VARCHAR,
    gpu           SMALLINT,
    gpu_i_id      SMALLINT,
    gpu_i_profile VARCHAR,
    start_ts      TIMESTAMPTZ,
    window_s      DOUBLE,
    activity      DOUBLE,
    fb_used_mib   DOUBLE,
    gpu_share     DOUBLE,
    job_id        VARCHAR,
    attempt       INTEGER,
    mapped_by     VARCHAR
);

DELETE FROM gpu_activity_windows WHERE cluster = getvariable('pass_cluster') AND NOT $incremental;

-- Every activity sample of the pass's cluster, one per GPU or instance and instant.
CREATE OR REPLACE TEMP VIEW activity_source AS
WITH instance AS (
    SELECT cluster, node, gpu, gpu_i_id, ts,
           any_value(gpu_i_profile) AS gpu_i_profile,
           any_value(job_id) AS job_id,
           max(value) FILTER (WHERE metric = 'DCGM_FI_PROF_GR_ENGINE_ACTIVE') AS gr_active,
           max(value) FILTER (WHERE metric = 'DCGM_FI_DEV_GPU_UTIL') AS gpu_util,
           max(value) FILTER (WHERE metric = 'DCGM_FI_DEV_FB_USED') AS fb_used_mib
    FROM gpu_instance_samples
    WHERE metric IN ('DCGM_FI_PROF_GR_ENGINE_ACTIVE', 'DCGM_FI_DEV_GPU_UTIL', 'DCGM_FI_DEV_FB_USED')
    GROUP BY cluster, node, gpu, gpu_i_id, ts
)
SELECT getvariable('pass_cluster') AS cluster, d.node, d.gpu, NULL::SMALLINT AS gpu_i_id,
       NULL::VARCHAR AS gpu_i_profile, NULL::VARCHAR AS job_id, d.ts,
       coalesce(d.gr_active, d.util / 100.0) AS activity, d.fb_used_mib
FROM detect_gpu_scrapes d
WHERE coalesce(d.gr_active, d.util) IS NOT NULL
  AND NOT EXISTS (SELECT 1 FROM instance i
                  WHERE i.node = d.node AND i.gpu = d.gpu AND i.ts = d.ts)
UNION ALL
SELECT cluster, node, gpu, gpu_i_id, gpu_i_profile, job_id, ts, coalesce(gr_active, gpu_util / 100.0),
       fb_used_mib
FROM instance
WHERE coalesce(gr_active, gpu_util) IS NOT NULL;

-- The samples read: from an hour before the new ones.
CREATE OR REPLACE TEMP TABLE activity_read AS
FROM activity_source
WHERE ts >= $changed_from::TIMESTAMPTZ - INTERVAL 1 HOUR;

-- The GPUs and instances whose rows new samples can change, and their two samples before them.
CREATE OR REPLACE TEMP TABLE activity_scope AS
SELECT node, gpu, gpu_i_id,
       max(ts) FILTER (WHERE ts < $changed_from::TIMESTAMPTZ) AS last_before,
       count(*) FILTER (WHERE ts < $changed_from::TIMESTAMPTZ) AS read_before
FROM activity_read
GROUP BY node, gpu, gpu_i_id
HAVING max(ts) >= $changed_from::TIMESTAMPTZ
UNION ALL
SELECT DISTINCT node, gpu, gpu_i_id, NULL, 0
FROM gpu_activity_windows w
WHERE cluster = getvariable('pass_cluster') AND start_ts >= $changed_from::TIMESTAMPTZ
  AND NOT EXISTS (SELECT 1 FROM activity_read r
                  WHERE r.node = w.node AND r.gpu = w.gpu AND r.gpu_i_id IS NOT DISTINCT FROM w.gpu_i_id
                    AND r.ts >= $changed_from::TIMESTAMPTZ);

-- Those with fewer than two samples in the hour before: their last two from all earlier samples
-- (none to look for when every GPU reported; DuckDB then skips the scan).
INSERT INTO activity_read
SELECT s.*
FROM activity_source s
SEMI JOIN (FROM activity_scope WHERE read_before < 2) m
    ON m.node = s.node AND m.gpu = s.gpu AND m.gpu_i_id IS NOT DISTINCT FROM s.gpu_i_id
WHERE s.ts < $changed_from::TIMESTAMPTZ - INTERVAL 1 HOUR
QUALIFY row_number() OVER (PARTITION BY s.node, s.gpu, s.gpu_i_id ORDER BY s.ts DESC) <= 2;

-- Where each one's rows change: from its last sample before the new ones.
CREATE OR REPLACE TEMP TABLE activity_scope AS
SELECT c.node, c.gpu, c.gpu_i_id,
       coalesce(max(r.ts) FILTER (WHERE r.ts < $changed_from::TIMESTAMPTZ),
                $changed_from::TIMESTAMPTZ) AS rows_from
FROM (SELECT DISTINCT node, gpu, gpu_i_id FROM activity_scope) c
LEFT JOIN activity_read r
    ON r.node = c.node AND r.gpu = c.gpu AND r.gpu_i_id IS NOT DISTINCT FROM c.gpu_i_id
GROUP BY c.node, c.gpu, c.gpu_i_id;

-- The rows before $changed_from that are found again (a GPU's last one or two; none when every
-- row is built again). They usually come back as they were (a window keeps its length when the
-- next sample comes at the usual interval), and the tables summed from these rows then need not
-- sum again from before $changed_from (the week before, for the first hour of a week): kept as
-- they stand here, compared with what this view shows after the insert.
SET VARIABLE activity_compare_before = CASE WHEN $incremental THEN $changed_from::TIMESTAMPTZ END;

CREATE OR REPLACE TEMP VIEW activity_found_again AS
SELECT w.*
FROM gpu_activity_windows w
SEMI JOIN activity_scope c
    ON w.node = c.node AND w.gpu = c.gpu AND w.gpu_i_id IS NOT DISTINCT FROM c.gpu_i_id
   AND w.start_ts >= c.rows_from
WHERE w.cluster = getvariable('pass_cluster')
  AND w.start_ts >= (SELECT min(rows_from) FROM activity_scope)
  AND w.start_ts < getvariable('activity_compare_before');

CREATE OR REPLACE TEMP TABLE activity_removed AS FROM activity_found_again;

DELETE FROM gpu_activity_windows w
USING activity_scope c
WHERE w.cluster = getvariable('pass_cluster') AND w.node = c.node AND w.gpu = c.gpu
  AND w.gpu_i_id IS NOT DISTINCT FROM c.gpu_i_id AND w.start_ts >= c.rows_from
  AND w.start_ts >= (SELECT min(rows_from) FROM activity_scope);

-- Kept whole-GPU rows whose assignment changed: [lo_us, hi_us) per GPU where the last compute's
-- assignments and this one's differ.
CREATE OR REPLACE TEMP TABLE activity_reassigned AS
WITH now_held AS (
    FROM gpu_job_assignments WHERE cluster = getvariable('pass_cluster')
),
then_held AS (
    FROM previous_gpu_job_assignments WHERE cluster = getvariable('pass_cluster')
)
SELECT coalesce(n.node, t.node) AS node, coalesce(n.gpu, t.gpu) AS gpu,
       CASE WHEN n.node IS NOT NULL AND t.node IS NOT NULL THEN least(n.end_us, t.end_us)
            ELSE coalesce(n.start_us, t.start_us) END AS lo_us,
       CASE WHEN n.node IS NOT NULL AND t.node IS NOT NULL THEN greatest(n.end_us, t.end_us)
            ELSE coalesce(n.end_us, t.end_us) END AS hi_us
FROM now_held n
FULL JOIN then_held t
    ON t.job_id = n.job_id AND t.attempt = n.attempt AND t.node = n.node AND t.gpu = n.gpu
   AND t.start_us = n.start_us AND t.mapped_by = n.mapped_by
WHERE n.node IS NULL OR t.node IS NULL OR n.end_us <> t.end_us;

CREATE OR REPLACE TEMP TABLE activity_rejoin AS
SELECT DISTINCT w.*
FROM gpu_activity_windows w
SEMI JOIN activity_reassigned r
    ON r.node = w.node AND r.gpu = w.gpu AND r.lo_us <= epoch_us(w.start_ts) AND epoch_us(w.start_ts) < r.hi_us
WHERE w.cluster = getvariable('pass_cluster') AND w.gpu_i_id IS NULL
  AND w.start_ts >= (SELECT make_timestamp(min(lo_us))::TIMESTAMPTZ FROM activity_reassigned);

DELETE FROM gpu_activity_windows w
USING activity_rejoin r
WHERE w.cluster = getvariable('pass_cluster') AND w.gpu_i_id IS NULL AND w.node = r.node
  AND w.gpu = r.gpu AND w.start_ts = r.start_ts
  AND w.start_ts >= (SELECT min(start_ts) FROM activity_rejoin);

INSERT INTO activity_removed FROM activity_rejoin;

INSERT INTO gpu_activity_windows
SELECT r.* EXCLUDE (job_id, attempt, mapped_by), a.job_id, a.attempt, a.mapped_by
FROM activity_rejoin r
LEFT JOIN gpu_job_assignments a
    ON a.cluster = r.cluster AND a.node = r.node AND a.gpu = r.gpu
   AND a.start_us <= epoch_us(r.start_ts) AND epoch_us(r.start_ts) < a.end_us;

-- The changed rows, found again.
INSERT INTO gpu_activity_windows
WITH read AS (
    SELECT s.*, c.rows_from
    FROM activity_read s
    JOIN activity_scope c
        ON c.node = s.node AND c.gpu = s.gpu AND c.gpu_i_id IS NOT DISTINCT FROM s.gpu_i_id
),
windows AS (
    -- On integer microseconds: half the cost of interval arithmetic on TIMESTAMPTZ.
    SELECT *,
           least(coalesce(lead(epoch_us(ts)) OVER w - epoch_us(ts), epoch_us(ts) - lag(epoch_us(ts)) OVER w),
                 $util_window_max_s * 1000000::BIGINT) / 1e6 AS window_s
    FROM read
    WINDOW w AS (PARTITION BY node, gpu, gpu_i_id ORDER BY ts)
),
changed AS (
    FROM windows WHERE ts >= rows_from
),
assigned AS (
    SELECT w.*, a.job_id AS assigned_job, a.attempt, a.mapped_by
    FROM changed w
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
WHERE s.window_s > 0;

-- The same rows found again, and the rows re-attributed as they are now, to compare with those
-- removed (none to compare when every row was built again).
CREATE OR REPLACE TEMP TABLE activity_added AS
FROM activity_found_again
UNION ALL
SELECT w.*
FROM gpu_activity_windows w
SEMI JOIN activity_rejoin r
    ON w.node = r.node AND w.gpu = r.gpu AND w.start_ts = r.start_ts
WHERE $incremental AND w.cluster = getvariable('pass_cluster') AND w.gpu_i_id IS NULL
  AND w.start_ts >= (SELECT min(start_ts) FROM activity_rejoin);

-- Where the pass's rows changed, for the tables summed from them by day, week or job
-- (queries/derived/activity_windows_changed_from.sql): $changed_from when a GPU's rows from there
-- on were found again (they are taken as changed: comparing them would cost more than summing
-- them), else from the earliest row before it or re-attributed that did not come back as it was
-- (NULL: none); every row when they were all built again.
CREATE OR REPLACE TEMP TABLE activity_windows_changed AS
SELECT CASE WHEN $incremental
            THEN least((SELECT CASE WHEN count(*) > 0 THEN $changed_from::TIMESTAMPTZ END FROM activity_scope),
                       (SELECT min(start_ts) FROM (FROM activity_removed EXCEPT ALL FROM activity_added)),
                       (SELECT min(start_ts) FROM (FROM activity_added EXCEPT ALL FROM activity_removed)))
            ELSE $changed_from::TIMESTAMPTZ END AS from_ts;

DROP VIEW activity_source;
DROP VIEW activity_found_again;
RESET VARIABLE activity_compare_before;
DROP TABLE activity_read;
DROP TABLE activity_scope;
DROP TABLE activity_reassigned;
DROP TABLE activity_rejoin;
DROP TABLE activity_removed;
DROP TABLE activity_added;
