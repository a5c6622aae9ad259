-- Fewer network links up than the node should have (node_samples `nic_links_up` below
-- nodes.nic_expected; nodes with nic_expected NULL are not checked). A missing sample is not a
-- down link. Flagged samples closer than `$det_gap_s` seconds form an episode, which needs at least
-- `$det_nic_min_samples` samples (a link renegotiating for a scrape is not an anomaly).
-- end = last flagged sample + one scrape, NULL at the data horizon. Score = links missing (max).
WITH flagged AS (
    SELECT s.ts, s.node, s.value AS links_up, n.nic_expected,
           lag(s.ts) OVER (PARTITION BY s.node ORDER BY s.ts) AS prev_ts
    FROM node_samples s JOIN nodes n USING (node)
    WHERE s.metric = 'nic_links_up' AND n.nic_expected IS NOT NULL AND s.value < n.nic_expected
),
islands AS (
    SELECT *,
           sum(CASE WHEN prev_ts IS NULL OR ts - prev_ts > to_seconds($det_gap_s) THEN 1 ELSE 0 END)
               OVER (PARTITION BY node ORDER BY ts) AS episode
    FROM flagged
)
SELECT 'node' AS entity_type, node, NULL::SMALLINT AS gpu, NULL::VARCHAR AS uuid,
       NULL::VARCHAR AS job_id, NULL::INTEGER AS rank, 'nic_links_down' AS kind,
       min(ts) AS start_ts,
       CASE WHEN max(ts) >= $horizon::TIMESTAMPTZ - to_seconds($det_gap_s) THEN NULL
            ELSE max(ts) + to_seconds($det_sample_interval_s) END AS end_ts,
       -- It fires once the minimum number of samples is seen.
       list_sort(list(ts))[least($det_nic_min_samples, count(*))] AS detected_at,
       max(nic_expected - links_up)::DOUBLE AS score,
       'warn' AS severity,
       json_object('nic_expected', any_value(nic_expected), 'min_links_up', min(links_up),
                   'samples', count(*))::VARCHAR AS evidence,
       'cordon' AS action
FROM islands
GROUP BY node, episode
HAVING count(*) >= $det_nic_min_samples
