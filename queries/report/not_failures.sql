-- report/not_failures: attempts that ended in a week without succeeding and are NOT failures of the
-- fleet: class user (cancelled, timeout, oom) and infrastructure by scheduler policy (preempted,
-- evicted). Shown apart from the failure Pareto (report/failures.sql), by class and cause
-- (attempt_outcomes.cause): attempts, distinct jobs, GPU-hours held (GPUs x attempt length).
-- Params: $week_start (DATE, a Monday), $cluster ('*' = all; an attempt belongs to its job's cluster).
WITH
week AS (
    SELECT $week_start::TIMESTAMPTZ AS start_ts, $week_start::TIMESTAMPTZ + INTERVAL 7 DAY AS end_ts
)
SELECT a.failure_class, a.cause, count(*) AS attempts, count(DISTINCT (a.cluster, a.job_id)) AS jobs,
       sum(a.num_gpus * epoch(a.end_ts - a.start_ts) / 3600.0) AS gpu_h
FROM attempt_outcomes a, week w
WHERE a.end_ts >= w.start_ts AND a.end_ts < w.end_ts
  AND a.failure_class IS NOT NULL AND NOT a.fleet_failure
  AND ($cluster = '*' OR a.cluster = $cluster)
GROUP BY ALL
ORDER BY attempts DESC, gpu_h DESC, failure_class, cause
