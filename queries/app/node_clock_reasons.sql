-- Why the node's ($cluster, $node) GPUs ran below their clocks in [$week_start, $week_end): the clock-event
-- (formerly throttle) reasons bitmask DCGM_FI_DEV_CLOCKS_EVENT_REASONS or
-- DCGM_FI_DEV_CLOCK_THROTTLE_REASONS, decoded per NVIDIA's documented bits (nvml.h
-- nvmlClocksEventReason*) into the rollup rows '<field>/<reason>' (see gpu_samples_15m).
-- Per GPU and reason:
--   share     samples with the bit set / samples of the field (0-1)
--   active_h  share x the hours the GPU reported the field (its first bucket's start to its last
--             bucket's end in the week), in hours: how long the reason held, at the scrape's
--             resolution.
-- No rows: the node reports neither field.
WITH per_bucket AS (
    SELECT gpu, split_part(metric, '/', 2) AS reason, bucket_ts, value_avg, samples
    FROM gpu_samples_15m
    WHERE cluster = $cluster AND node = $node AND bucket_ts >= $week_start AND bucket_ts < $week_end
      AND (metric LIKE 'DCGM_FI_DEV_CLOCKS_EVENT_REASONS/%' OR metric LIKE 'DCGM_FI_DEV_CLOCK_THROTTLE_REASONS/%')
),
per_reason AS (
    SELECT gpu, reason,
           sum(value_avg * samples) / sum(samples) AS share,
           epoch(max(bucket_ts) + INTERVAL 15 MINUTE - min(bucket_ts)) / 3600.0 AS reported_h
    FROM per_bucket
    GROUP BY gpu, reason
)
SELECT gpu, reason, CAST(share * reported_h AS DOUBLE) AS active_h, CAST(share AS DOUBLE) AS share
FROM per_reason
ORDER BY gpu, reason
