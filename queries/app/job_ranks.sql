-- Per-rank slowdown statistics of one job ($cluster, $job), stragglers first, then by median
-- ratio: median/p95 ratio to the step median, share of steps it was the slowest
-- (0-1), drag_s (seconds the job waited on it), nvidia-resiliency-ext's relative
-- score, the Mann-Whitney p-value, the verdict, and its host.
SELECT
    attempt, rank, node, gpu, steps, median_ratio, p95_ratio, slowest_share, drag_s,
    relative_score, p_value, is_straggler
FROM rank_slowdown
WHERE cluster = $cluster AND job_id = $job
ORDER BY is_straggler DESC, median_ratio DESC, attempt, rank
