-- export/job_utilisation: jobs that ended in the week (running jobs are exported the week they
-- end), as job_outcomes. Jobs only dcgm-exporter's labels name (no `jobs` row) have no end: they
-- are in the table, not in the export. Partitioned by week. Params: $week ('YYYY-Www'), $week_start (DATE).
SELECT u.*, $week AS week
FROM job_utilisation u
JOIN jobs j USING (cluster, job_id)
WHERE j.end_ts >= $week_start::TIMESTAMPTZ AND j.end_ts < $week_start::TIMESTAMPTZ + INTERVAL 7 DAY
