-- job_goodput: one row per job that started, aggregating goodput_segments.
--   wall_s       job end - first attempt start (recovery gaps included, queueing excluded), seconds.
--   productive_s, init_s, checkpoint_s, wasted_s, recovery_s, other_s: seconds per category;
--                they sum to wall_s exactly (DECIMAL, microsecond resolution).
--   allocated_gpu_s   sum over attempts of GPUs x attempt length (recovery gaps excluded), GPU-seconds.
--   productive_gpu_s  productive seconds x the attempt's GPUs, GPU-seconds.
--   straggler_drag_s  sum over every executed step of (slowest rank - median rank), on compute_s when
--                every rank logged it else step_s, seconds; NULL when the job logged no step timings.
--   goodput      productive_s / wall_s (ratio 0-1).
--   ettr         productive_s / (job end - submit), queueing included (ratio 0-1).
--   is_running   the job had not ended: its end is the data horizon and its numbers are provisional.
CREATE OR REPLACE TABLE job_goodput AS
WITH sums AS (
    SELECT
        job_id,
        sum(end_us - start_us) AS wall_us,
        sum(end_us - start_us) FILTER (WHERE category = 'productive') AS productive_us,
        sum(duration_s) FILTER (WHERE category = 'productive') AS productive_s,
        sum(duration_s) FILTER (WHERE category = 'init') AS init_s,
        sum(duration_s) FILTER (WHERE category = 'checkpoint') AS checkpoint_s,
        sum(duration_s) FILTER (WHERE category = 'wasted') AS wasted_s,
        sum(duration_s) FILTER (WHERE category = 'recovery') AS recovery_s,
        sum(duration_s) FILTER (WHERE category = 'other') AS other_s,
        sum(duration_s * gpus) AS allocated_gpu_s,
        sum(duration_s * gpus) FILTER (WHERE category = 'productive') AS productive_gpu_s
    FROM goodput_segments
    GROUP BY job_id
),
jobs_span AS (
    SELECT job_id, any_value(job_first_start_us) AS first_us, any_value(job_end_us) AS end_us,
           any_value(job_submit_us) AS submit_us, bool_or(is_running) AS is_running
    FROM goodput_attempts
    GROUP BY job_id
),
drag AS (
    SELECT job_id, sum(drag_s) AS straggler_drag_s FROM goodput_steps GROUP BY job_id
)
SELECT
    j.job_id,
    make_timestamp(j.first_us)::TIMESTAMPTZ AS first_start_ts,
    make_timestamp(j.end_us)::TIMESTAMPTZ AS end_ts,
    CAST(CAST(j.end_us - j.first_us AS DECIMAL(18, 0)) * 0.000001 AS DECIMAL(18, 6)) AS wall_s,
    coalesce(s.productive_s, 0)::DECIMAL(18, 6) AS productive_s,
    coalesce(s.init_s, 0)::DECIMAL(18, 6) AS init_s,
    coalesce(s.checkpoint_s, 0)::DECIMAL(18, 6) AS checkpoint_s,
    coalesce(s.wasted_s, 0)::DECIMAL(18, 6) AS wasted_s,
    coalesce(s.recovery_s, 0)::DECIMAL(18, 6) AS recovery_s,
    coalesce(s.other_s, 0)::DECIMAL(18, 6) AS other_s,
    coalesce(s.allocated_gpu_s, 0)::DECIMAL(18, 6) AS allocated_gpu_s,
    coalesce(s.productive_gpu_s, 0)::DECIMAL(18, 6) AS productive_gpu_s,
    d.straggler_drag_s::DECIMAL(18, 6) AS straggler_drag_s,
    CASE WHEN j.end_us > j.first_us
         THEN coalesce(s.productive_us, 0) / (j.end_us - j.first_us) END AS goodput,
    CASE WHEN j.end_us > j.submit_us
         THEN coalesce(s.productive_us, 0) / (j.end_us - j.submit_us) END AS ettr,
    j.is_running
FROM jobs_span j
LEFT JOIN sums s USING (job_id)
LEFT JOIN drag d USING (job_id)
ORDER BY j.job_id;
