-- gpu_scrapes: one row per GPU and scrape (cluster, node, gpu, ts) that reported any DCGM field,
-- with the fields the detectors and the utilisation tables read: utilisation (%), SM clock (MHz),
-- power (W), temperature (C), tensor-pipe and graphics-engine activity (0-1), framebuffer memory
-- used (MiB); NULL when that field was not in the scrape. No UUID: a string per scrape would cost
-- ~2 GB at 4,096 GPUs for a week, and only the few findings need it; `util_series` is the
-- utilisation series' id instead (gpu_series.uuid names the GPU of a flagged scrape).
-- Kept between computes, like gpu_samples_15m: a row holds only the samples of its own instant,
-- so `gpufleet compute` rebuilds the rows from $from_ts (the earliest sample loaded since the
-- last compute) on and keeps the earlier ones: an hourly update aggregates the new hour, not the
-- history, and the rows equal a build from all history.
-- Reads the storage tables, not the gpu_samples view: the aggregation groups an integer device
-- and time instead of node names, and picks each field by a small integer.
-- Run per window [$from_ts, $to_ts) of at most a day (pipelines/sample_rollups.py).
-- Params: $cluster, $from_ts, $to_ts.
CREATE TABLE IF NOT EXISTS gpu_scrapes (
    cluster       VARCHAR,
    node          VARCHAR,
    gpu           SMALLINT,
    ts            TIMESTAMPTZ,
    util          DOUBLE,
    clock         DOUBLE,
    power         DOUBLE,
    temp          DOUBLE,
    tensor_active DOUBLE,
    gr_active     DOUBLE,
    fb_used_mib   DOUBLE,
    util_series   INTEGER
);

DELETE FROM gpu_scrapes WHERE cluster = $cluster AND ts >= $from_ts AND ts < $to_ts;

INSERT INTO gpu_scrapes
WITH series AS (
    SELECT series_id, node, gpu,
           dense_rank() OVER (ORDER BY node, gpu) AS device,
           CASE metric
               WHEN 'DCGM_FI_DEV_GPU_UTIL' THEN 1
               WHEN 'DCGM_FI_DEV_SM_CLOCK' THEN 2
               WHEN 'DCGM_FI_DEV_POWER_USAGE' THEN 3
               WHEN 'DCGM_FI_DEV_GPU_TEMP' THEN 4
               WHEN 'DCGM_FI_PROF_PIPE_TENSOR_ACTIVE' THEN 5
               WHEN 'DCGM_FI_PROF_GR_ENGINE_ACTIVE' THEN 6
               WHEN 'DCGM_FI_DEV_FB_USED' THEN 7
               ELSE 0
           END AS field
    FROM gpu_series
    WHERE cluster = $cluster
),
per_scrape AS (
    SELECT s.device, v.ts,
           max(v.value) FILTER (WHERE s.field = 1) AS util,
           max(v.value) FILTER (WHERE s.field = 2) AS clock,
           max(v.value) FILTER (WHERE s.field = 3) AS power,
           max(v.value) FILTER (WHERE s.field = 4) AS temp,
           max(v.value) FILTER (WHERE s.field = 5) AS tensor_active,
           max(v.value) FILTER (WHERE s.field = 6) AS gr_active,
           max(v.value) FILTER (WHERE s.field = 7) AS fb_used_mib,
           max(v.series_id) FILTER (WHERE s.field = 1) AS util_series
    FROM gpu_sample_values v JOIN series s USING (series_id)
    WHERE v.ts >= $from_ts AND v.ts < $to_ts
    GROUP BY s.device, v.ts
)
SELECT $cluster AS cluster, d.node, d.gpu, p.ts, p.util, p.clock, p.power, p.temp,
       p.tensor_active, p.gr_active, p.fb_used_mib, p.util_series
FROM per_scrape p JOIN (SELECT DISTINCT device, node, gpu FROM series) d USING (device)
