-- kept_samples_to: the newest GPU sample at or after $from_ts (NULL: none), where the day-long
-- windows of a kept sample table's update stop (pipelines/sample_rollups.py). Samples are stored
-- in time order, so the scan skips the row groups before $from_ts.
SELECT max(ts) FROM gpu_sample_values WHERE ts >= $from_ts
