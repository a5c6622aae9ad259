-- report/failures: the fleet's failed attempts that ended in a week, by failure class and cause (a Pareto).
-- Fleet failures only (attempt_outcomes.fleet_failure: states failed / node_fail with class hardware,
-- infrastructure by evidence, software or unknown); user and policy attempts are in report/not_failures.
-- cause: attempt_outcomes.cause, the one rule the dashboard's Pareto (queries/app/failure_pareto.sql)
-- reads too. Counted: attempts, distinct jobs, and the GPU-hours those attempts held (GPUs x attempt
-- length). share = attempts / all fleet-failure attempts of the week; cumulative_share runs down the list.
-- Params: $week_start (DATE, a Monday), $cluster ('*' = all; an attempt belongs to its job's cluster).
WITH
week AS (
    SELECT $week_start::TIMESTAMPTZ AS start_ts, $week_start::TIMESTAMPTZ + INTERVAL 7 DAY AS end_ts
),
grouped AS (
    SELECT a.failure_class, a.cause, count(*) AS attempts, count(DISTINCT (a.cluster, a.job_id)) AS jobs,
           sum(a.num_gpus * epoch(a.end_ts - a.start_ts) / 3600.0) AS gpu_h
    FROM attempt_outcomes a, week w
    WHERE a.end_ts >= w.start_ts AND a.end_ts < w.end_ts
      AND a.fleet_failure
      AND ($cluster = '*' OR a.cluster = $cluster)
    GROUP BY ALL
)
SELECT failure_class, cause, attempts, jobs, gpu_h,
       attempts / sum(attempts) OVER () AS share,
       sum(attempts) OVER (ORDER BY attempts DESC, gpu_h DESC, failure_class, cause
                           ROWS UNBOUNDED PRECEDING) / sum(attempts) OVER () AS cumulative_share
FROM grouped
ORDER BY attempts DESC, gpu_h DESC, failure_class, cause
