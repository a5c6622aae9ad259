-- export/attempt_outcomes: attempts that ended in the week. Partitioned by week.
-- Params: $week ('YYYY-Www'), $week_start (DATE).
SELECT *, $week AS week FROM attempt_outcomes
WHERE end_ts >= $week_start::TIMESTAMPTZ AND end_ts < $week_start::TIMESTAMPTZ + INTERVAL 7 DAY
