-- rank_step_times: the per-rank step times the rank slowdown statistics read (input of the
-- `rank_slowdown` step; a query, not a table). One row per job, attempt, step, rank:
--   time_s  compute_s when every rank of that step logged it (busy time without collective wait),
--           else step_s; seconds.
--   end_ts, step_s  as logged (when the step ended; its wall time, seconds), for episode bounds.
--   ratio   time_s / the step's median time_s over its ranks (mean of the two middle values
--           for an even count); NULL when that median is 0.
--   drag_s  the step's straggler drag (goodput_steps.drag_s) on the rank that set its slowest time
--           (lowest rank number on ties), 0 on the other ranks; seconds.
-- $jobs: the job ids to read (the jobs whose inputs changed since the last compute,
-- pipelines/rank_slowdown.py), or NULL for every job.
-- Cost: the per-step statistics are one hash aggregate over rank_steps joined back by step (a few
-- hundred thousand steps), not window functions over every rank row, which at fleet scale
-- (30 M rank rows) sorted and spilled tens of GB to disk.
WITH per_step AS (
    SELECT
        job_id, attempt, step,
        bool_and(compute_s IS NOT NULL) AS uses_compute,
        median(compute_s) AS median_compute_s,
        median(step_s) AS median_step_s
    FROM rank_steps
    WHERE $jobs IS NULL OR list_contains($jobs::VARCHAR[], job_id)
    GROUP BY job_id, attempt, step
),
timed AS (
    SELECT
        r.job_id, r.attempt, r.step, r.rank, r.node, r.gpu, r.end_ts, r.step_s,
        CASE WHEN p.uses_compute THEN r.compute_s ELSE r.step_s END AS time_s,
        CASE WHEN p.uses_compute THEN p.median_compute_s ELSE p.median_step_s END AS step_median_s
    FROM rank_steps r
    JOIN per_step p USING (job_id, attempt, step)
    WHERE $jobs IS NULL OR list_contains($jobs::VARCHAR[], r.job_id)
)
SELECT
    m.job_id,
    m.attempt,
    m.step,
    m.rank,
    m.node,
    m.gpu,
    m.time_s,
    m.time_s / nullif(m.step_median_s, 0) AS ratio,
    CASE WHEN m.rank = s.slowest_rank THEN s.drag_s ELSE 0 END::DECIMAL(18, 6) AS drag_s,
    m.rank = s.slowest_rank AS is_slowest,
    m.end_ts,
    m.step_s
FROM timed m
JOIN goodput_steps s USING (job_id, attempt, step)
ORDER BY m.job_id, m.attempt, m.rank, m.step;
