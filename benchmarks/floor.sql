-- The floor: the least work any correct answer needs, one aggregate pass over the two
-- largest landing tables. Every pipeline stage is reported as a multiple of this.
SELECT
    (SELECT count(*) FROM (SELECT node, gpu, metric, min(ts), max(ts), sum(value)
                           FROM gpu_samples GROUP BY ALL)) AS gpu_series,
    (SELECT count(*) FROM (SELECT job_id, attempt, step, median(coalesce(compute_s, step_s)),
                                  max(coalesce(compute_s, step_s))
                           FROM rank_steps GROUP BY ALL)) AS steps
