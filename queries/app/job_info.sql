-- One job ($job): scheduler fields, outcome, and goodput (seconds; goodput/ettr 0-1;
-- allocated/productive in GPU-seconds; straggler_drag_s = sum over steps of slowest
-- minus median rank time).
SELECT
    j.job_id, j.name, j."user", j.team, j.queue, j.submit_ts, j.start_ts, j.end_ts,
    j.num_gpus, j.state, j.exit_code, j.reason,
    o.final_state, o.eligible, o.succeeded, o.failure_class, o.crash_loop, o.attempts,
    o.gpu_hours, o.first_attempt_succeeded,
    g.wall_s, g.productive_s, g.init_s, g.checkpoint_s, g.wasted_s, g.recovery_s, g.other_s,
    g.allocated_gpu_s, g.productive_gpu_s, g.straggler_drag_s, g.goodput, g.ettr
FROM jobs j
LEFT JOIN job_outcomes o USING (job_id)
LEFT JOIN job_goodput g USING (job_id)
WHERE j.job_id = $job
