-- The fleet's failed attempts that ended in [$week_start, $week_end) for $cluster ('*' = all),
-- by failure class and cause, most frequent first: attempts (count) and the GPU-hours they held
-- (num_gpus x attempt length / 3600). Fleet failures only (attempt_outcomes.fleet_failure): user
-- (cancelled, timeout, oom) and scheduler policy (preempted, evicted) are never fleet failures, see
-- queries/app/not_failures.sql. cause = attempt_outcomes.cause, the one rule the weekly report's
-- Pareto (queries/report/failures.sql) reads too.
-- cum_share = running share of all fleet-failure attempts (0-1), for the Pareto line.
WITH failed AS (
    SELECT o.failure_class, o.cause,
        o.num_gpus * epoch(o.end_ts - o.start_ts) / 3600 AS gpu_h
    FROM attempt_outcomes o
    LEFT JOIN attempt_clusters ac USING (job_id, attempt)
    WHERE o.fleet_failure
      AND o.end_ts >= $week_start AND o.end_ts < $week_end
      AND ($cluster = '*' OR ac.cluster = $cluster)
),
grouped AS (
    SELECT failure_class, cause, count(*) AS attempts, sum(gpu_h) AS gpu_h
    FROM failed
    GROUP BY failure_class, cause
)
SELECT
    failure_class,
    cause,
    attempts,
    gpu_h,
    sum(attempts) OVER (ORDER BY attempts DESC, gpu_h DESC, failure_class, cause)
        / sum(attempts) OVER () AS cum_share
FROM grouped
ORDER BY attempts DESC, gpu_h DESC, failure_class, cause
