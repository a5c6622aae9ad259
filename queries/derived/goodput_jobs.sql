-- goodput_jobs (temporary, the goodput_jobs step's): one row per job of the pass's cluster with a
-- digest of everything its goodput_steps, job_stalls, goodput_segments and job_goodput rows are
-- built from, and whether the last compute's rows can be kept.
--   inputs   sum of one hash per row of the job's goodput_attempts (which already carry its
--            record, its attempts, the data horizon when it runs on to it, its cluster and its
--            last save), goodput_checkpoints and rank_step_summaries, and of whether its jobs and
--            job_attempts rows have an end (job_stalls reads that). Those four tables are built
--            from one job's rows alone, so nothing of another job can change them.
--   kept     the job's digest and $basis (the settings and the code that build the rows) are
--            those the last compute stored for this cluster (`goodput_inputs`): its rows in the
--            last compute's tables are the rows a compute now would give.
-- Read before `goodput_attempts` is narrowed to the jobs that are not kept
-- (pipelines/goodput_kept.py). The pass's cluster is the variable `pass_cluster`.
-- Params: $basis (kept in the variable `goodput_basis` for goodput_inputs_note).
SET VARIABLE goodput_basis = $basis;

CREATE OR REPLACE TEMP TABLE goodput_jobs AS
WITH inputs AS (
    SELECT job_id, sum(row_hash) AS inputs
    FROM (
        SELECT job_id, hash(a) AS row_hash FROM goodput_attempts a
        UNION ALL
        SELECT job_id, hash(c) FROM goodput_checkpoints c
        UNION ALL
        SELECT job_id, hash(s) FROM rank_step_summaries s WHERE cluster = getvariable('pass_cluster')
        UNION ALL
        SELECT job_id, hash(end_ts IS NULL) FROM jobs
        UNION ALL
        SELECT job_id, hash(attempt, end_ts IS NULL) FROM job_attempts
    )
    GROUP BY job_id
)
SELECT i.job_id, i.inputs, coalesce(k.inputs = i.inputs AND k.basis = $basis, false) AS kept
FROM inputs i
LEFT JOIN goodput_inputs k ON k.cluster = getvariable('pass_cluster') AND k.job_id = i.job_id;
