-- gpu_inventory: which GPU (UUID) sat in which slot of which node, and when: one row per
-- (node, gpu index, uuid) with the first and last sample seen, for RMA tickets and for spotting
-- a swapped GPU (one index, two UUIDs). UUID is dcgm-exporter's `UUID` label (gpu_samples.uuid).
-- Read from the fields every dcgm-exporter configuration exports (temperature, power, SM clock),
-- a fraction of gpu_samples, so it costs one filtered scan; the rows of samples `gpufleet prune`
-- dropped come from gpu_inventory_pruned (queries/store/prune_raw.sql reads the same fields), and
-- combine exactly with the stored ones: the two cover disjoint times.
CREATE OR REPLACE TABLE gpu_inventory AS
SELECT node, gpu, uuid, min(first_ts) AS first_ts, max(last_ts) AS last_ts,
       CAST(sum(samples) AS BIGINT) AS samples
FROM (
    SELECT node, gpu, uuid, min(ts) AS first_ts, max(ts) AS last_ts, count(*) AS samples
    FROM gpu_samples
    WHERE metric IN ('DCGM_FI_DEV_GPU_TEMP', 'DCGM_FI_DEV_POWER_USAGE', 'DCGM_FI_DEV_SM_CLOCK')
    GROUP BY node, gpu, uuid
    UNION ALL
    SELECT node, gpu, uuid, first_ts, last_ts, samples FROM gpu_inventory_pruned
)
GROUP BY node, gpu, uuid
ORDER BY node, gpu, first_ts
