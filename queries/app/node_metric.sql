-- One DCGM field ($metric) of every GPU of the node ($node) in [$week_start,
-- $week_end), averaged per $bucket_s-second bucket (value in the field's unit;
-- max_value = the bucket's maximum, for counters).
SELECT
    gpu,
    time_bucket(to_seconds($bucket_s), ts, $week_start) AS bucket_ts,
    avg(value) AS value,
    max(value) AS max_value
FROM gpu_samples
WHERE node = $node AND metric = $metric AND ts >= $week_start AND ts < $week_end
GROUP BY gpu, bucket_ts
ORDER BY gpu, bucket_ts
