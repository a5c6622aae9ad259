-- gpu_inventory: which GPU (UUID) sat in which slot of which node, and when: one row per
-- (node, gpu index, uuid) with the first and last sample seen, for RMA tickets and for spotting
-- a swapped GPU (one index, two UUIDs). UUID is dcgm-exporter's `UUID` label (gpu_samples.uuid).
-- Summed from the pass's cluster's rows of gpu_inventory_days (queries/derived/gpu_inventory_days.sql:
-- per UTC day of samples of the fields every dcgm-exporter configuration exports, kept between
-- computes, with the rows of samples `gpufleet prune` dropped): the days cover disjoint times, so
-- first, last and count combine exactly.
CREATE OR REPLACE TABLE gpu_inventory AS
SELECT node, gpu, uuid, min(first_ts) AS first_ts, max(last_ts) AS last_ts,
       CAST(sum(samples) AS BIGINT) AS samples
FROM gpu_inventory_days
WHERE cluster = getvariable('pass_cluster')
GROUP BY node, gpu, uuid
ORDER BY node, gpu, first_ts
