-- export/checkpoint_advice: the week's checkpoint_advice rows (docs/metrics.md), by the ISO week the table assigns each row.
-- Partitioned by week. Params: $week ('YYYY-Www').
SELECT * FROM checkpoint_advice WHERE week = $week
