-- job_outcomes: one row per job: final state, success-rate eligibility, failure class, crash loop,
-- GPU-hours (docs/metrics.md "Job success and failure classes").
--
--   eligible                 final_state in succeeded / failed / node_fail / timeout / oom: the jobs
--                            that count in a success rate (cancelled, preempted, running do not)
--   succeeded                final_state = succeeded
--   failure_class            the final (highest-numbered) attempt's class (attempt_outcomes), never an
--                            earlier attempt's; 'unknown' when the final attempt has none (e.g. it has
--                            no end although the job ended); NULL if the job succeeded or is running
--   crash_loop               at least $crash_loop_min_failures fleet-failure attempts of class software:
--                            retrying will not help
--   attempts                 attempts that started
--   gpu_hours                sum over attempts of num_gpus x attempt length, in GPU-hours
--                            (recovery gaps between attempts excluded: the GPUs were released)
--   first_attempt_succeeded  the job succeeded on its first attempt
--   implicated_nodes         nodes with hardware evidence at the end of any attempt that is a fleet
--                            failure (attempt_outcomes.fleet_failure: never a cancelled or preempted one)
-- Success rate over a window = count(succeeded) / count(eligible) among jobs with end_ts in it;
-- GPU-hour weighted: sum(gpu_hours) FILTER (succeeded) / sum(gpu_hours) FILTER (eligible).
CREATE OR REPLACE TABLE job_outcomes AS
WITH per_job AS (
    SELECT job_id,
        count(*) FILTER (WHERE start_ts IS NOT NULL) AS attempts,
        count(*) FILTER (WHERE fleet_failure AND failure_class = 'software') AS software_failures,
        -- arg_max_null: the final attempt's class even when it is NULL (arg_max would skip it and
        -- return an earlier attempt's class)
        arg_max_null(failure_class, attempt) AS final_failure_class,
        arg_min(state, attempt) AS first_state,
        sum(allocated_gpu_s) / 3600 AS gpu_hours,
        list_sort(list_distinct(flatten(list(implicated_nodes) FILTER (WHERE fleet_failure)))) AS implicated_nodes
    FROM attempt_outcomes
    GROUP BY job_id
)
SELECT j.job_id, j.end_ts, j.state AS final_state,
    j.state IN ('succeeded', 'failed', 'node_fail', 'timeout', 'oom') AS eligible,
    j.state = 'succeeded' AS succeeded,
    CASE WHEN j.state IN ('succeeded', 'running') THEN NULL
         ELSE coalesce(p.final_failure_class, 'unknown') END AS failure_class,
    p.software_failures >= $crash_loop_min_failures AS crash_loop,
    p.attempts,
    j.num_gpus,
    p.gpu_hours,
    j.state = 'succeeded' AND p.first_state = 'succeeded' AS first_attempt_succeeded,
    coalesce(p.implicated_nodes, CAST([] AS VARCHAR[])) AS implicated_nodes
FROM jobs j
JOIN per_job p USING (job_id)
ORDER BY j.job_id
