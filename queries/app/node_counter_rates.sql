-- Error counters of one node ($cluster, $node) as rates per hour, in [$week_start, $week_end): never the
-- cumulative totals (a counter's level says how long the GPU has been up, not how sick it is).
-- One row per GPU (NULL for node-level NIC counters), counter and $bucket_s bucket (a multiple
-- of 900 s): increase = how much the counter went up in the bucket (reset-safe: a drop is a
-- reset and counts as the new value, never as a negative rate; Prometheus `increase`, as
-- queries/detect/counters.sql), per_hour = increase / bucket hours.
-- GPU counters come from gpu_samples_15m.increase (ECC SBE/DBE, PCIe replays, NVLink CRC flit /
-- CRC data / replay / recovery); the NIC counter from node_samples `nic_link_errors_total`
-- (node-exporter infiniband or EFA error counters summed), the same arithmetic on raw samples.
-- A counter that never went up on any GPU of the node this week still has rows (rate 0).
WITH
labels(metric, counter) AS (
    VALUES ('DCGM_FI_DEV_ECC_SBE_VOL_TOTAL', 'ECC single-bit errors'),
           ('DCGM_FI_DEV_ECC_DBE_VOL_TOTAL', 'ECC double-bit errors'),
           ('DCGM_FI_DEV_PCIE_REPLAY_COUNTER', 'PCIe replays'),
           ('DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL', 'NVLink CRC flit errors'),
           ('DCGM_FI_DEV_NVLINK_CRC_DATA_ERROR_COUNT_TOTAL', 'NVLink CRC data errors'),
           ('DCGM_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_TOTAL', 'NVLink replay errors'),
           ('DCGM_FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_TOTAL', 'NVLink recovery errors'),
           ('nic_link_errors_total', 'NIC link errors')
),
gpu_counters AS (
    SELECT gpu, metric, epoch_us(bucket_ts) AS us, increase
    FROM gpu_samples_15m
    WHERE cluster = $cluster AND node = $node AND increase IS NOT NULL
      AND bucket_ts >= $week_start AND bucket_ts < $week_end
),
-- The sample before the week starts the first increase, so the look-back is one bucket.
nic_samples AS (
    SELECT ts, value, lag(value) OVER (ORDER BY ts) AS prev
    FROM node_samples
    WHERE cluster = $cluster AND node = $node AND metric = 'nic_link_errors_total'
      AND ts >= $week_start::TIMESTAMPTZ - to_seconds($bucket_s) AND ts < $week_end
),
nic_counters AS (
    SELECT NULL::SMALLINT AS gpu, 'nic_link_errors_total' AS metric, epoch_us(ts) AS us,
           CASE WHEN prev IS NULL THEN 0 WHEN value < prev THEN value ELSE value - prev END AS increase
    FROM nic_samples
    WHERE ts >= $week_start
),
bucketed AS (
    SELECT gpu, metric, us // (CAST($bucket_s AS BIGINT) * 1000000) * (CAST($bucket_s AS BIGINT) * 1000000) AS bucket_us,
           sum(increase) AS increase
    FROM (SELECT * FROM gpu_counters UNION ALL SELECT * FROM nic_counters)
    GROUP BY ALL
)
SELECT b.gpu, b.metric, l.counter, make_timestamptz(b.bucket_us) AS bucket_ts,
       CAST(b.increase AS DOUBLE) AS increase,
       CAST(b.increase AS DOUBLE) * 3600.0 / $bucket_s AS per_hour
FROM bucketed b JOIN labels l USING (metric)
ORDER BY l.counter, b.gpu NULLS FIRST, bucket_ts
