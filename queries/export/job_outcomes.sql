-- export/job_outcomes: jobs that ended in the week (running jobs are exported the week they end).
-- Partitioned by week. Params: $week ('YYYY-Www'), $week_start (DATE).
SELECT *, $week AS week FROM job_outcomes
WHERE end_ts >= $week_start::TIMESTAMPTZ AND end_ts < $week_start::TIMESTAMPTZ + INTERVAL 7 DAY
