-- Candidate straggler ranks, from rank_slowdown (one row per job attempt and rank):
--   a) rank_slowdown's verdict (is_straggler: median ratio above the threshold, enough steps,
--      Mann-Whitney U) AND an outlier among its own attempt's ranks by median ratio; or
--   b) a slow tail: p95 ratio above `$straggler_ratio` AND, among the ranks, a p95 ratio with robust
--      z >= `$det_straggler_candidate_z` or a share of steps where it was the slowest with robust
--      z >= `$det_straggler_peer_z` (a rank that turned slow late in a long run has a median near 1
--      and a p95 barely above its peers', but it is the slowest rank of every late step).
--      These are only candidates: the confirmation after the onset is strict.
-- Outlier: robust z = (x - median over the attempt's ranks) / (1.4826 * MAD), MAD floored at
-- `$det_straggler_min_mad`, at least `$det_straggler_peer_z`. That keeps a job whose ranks are
-- naturally heterogeneous (a spread of speeds, no single slow rank) quiet, while two stragglers
-- among many ranks both stay outliers. pipelines/detectors/stragglers.py confirms each candidate
-- over the steps after its onset. Also: the attempt's GPUs and end (NULL while running).
WITH ranked AS (
    SELECT r.*,
           median(r.median_ratio) OVER attempt_ranks AS median_of_medians,
           median(r.p95_ratio) OVER attempt_ranks AS median_of_p95,
           median(r.slowest_share) OVER attempt_ranks AS median_of_shares,
           count(*) OVER attempt_ranks AS ranks
    FROM rank_slowdown r
    WINDOW attempt_ranks AS (PARTITION BY r.job_id, r.attempt)
),
spread AS (
    SELECT *,
           median(abs(median_ratio - median_of_medians)) OVER attempt_ranks AS median_mad,
           median(abs(p95_ratio - median_of_p95)) OVER attempt_ranks AS p95_mad,
           median(abs(slowest_share - median_of_shares)) OVER attempt_ranks AS share_mad
    FROM ranked
    WINDOW attempt_ranks AS (PARTITION BY job_id, attempt)
),
scored AS (
    SELECT *,
           (median_ratio - median_of_medians) / (1.4826 * greatest(median_mad, $det_straggler_min_mad)) AS median_z,
           (p95_ratio - median_of_p95) / (1.4826 * greatest(p95_mad, $det_straggler_min_mad)) AS p95_z,
           -- shares are 0-1; a floor of 0.01 (one step in a hundred)
           (slowest_share - median_of_shares) / (1.4826 * greatest(share_mad, 0.01)) AS share_z
    FROM spread
)
SELECT s.job_id, s.attempt, s.rank, s.node, s.gpu, s.steps, s.median_ratio, s.p95_ratio,
       s.slowest_share, s.drag_s, s.relative_score, s.p_value, s.is_straggler, s.ranks,
       s.median_z, s.p95_z, j.num_gpus, a.end_ts AS attempt_end_ts
FROM scored s
JOIN jobs j USING (job_id)
LEFT JOIN job_attempts a USING (job_id, attempt)
WHERE s.ranks >= 3
  AND ((s.is_straggler AND s.median_z >= $det_straggler_peer_z)
       OR (s.p95_ratio > $straggler_ratio
           AND (s.p95_z >= $det_straggler_candidate_z OR s.share_z >= $det_straggler_peer_z)))
ORDER BY s.job_id, s.attempt, s.rank
