-- Job attempts that ran on the node ($cluster, $node: the cluster's attempts that list it) and overlapped [$week_start, $week_end):
-- the attempt's state, failure class and hardware signal, and the job's final
-- outcome. gpu_h = the attempt's GPUs x its length / 3600 (running: to the week end).
SELECT
    a.job_id,
    j.name,
    a.attempt,
    a.start_ts,
    a.end_ts,
    a.state AS attempt_state,
    o.failure_class,
    o.hardware_signal,
    jo.final_state,
    len(a.nodes) AS nodes,
    coalesce(o.num_gpus, j.num_gpus) * epoch(coalesce(a.end_ts, $week_end) - a.start_ts) / 3600 AS gpu_h
FROM job_attempts a
LEFT JOIN jobs j USING (cluster, job_id)
LEFT JOIN attempt_outcomes o USING (cluster, job_id, attempt)
LEFT JOIN job_outcomes jo USING (cluster, job_id)
WHERE a.cluster = $cluster AND list_contains(a.nodes, $node)
  AND a.start_ts < $week_end AND (a.end_ts IS NULL OR a.end_ts > $week_start)
ORDER BY a.start_ts DESC
