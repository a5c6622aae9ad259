-- report/failures: failed attempts that ended in a week, by failure class and cause.
-- cause = 'XID <code>' when an XID event hit a node of the attempt within
-- [end - $failure_before_s, end + $failure_after_s] (the latest one), else the attempt's final
-- state ('failed (exit 1)', 'node_fail', 'preempted', ...). Counted: attempts, distinct jobs, and
-- the GPU-hours those attempts held (GPUs x attempt length). share = attempts / all failed
-- attempts of the week; cumulative_share runs down the list (a Pareto).
-- Params: $week_start (DATE, a Monday), $cluster ('*' = all), $failure_before_s, $failure_after_s.
WITH
week AS (
    SELECT $week_start::TIMESTAMPTZ AS start_ts, $week_start::TIMESTAMPTZ + INTERVAL 7 DAY AS end_ts
),
failed AS (
    SELECT a.job_id, a.attempt, a.state, a.failure_class, a.start_ts, a.end_ts,
           a.num_gpus * epoch(a.end_ts - a.start_ts) / 3600.0 AS gpu_h,
           ja.exit_code, ja.nodes
    FROM attempt_outcomes a
    JOIN job_attempts ja USING (job_id, attempt)
    LEFT JOIN attempt_clusters ac USING (job_id, attempt), week w
    WHERE a.end_ts >= w.start_ts AND a.end_ts < w.end_ts
      AND a.failure_class IS NOT NULL
      AND ($cluster = '*' OR ac.cluster = $cluster)
),
xid AS (
    SELECT f.job_id, f.attempt, arg_max(e.code, e.ts) AS code
    FROM failed f
    CROSS JOIN unnest(f.nodes) AS u(node)
    JOIN gpu_events e
      ON e.node = u.node AND e.kind = 'xid'
     AND e.ts >= f.end_ts - to_seconds($failure_before_s)
     AND e.ts <= f.end_ts + to_seconds($failure_after_s)
    GROUP BY ALL
),
causes AS (
    SELECT f.failure_class,
           CASE WHEN x.code IS NOT NULL THEN 'XID ' || x.code
                WHEN f.state = 'failed' AND f.exit_code IS NOT NULL
                    THEN 'failed (exit ' || f.exit_code || ')'
                ELSE f.state END AS cause,
           f.job_id, f.gpu_h
    FROM failed f LEFT JOIN xid x USING (job_id, attempt)
),
grouped AS (
    SELECT failure_class, cause, count(*) AS attempts, count(DISTINCT job_id) AS jobs,
           sum(gpu_h) AS gpu_h
    FROM causes
    GROUP BY ALL
)
SELECT failure_class, cause, attempts, jobs, gpu_h,
       attempts / sum(attempts) OVER () AS share,
       sum(attempts) OVER (ORDER BY attempts DESC, gpu_h DESC, failure_class, cause
                           ROWS UNBOUNDED PRECEDING) / sum(attempts) OVER () AS cumulative_share
FROM grouped
ORDER BY attempts DESC, gpu_h DESC, failure_class, cause
