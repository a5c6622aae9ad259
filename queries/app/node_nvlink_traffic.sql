-- NVLink traffic of one node's GPUs ($cluster, $node) as a rate, in [$week_start, $week_end): never the
-- cumulative counter. One row per GPU and $bucket_s bucket (a multiple of 900 s):
--   increase    how much DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL (a counter, MiB moved over all the
--               GPU's links) went up in the bucket: the step from each 15-minute rollup bucket's
--               last value (gpu_samples_15m.value_max) to the next one's. A drop is a counter reset
--               (reboot, GPU reset) and counts as the new value, never as a negative rate
--               (Prometheus `increase`, as the error counters). A bucket with no earlier value to
--               step from (the first of the node's series) has no increase: it is left out.
--   mib_per_s   increase / bucket seconds (MiB/s, averaged over the bucket).
-- From the rollup, not gpu_samples: ~670 rows per GPU for a week.
WITH
lasts AS (
    SELECT gpu, bucket_ts, value_max AS last_value,
           lag(value_max) OVER (PARTITION BY gpu ORDER BY bucket_ts) AS prev_value
    FROM gpu_samples_15m
    WHERE cluster = $cluster AND node = $node AND metric = 'DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL'
      -- one rollup bucket of look-back starts the week's first increase
      AND bucket_ts >= $week_start::TIMESTAMPTZ - INTERVAL 15 MINUTE AND bucket_ts < $week_end
),
steps AS (
    SELECT gpu, epoch_us(bucket_ts) AS us,
           CASE WHEN last_value < prev_value THEN last_value ELSE last_value - prev_value END AS increase
    FROM lasts
    WHERE prev_value IS NOT NULL AND bucket_ts >= $week_start
),
bucketed AS (
    SELECT gpu,
           us // (CAST($bucket_s AS BIGINT) * 1000000) * (CAST($bucket_s AS BIGINT) * 1000000) AS bucket_us,
           sum(increase) AS increase
    FROM steps
    GROUP BY ALL
)
SELECT gpu, make_timestamptz(bucket_us) AS bucket_ts, CAST(increase AS DOUBLE) AS increase,
       CAST(increase AS DOUBLE) / $bucket_s AS mib_per_s
FROM bucketed
ORDER BY gpu, bucket_ts
