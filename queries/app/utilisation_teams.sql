-- Teams and queues of the week (team_utilisation_weekly), most idle GPU-hours first: the
-- Utilisation page's table and the report's (its first `--top` rows). $cluster '*' sums every
-- cluster. measured_gpu_h: allocated GPU-hours seen in DCGM telemetry; busy_share = busy /
-- measured GPU-h, summed. top_idle_jobs: up to 3 job ids, most idle first within a cluster and
-- the cluster with the most idle GPU-hours first; top_idle_job_clusters: the cluster of each (job
-- ids repeat across clusters). Params: $week ('YYYY-Www'), $cluster ('*' = all).
SELECT team, queue,
       sum(jobs) AS jobs,
       sum(measured_gpu_h) AS measured_gpu_h,
       sum(busy_gpu_h) AS busy_gpu_h,
       sum(busy_gpu_h) / nullif(sum(measured_gpu_h), 0) AS busy_share,
       sum(idle_gpu_h) AS idle_gpu_h,
       -- both lists in one order (cluster is unique within a team's week), so they stay parallel
       flatten(list(top_idle_jobs ORDER BY idle_gpu_h DESC, cluster))[1:3] AS top_idle_jobs,
       flatten(list(list_transform(top_idle_jobs, lambda j: cluster) ORDER BY idle_gpu_h DESC, cluster))[1:3]
           AS top_idle_job_clusters
FROM team_utilisation_weekly
WHERE week = $week AND ($cluster = '*' OR cluster = $cluster)
GROUP BY team, queue
ORDER BY idle_gpu_h DESC, team, queue
