-- The cut of the latest `gpufleet prune --keep-raw`: raw GPU samples older than it are gone (but
-- the detectors' error counters). NULL when the store was never pruned.
SELECT max(pruned_before) AS pruned_before FROM raw_retention
