-- Attempts that ended in [$week_start, $week_end) for $cluster ('*' = all; an attempt belongs to
-- its job's cluster) without succeeding and
-- are not failures of the fleet: class user (cancelled, timeout, oom) and infrastructure by
-- scheduler policy (preempted, evicted), by class and cause (attempt_outcomes.cause): attempts and
-- the GPU-hours they held. Shown apart from the failure Pareto.
SELECT o.failure_class, o.cause, count(*) AS attempts,
    sum(o.num_gpus * epoch(o.end_ts - o.start_ts) / 3600) AS gpu_h
FROM attempt_outcomes o
WHERE o.failure_class IS NOT NULL AND NOT o.fleet_failure
  AND o.end_ts >= $week_start AND o.end_ts < $week_end
  AND ($cluster = '*' OR o.cluster = $cluster)
GROUP BY ALL
ORDER BY attempts DESC, gpu_h DESC, failure_class, cause
