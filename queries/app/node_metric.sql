-- One DCGM field ($metric) of every GPU of the node ($cluster, $node) in [$week_start,
-- $week_end), from the 15-minute rollup gpu_samples_15m: value = the bucket's mean
-- (the field's unit), min_value / max_value = its samples' extremes (the band around the
-- mean, so a short throttle stays visible), samples = how many samples the bucket had
-- (15 at a 60 s scrape).
SELECT
    gpu,
    bucket_ts,
    value_avg AS value,
    value_min AS min_value,
    value_max AS max_value,
    samples
FROM gpu_samples_15m
WHERE cluster = $cluster AND node = $node AND metric = $metric AND bucket_ts >= $week_start AND bucket_ts < $week_end
ORDER BY gpu, bucket_ts
