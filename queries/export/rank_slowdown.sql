-- export/rank_slowdown: rows of the jobs that ended in the week (job_outcomes.end_ts), like job_outcomes.
-- Partitioned by week. Params: $week ('YYYY-Www'), $week_start (DATE).
SELECT t.*, $week AS week
FROM rank_slowdown t
WHERE (t.cluster, t.job_id) IN (
    SELECT (cluster, job_id) FROM job_outcomes
    WHERE end_ts >= $week_start::TIMESTAMPTZ AND end_ts < $week_start::TIMESTAMPTZ + INTERVAL 7 DAY
)
