-- rank_step_times: the per-rank step times the rank slowdown statistics read (input of the
-- `rank_slowdown` step; a query, not a table). One row per job, attempt, step, rank:
--   time_s  compute_s when every rank of that step logged it (busy time without collective wait),
--           else step_s; seconds.
--   ratio   time_s / the step's median time_s over its ranks (mean of the two middle values
--           for an even count); NULL when that median is 0.
--   drag_s  the step's straggler drag (goodput_steps.drag_s) on the rank that set its slowest time
--           (lowest rank number on ties), 0 on the other ranks; seconds.
WITH timed AS (
    SELECT
        job_id, attempt, step, rank, node, gpu,
        CASE WHEN bool_and(compute_s IS NOT NULL) OVER step_ranks THEN compute_s ELSE step_s END AS time_s
    FROM rank_steps
    WINDOW step_ranks AS (PARTITION BY job_id, attempt, step)
),
with_median AS (
    SELECT *, median(time_s) OVER (PARTITION BY job_id, attempt, step) AS step_median_s
    FROM timed
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
    m.rank = s.slowest_rank AS is_slowest
FROM with_median m
JOIN goodput_steps s USING (job_id, attempt, step)
ORDER BY m.job_id, m.attempt, m.rank, m.step;
