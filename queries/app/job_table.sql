-- Jobs that ended in [$week_start, $week_end) or were still running at its end,
-- for $cluster ('*' = all; a job belongs to the cluster it was landed in, as in the weekly
-- summary) and $outcome ('*' = all, 'failed' =
-- eligible and not succeeded, else a final state). goodput and ettr are 0-1 ratios (job_goodput), gpu_hours =
-- sum over attempts of GPUs x attempt length / 3600; straggler_ranks = ranks with
-- a straggler verdict in any attempt.
WITH stragglers AS (
    SELECT cluster, job_id, count(DISTINCT rank) FILTER (WHERE is_straggler) AS straggler_ranks
    FROM rank_slowdown
    GROUP BY cluster, job_id
)
SELECT
    o.job_id,
    j.name,
    j."user",
    j.team,
    o.cluster,
    o.final_state,
    o.failure_class,
    o.crash_loop,
    o.attempts,
    o.num_gpus,
    CAST(o.gpu_hours AS DOUBLE) AS gpu_hours,
    CAST(g.goodput AS DOUBLE) AS goodput,
    CAST(g.ettr AS DOUBLE) AS ettr,
    coalesce(s.straggler_ranks, 0) AS straggler_ranks,
    j.start_ts,
    o.end_ts
FROM job_outcomes o
LEFT JOIN jobs j USING (cluster, job_id)
LEFT JOIN job_goodput g USING (cluster, job_id)
LEFT JOIN stragglers s USING (cluster, job_id)
WHERE ((o.end_ts >= $week_start AND o.end_ts < $week_end)
       OR (o.end_ts IS NULL AND j.start_ts < $week_end))
  AND ($cluster = '*' OR o.cluster = $cluster)
  AND ($outcome = '*'
       OR ($outcome = 'failed' AND o.eligible AND NOT o.succeeded)
       OR o.final_state = $outcome)
ORDER BY o.gpu_hours DESC NULLS LAST, o.job_id, o.cluster
