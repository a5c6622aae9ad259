-- export/node_cost: the week's node_cost rows (docs/metrics.md), by the ISO week the table assigns each row.
-- Partitioned by week. Params: $week ('YYYY-Www').
SELECT * FROM node_cost WHERE week = $week
