-- Per UTC day of the week [$week_start, $week_end) for $cluster ('*' = all):
-- node availability = (available + degraded) / (in fleet - maintenance), from
-- summed seconds across nodes; node-hours unavailable / unknown; jobs that ended
-- that day and were eligible for the success rate, and how many succeeded.
-- A job belongs to the cluster it was landed in.
WITH avail AS (
    SELECT
        day,
        sum(available_s + degraded_s) AS up_s,
        sum(in_fleet_s - maintenance_s) AS counted_s,
        sum(unavailable_s) / 3600 AS unavailable_node_h,
        sum(unknown_s) / 3600 AS unknown_node_h
    FROM fleet_availability_daily
    WHERE day >= CAST($week_start AS DATE) AND day < CAST($week_end AS DATE)
      AND ($cluster = '*' OR cluster = $cluster)
    GROUP BY day
),
jobs AS (
    SELECT
        CAST(o.end_ts AS DATE) AS day,
        count(*) FILTER (WHERE o.eligible) AS eligible_jobs,
        count(*) FILTER (WHERE o.eligible AND o.succeeded) AS succeeded_jobs
    FROM job_outcomes o
    WHERE o.end_ts >= $week_start AND o.end_ts < $week_end
      AND ($cluster = '*' OR o.cluster = $cluster)
    GROUP BY 1
)
SELECT
    avail.day,
    up_s / nullif(counted_s, 0) AS availability,
    unavailable_node_h,
    unknown_node_h,
    coalesce(eligible_jobs, 0) AS eligible_jobs,
    coalesce(succeeded_jobs, 0) AS succeeded_jobs,
    succeeded_jobs / nullif(eligible_jobs, 0) AS job_success_rate
FROM avail
LEFT JOIN jobs USING (day)
ORDER BY avail.day
