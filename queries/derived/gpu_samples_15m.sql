-- gpu_samples_15m: DCGM samples rolled up to 15-minute buckets per GPU and field, so
-- charts over a week read ~670 points per GPU instead of ~10,000 raw samples (the
-- dashboard's node drill-down and fleet telemetry heatmap read this, not gpu_samples).
--   bucket_ts   start of the UTC 15-minute bucket [bucket_ts, bucket_ts + 15 min)
--   value_avg   mean of the bucket's samples, in the field's unit
--   value_min / value_max   extremes (a counter's max is its last value in the bucket); the
--               chart draws them as a band around the mean, so a 2-minute throttle stays visible
--   samples     number of samples (a 60 s scrape gives 15; fewer means a telemetry gap)
--   increase    error counters only (ECC SBE/DBE volatile totals, PCIe replays, NVLink CRC /
--               replay / recovery errors), else NULL: how much the counter went up in the bucket,
--               counting the step from the previous sample (which may lie in an earlier bucket).
--               A drop is a counter reset (reboot, GPU reset) and counts as the new value, never
--               as a negative rate: Prometheus `increase` semantics, as queries/detect/counters.sql.
--               A sample more than a day after the one before (a node back from a long outage)
--               starts afresh and adds nothing: the step is only counted from a previous sample
--               of the last 24 hours. The dashboard shows it as a rate per hour, never the
--               cumulative total.
--   cluster     the GPU's cluster
-- Clock-event reasons: a DCGM_FI_DEV_CLOCK_THROTTLE_REASONS or DCGM_FI_DEV_CLOCKS_EVENT_REASONS
-- sample is a bitmask (NVML nvmlClocksEventReason*). Besides the field's own rows, each bit gets
-- rows of its own, metric = '<field>/<reason>', value = 1 when the bit is set else 0, so value_avg
-- is the share of the bucket's samples with that reason active (0-1).
--
-- Kept, not rebuilt (pipelines/sample_rollups.py): each compute rebuilds one cluster's buckets
-- from $from_ts (a bucket start: the earliest sample loaded since the last compute) on and keeps
-- the earlier ones, so an hourly update reads the new hour, not the history. A bucket holds only
-- its own samples, and an increase looks back at most 24 hours, which the kept buckets of the day
-- before $from_ts and the samples of that day answer: the rows equal a build from all history.
-- Run per window [$from_ts, $to_ts) of at most a day (pipelines/sample_rollups.py), so a rebuild
-- or a late batch holds a day's samples at a time: a window's buckets read the kept rows of the
-- windows before it as an hourly update reads the last compute's.
-- Each insert is sorted by (node, metric, bucket_ts), so a one-node chart reads few row groups.
-- Reads the storage tables (gpu_series, gpu_sample_values) rather than the gpu_samples view: it
-- groups by a small integer per GPU field instead of three strings per sample.
-- Buckets by integer arithmetic on epoch microseconds: the same UTC boundaries as
-- time_bucket(INTERVAL 15 MINUTE, ts), at half the CPU (time_bucket on TIMESTAMPTZ goes
-- through the session time zone for every row).
-- Params: $cluster, $from_ts, $to_ts.
CREATE TABLE IF NOT EXISTS gpu_samples_15m (
    node      VARCHAR,
    gpu       SMALLINT,
    metric    VARCHAR,
    bucket_ts TIMESTAMPTZ,
    value_avg DOUBLE,
    value_min DOUBLE,
    value_max DOUBLE,
    samples   BIGINT,
    increase  DOUBLE,
    cluster   VARCHAR
);

DELETE FROM gpu_samples_15m
WHERE cluster = $cluster AND bucket_ts >= $from_ts AND bucket_ts < $to_ts;

INSERT INTO gpu_samples_15m
WITH
counter_fields(metric) AS (
    VALUES ('DCGM_FI_DEV_ECC_SBE_VOL_TOTAL'), ('DCGM_FI_DEV_ECC_DBE_VOL_TOTAL'),
           ('DCGM_FI_DEV_PCIE_REPLAY_COUNTER'),
           ('DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL'), ('DCGM_FI_DEV_NVLINK_CRC_DATA_ERROR_COUNT_TOTAL'),
           ('DCGM_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_TOTAL'), ('DCGM_FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_TOTAL')
),
-- NVIDIA's documented bits (nvml.h, nvmlClocksEventReason*; the older name is ClocksThrottleReason*).
reason_bits(bit, reason) AS (
    VALUES (1, 'gpu_idle'), (2, 'applications_clocks_setting'), (4, 'sw_power_cap'),
           (8, 'hw_slowdown'), (16, 'sync_boost'), (32, 'sw_thermal_slowdown'),
           (64, 'hw_thermal_slowdown'), (128, 'hw_power_brake_slowdown'), (256, 'display_clock_setting')
),
-- Each series of the cluster and its GPU field (`slot`: node, GPU, field), named by the field's
-- smallest series id: a GPU swapped under the same index is a new series (UUID) of the same field.
series AS MATERIALIZED (
    SELECT
        series_id,
        min(series_id) OVER (PARTITION BY node, gpu, metric) AS slot,
        node,
        gpu,
        metric,
        metric IN (SELECT metric FROM counter_fields) AS is_counter,
        metric IN ('DCGM_FI_DEV_CLOCK_THROTTLE_REASONS', 'DCGM_FI_DEV_CLOCKS_EVENT_REASONS') AS is_reasons
    FROM gpu_series
    WHERE cluster = $cluster
),
rollup AS MATERIALIZED (
    SELECT
        s.slot,
        epoch_us(v.ts) // 900000000 AS bucket,
        avg(v.value) AS value_avg,
        min(v.value) AS value_min,
        max(v.value) AS value_max,
        count(*) AS samples
    FROM gpu_sample_values v
    JOIN series s USING (series_id)
    WHERE v.ts >= $from_ts AND v.ts < $to_ts
    GROUP BY ALL
),
-- Only a counter whose value moved within the 24 hours an increase looks back needs its samples
-- ordered (a constant counter adds nothing): found from the new buckets and the kept buckets of
-- the day before, without another pass over the samples.
changing AS (
    SELECT slot
    FROM (
        SELECT r.slot, r.value_min, r.value_max
        FROM rollup r
        SEMI JOIN series s ON s.series_id = r.slot AND s.is_counter
        UNION ALL
        SELECT s.slot, k.value_min, k.value_max
        FROM gpu_samples_15m k
        JOIN series s ON s.series_id = s.slot AND (s.node, s.gpu, s.metric) = (k.node, k.gpu, k.metric)
        WHERE k.cluster = $cluster AND s.is_counter
          AND k.bucket_ts >= $from_ts - INTERVAL 1 DAY AND k.bucket_ts < $from_ts
    )
    GROUP BY slot
    HAVING max(value_max) > min(value_min)
),
increases AS (
    SELECT slot, epoch_us(ts) // 900000000 AS bucket,
           sum(CASE WHEN prev IS NULL OR prev_ts < ts - INTERVAL 1 DAY THEN 0
                    WHEN value < prev THEN value ELSE value - prev END) AS increase
    FROM (
        SELECT s.slot, v.ts, v.value,
               lag(v.value) OVER by_time AS prev,
               lag(v.ts) OVER by_time AS prev_ts
        FROM gpu_sample_values v
        JOIN series s USING (series_id)
        WHERE s.slot IN (SELECT slot FROM changing)
          AND v.ts >= $from_ts - INTERVAL 1 DAY AND v.ts < $to_ts
        WINDOW by_time AS (PARTITION BY s.slot ORDER BY v.ts)
    )
    WHERE ts >= $from_ts
    GROUP BY ALL
),
reasons AS (
    SELECT slot, reason, epoch_us(ts) // 900000000 AS bucket,
           avg(is_set) AS value_avg, min(is_set) AS value_min, max(is_set) AS value_max,
           count(*) AS samples, NULL::DOUBLE AS increase
    FROM (
        SELECT s.slot, v.ts, b.reason,
               CASE WHEN (CAST(v.value AS UBIGINT) & b.bit) <> 0 THEN 1.0 ELSE 0.0 END AS is_set
        FROM gpu_sample_values v
        JOIN series s USING (series_id)
        CROSS JOIN reason_bits b
        WHERE s.is_reasons AND v.ts >= $from_ts AND v.ts < $to_ts
    )
    GROUP BY ALL
),
combined AS (
    SELECT r.slot, NULL AS reason, r.bucket, r.value_avg, r.value_min, r.value_max, r.samples,
           CASE WHEN s.is_counter THEN coalesce(i.increase, 0) END AS increase
    FROM rollup r
    JOIN series s ON s.series_id = r.slot
    LEFT JOIN increases i ON i.slot = r.slot AND i.bucket = r.bucket
    UNION ALL
    SELECT slot, reason, bucket, value_avg, value_min, value_max, samples, increase FROM reasons
)
SELECT
    s.node,
    s.gpu,
    CASE WHEN c.reason IS NULL THEN s.metric ELSE s.metric || '/' || c.reason END AS metric,
    make_timestamptz(c.bucket * 900000000) AS bucket_ts,
    c.value_avg,
    c.value_min,
    c.value_max,
    c.samples,
    CAST(c.increase AS DOUBLE) AS increase,
    $cluster AS cluster
FROM combined c
JOIN series s ON s.series_id = c.slot
ORDER BY s.node, metric, bucket_ts;
