-- fleet_availability_daily: node_availability_daily summed per UTC day and cluster
-- (docs/metrics.md "Node state and availability", "MTBF and MTTR").
--
-- Every ratio is recomputed from summed seconds and counts, never averaged over nodes:
--   availability = sum(available_s + degraded_s) / sum(in_fleet_s - maintenance_s)   (ratio 0-1, NULL if 0)
--   mtbf_h       = sum(up_s) / sum(failures) / 3600        (hours; NULL: no failure that day)
--   mttr_h       = sum(repair_s) / sum(repair_episodes) / 3600  (hours; NULL: no closed episode started)
-- Nodes not in the `nodes` inventory are grouped under cluster 'unlisted'.
CREATE OR REPLACE TABLE fleet_availability_daily AS
SELECT day, cluster,
    count(DISTINCT node) AS nodes,
    sum(in_fleet_s) AS in_fleet_s,
    sum(maintenance_s) AS maintenance_s,
    sum(available_s) AS available_s,
    sum(degraded_s) AS degraded_s,
    sum(unavailable_s) AS unavailable_s,
    sum(unknown_s) AS unknown_s,
    sum(available_s + degraded_s) / nullif(sum(in_fleet_s - maintenance_s), 0) AS availability,
    sum(up_s) AS up_s,
    CAST(sum(failures) AS BIGINT) AS failures,
    sum(up_s) / nullif(sum(failures), 0) / 3600 AS mtbf_h,
    CAST(sum(repair_episodes) AS BIGINT) AS repair_episodes,
    sum(repair_s) AS repair_s,
    sum(repair_s) / nullif(sum(repair_episodes), 0) / 3600 AS mttr_h
FROM node_availability_daily
GROUP BY day, cluster
ORDER BY day, cluster
