-- One row per GPU and scrape (node, gpu, ts) that reported any DCGM field, with the fields the
-- peer detectors compare: utilisation (%), SM clock (MHz), power (W), temperature (C); NULL when
-- that field was not in the scrape. uuid = the GPU's UUID at that scrape.
-- One hash aggregation over gpu_samples (no sort), shared by the peer and telemetry-gap detectors
-- as the temporary table `detect_gpu_scrapes` (~1/14 of gpu_samples' rows).
SELECT node, gpu, ts, any_value(uuid) AS uuid,
       max(value) FILTER (WHERE metric = 'DCGM_FI_DEV_GPU_UTIL') AS util,
       max(value) FILTER (WHERE metric = 'DCGM_FI_DEV_SM_CLOCK') AS clock,
       max(value) FILTER (WHERE metric = 'DCGM_FI_DEV_POWER_USAGE') AS power,
       max(value) FILTER (WHERE metric = 'DCGM_FI_DEV_GPU_TEMP') AS temp
FROM gpu_samples
GROUP BY node, gpu, ts
