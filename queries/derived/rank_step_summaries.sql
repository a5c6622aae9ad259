-- rank_step_summaries: per logged training step, what goodput_steps reads of the step's ranks
-- (queries/schema/landing.sql), for the pass's cluster. A step's row depends on that step's rank
-- rows alone, so with $incremental only the jobs whose rank steps were loaded since the last
-- compute (rank_steps_loaded) are summarised again; every other job's rows stand. Without it
-- (`compute --force`, other code, a cluster not summarised yet) every job is. rank_gpus, the GPUs
-- each attempt's ranks logged on each node, is kept the same way, for the same jobs.
--   end_us            the last rank's end of the step (epoch microseconds)
--   longest_step_us   the longest step_s of its ranks, in microseconds
--   uses_compute      every rank logged compute_s
--   slowest_*_rank    the rank with the longest compute_s (step_s), the lowest rank on ties
-- Params: $incremental.

-- The jobs whose rank steps were loaded since the last compute (read with $incremental only).
CREATE OR REPLACE TEMP TABLE jobs_to_summarise AS
SELECT DISTINCT job_id FROM rank_steps_loaded WHERE cluster = getvariable('pass_cluster');

DELETE FROM rank_step_summaries
WHERE cluster = getvariable('pass_cluster')
  AND (NOT $incremental OR job_id IN (SELECT job_id FROM jobs_to_summarise));

INSERT INTO rank_step_summaries
SELECT
    getvariable('pass_cluster') AS cluster,
    job_id,
    attempt,
    step,
    max(epoch_us(end_ts)) AS end_us,
    CAST(round(max(step_s) * 1e6) AS BIGINT) AS longest_step_us,
    count(*) AS ranks,
    count(compute_s) = count(*) AS uses_compute,
    max(CASE WHEN compute_s IS NOT NULL THEN compute_s END) AS max_compute_s,
    median(compute_s) AS median_compute_s,
    max(step_s) AS max_step_s,
    median(step_s) AS median_step_s,
    arg_min(rank, struct_pack(t := -compute_s, r := rank)) AS slowest_compute_rank,
    arg_min(rank, struct_pack(t := -step_s, r := rank)) AS slowest_step_rank
FROM rank_steps
WHERE NOT $incremental OR job_id IN (SELECT job_id FROM jobs_to_summarise)
GROUP BY job_id, attempt, step;

DELETE FROM rank_gpus
WHERE cluster = getvariable('pass_cluster')
  AND (NOT $incremental OR job_id IN (SELECT job_id FROM jobs_to_summarise));

INSERT INTO rank_gpus
SELECT DISTINCT getvariable('pass_cluster') AS cluster, job_id, attempt, node, gpu
FROM rank_steps
WHERE gpu IS NOT NULL
  AND (NOT $incremental OR job_id IN (SELECT job_id FROM jobs_to_summarise));

DROP TABLE jobs_to_summarise;
