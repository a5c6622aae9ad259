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
--               The dashboard shows it as a rate per hour, never the cumulative total.
-- Clock-event reasons: a DCGM_FI_DEV_CLOCK_THROTTLE_REASONS or DCGM_FI_DEV_CLOCKS_EVENT_REASONS
-- sample is a bitmask (NVML nvmlClocksEventReason*). Besides the field's own rows, each bit gets
-- rows of its own, metric = '<field>/<reason>', value = 1 when the bit is set else 0, so value_avg
-- is the share of the bucket's samples with that reason active (0-1).
-- Stored in (node, metric, bucket_ts) order so a one-node chart reads only that node's
-- row groups (0.04 s instead of 0.46 s on the 64-node demo week).
-- Buckets by integer arithmetic on epoch microseconds: the same UTC boundaries as
-- time_bucket(INTERVAL 15 MINUTE, ts), at half the CPU (time_bucket on TIMESTAMPTZ goes
-- through the session time zone for every row).
CREATE OR REPLACE TABLE gpu_samples_15m AS
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
rollup AS MATERIALIZED (
    SELECT
        node,
        gpu,
        metric,
        epoch_us(ts) // 900000000 AS bucket,
        avg(value) AS value_avg,
        min(value) AS value_min,
        max(value) AS value_max,
        count(*) AS samples
    FROM gpu_samples
    GROUP BY ALL
),
-- Only a counter that changed during its series needs its samples ordered (a constant counter
-- never increases); found from the rollup, without another pass over the samples.
changing AS (
    SELECT node, gpu, metric
    FROM rollup
    WHERE metric IN (SELECT metric FROM counter_fields)
    GROUP BY ALL
    HAVING max(value_max) > min(value_min)
),
increases AS (
    SELECT node, gpu, metric, epoch_us(ts) // 900000000 AS bucket,
           sum(CASE WHEN prev IS NULL THEN 0 WHEN value < prev THEN value ELSE value - prev END) AS increase
    FROM (
        SELECT s.node, s.gpu, s.metric, s.ts, s.value,
               lag(s.value) OVER (PARTITION BY s.node, s.gpu, s.metric ORDER BY s.ts) AS prev
        FROM gpu_samples s
        SEMI JOIN changing c ON c.node = s.node AND c.gpu = s.gpu AND c.metric = s.metric
        WHERE s.metric IN (SELECT metric FROM counter_fields)
    )
    GROUP BY ALL
),
reasons AS (
    SELECT node, gpu, metric || '/' || reason AS metric, epoch_us(ts) // 900000000 AS bucket,
           avg(is_set) AS value_avg, min(is_set) AS value_min, max(is_set) AS value_max,
           count(*) AS samples, NULL::DOUBLE AS increase
    FROM (
        SELECT s.node, s.gpu, s.metric, s.ts, b.reason,
               CASE WHEN (CAST(s.value AS UBIGINT) & b.bit) <> 0 THEN 1.0 ELSE 0.0 END AS is_set
        FROM gpu_samples s CROSS JOIN reason_bits b
        WHERE s.metric IN ('DCGM_FI_DEV_CLOCK_THROTTLE_REASONS', 'DCGM_FI_DEV_CLOCKS_EVENT_REASONS')
    )
    GROUP BY ALL
),
combined AS (
    SELECT r.node, r.gpu, r.metric, r.bucket, r.value_avg, r.value_min, r.value_max, r.samples,
           CASE WHEN r.metric IN (SELECT metric FROM counter_fields)
                THEN coalesce(i.increase, 0) END AS increase
    FROM rollup r
    LEFT JOIN increases i USING (node, gpu, metric, bucket)
    UNION ALL
    SELECT node, gpu, metric, bucket, value_avg, value_min, value_max, samples, increase FROM reasons
)
SELECT
    node,
    gpu,
    metric,
    make_timestamptz(bucket * 900000000) AS bucket_ts,
    value_avg,
    value_min,
    value_max,
    samples,
    CAST(increase AS DOUBLE) AS increase
FROM combined
ORDER BY node, metric, bucket_ts
