-- weeks_with_data: the weeks the weekly summary holds for $cluster, in order (named when a report
-- asks for a week without data).
SELECT DISTINCT week FROM weekly_summary WHERE cluster = $cluster ORDER BY week
