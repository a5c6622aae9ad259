-- export/job_goodput: rows of the jobs that ended in the week (job_outcomes.end_ts), like job_outcomes.
-- Partitioned by week; in job order (the table keeps unchanged jobs' rows between computes, so
-- its own order is not the file's). Params: $week ('YYYY-Www'), $week_start (DATE).
SELECT t.*, $week AS week
FROM job_goodput t
WHERE (t.cluster, t.job_id) IN (
    SELECT (cluster, job_id) FROM job_outcomes
    WHERE end_ts >= $week_start::TIMESTAMPTZ AND end_ts < $week_start::TIMESTAMPTZ + INTERVAL 7 DAY
)
ORDER BY t.cluster, t.job_id
