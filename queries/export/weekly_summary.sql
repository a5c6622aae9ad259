-- export/weekly_summary: the week's weekly_summary rows (every cluster and '*').
-- Partitioned by cluster and week. Params: $week ('YYYY-Www').
SELECT * FROM weekly_summary WHERE week = $week
