-- export/anomalies: findings that started in the week (open ones included). Partitioned by week.
-- Params: $week ('YYYY-Www'), $week_start (DATE).
SELECT *, $week AS week FROM anomalies
WHERE start_ts >= $week_start::TIMESTAMPTZ AND start_ts < $week_start::TIMESTAMPTZ + INTERVAL 7 DAY
