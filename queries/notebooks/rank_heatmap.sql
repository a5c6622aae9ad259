-- notebooks/rank_heatmap: one attempt's rank x step slowdown ratios, for a heatmap.
-- ratio = the rank's step time / the step's median rank time, as rank_slowdown computes it
-- (compute_s when every rank of the step logged it, else step_s). Long runs are bucketed into at
-- most $max_buckets step buckets (mean ratio per bucket; `step` is the bucket's first step).
-- Params: $job_id, $attempt, $max_buckets.
WITH timed AS (
    SELECT step, rank, node, gpu,
           CASE WHEN bool_and(compute_s IS NOT NULL) OVER (PARTITION BY step)
                THEN compute_s ELSE step_s END AS time_s
    FROM rank_steps
    WHERE job_id = $job_id AND attempt = $attempt
),
ratios AS (
    SELECT step, rank, node, gpu,
           time_s / nullif(median(time_s) OVER (PARTITION BY step), 0) AS ratio
    FROM timed
),
width AS (
    SELECT min(step) AS first_step,
           greatest(1, ceil((max(step) - min(step) + 1) / $max_buckets))::BIGINT AS steps_per_bucket
    FROM timed
)
SELECT r.rank, any_value(r.node) AS node, any_value(r.gpu) AS gpu,
       w.first_step + (r.step - w.first_step) // w.steps_per_bucket * w.steps_per_bucket AS step,
       avg(r.ratio) AS ratio
FROM ratios r, width w
GROUP BY r.rank, w.first_step, w.steps_per_bucket, (r.step - w.first_step) // w.steps_per_bucket
ORDER BY r.rank, step
