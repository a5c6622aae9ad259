-- Where a kept sample table (gpu_samples_15m, gpu_scrapes) is rebuilt from: the start of the
-- 15-minute bucket of the earliest GPU sample loaded since the last compute (NULL when none was),
-- or with $rebuild of the earliest sample stored.
SELECT make_timestamptz(epoch_us(min(from_ts)) // 900000000 * 900000000) AS from_ts
FROM (
    SELECT from_ts FROM gpu_samples_loaded WHERE NOT $rebuild
    UNION ALL
    SELECT min(ts) FROM gpu_sample_values WHERE $rebuild
)
