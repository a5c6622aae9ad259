-- One row per GPU and scrape (node, gpu, ts) that reported any DCGM field, with the fields the
-- peer detectors compare: utilisation (%), SM clock (MHz), power (W), temperature (C), and the
-- tensor-pipe activity (0-1) the stalled-job detector reads, and the graphics-engine activity (0-1)
-- and framebuffer memory used (MiB) gpu_activity_windows reads; NULL when that field was not in
-- the scrape. No UUID: a string per scrape would cost ~2 GB at 4,096 GPUs for a week, and only the
-- few findings need it. `util_series` is the utilisation series' id instead: a detector looks the
-- UUID up in gpu_series for the scrapes it flags.
-- One hash aggregation (no sort), shared by the peer, telemetry-gap and stalled-job detectors
-- and the utilisation tables as the temporary table `detect_gpu_scrapes` (~1/14 of gpu_samples' rows).
-- Reads the storage tables, not the gpu_samples view: the aggregation groups an integer device
-- and time instead of node names, and picks each field by a small integer. gpu_series holds the
-- pass's cluster alone (compute scopes it), which the join passes on to the samples.
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
    GROUP BY s.device, v.ts
)
SELECT d.node, d.gpu, p.ts, p.util, p.clock, p.power, p.temp, p.tensor_active, p.gr_active,
       p.fb_used_mib, p.util_series
FROM per_scrape p JOIN (SELECT DISTINCT device, node, gpu FROM series) d USING (device)
