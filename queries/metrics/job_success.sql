-- job_success: job success rates over the window [$start, $end) (docs/metrics.md "Job success and failure classes").
--
-- Jobs count when their end_ts falls in the window; attempts when theirs does.
--   eligible_jobs, succeeded_jobs     counts (eligible: succeeded/failed/node_fail/timeout/oom)
--   success_ratio                     succeeded_jobs / eligible_jobs (NULL when no eligible job)
--   gpu_weighted_success_ratio        GPU-hours of succeeded jobs / GPU-hours of eligible jobs
--   first_attempt_success_ratio       jobs that succeeded on their first attempt / eligible_jobs
--   failed_jobs_<class>               eligible jobs that did not succeed, by final failure class
--   crash_loop_jobs                   jobs flagged crash_loop
--   interruptions, allocated_gpu_days, interruptions_per_1k_gpu_days: as weekly_summary counts them
--   (docs/metrics.md "Interruptions per 1,000 GPU-days"):
--     interruptions                   attempts that ended in the window as failed, node_fail, timeout,
--                                     oom or preempted
--     allocated_gpu_days              GPU-time job attempts held inside the window, in GPU-days: the
--                                     goodput_segments that hold GPUs (gpus > 0; recovery gaps hold
--                                     none), clipped to the window, as goodput_stack's allocated_gpu_h
--     interruptions_per_1k_gpu_days   interruptions x 1000 / allocated_gpu_days (NULL when 0 allocated)
WITH
jobs_in_window AS (
    SELECT * FROM job_outcomes WHERE end_ts >= $start AND end_ts < $end
),
interruptions_in_window AS (
    SELECT count(*) AS interruptions
    FROM attempt_outcomes
    WHERE end_ts >= $start AND end_ts < $end
      AND state IN ('failed', 'node_fail', 'timeout', 'oom', 'preempted')
),
allocated_in_window AS (
    SELECT coalesce(sum(gpus * (least(end_us, epoch_us($end)) - greatest(start_us, epoch_us($start)))), 0)
               / 86400e6 AS allocated_gpu_days
    FROM goodput_segments
    WHERE gpus > 0 AND start_us < epoch_us($end) AND end_us > epoch_us($start)
),
attempts_in_window AS (
    SELECT i.interruptions, a.allocated_gpu_days
    FROM interruptions_in_window i CROSS JOIN allocated_in_window a
)
SELECT
    count(*) FILTER (WHERE eligible) AS eligible_jobs,
    count(*) FILTER (WHERE succeeded) AS succeeded_jobs,
    count(*) FILTER (WHERE succeeded) / nullif(count(*) FILTER (WHERE eligible), 0) AS success_ratio,
    sum(gpu_hours) FILTER (WHERE succeeded) / nullif(sum(gpu_hours) FILTER (WHERE eligible), 0) AS gpu_weighted_success_ratio,
    count(*) FILTER (WHERE first_attempt_succeeded) / nullif(count(*) FILTER (WHERE eligible), 0) AS first_attempt_success_ratio,
    count(*) FILTER (WHERE eligible AND failure_class = 'hardware') AS failed_jobs_hardware,
    count(*) FILTER (WHERE eligible AND failure_class = 'infrastructure') AS failed_jobs_infrastructure,
    count(*) FILTER (WHERE eligible AND failure_class = 'user') AS failed_jobs_user,
    count(*) FILTER (WHERE eligible AND failure_class = 'software') AS failed_jobs_software,
    count(*) FILTER (WHERE eligible AND failure_class = 'unknown') AS failed_jobs_unknown,
    count(*) FILTER (WHERE crash_loop) AS crash_loop_jobs,
    any_value(a.interruptions) AS interruptions,
    any_value(a.allocated_gpu_days) AS allocated_gpu_days,
    any_value(a.interruptions) / nullif(any_value(a.allocated_gpu_days), 0) * 1000 AS interruptions_per_1k_gpu_days
FROM attempts_in_window a
LEFT JOIN jobs_in_window j ON true
