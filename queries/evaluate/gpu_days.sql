-- evaluate/gpu_days: the GPUs of one simulated seed and its first and last scrape (false
-- positives are counted per GPU-day of telemetry). gpu_scrapes has a row for every GPU and
-- instant with any DCGM sample, so its span is the samples' span, without reading them again.
SELECT
    (SELECT sum(gpu_count) FROM nodes) AS gpus,
    (SELECT min(ts) FROM gpu_scrapes) AS first_ts,
    (SELECT max(ts) FROM gpu_scrapes) AS last_ts
