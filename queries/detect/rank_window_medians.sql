-- Median step-time ratio of every rank of one attempt over the steps from `$from_step` on
-- (ratio = the rank's time / the median rank time of the step; compute_s when present, else
-- step_s). Used to confirm a straggler over the steps after its onset, against its peers.
WITH steps AS (
    SELECT rank, step,
           coalesce(compute_s, step_s)
               / nullif(median(coalesce(compute_s, step_s)) OVER (PARTITION BY step), 0) AS ratio
    FROM rank_steps
    WHERE job_id = $job_id AND attempt = $attempt AND step >= $from_step
)
SELECT rank, median(ratio) AS median_ratio, count(*) AS steps
FROM steps
GROUP BY rank
ORDER BY rank
