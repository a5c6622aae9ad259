-- export/team_utilisation_weekly: the week's rows per cluster, team and queue (docs/metrics.md
-- "Utilisation"). Partitioned by cluster and week. Params: $week ('YYYY-Www').
SELECT * FROM team_utilisation_weekly WHERE week = $week
