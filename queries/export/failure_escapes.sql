-- export/failure_escapes: the week's failure_escapes rows (docs/metrics.md), by the ISO week the table assigns each row.
-- Partitioned by week. Params: $week ('YYYY-Www').
SELECT * FROM failure_escapes WHERE week = $week
