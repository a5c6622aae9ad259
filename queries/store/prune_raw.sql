-- prune_raw: drop the raw GPU samples older than $pruned_before (`gpufleet prune --keep-raw`), in
-- the prune's transaction, once `gpufleet compute` has built everything they feed.
-- Dropped: every field but the error counters and levels below. Their readers keep what the
-- dropped samples gave them: gpu_scrapes and gpu_samples_15m are kept tables that never rebuild
-- rows before the newest `raw_retention.pruned_before` (not even `compute --force`), and the
-- gpu_inventory rows of the dropped samples are set aside in gpu_inventory_pruned first.
-- Stored on: the series queries/detect/counters.sql reads. It sums each counter's increases over a
-- trailing window and flags levels sample by sample, from all history, on every compute, so its
-- findings before the horizon need the raw samples. tests/test_prune.py checks the list against
-- its rules.
-- Params: $pruned_before (a UTC midnight), $keep_raw_s.
CREATE OR REPLACE TEMP TABLE __prunable_series AS
SELECT series_id, cluster, node, gpu, uuid, metric
FROM gpu_series
WHERE metric NOT IN (
    'DCGM_FI_DEV_ECC_SBE_VOL_TOTAL',
    'DCGM_FI_DEV_ECC_DBE_VOL_TOTAL',
    'DCGM_FI_DEV_ROW_REMAP_FAILURE',
    'DCGM_FI_DEV_ROW_REMAP_PENDING',
    'DCGM_FI_DEV_PCIE_REPLAY_COUNTER',
    'DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL',
    'DCGM_FI_DEV_NVLINK_CRC_DATA_ERROR_COUNT_TOTAL',
    'DCGM_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_TOTAL',
    'DCGM_FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_TOTAL'
);

-- gpu_inventory's rows of the samples about to go (its fields, as queries/derived/gpu_inventory_days.sql
-- reads them), merged with those of earlier prunes: the two cover disjoint times, so first, last
-- and count combine exactly.
CREATE OR REPLACE TEMP TABLE __inventory_pruned AS
SELECT cluster, node, gpu, uuid, min(first_ts) AS first_ts, max(last_ts) AS last_ts,
       CAST(sum(samples) AS BIGINT) AS samples
FROM (
    SELECT cluster, node, gpu, uuid, first_ts, last_ts, samples FROM gpu_inventory_pruned
    UNION ALL
    SELECT s.cluster, s.node, s.gpu, s.uuid, min(v.ts), max(v.ts), count(*)
    FROM gpu_sample_values v JOIN __prunable_series s USING (series_id)
    WHERE v.ts < $pruned_before
      AND s.metric IN ('DCGM_FI_DEV_GPU_TEMP', 'DCGM_FI_DEV_POWER_USAGE', 'DCGM_FI_DEV_SM_CLOCK')
    GROUP BY s.cluster, s.node, s.gpu, s.uuid
)
GROUP BY cluster, node, gpu, uuid;

DELETE FROM gpu_inventory_pruned;

INSERT INTO gpu_inventory_pruned SELECT * FROM __inventory_pruned;

INSERT INTO raw_retention
SELECT $pruned_before, $keep_raw_s, now(), count(*)
FROM gpu_sample_values
WHERE ts < $pruned_before AND series_id IN (SELECT series_id FROM __prunable_series)
HAVING count(*) > 0;

DELETE FROM gpu_sample_values
WHERE ts < $pruned_before AND series_id IN (SELECT series_id FROM __prunable_series);

DROP TABLE __inventory_pruned;

DROP TABLE __prunable_series;
