-- The attempts of one job ($cluster, $job), oldest first: state, exit code, failure class and
-- hardware signal (why it failed), its nodes and GPUs, and how many steps it logged.
SELECT
    a.attempt,
    a.start_ts,
    a.end_ts,
    epoch(a.end_ts - a.start_ts) AS duration_s,
    a.state,
    a.exit_code,
    a.reason,
    o.failure_class,
    o.hardware_signal,
    o.implicated_nodes,
    a.nodes,
    o.num_gpus,
    (SELECT count(DISTINCT step) FROM rank_steps r WHERE r.cluster = a.cluster AND r.job_id = a.job_id AND r.attempt = a.attempt)
        AS steps
FROM job_attempts a
LEFT JOIN attempt_outcomes o USING (cluster, job_id, attempt)
WHERE a.cluster = $cluster AND a.job_id = $job
ORDER BY a.attempt
