-- Where a kept sample table (gpu_samples_15m, gpu_scrapes) is rebuilt from: the start of the
-- 15-minute bucket of the earliest GPU sample loaded since the last compute (NULL when none was),
-- or with $rebuild of the earliest sample stored; never before the cut of `gpufleet prune`
-- (raw_retention), whose rows before it the raw samples could no longer rebuild.
SELECT CASE WHEN min(from_ts) IS NOT NULL THEN greatest(
           make_timestamptz(epoch_us(min(from_ts)) // 900000000 * 900000000),
           (SELECT max(pruned_before) FROM raw_retention)
       ) END AS from_ts
FROM (
    SELECT from_ts FROM gpu_samples_loaded WHERE NOT $rebuild
    UNION ALL
    SELECT min(ts) FROM gpu_sample_values WHERE $rebuild
)
