-- Slowdown ratio per rank and step of one attempt ($cluster, $job, $attempt): the rank's
-- time (compute_s when logged, else step_s) / the step's median rank time. Steps
-- are averaged in buckets of ceil(steps / $max_columns) so a long job stays at most
-- $max_columns columns wide; step_bucket = the first step of the bucket.
WITH timed AS (
    SELECT step, rank, coalesce(compute_s, step_s) AS t
    FROM rank_steps
    WHERE cluster = $cluster AND job_id = $job AND attempt = $attempt
),
ratios AS (
    SELECT step, rank, t / nullif(median(t) OVER (PARTITION BY step), 0) AS ratio
    FROM timed
),
width AS (
    SELECT greatest(1, CAST(ceil((max(step) - min(step) + 1) / $max_columns) AS BIGINT)) AS w,
           min(step) AS first_step
    FROM timed
)
SELECT
    rank,
    first_step + (step - first_step) // w * w AS step_bucket,
    avg(ratio) AS ratio
FROM ratios, width
GROUP BY rank, step_bucket
ORDER BY rank, step_bucket
