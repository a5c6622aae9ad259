-- The fleet's failed attempts that ended in [$week_start, $week_end) for $cluster ('*' = all; an
-- attempt belongs to its job's cluster),
-- by failure class and cause, most frequent first: attempts (count) and the GPU-hours they held
-- (num_gpus x attempt length / 3600). Fleet failures only (attempt_outcomes.fleet_failure): user
-- (cancelled, timeout, oom) and scheduler policy (preempted, evicted) are never fleet failures, see
-- queries/app/not_failures.sql. cause = attempt_outcomes.cause, the one rule the weekly report's
-- Pareto (queries/report/failures.sql) reads too.
-- cum_share = running share of all fleet-failure attempts (0-1), for the Pareto line.
-- lost_gpu_h = GPU-hours the failures cost (the Pareto's GPU-hour weighting): the attempt's
-- wasted progress (goodput_segments `wasted`, GPUs x length) plus the recovery gap after it (its
-- `recovery` segment x the job's GPUs, which waited for the requeue). lost_cum_share = running
-- share of all lost GPU-hours with causes ordered by lost_gpu_h (0-1). Same causes as the count.
WITH lost AS (
    SELECT s.cluster, s.job_id, s.attempt,
           sum(CASE s.category WHEN 'wasted' THEN s.gpus ELSE o.num_gpus END
               * epoch(s.end_ts - s.start_ts)) / 3600 AS lost_gpu_h
    FROM goodput_segments s
    JOIN attempt_outcomes o USING (cluster, job_id, attempt)
    WHERE s.category IN ('wasted', 'recovery') AND o.fleet_failure
      AND o.end_ts >= $week_start AND o.end_ts < $week_end
    GROUP BY s.cluster, s.job_id, s.attempt
),
failed AS (
    SELECT o.failure_class, o.cause,
        o.num_gpus * epoch(o.end_ts - o.start_ts) / 3600 AS gpu_h,
        coalesce(l.lost_gpu_h, 0) AS lost_gpu_h
    FROM attempt_outcomes o
    LEFT JOIN lost l USING (cluster, job_id, attempt)
    WHERE o.fleet_failure
      AND o.end_ts >= $week_start AND o.end_ts < $week_end
      AND ($cluster = '*' OR o.cluster = $cluster)
),
grouped AS (
    SELECT failure_class, cause, count(*) AS attempts, sum(gpu_h) AS gpu_h,
           CAST(sum(lost_gpu_h) AS DOUBLE) AS lost_gpu_h
    FROM failed
    GROUP BY failure_class, cause
)
SELECT
    failure_class,
    cause,
    attempts,
    gpu_h,
    sum(attempts) OVER (ORDER BY attempts DESC, gpu_h DESC, failure_class, cause)
        / sum(attempts) OVER () AS cum_share,
    lost_gpu_h,
    sum(lost_gpu_h) OVER (ORDER BY lost_gpu_h DESC, attempts DESC, failure_class, cause)
        / nullif(sum(lost_gpu_h) OVER (), 0) AS lost_cum_share
FROM grouped
ORDER BY attempts DESC, gpu_h DESC, failure_class, cause
