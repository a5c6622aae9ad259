-- rank_slowdown_jobs (temporary, the rank_slowdown step's): one row per job of the pass's cluster
-- that logged rank steps, with a digest of everything its `rank_slowdown` and `rank_episodes`
-- rows are computed from, and whether the last compute's rows can be kept.
--   inputs   sum of one hash per step: its rank count and end (rank_step_summaries) and its
--            drag and slowest rank (goodput_steps, whose steps are those of known attempts). Rank
--            steps are only ever added, and one added changes its step's rank count, so the sum
--            changes with every input of the job while reading one row per step, not per rank.
--            The rows of a job depend on that job's rows alone (the statistics, Holm's
--            correction and the episodes are per attempt or per job).
--   kept     the job's digest and $basis (the settings and the code that compute the rows) are
--            those the last compute stored for this cluster (`rank_slowdown_inputs`), so its rows
--            in the last compute's tables are the rows a compute now would give.
-- The pass's cluster is the variable `pass_cluster` (set by pipelines/compute.py).
-- Params: $basis.
CREATE OR REPLACE TEMP TABLE rank_slowdown_jobs AS
WITH inputs AS (
    SELECT job_id, sum(row_hash) AS inputs
    FROM (
        SELECT job_id, hash(attempt, step, ranks, end_us) AS row_hash
        FROM rank_step_summaries
        WHERE cluster = getvariable('pass_cluster')
        UNION ALL
        SELECT job_id, hash(attempt, step, drag_s, slowest_rank) FROM goodput_steps
    )
    GROUP BY job_id
)
SELECT i.job_id, i.inputs, coalesce(k.inputs = i.inputs AND k.basis = $basis, false) AS kept
FROM inputs i
LEFT JOIN rank_slowdown_inputs k ON k.cluster = getvariable('pass_cluster') AND k.job_id = i.job_id
