-- gpu_inventory: which GPU (UUID) sat in which slot of which node, and when: one row per
-- (node, gpu index, uuid) with the first and last sample seen, for RMA tickets and for spotting
-- a swapped GPU (one index, two UUIDs). UUID is dcgm-exporter's `UUID` label (gpu_samples.uuid).
-- Read from the fields every dcgm-exporter configuration exports (temperature, power, SM clock),
-- a fraction of gpu_samples, so it costs one filtered scan.
CREATE OR REPLACE TABLE gpu_inventory AS
SELECT node, gpu, uuid, min(ts) AS first_ts, max(ts) AS last_ts, count(*) AS samples
FROM gpu_samples
WHERE metric IN ('DCGM_FI_DEV_GPU_TEMP', 'DCGM_FI_DEV_POWER_USAGE', 'DCGM_FI_DEV_SM_CLOCK')
GROUP BY node, gpu, uuid
ORDER BY node, gpu, first_ts
