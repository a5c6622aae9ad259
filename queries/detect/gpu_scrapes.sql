-- One row per GPU and scrape (node, gpu, ts) that reported any DCGM field, with the fields the
-- peer detectors compare: utilisation (%), SM clock (MHz), power (W), temperature (C), and the
-- tensor-pipe activity (0-1) the stalled-job detector reads, and the graphics-engine activity (0-1)
-- and framebuffer memory used (MiB) gpu_activity_windows reads; NULL when that field was not in
-- the scrape. No UUID: a string per scrape would cost ~2 GB at 4,096 GPUs
-- for a week, and only the few findings need it (looked up by the detectors).
-- One hash aggregation over gpu_samples (no sort), shared by the peer, telemetry-gap and stalled-job detectors
-- and the utilisation tables as the temporary table `detect_gpu_scrapes` (~1/14 of gpu_samples' rows).
SELECT node, gpu, ts,
       max(value) FILTER (WHERE metric = 'DCGM_FI_DEV_GPU_UTIL') AS util,
       max(value) FILTER (WHERE metric = 'DCGM_FI_DEV_SM_CLOCK') AS clock,
       max(value) FILTER (WHERE metric = 'DCGM_FI_DEV_POWER_USAGE') AS power,
       max(value) FILTER (WHERE metric = 'DCGM_FI_DEV_GPU_TEMP') AS temp,
       max(value) FILTER (WHERE metric = 'DCGM_FI_PROF_PIPE_TENSOR_ACTIVE') AS tensor_active,
       max(value) FILTER (WHERE metric = 'DCGM_FI_PROF_GR_ENGINE_ACTIVE') AS gr_active,
       max(value) FILTER (WHERE metric = 'DCGM_FI_DEV_FB_USED') AS fb_used_mib
FROM gpu_samples
GROUP BY node, gpu, ts
