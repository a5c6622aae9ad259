-- Fleet telemetry heatmap: one DCGM field ($metric) of every node of $cluster ('*' = all) in
-- [$week_start, $week_end), nodes x time, from the 15-minute rollup gpu_samples_15m.
-- Columns are buckets of a whole number of 15-minute buckets, wide enough that the week spans
-- at most $max_columns of them (200 -> 1 h: 168 columns), so 512 nodes stay ~86,000 cells.
-- Per node (cluster, node) and column, over its GPUs and the column's samples:
--   mean_value  sample-weighted mean (sum of bucket means x samples / samples), the field's unit
--   min_value / max_value   extremes of the samples (the coolest / slowest GPU shows in min)
--   gpus        GPUs that reported in the column; samples: how many samples
SELECT
    r.cluster,
    r.node,
    make_timestamptz(
        epoch_us($week_start::TIMESTAMPTZ)
        + (epoch_us(r.bucket_ts) - epoch_us($week_start::TIMESTAMPTZ)) // w.width_us * w.width_us
    ) AS column_ts,
    sum(r.value_avg * r.samples) / sum(r.samples) AS mean_value,
    min(r.value_min) AS min_value,
    max(r.value_max) AS max_value,
    count(DISTINCT r.gpu) AS gpus,
    CAST(sum(r.samples) AS BIGINT) AS samples
FROM gpu_samples_15m r
JOIN nodes n USING (cluster, node)
CROSS JOIN (
    SELECT CAST(900000000 * greatest(1, ceil(
        (epoch_us($week_end::TIMESTAMPTZ) - epoch_us($week_start::TIMESTAMPTZ)) / 900000000 / $max_columns
    )) AS BIGINT) AS width_us
) w
WHERE r.metric = $metric
  AND r.bucket_ts >= $week_start AND r.bucket_ts < $week_end
  AND ($cluster = '*' OR n.cluster = $cluster)
GROUP BY r.cluster, r.node, column_ts
ORDER BY r.node, r.cluster, column_ts
