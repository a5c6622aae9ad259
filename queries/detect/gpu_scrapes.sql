-- The pass's cluster's rows of the kept per-scrape table gpu_scrapes (queries/derived/gpu_scrapes.sql:
-- one row per GPU and scrape with the fields the detectors compare), shared by the peer,
-- telemetry-gap and stalled-job detectors and gpu_activity_windows as the temporary view
-- `detect_gpu_scrapes`. gpu_scrapes holds every cluster; during a pass compute scopes it to one.
SELECT node, gpu, ts, util, clock, power, temp, tensor_active, gr_active, fb_used_mib, util_series
FROM gpu_scrapes
