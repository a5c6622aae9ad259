-- Per-step ratio series of every rank of the attempts of chosen ranks: ratio = the rank's step time
-- / the median over the attempt's ranks at that step (compute_s when present, else step_s), as
-- rank_slowdown defines it. `$ranks` is a list of {job_id, attempt, rank} structs; all ranks of
-- their attempts are returned (a candidate's onset reads its own series, its confirmation the
-- other ranks' ratios after the onset). Ordered by attempt, rank and step. Times in seconds.
WITH chosen AS (
    SELECT DISTINCT c.job_id, c.attempt FROM (SELECT unnest($ranks) AS c)
),
steps AS (
    SELECT s.job_id, s.attempt, s.step, s.rank, s.end_ts, s.step_s,
           coalesce(s.compute_s, s.step_s) AS busy_s,
           median(coalesce(s.compute_s, s.step_s)) OVER (PARTITION BY s.job_id, s.attempt, s.step) AS step_median_s
    FROM rank_steps s
    WHERE (s.job_id, s.attempt) IN (SELECT job_id, attempt FROM chosen)
)
SELECT s.job_id, s.attempt, s.rank, s.step, s.end_ts, s.step_s,
       s.busy_s / nullif(s.step_median_s, 0) AS ratio
FROM steps s
ORDER BY s.job_id, s.attempt, s.rank, s.step
