-- Network links (InfiniBand / EFA / RoCE adapters) of one node ($cluster, $node) that were up, per
-- $bucket_s bucket in [$week_start, $week_end), from node_samples `nic_links_up` (a gauge: the
-- links up across the node's adapters at the scrape):
--   links_min / links_max   fewest and most links up in the bucket's samples (a link that
--                           flapped down for one scrape shows in links_min)
--   samples                 scrapes in the bucket
--   expected                nodes.nic_expected, the links the node should have (NULL: not known)
SELECT
    make_timestamptz(epoch_us(s.ts) // (CAST($bucket_s AS BIGINT) * 1000000)
                     * (CAST($bucket_s AS BIGINT) * 1000000)) AS bucket_ts,
    min(s.value) AS links_min,
    max(s.value) AS links_max,
    count(*) AS samples,
    any_value(n.nic_expected) AS expected
FROM node_samples s
LEFT JOIN nodes n USING (cluster, node)
WHERE s.cluster = $cluster AND s.node = $node AND s.metric = 'nic_links_up' AND s.ts >= $week_start AND s.ts < $week_end
GROUP BY ALL
ORDER BY bucket_ts
