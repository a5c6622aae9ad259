-- evaluate/gpu_days: the GPUs of one simulated seed and the first and last GPU sample (false
-- positives are counted per GPU-day of telemetry).
SELECT
    (SELECT sum(gpu_count) FROM nodes) AS gpus,
    (SELECT min(ts) FROM gpu_samples) AS first_ts,
    (SELECT max(ts) FROM gpu_samples) AS last_ts
