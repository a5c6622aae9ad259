-- Straggler ranks worth an anomaly: rank_slowdown's verdict (is_straggler: median ratio above
-- the threshold, enough steps, Mann-Whitney U test) AND an outlier among its own job's ranks:
-- robust z of its median ratio against the attempt's ranks, z = (m - median) / (1.4826 * MAD),
-- MAD floored at `$det_straggler_min_mad`, at least `$det_straggler_peer_z`. The second test keeps a
-- job whose ranks are naturally heterogeneous (a spread of speeds, no single slow rank) quiet,
-- while two stragglers among many ranks both stay outliers.
-- Also: the attempt's GPUs and end (NULL while running), for impact and the anomaly's end.
WITH ranked AS (
    SELECT r.*,
           median(r.median_ratio) OVER attempt_ranks AS job_median_ratio,
           count(*) OVER attempt_ranks AS ranks
    FROM rank_slowdown r
    WINDOW attempt_ranks AS (PARTITION BY r.job_id, r.attempt)
),
spread AS (
    SELECT *, median(abs(median_ratio - job_median_ratio)) OVER (PARTITION BY job_id, attempt) AS mad
    FROM ranked
)
SELECT s.job_id, s.attempt, s.rank, s.node, s.gpu, s.steps, s.median_ratio, s.p95_ratio,
       s.slowest_share, s.drag_s, s.relative_score, s.p_value, s.ranks,
       (s.median_ratio - s.job_median_ratio)
           / (1.4826 * greatest(s.mad, $det_straggler_min_mad)) AS peer_z,
       j.num_gpus, a.end_ts AS attempt_end_ts
FROM spread s
JOIN jobs j USING (job_id)
LEFT JOIN job_attempts a USING (job_id, attempt)
WHERE s.is_straggler
  AND (s.median_ratio - s.job_median_ratio)
          / (1.4826 * greatest(s.mad, $det_straggler_min_mad)) >= $det_straggler_peer_z
ORDER BY s.job_id, s.attempt, s.rank
