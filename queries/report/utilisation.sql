-- report/utilisation: the week's teams and queues by idle allocated GPU-hours (most first), from
-- team_utilisation_weekly; '*' sums every cluster. busy_share = busy / measured GPU-h, summed.
-- Params: $week ('YYYY-Www'), $cluster ('*' = all), $limit.
SELECT team, queue,
       sum(jobs) AS jobs,
       sum(measured_gpu_h) AS measured_gpu_h,
       sum(busy_gpu_h) AS busy_gpu_h,
       sum(busy_gpu_h) / nullif(sum(measured_gpu_h), 0) AS busy_share,
       sum(idle_gpu_h) AS idle_gpu_h,
       flatten(list(top_idle_jobs))[1:3] AS top_idle_jobs
FROM team_utilisation_weekly
WHERE week = $week AND ($cluster = '*' OR cluster = $cluster)
GROUP BY team, queue
ORDER BY idle_gpu_h DESC, team, queue
LIMIT $limit
