-- One job ($cluster, $job): scheduler fields, outcome, and goodput (seconds; goodput/ettr 0-1;
-- allocated/productive in GPU-seconds; straggler_drag_s = sum over steps of slowest
-- minus median rank time).
SELECT
    j.job_id, j.cluster, j.name, j."user", j.team, j.queue, j.submit_ts, j.start_ts, j.end_ts,
    j.num_gpus, j.state, j.exit_code, j.reason,
    o.final_state, o.eligible, o.succeeded, o.failure_class, o.crash_loop, o.attempts,
    o.gpu_hours, o.first_attempt_succeeded,
    CAST(g.wall_s AS DOUBLE) AS wall_s, CAST(g.productive_s AS DOUBLE) AS productive_s,
    CAST(g.init_s AS DOUBLE) AS init_s, CAST(g.checkpoint_s AS DOUBLE) AS checkpoint_s,
    CAST(g.wasted_s AS DOUBLE) AS wasted_s, CAST(g.recovery_s AS DOUBLE) AS recovery_s,
    CAST(g.other_s AS DOUBLE) AS other_s, CAST(g.allocated_gpu_s AS DOUBLE) AS allocated_gpu_s,
    CAST(g.productive_gpu_s AS DOUBLE) AS productive_gpu_s,
    CAST(g.straggler_drag_s AS DOUBLE) AS straggler_drag_s,
    CAST(g.goodput AS DOUBLE) AS goodput, CAST(g.ettr AS DOUBLE) AS ettr
FROM jobs j
LEFT JOIN job_outcomes o USING (cluster, job_id)
LEFT JOIN job_goodput g USING (cluster, job_id)
WHERE j.cluster = $cluster AND j.job_id = $job
