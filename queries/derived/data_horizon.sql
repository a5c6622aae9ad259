-- data_horizon: one row, the span of time the store holds data for (docs/metrics.md "Data horizon").
-- Every table that needs "now" or "the start of the data" reads it, so they all agree.
--   data_start_ts  the earliest node condition or DCGM sample: every node of the `nodes` inventory is
--                  in the fleet from then on (a node that never reports is `unknown`, not absent).
--   horizon_ts     the newest timestamp of any observation: node condition, DCGM and node sample
--                  times, GPU event times, job start and end times, attempt start and end times,
--                  step ends, checkpoint starts. Node lifetimes, running attempts and jobs, and open
--                  anomalies (the detectors) end here.
--                  Maintenance windows are left out: planned work may be declared ahead of time.
-- DCGM sample times are read from gpu_scrapes (a row per GPU and scrape that reported any field):
-- the same times as the samples, and still there after `gpufleet prune` dropped the raw ones.
-- Both are NULL when the store holds no such data.
CREATE OR REPLACE TABLE data_horizon AS
SELECT
    least(
        (SELECT min(ts) FROM node_conditions),
        (SELECT min(ts) FROM gpu_scrapes)
    ) AS data_start_ts,
    greatest(
        (SELECT max(ts) FROM node_conditions),
        (SELECT max(ts) FROM gpu_scrapes),
        (SELECT max(ts) FROM node_samples),
        (SELECT max(ts) FROM gpu_events),
        (SELECT max(coalesce(end_ts, start_ts)) FROM jobs),
        (SELECT max(coalesce(end_ts, start_ts)) FROM job_attempts),
        (SELECT max(end_ts) FROM rank_steps),
        (SELECT max(start_ts) FROM checkpoints)
    ) AS horizon_ts
